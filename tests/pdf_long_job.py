"""A long PDF through the pdf_to_markdown recipe, in a fresh process, reporting its peak memory.

    python tests/pdf_long_job.py WORK_DIR [PAGES]

Writes WORK_DIR/long.pdf (PAGES small pages, one line of text each, written by hand), runs
`curate run pdf_to_markdown` on it with the local executor into WORK_DIR/out, and prints one JSON
line: pages made, the run's exit code, seconds to make and to run, and the process's peak RSS
before and after the run (see `peak_rss_mb`), and what `resource.getrusage` says. Run in a
subprocess by tests/test_pdf_long.py, so the peak is this job's and not the test session's.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # pdf_samples, next to this file

LINE = "Page {n} of the long document: the quick brown fox jumps over the lazy dog."
PAGE_SIZE = (300, 60)  # points: small pages, one line each


def peak_rss_mb() -> float:
    """This process's peak RSS in MB: VmHWM, the high-water mark of its own memory since it
    started (Linux), else `resource.getrusage`. On Linux getrusage's ru_maxrss survives fork and
    exec (the kernel keeps it per process, not per address space), so a job started by a test
    session that grew to 1.3 GB reports 1.3 GB before doing anything."""
    try:
        with open("/proc/self/status") as f:
            return next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:")) / 1024  # kB
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes; macOS: bytes


def getrusage_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_pdf(path: Path, pages: int) -> None:
    from pdf_samples import (
        write_pdf,  # written by hand: 3,000 pages in a few ms, no PyMuPDF memory
    )

    write_pdf(path, [LINE.format(n=n) for n in range(1, pages + 1)], size=PAGE_SIZE)


def main(work: str, pages: int) -> int:
    from curate.cli import main as curate

    work_dir = Path(work)
    start = time.perf_counter()
    make_pdf(work_dir / "long.pdf", pages)
    made = time.perf_counter() - start
    before = peak_rss_mb()
    start = time.perf_counter()
    rc = curate(["run", "pdf_to_markdown", "--input", str(work_dir / "long.pdf"), "--output",
                 str(work_dir / "out"), "--executor", "local", "--no-progress"])
    print(json.dumps({"pages": pages, "rc": rc, "make_s": round(made, 2), "run_s": round(time.perf_counter() - start, 2),
                      "peak_rss_mb_before_run": round(before, 1), "peak_rss_mb": round(peak_rss_mb(), 1),
                      "getrusage_maxrss_mb": round(getrusage_mb(), 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3000))
