"""Inputs on object storage: the shared PDF corpus (../shared/data/pdfs) read from a local S3
server (moto's server mode, tests/s3server.py, on 127.0.0.1) side by side with local disk, in
one run, round-robin so that load on the machine hits every reader alike:

- read throughput (MB/s) of the whole corpus: local disk (`read_bytes`), s3fs (`cat_file`,
  curate's library: fsspec lists ETags), pyarrow.fs.S3FileSystem (`open_input_stream`), and
  `cu.local_copy` into an empty cache (what a worker does: a HEAD, a GET, a write and a rename
  per object);
- the pdf_to_markdown job's pages/s with `--input DIR/*.pdf` vs `--input s3://.../*.pdf`, each
  run in a fresh process (local executor; the layout pool's rules model, so reading is a larger
  share of the work than with the layout model).

moto is a Python (Flask) server on the same 2 cores as the readers: its figures bound what the
client side costs and show the code path works at speed; they say nothing of a real store's
latency, bandwidth or parallelism (S3 serves each GET from many machines; MinIO is Go).

    python benchmarks/objectstore.py [--rounds 5] [--json PATH] [--quick]
    python -m benchmarks run objectstore
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent.parent / "shared" / "data" / "pdfs"
RESULT = "RESULT "
ARROW_TIMEOUT_S = 30  # pyarrow's default (3 s) is shorter than a GET may wait on a loaded 2-core machine
sys.path.insert(0, str(HERE.parent / "tests"))  # the S3 server the tests use
sys.path.insert(0, str(HERE))


def readers(endpoint: str, bucket: str) -> dict:
    """name -> fn(file names) -> bytes read, for each way of reading the corpus's objects."""
    import pyarrow.fs as pafs
    import s3fs

    from curate.io import objects

    fs = s3fs.S3FileSystem()  # the standard environment: AWS_ENDPOINT_URL, keys, region
    host = endpoint.removeprefix("http://")
    pa = pafs.S3FileSystem(endpoint_override=host, scheme="http", access_key="testing", secret_key="testing",
                           region="us-east-1", connect_timeout=ARROW_TIMEOUT_S, request_timeout=ARROW_TIMEOUT_S)

    def arrow(name: str) -> int:
        with pa.open_input_stream(f"{bucket}/pdfs/{name}") as f:
            return len(f.read())

    def each(fn):
        return lambda names: sum(fn(n) for n in names)

    return {"local disk": each(lambda name: len((CORPUS / name).read_bytes())),
            "s3fs cat_file": each(lambda name: len(fs.cat_file(f"{bucket}/pdfs/{name}"))),
            "s3fs cat, all objects at once": lambda names: sum(map(len, fs.cat([f"{bucket}/pdfs/{n}" for n in names])
                                                                   .values())),
            "pyarrow.fs S3FileSystem": each(arrow),
            "curate local_copy (cold cache)": each(lambda name: os.path.getsize(
                objects.local_copy(f"s3://{bucket}/pdfs/{name}")))}


def measure_reads(endpoint: str, bucket: str, rounds: int) -> list[dict]:
    """MB/s of each reader over the whole corpus, `rounds` times round-robin; the median round."""
    from curate.io import objects

    names = sorted(p.name for p in CORPUS.glob("*.pdf"))
    cache = Path(tempfile.mkdtemp(prefix="objectstore-cache-"))
    os.environ[objects.CACHE_DIR_ENV] = str(cache)
    fns = readers(endpoint, bucket)
    times: dict[str, list[float]] = {k: [] for k in fns}
    total = 0
    for _ in range(rounds):
        for label, fn in fns.items():
            shutil.rmtree(cache, ignore_errors=True)
            objects._known.clear()  # a cold cache: every object downloaded again
            t0 = time.perf_counter()
            total = fn(names)
            times[label].append(time.perf_counter() - t0)
    shutil.rmtree(cache, ignore_errors=True)
    return [{"reader": k, "objects": len(names), "mb": total / 1e6, "seconds": statistics.median(v),
             "mb_per_s": total / 1e6 / statistics.median(v)} for k, v in times.items()]


def job(given: str, out: str) -> dict:
    """One pdf_to_markdown run over `given` (a glob or URL glob): pages and seconds."""
    import pyarrow.parquet as pq

    import curate as cu
    from curate.io.files import expand
    from curate.recipe import load_recipe

    recipe = load_recipe(HERE.parent / "recipes" / "pdf_to_markdown.yaml", ["pools.layout.init.model=rules"],
                         input_given=True)
    t0 = time.perf_counter()
    files = expand([given], ".", recipe.extensions)
    cu.run(recipe.pipeline, files, executor="local", output_dir=out, **dict(recipe.run_options, progress=False))
    seconds = time.perf_counter() - t0
    pages = pq.read_table(Path(out) / "pages", columns=["status"]).column("status").to_pylist()
    return {"pages": sum(s == "present" for s in pages), "seconds": seconds}


def measure_jobs(bucket: str, rounds: int) -> list[dict]:
    """pages/s of the job from disk and from S3, each in fresh processes, alternating; the best run."""
    import subprocess

    given = {"local disk": str(CORPUS / "*.pdf"), "S3 (moto)": f"s3://{bucket}/pdfs/*.pdf"}
    best: dict[str, dict] = {}
    for _ in range(rounds):
        for label, spec in given.items():
            with tempfile.TemporaryDirectory() as d:
                proc = subprocess.run([sys.executable, __file__, "--job", spec, "--out", f"{d}/out"],
                                      capture_output=True, text=True, check=False,
                                      env=dict(os.environ, CURATE_CACHE_DIR=f"{d}/cache"))
            line = next((ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT)), None)
            if line is None:
                raise RuntimeError(f"the {label} job failed:\n{proc.stderr[-3000:]}")
            r = json.loads(line[len(RESULT):])
            if label not in best or r["seconds"] < best[label]["seconds"]:
                best[label] = r
    return [{"input": k, **v, "pages_per_s": v["pages"] / v["seconds"]} for k, v in best.items()]


def tables(res: dict) -> list:
    """The suite's tables: read throughput and the job's pages/s, with their ratios to local disk."""
    from table import Table

    reads = Table(f"object storage: read throughput, {res['reads'][0]['objects']} PDFs, "
                  f"{res['reads'][0]['mb']:.1f} MB (median of {res['rounds']} rounds)",
                  [("reader", 32), ("seconds", 9), ("MB/s", 9), ("vs disk", 9)])
    reads.header()
    disk = res["reads"][0]["mb_per_s"]
    for r in res["reads"]:
        reads.add(r["reader"], f"{r['seconds']:.3f}", f"{r['mb_per_s']:.0f}", f"{r['mb_per_s'] / disk:.3f}")
    by = {r["reader"]: r["mb_per_s"] for r in res["reads"]}
    reads.target("s3fs / local disk MB/s", by["s3fs cat_file"] / disk, ">= 0.8", by["s3fs cat_file"] / disk >= 0.8)
    reads.notes.append(f"pyarrow.fs / s3fs MB/s: {by['pyarrow.fs S3FileSystem'] / by['s3fs cat_file']:.2f}")
    runs = Table("object storage: pdf_to_markdown (layout rules, local executor), best of "
                 f"{res['job_runs']} fresh runs each", [("input", 12), ("pages", 7), ("seconds", 9), ("pages/s", 9)])
    runs.header()
    for r in res["jobs"]:
        runs.add(r["input"], r["pages"], f"{r['seconds']:.2f}", f"{r['pages_per_s']:.2f}")
    ratio = res["jobs"][1]["pages_per_s"] / res["jobs"][0]["pages_per_s"]
    runs.target("pages/s from S3 / from local disk", ratio, ">= 0.8", ratio >= 0.8)
    return [reads, runs]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="2 rounds of reads, 1 run of the job each")
    ap.add_argument("--json")
    ap.add_argument("--job", help=argparse.SUPPRESS)  # internal: one job run in this fresh process
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.job:
        print(RESULT + json.dumps(job(a.job, a.out)), flush=True)
        return 0
    import boto3
    from s3server import CREDENTIALS, MotoServer, make_bucket

    server = MotoServer()
    try:
        os.environ.update(CREDENTIALS, AWS_ENDPOINT_URL=server.url)
        bucket = make_bucket(server.url, "objectstore-bench")
        client = boto3.client("s3", endpoint_url=server.url)
        for p in sorted(CORPUS.glob("*.pdf")):
            client.upload_file(str(p), bucket, f"pdfs/{p.name}")
        rounds, job_runs = (2, 1) if a.quick else (a.rounds, 2)
        res = {"rounds": rounds, "job_runs": job_runs, "reads": measure_reads(server.url, bucket, rounds),
               "jobs": measure_jobs(bucket, job_runs)}
    finally:
        server.close()
    tables(res)
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
