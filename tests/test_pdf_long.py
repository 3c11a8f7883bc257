"""A 3,000-page PDF through the recipe with bounded memory (tests/pdf_long_job.py, in a fresh
process so its peak RSS is its own: the job reads VmHWM, since on Linux `resource.getrusage`'s
ru_maxrss carries the test session's own peak over fork and exec).

Measured on this 2-core machine: peak RSS about 250 MB for 3,000 pages (about 230 MB for 300
pages and 300 MB for 15,000: a few KB per page in flight), most of it the libraries (PyMuPDF,
pyarrow, onnxruntime and the two RapidOCR actors the recipe starts). The bound, 1 GiB, is four
times that, and below what holding the pages would take: their pixels at the recipe's 200 dpi
would be 3,000 x 833 x 167 x 3 bytes = 1.25 GB, and a Document -> pages stage that read every
page's text and regions at once, or a reducer that waited on a global barrier, would grow with
the page count and show here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

JOB = Path(__file__).resolve().parent / "pdf_long_job.py"
PAGES = 3000
MAX_PEAK_MB = 1024


def test_a_3000_page_pdf_runs_with_bounded_memory(tmp_path):
    proc = subprocess.run([sys.executable, str(JOB), str(tmp_path), str(PAGES)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"{PAGES} pages: {report}")
    assert report["rc"] == 0 and report["pages"] == PAGES
    assert report["peak_rss_mb"] < MAX_PEAK_MB, report
    (doc,) = pq.read_table(tmp_path / "out" / "documents").to_pylist()
    assert doc["status"] == "present" and doc["pages"] == PAGES
    assert doc["routes"] == {"text_layer": PAGES, "ocr": 0, "layout": 0, "empty": 0}
    pages = pq.read_table(tmp_path / "out" / "pages", columns=["lineage", "route", "markdown"]).to_pylist()
    assert sorted(p["lineage"][1] for p in pages) == list(range(PAGES))  # every page once
    assert all(p["route"] == "text_layer" for p in pages)
    lines = doc["markdown"].split("\n\n")
    assert [ln.split(" of the long")[0] for ln in lines] == [f"Page {n}" for n in range(1, PAGES + 1)]  # in order
