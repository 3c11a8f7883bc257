"""The bundled pdf_to_markdown recipe on the real PDFs of ../shared/data/pdfs, with the local
executor and Parquet output, as `curate run pdf_to_markdown --input ... --output ...` runs it.

One run over the whole folder (module fixture: the layout model on every text-layer page, and
RapidOCR on the fax; the 285-page MuPDF book in a run of its own by the rules path) serves most
tests: bad inputs are FAILED rows with their causes and every other document is
PRESENT; born-digital documents keep pdftotext's words (token F1 >= 0.9 against
tests/data/pdftotext, written by scripts/pdftotext-refs); CJK and Arabic keep their script; the
fax is read by OCR; every page is one row, in page order, with its route."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pdf_samples import REAL, mixed_pdf, write_pdf
from pdf_tokens import f1

from curate.cli import EXIT_PARTIAL, main
from curate.recipe import load_recipe

ROOT = Path(__file__).resolve().parent.parent
REFS = Path(__file__).resolve().parent / "data" / "pdftotext"
EXAMPLES = ROOT / "examples" / "data" / "pdfs"
RUN = ["--executor", "local", "--no-progress"]
MIN_F1 = 0.9
MIN_REF_TOKENS = 100  # F1 of a 5-word page says nothing: those are checked for their script or words
FAILED = {  # file -> what its cause must say
    "docling_not_a_pdf.pdf": ["not a PDF", "does not start with '%PDF-'", "leave it out of the input"],
    "pdfjs_bug1020226_broken.pdf": ["damaged", "recovered no page", "qpdf"],
    "pypdf_encrypted_pw_openpassword.pdf": ["encrypted", "needs a password", "passwords"],
}
PAGES = {"pymupdf_mupdf_explored.pdf": 285, "docling_redp5110_sampled.pdf": 18, "mineru_demo3_tableformer.pdf": 10,
         "pypdf_vicksburg_scan_ocr.pdf": 6, "pdfjs_vertical_japanese.pdf": 3, "docling_code_and_formula.pdf": 2}
SLEREXE = ["slerexe", "company", "facsimile", "photocell", "raster", "transmission", "dorset", "sincerely"]


def _run(tmp: Path, inputs: list[str], *extra: str) -> tuple[int, dict[str, list[dict]]]:
    out = tmp / "out"
    tmp.mkdir(parents=True, exist_ok=True)
    given = [a for i in inputs for a in ("--input", i)]
    rc = main(["run", "pdf_to_markdown", *given, "--output", str(out), *RUN, *extra])
    tables = {name: sorted(pq.read_table(out / name).to_pylist(), key=lambda r: r["lineage"])
              for name in ("documents", "pages")}
    return rc, tables


BOOK = "pymupdf_mupdf_explored.pdf"  # 285 pages: through the rules path (see `folder`)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Every PDF of ../shared/data/pdfs through the recipe: (exit code, {file name: document row},
    pages rows, file names in input order). The 285-page MuPDF book runs with
    `pools.layout.init.model=rules`: the layout model's ~0.8 s a page would add some 4 CPU
    minutes to CI, and the layout path is what the other documents here (and test_pdf_eval,
    test_pdf_layout) check. Its rows are put back at its place in the folder's order."""
    names = sorted(p.name for p in REAL.glob("*.pdf"))
    rest = [n for n in names if n != BOOK]
    rc, tables = _run(tmp_path_factory.mktemp("folder"), [str(REAL / n) for n in rest])
    rc_book, book = _run(tmp_path_factory.mktemp("book"), [str(REAL / BOOK)], "--set", "pools.layout.init.model=rules")
    assert rc_book == 0
    for run, order in ((tables, rest), (book, [BOOK])):  # each run's input index -> the folder's
        for r in run["documents"] + run["pages"]:
            r["lineage"] = [names.index(order[r["lineage"][0]]), *r["lineage"][1:]]
    pages = sorted(tables["pages"] + book["pages"], key=lambda r: r["lineage"])
    docs = {names[r["lineage"][0]]: r for r in tables["documents"] + book["documents"]}
    return rc, docs, pages, names


def test_bad_inputs_fail_alone_with_a_cause_and_every_other_document_is_present(folder):
    rc, docs, _, names = folder
    assert rc == EXIT_PARTIAL  # finished, some inputs FAILED
    assert set(docs) == set(names)  # one row per input
    for name, row in docs.items():
        if name in FAILED:
            assert row["status"] == "failed" and row["cause_kind"] == "input", (name, row["cause"])
            assert name in row["cause"] and all(w in row["cause"] for w in FAILED[name]), row["cause"]
        else:
            assert row["status"] == "present", (name, row["cause"])
    assert docs["pdfjs_xref_missing.pdf"]["markdown"] == "Reduced test-case"  # repaired by MuPDF, read
    assert docs["small_tiny.pdf"]["routes"]["empty"] == 1 and docs["small_tiny.pdf"]["markdown"] == ""


@pytest.mark.parametrize("ref", sorted(p.stem for p in REFS.glob("*.txt")))
def test_born_digital_documents_keep_the_words_of_pdftotext(folder, ref):
    _, docs, _, _ = folder
    reference = (REFS / f"{ref}.txt").read_text(encoding="utf-8")
    row = docs[f"{ref}.pdf"]
    if row["status"] != "present":  # the encrypted one: checked with its password below
        assert ref == "pypdf_encrypted_pw_openpassword"
        return
    score = f1(row["markdown"], reference)
    print(f"{ref}: token F1 {score:.3f}")
    if len(re.findall(r"\w+", reference)) >= MIN_REF_TOKENS:
        assert score >= MIN_F1, f"{ref}: token F1 {score:.3f} < {MIN_F1}"
    else:
        assert score > 0.5, f"{ref}: token F1 {score:.3f}"


def test_chinese_arabic_and_japanese_keep_their_script(folder):
    _, docs, _, _ = folder
    scripts = {"pymupdf_chinese_tables.pdf": r"[\u4e00-\u9fff]", "docling_right_to_left_arabic.pdf": r"[\u0600-\u06ff]",
               "pdfjs_vertical_japanese.pdf": r"[\u3040-\u30ff]"}
    for name, script in scripts.items():
        assert len(re.findall(script, docs[name]["markdown"])) >= 5, name
    tategaki = docs["pdfjs_vertical_japanese.pdf"]["markdown"]  # two vertical lines, read right to left
    assert 0 <= tategaki.find("あいうえお") < tategaki.find("日本語")  # no spaces inside CJK


def test_the_fax_is_read_by_ocr_into_real_words(folder):
    _, docs, pages, names = folder
    row = docs["docling_scanned_fax_letter.pdf"]
    assert row["routes"] == {"text_layer": 0, "ocr": 1, "layout": 0, "empty": 0}
    words = set(re.findall(r"[a-z]+", row["markdown"].lower()))
    assert len(words & set(SLEREXE)) >= 6, sorted(words & set(SLEREXE))
    (page,) = [p for p in pages if names[p["lineage"][0]] == "docling_scanned_fax_letter.pdf"]
    assert page["route"] == "ocr" and page["reason"] == "no text layer" and page["seconds"] > 0


def test_every_page_is_one_row_in_page_order_with_its_route(folder):
    _, docs, pages, names = folder
    per_doc: dict[str, list] = {}
    for p in pages:
        per_doc.setdefault(names[p["lineage"][0]], []).append(p)
    assert set(per_doc) == {n for n, r in docs.items() if r["status"] == "present"}
    for name, rows in per_doc.items():
        assert [p["lineage"][1] for p in rows] == list(range(len(rows))), name  # each ordinal once, in order
        assert all(p["status"] == "present" and p["route"] in ("text_layer", "ocr", "empty") for p in rows)
        assert docs[name]["pages"] == len(rows) == PAGES.get(name, len(rows))
        assert docs[name]["routes"] == {**{r: 0 for r in ("text_layer", "ocr", "layout", "empty")},
                                        **Counter(p["route"] for p in rows)}
    for name in ("pymupdf_mupdf_explored.pdf", "docling_redp5110_sampled.pdf", "mineru_demo3_tableformer.pdf"):
        # the document is its pages, in page order (hyphens aside: the document decides a line-end
        # hyphen by all its words, a page by its own: "antialiasing" on its page, "anti-aliasing")
        doc, at = docs[name]["markdown"].replace("-", ""), 0
        for p in per_doc[name]:
            probe = _probe(p["markdown"]).replace("-", "")
            found = doc.find(probe, at)
            assert found >= at, f"{name}: page {p['lineage'][1]} is not after page {p['lineage'][1] - 1}"
            at = found


def _probe(markdown: str) -> str:
    """A line of a page long enough to be found once in its document (running lines excluded)."""
    lines = [ln for ln in markdown.splitlines()[1:-1] if len(ln) > 60]
    return lines[0] if lines else ""


def test_running_headers_and_footers_are_dropped_from_the_document(folder):
    _, docs, pages, names = folder
    redp = docs["docling_redp5110_sampled.pdf"]["markdown"]
    footer = "Row and Column Access Control Support in IBM DB2 for i"
    redp_pages = [p["markdown"] for p in pages if names[p["lineage"][0]] == "docling_redp5110_sampled.pdf"]
    assert sum(footer in md for md in redp_pages) <= 2  # a footer by its class and place, on each page
    assert redp.count(footer) <= 2  # and not repeated in the document (the cover's title stays)
    assert "Copyright IBM Corp. 2014" not in redp


def test_an_encrypted_pdf_opens_with_the_password_the_recipe_gives(tmp_path):
    name = "pypdf_encrypted_pw_openpassword.pdf"
    rc, tables = _run(tmp_path, [str(REAL / name)], "--set", "steps.pages.expand.init.passwords=[wrong, openpassword]")
    assert rc == 0
    (doc,) = tables["documents"]
    assert doc["status"] == "present" and doc["routes"]["text_layer"] == 1
    assert f1(doc["markdown"], (REFS / "pypdf_encrypted_pw_openpassword.txt").read_text()) >= MIN_F1


def test_the_bundled_examples_run(tmp_path):
    """examples/data/pdfs: a paper page (text layer), a broken file, a blank page (the fax, also
    there, is the folder run's)."""
    files = sorted(p for p in EXAMPLES.glob("*.pdf") if "fax" not in p.name)
    assert [p.name for p in files] == ["docling_2305.03393v1-pg9.pdf", "pdfjs_bug1020226_broken.pdf", "small_tiny.pdf"]
    assert sum(p.stat().st_size for p in EXAMPLES.iterdir()) < 1_000_000
    rc, tables = _run(tmp_path, [str(p) for p in files])
    assert rc == EXIT_PARTIAL
    assert [d["status"] for d in tables["documents"]] == ["present", "failed", "present"]
    assert [(p["lineage"], p["route"]) for p in tables["pages"]] == [([0, 0], "text_layer"), ([2, 0], "empty")]
    # the paper's table, as HTML: its header cells span two rows, "TEDs" three columns
    assert '<td rowspan="2"># enc-layers</td><td rowspan="2"># dec-layers</td>' in tables["documents"][0]["markdown"]
    assert '<td colspan="3">TEDs</td>' in tables["documents"][0]["markdown"]


def test_the_recipe_bounds_what_one_page_can_cost():
    """A page that hangs the renderer or OCR fails alone once its batch is past timeout_s; an
    absurdly large page is capped (long side, then max_pixels) before it is rendered."""
    recipe = load_recipe(ROOT / "recipes" / "pdf_to_markdown.yaml", input_given=True)
    steps = {s["id"]: s for s in recipe.data["steps"]}
    assert all(steps[s][kind]["timeout_s"] > 0 for s, kind in [("crops", "map"), ("lines", "expand"), ("read_lines", "map")])
    assert recipe.data["pools"]["render"]["init"]["max_pixels"] == 3500 * 3500
    assert steps["pages"]["expand"]["init"]["max_long_side"] == 3500 and recipe.input_spec is None
    assert recipe.description.startswith("PDF files to Markdown")


def test_a_page_past_the_pixel_cap_fails_alone_and_its_document_says_why(tmp_path):
    mixed = mixed_pdf(tmp_path / "mixed.pdf")  # a text page, then a scan
    other = write_pdf(tmp_path / "other.pdf", ["Another document, unharmed."])
    cap = ["--set", "pools.render.init.max_pixels=10000"]
    rc, tables = _run(tmp_path / "suppress", [str(mixed), str(other)], *cap)
    assert rc == EXIT_PARTIAL
    (doc, fine), pages = tables["documents"], tables["pages"]
    assert doc["status"] == "suppressed" and "page 2 would render at" in doc["cause"]
    assert "over the cap of 10,000 pixels" in doc["cause"] and str(mixed) in doc["cause"]
    assert fine["status"] == "present" and fine["markdown"] == "Another document, unharmed."
    assert [(p["lineage"], p["status"], p["route"]) for p in pages] == [
        ([0, 0], "present", "text_layer"), ([0, 1], "suppressed", None), ([1, 0], "present", "text_layer")]
    assert pages[1]["cause"] == doc["cause"]
    rc, tables = _run(tmp_path / "drop", [str(mixed)], *cap, "--set", "steps.documents.reduce.on_child_failure=drop")
    (doc,) = tables["documents"]
    assert doc["status"] == "present" and doc["markdown"] == "A page of plain text, read from its text layer."
