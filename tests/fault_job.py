"""A job for the fault-injection tests and the soak script, run as a real subprocess:

    python fault_job.py OUT [--docs N] [--executor ray|local] [--address ADDR] [--resume]
                            [--faults DIR] [--slow S] [--big] [--ocr-cpus C --ocr-replicas R]
                            [--hold-after N]

Documents of 1 to 6 pages; a page is scanned (with --big, a 300 KB image, which Ray keeps in
the object store of the node that made it, where that node's death loses it), then its OCR
gives a dict with its text and the scan.
With --faults DIR (a directory the stages share, on one machine), the stages misbehave in
every way a long job meets, each at most once per item (a marker file remembers):
  - an intermittent error: every 7th page raises TransientError on its first attempt;
  - a worker that dies mid-batch: page 0 of every 9th document kills its worker once;
  - a hang: page 1 of document 4 sleeps past the stage's timeout_s once;
  - a poison item: page 2 of every 13th document kills its worker on every attempt, and
    ends FAILED alone (it is poison in a clean run too, so the rows compare).
With --hold-after N, OCR batches after the run's first N print their line and then wait until
the job is killed (tests/kills.py), so a kill after N lines always lands mid-run.
Every row is a pure function of the document and page, so runs compare row for row."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from kills import hold_after

import curate as cu

N_DOCS = 60
FAULTS: Path | None = None
SLOW_S = 0.0
BIG = False
TIMEOUT_S = 8.0
HOLD: tuple[int, str] | None = None  # --hold-after N: (N, the directory that numbers this run's batches)


def _once(tag: str) -> bool:
    """True the first time `tag` is seen across every process of the job (and its resumes)."""
    if FAULTS is None:
        return False
    try:
        (FAULTS / tag).touch(exist_ok=False)
        return True
    except FileExistsError:
        return False


def pages(docs):
    return [[(d, i) for i in range(d % 6 + 1)] for d in docs]


def scan(ps):
    """The page's image: an intermediate payload (not an output), which with --big lives only in
    the object store of the node that made it until OCR reads it."""
    return [(d, i, bytes([(d + i) % 256]) * (300_000 if BIG else 64)) for d, i in ps]


def ocr(ps):
    print("ran", ps[0][:2], flush=True)  # unique per batch: Ray does not fold the lines
    if HOLD is not None:
        hold_after(*HOLD)
    time.sleep(SLOW_S)
    out = []
    for d, i, image in ps:
        if d % 13 == 5 and i == 2:
            os._exit(1)  # poison: kills its worker on every attempt
        if FAULTS is not None:
            if d % 9 == 2 and i == 0 and _once(f"die-{d}"):
                os._exit(1)
            if d == 4 and i == 1 and _once("hang"):
                time.sleep(TIMEOUT_S * 10)
            if (d * 7 + i) % 7 == 3 and _once(f"flaky-{d}-{i}"):
                raise cu.TransientError(f"flaky read of page {i} of doc {d}")
        out.append({"doc": d, "page": i, "text": f"doc {d} page {i}".upper(), "scan": image})
    return out


def join(groups):
    return ["\n".join(p["text"] for p in g) for g in groups]


def build(ocr_cpus: float = 0.25, ocr_replicas: int = 2):
    Doc = cu.Domain("doc")
    P = Doc.child("page")
    pipe = cu.Pipeline(Doc)
    ps = pipe.source.expand(cu.stage(pages, batch_size=2, num_cpus=0.25), into=P)
    text = ps.map(cu.stage(scan, batch_size=4, num_cpus=0.25)).map(
        cu.stage(ocr, batch_size=4, replicas=ocr_replicas, num_cpus=ocr_cpus, retries=2, timeout_s=TIMEOUT_S))
    pipe.output("pages", text, files={"scan": ".bin"})
    pipe.output("docs", text.reduce(cu.stage(join, num_cpus=0.25)), schema={"value": "string"})
    return pipe


def arg(name: str, default=None):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


if __name__ == "__main__":
    FAULTS = Path(arg("--faults")) if "--faults" in sys.argv else None
    SLOW_S, BIG = float(arg("--slow", 0.0)), "--big" in sys.argv
    if "--hold-after" in sys.argv:
        HOLD = (int(arg("--hold-after")), tempfile.mkdtemp(prefix="held-", dir=Path(sys.argv[1]).parent))
    opts = {"address": arg("--address")} if "--address" in sys.argv else {}
    pool = (float(arg("--ocr-cpus", 0.25)), int(arg("--ocr-replicas", 2)))
    res = cu.run(build(*pool), range(int(arg("--docs", N_DOCS))), executor=arg("--executor", "ray"), output_dir=sys.argv[1],
                 resume="--resume" in sys.argv, input_batch_size=4, sink_options={"shard_rows": 40}, **opts)
    print("done", res.counts, "restarted", res.metrics.restarted_roots, flush=True)
