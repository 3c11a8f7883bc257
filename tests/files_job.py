"""A job for the kill test of payload files staged by workers (test_worker_files.py), run as a
real subprocess: `python files_job.py OUT [--resume] [--hold-after N]`. Each input is one batch
of `make`, whose value's `blob` is a payload file its worker stages; a flush commits every
FLUSH_ROWS roots. With --hold-after N, batches after the first N print their line and then wait
for the kill (tests/kills.py), so after N + 1 lines the last roots' files are staged and their
flush is not committed."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from kills import hold_after

import curate as cu

N_DOCS = 8
FLUSH_ROWS = 3  # roots per commit: 3 roots done commit, the next ones wait
BLOB_BYTES = 20_000
HOLD: tuple[int, str] | None = None


def blob(doc: int) -> bytes:
    return bytes([doc % 256, 7]) * (BLOB_BYTES // 2)


def make(docs):
    print("ran", docs[0], flush=True)
    if HOLD is not None:
        hold_after(*HOLD)
    return [{"doc": d, "blob": blob(d)} for d in docs]


def build() -> cu.Pipeline:
    pipe = cu.Pipeline(cu.Domain("doc"))
    made = pipe.source.map(cu.stage(make, batch_size=1))
    pipe.output("blobs", made, files={"blob": {"ext": ".bin", "name": "{key}"}})
    return pipe


def main(out: str, resume: bool) -> None:
    res = cu.run(build(), range(N_DOCS), executor="local", output_dir=out, resume=resume, input_batch_size=1,
                 sink_options={"shard_rows": FLUSH_ROWS, "flush_s": 3600.0})
    print("done", res.counts, flush=True)


if __name__ == "__main__":
    if "--hold-after" in sys.argv:
        near = None if "://" in sys.argv[1] else Path(sys.argv[1]).parent
        HOLD = (int(sys.argv[sys.argv.index("--hold-after") + 1]), tempfile.mkdtemp(prefix="held-", dir=near))
    main(sys.argv[1], "--resume" in sys.argv)
