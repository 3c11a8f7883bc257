"""The curation signals and filters in the PDF recipes, run as `curate run` runs them, with the
local executor and Parquet output: pdf_to_markdown's pages and documents carry every signal and
drop nothing (a page of repeated lines included), and pdf_curated drops a planted page of
boilerplate (its document keeps the other page) and a document of nothing but boilerplate, each
row keeping its reason and its signals."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from pdf_samples import REAL

from curate.cli import main
from curate.modalities.text.signals import SIGNALS

fitz = pytest.importorskip("pymupdf", reason="the test PDFs are written with PyMuPDF")
pytest.importorskip("pycld2", reason="the language signal is CLD2's")

ROOT = Path(__file__).resolve().parent.parent
RUN = ["--executor", "local", "--no-progress"]
RULES = ["--set", "pools.layout.init.model=rules"]  # the filters read the Markdown, whichever reader made it
SPAM = "Buy cheap watches online now, best prices guaranteed!"
SPAM_LINES = 14  # 13 of its 14 lines repeat the first: dup_line_frac 0.9286
PROSE = [
    "The river rose slowly during the night, and by morning the lower fields were under water. The farmers moved "
    "their animals to the hill behind the church, where the ground stays dry in every season. Nobody in the village "
    "could remember a flood like it, although the oldest families kept stories of one from their grandparents' time.",
    "Engineers came from the city a week later to measure the damage. They found that the old stone bridge had "
    "survived, but two wooden footbridges downstream were gone, and a section of the road to the market town had "
    "collapsed into a ditch. Repairs began in spring, paid for partly by the county and partly by a collection among "
    "the neighbours themselves.",
]


def _pdf(path: Path, pages: list[str | None]) -> Path:
    """One page per entry: a paragraph of prose in a text box, or (None) SPAM_LINES lines of spam,
    each its own block."""
    doc = fitz.open()
    for text in pages:
        page = doc.new_page(width=420, height=595)
        if text is None:
            for i in range(SPAM_LINES):
                page.insert_text((50, 60 + 36 * i), SPAM, fontsize=10)
        else:
            page.insert_textbox(fitz.Rect(50, 50, 370, 545), text, fontsize=10)
    doc.save(path)
    return path


def _run(recipe: str, out: Path, inputs: list[Path], *extra: str) -> dict[str, list[dict]]:
    given = [a for p in inputs for a in ("--input", str(p))]
    main(["run", recipe, *given, "--output", str(out), *RUN, *extra])
    return {name: sorted(pq.read_table(out / name).to_pylist(), key=lambda r: r["lineage"])
            for name in ("documents", "pages")}


def test_the_default_recipe_writes_every_signal_and_drops_nothing(tmp_path):
    real = REAL / "docling_2305.03393v1-pg9.pdf"  # one born-digital page of a paper, through the layout model
    mixed = _pdf(tmp_path / "mixed.pdf", [PROSE[0], None])
    tables = _run("pdf_to_markdown", tmp_path / "out", [real, mixed])
    assert [r["status"] for t in tables.values() for r in t] == ["present"] * 5  # 2 documents, 3 pages
    for rows in tables.values():
        assert all({"language", "language_score", *SIGNALS} <= set(r) for r in rows)
    paper, mixed_doc = tables["documents"]
    assert paper["language"] == "en" and paper["words"] > 300 and paper["lines_end_punct"] > 0.5
    assert SPAM in mixed_doc["markdown"] and mixed_doc["pages"] == 2  # score only: nothing left out
    spam_page = tables["pages"][2]
    assert spam_page["dup_line_frac"] == round(13 / 14, 4) and spam_page["language"] == "en"


def test_pdf_curated_drops_a_boilerplate_page_and_an_empty_document_with_their_reasons(tmp_path):
    good, mixed, spam = (_pdf(tmp_path / f"{name}.pdf", pages) for name, pages in
                         (("good", PROSE), ("mixed", [PROSE[0], None]), ("spam", [None])))
    tables = _run("pdf_curated", tmp_path / "out", [good, mixed, spam], *RULES)
    docs, pages = tables["documents"], tables["pages"]
    assert [(p["lineage"], p["status"]) for p in pages] == [
        ([0, 0], "present"), ([0, 1], "present"), ([1, 0], "present"), ([1, 1], "dropped"), ([2, 0], "dropped")]
    dropped = pages[3]
    assert dropped["cause_kind"] == "dropped" and dropped["cause"].startswith(
        "dup_line_frac 0.9286 > 0.3; dup_line_char_frac 0.9286 > 0.2; dup_para_frac 0.9286 > 0.3")
    assert SPAM in dropped["markdown"] and dropped["dup_line_frac"] == 0.9286  # its row keeps value and signals
    # a dropped page is left out of its document, which keeps the page that passed
    assert [d["status"] for d in docs] == ["present", "present", "dropped"]
    assert docs[1]["pages"] == 1 and SPAM not in docs[1]["markdown"] and "river rose" in docs[1]["markdown"]
    assert docs[0]["pages"] == 2 and docs[0]["words"] > 100 and docs[0]["cause"] is None
    # every page of the spam document was dropped: it has no words left, and says so
    assert docs[2]["cause"] == "words 0 < 50" and docs[2]["words"] == 0


def test_pdf_curated_is_pdf_to_markdown_with_its_filters_on():
    """The curated recipe must not drift from the default one: the same pools (but the text
    check's CPU share, which makes room for the filters on 2 CPUs), steps and outputs, plus the
    two filters, which the default recipe does not have."""
    default, curated = (yaml.safe_load((ROOT / "recipes" / f"{name}.yaml").read_text())
                        for name in ("pdf_to_markdown", "pdf_curated"))
    assert curated["pools"]["pdf_text"].pop("num_cpus") == 0.15
    assert curated["pools"] == default["pools"] and curated["domains"] == default["domains"]
    assert curated["outputs"] == {**default["outputs"], "documents": "document_kept", "pages": "page_kept"}
    filters = {"page_kept": "page_signals", "document_kept": "document_signals"}
    assert not filters.keys() & {s["id"] for s in default["steps"]}
    steps = [s for s in curated["steps"] if s["id"] not in filters]
    rows = next(s for s in steps if s["id"] == "page_rows")
    assert rows["map"]["from"] == "page_kept"  # the document is made of the pages kept
    rows["map"]["from"] = "page_signals"
    assert steps == default["steps"]
    inits = {s["id"]: s["filter"]["init"] for s in curated["steps"] if s["id"] in filters}
    assert {s["id"]: s["filter"]["from"] for s in curated["steps"] if s["id"] in filters} == filters
    assert all(i["score_only"] is False for i in inits.values())
    assert inits["document_kept"]["at_least"]["words"] == 50 and "words" not in inits["page_kept"]["at_least"]
