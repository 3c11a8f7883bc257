"""benchmarks/pdfquality.py's scoring: each set scored apart, MinerU flash only on the pages it
could load (the rest counted, not failed), and the math check that ran named in the result."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from curate.modalities.pdf.eval_math import TexMath

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _pdfquality(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))  # pdfquality imports its neighbours (common, pdf_compare)
    spec = importlib.util.spec_from_file_location("pdfquality_under_test", BENCH / "pdfquality.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _t(id_: str, pdf: str, **kw) -> dict:
    return {"pdf": pdf, "page": 1, "id": id_, "type": "present", "text": "hello world", **kw}


def test_unloaded_pages_are_counted_apart_only_where_asked(monkeypatch):
    pq = _pdfquality(monkeypatch)
    tests = [_t("a", "a.pdf"), _t("b", "b.pdf"), _t("b2", "b.pdf", text="more")]
    pages = {("a.pdf", 1): "hello world", ("b.pdf", 1): None}
    loaded = pq.score(tests, pages, TexMath(), loaded_only=True)
    assert loaded["rates"]["overall"] == (1, 1) and loaded["unloaded"] == {"pages": 1, "tests": 2}
    every = pq.score(tests, pages, TexMath())
    assert every["rates"]["overall"] == (1, 3) and not every["unloaded"] and len(every["failed"]) == 2
    assert every["math"] == "tex" and "not rendered" in every["math_check"]


def test_the_sets_are_apart_and_name_their_files(monkeypatch):
    pq = _pdfquality(monkeypatch)
    assert set(pq.SETS) == {"development", "independent"}
    assert not set(pq.SETS["development"]) & set(pq.SETS["independent"])
    assert all(f.exists() for files in pq.SETS.values() for f in files)
    assert pq.PYMUPDF4LLM_OPTIONS["header"] is False and pq.PYMUPDF4LLM_OPTIONS["footer"] is False
