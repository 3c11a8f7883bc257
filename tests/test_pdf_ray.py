"""The whole pdf_to_markdown recipe once on Ray (the session's local Ray): a born-digital page,
a small scan (both routes, RapidOCR actors included), a blank page and a broken file give the
same rows as on the local executor."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
from pdf_samples import scan_pdf

from curate.cli import EXIT_PARTIAL, main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "data" / "pdfs"
PAYLOAD = {"documents": ("status", "cause", "markdown", "pages", "routes"), "pages": ("status", "markdown", "route", "reason")}


def _rows(out: Path) -> dict[str, list[tuple]]:
    return {name: [(tuple(r["lineage"]), *(r[c] for c in cols))
                   for r in sorted(pq.read_table(out / name).to_pylist(), key=lambda r: r["lineage"])]
            for name, cols in PAYLOAD.items()}


def test_the_recipe_on_ray_gives_the_rows_of_the_local_executor(ray_cluster, tmp_path):
    scan = scan_pdf(tmp_path / "scan.pdf", ["Hello from a scanned page", "read by RapidOCR on Ray"])
    other = scan_pdf(tmp_path / "other.pdf", ["Quite another letter", "its lines go home too"])
    inputs = [str(EXAMPLES / "docling_2305.03393v1-pg9.pdf"), str(scan), str(EXAMPLES / "pdfjs_bug1020226_broken.pdf"),
              str(EXAMPLES / "small_tiny.pdf"), str(other)]
    given = [a for i in inputs for a in ("--input", i)]
    for executor in ("ray", "local"):
        rc = main(["run", "pdf_to_markdown", *given, "--output", str(tmp_path / executor), "--executor", executor,
                   "--no-progress", "--set", "pools.ocr.replicas=1"])
        assert rc == EXIT_PARTIAL
    on_ray, local = _rows(tmp_path / "ray"), _rows(tmp_path / "local")
    assert on_ray == local
    docs, pages = on_ray["documents"], on_ray["pages"]
    assert [d[1] for d in docs] == ["present", "present", "failed", "present", "present"]
    assert "damaged" in docs[2][2] and "pdfjs_bug1020226_broken.pdf" in docs[2][2]
    assert [(p[0], p[3]) for p in pages] == [((0, 0), "text_layer"), ((1, 0), "ocr"), ((3, 0), "empty"), ((4, 0), "ocr")]
    # each scan's lines (read as separate items, in batches that may mix the two) came back to their own page
    assert "scanned page" in pages[1][2].lower() and "rapidocr" in pages[1][2].lower() and "letter" not in pages[1][2]
    assert "another letter" in pages[3][2].lower() and "go home" in pages[3][2].lower() and "scanned" not in pages[3][2]
