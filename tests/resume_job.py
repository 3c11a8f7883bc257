"""A job for the kill-and-resume tests, run as a real subprocess:
`python resume_job.py OUT [--resume] [--executor local|ray] [--address ADDR] [--slow] [--progress] [--docs N]
[--hold-after N]`. Every stage run prints a line, so the test can kill it after a chosen amount
of work; with --hold-after N, OCR batches after the first N print their line and then wait until
the job is killed, so a kill after N lines always lands mid-run, however slowly the test reads."""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kills import hold_after

import curate as cu

N_DOCS = 40


@dataclass(frozen=True)
class Page:
    doc: int
    no: int
    text: str
    scan: bytes


def render(docs):
    return [[Page(d, i, f"doc {d} page {i}", bytes([d % 256, i % 256]) * 64) for i in range(d % 7)] for d in docs]


SLOW_S = 0.0  # per OCR batch, set by --slow: a Ray run then lasts long enough to be killed mid-way
HOLD: tuple[int, str] | None = None  # --hold-after N: (N, the directory that numbers this run's batches)


def ocr(pages):
    print("ran", len(pages), "from", pages[0].doc, pages[0].no, flush=True)  # unique: Ray folds repeats
    if HOLD is not None:
        hold_after(*HOLD)
    time.sleep(SLOW_S)
    out = []
    for p in pages:
        if p.doc % 11 == 5 and p.no == 1:
            out.append(cu.ItemFailure(cu.InputError(f"page {p.no} of doc {p.doc} is unreadable")))
        else:
            out.append({"doc": p.doc, "no": p.no, "text": p.text.upper(), "scan": p.scan})
    return out


def blank(pages):
    return [(p["no"] != 3, "blank page") for p in pages]


def join(groups):
    return ["\n".join(p["text"] for p in g) for g in groups]


def build():
    Doc = cu.Domain("doc")
    P = Doc.child("page")
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(cu.stage(render, batch_size=2), into=P)
    text = pages.map(cu.stage(ocr, batch_size=3)).filter(cu.stage(blank, batch_size=4))
    pipe.output("pages", text, files={"scan": ".bin"})
    pipe.output("docs", text.reduce(cu.stage(join)), schema={"value": "string"})
    return pipe


if __name__ == "__main__":
    out = sys.argv[1]
    SLOW_S = 0.2 if "--slow" in sys.argv else 0.0
    executor = sys.argv[sys.argv.index("--executor") + 1] if "--executor" in sys.argv else "local"
    opts = {"address": sys.argv[sys.argv.index("--address") + 1]} if "--address" in sys.argv else {}
    docs = int(sys.argv[sys.argv.index("--docs") + 1]) if "--docs" in sys.argv else N_DOCS
    if "--hold-after" in sys.argv:
        near = None if "://" in out else Path(out).parent  # an output URL (s3://): the system's temporary dir
        HOLD = (int(sys.argv[sys.argv.index("--hold-after") + 1]), tempfile.mkdtemp(prefix="held-", dir=near))
    res = cu.run(build(), range(docs), executor=executor, output_dir=out, resume="--resume" in sys.argv,
                 input_batch_size=3, inflight=2, sink_options={"shard_rows": 9}, progress="--progress" in sys.argv,
                 **opts)
    print("done", res.counts, flush=True)
