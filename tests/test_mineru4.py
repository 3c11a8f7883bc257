"""MinerU 4 through curate (models/mineru4.py, modalities/pdf/mineru4.py, the bundled recipe
pdf_to_markdown_mineru4) against `mineru.parser.parse(path, tier="flash").markdown()` run here
natively on the same born-digital files: token F1 >= 0.99 per file, identical text for files that
fit in one window; bad inputs are FAILED rows with causes while the rest complete; a long file's
windows come back in page order and render back into its document."""

from __future__ import annotations

import collections
import re
import subprocess
import sys
from pathlib import Path

import pytest
from curate.modalities.pdf.mineru4 import (
    MinerU4,
    SplitWindows,
    Window,
    WindowMarkdown,
    WindowRecord,
    join_windows,
    open_pdf,
    split_pages,
)
from curate.modalities.pdf.records import Document, DocumentMarkdown
from pdf_tokens import counts_f1

import curate as cu
from curate.recipe import load_recipe

ROOT = Path(__file__).resolve().parents[1]
PDFS = Path(__file__).resolve().parents[2] / "shared/data/pdfs"
RECIPE = ROOT / "recipes" / "pdf_to_markdown_mineru4.yaml"
SMALL = ["docling_2305.03393v1-pg9.pdf", "docling_code_and_formula.pdf", "docling_right_to_left_arabic.pdf"]
LONG = "docling_redp5110_sampled.pdf"  # 18 pages: three windows of 6, so the join is exercised
WINDOW_PAGES = 6
GOOD = SMALL + [LONG]
BAD = {"docling_not_a_pdf.pdf": "not a PDF", "pdfjs_bug1020226_broken.pdf": "too damaged to open",
       "pypdf_encrypted_pw_openpassword.pdf": "encrypted and no password was given"}
MIN_F1 = 0.99
DATA_URI = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+")  # an embedded image counts as one token


def tokens(markdown: str) -> collections.Counter:
    """Lowercase Unicode word tokens, an embedded image (base64 data URI) as one token."""
    return collections.Counter(re.findall(r"\w+", DATA_URI.sub(" image ", markdown).lower()))


def token_f1(reference: str, candidate: str) -> float:
    """Multiset F1 of the candidate's tokens against the reference's (these tokens, not pdftotext's)."""
    return counts_f1(tokens(candidate), tokens(reference))


def build_pipeline(window_pages: int = WINDOW_PAGES) -> cu.Pipeline:
    """The recipe's dataflow, plus the windows as an output of their own."""
    pipe = cu.Pipeline(Document)
    windows = pipe.source.expand(cu.stage(SplitWindows, init={"window_pages": window_pages}, batch_size=8),
                                 into=Window)
    mineru = cu.Pool(MinerU4, init={"tier": "flash"}, replicas=2, num_cpus=0.5)
    parsed = windows.map(mineru.stage("parse"))
    pipe.output("documents", parsed.reduce(join_windows))
    pipe.output("windows", parsed)
    return pipe


@pytest.fixture(scope="module")
def native() -> dict[str, str]:
    """What a user running MinerU 4 flash on each file gets."""
    import mineru.parser

    return {name: mineru.parser.parse(PDFS / name, tier="flash").markdown() for name in GOOD}


@pytest.fixture(scope="module")
def local_run():
    """The good files and the bad ones, through curate on the local executor."""
    names = GOOD + list(BAD)
    result = cu.run(build_pipeline(), [str(PDFS / n) for n in names], executor="local", input_batch_size=8)
    return names, result


# ---- curate vs native ------------------------------------------------------------------------
def test_each_file_matches_native_mineru(local_run, native):
    names, result = local_run
    docs = dict(zip(names, result.values("documents")))
    scores = {}
    for name in GOOD:
        doc = docs[name]
        assert isinstance(doc, DocumentMarkdown), f"{name}: {doc}"
        scores[name] = token_f1(native[name], doc.markdown)
        assert scores[name] >= MIN_F1, f"{name}: token F1 {scores[name]:.4f} < {MIN_F1}"
    for name in SMALL:  # one window: MinerU's own Markdown, byte for byte
        assert docs[name].markdown == native[name], name
    assert scores[LONG] >= 0.999, scores  # three windows: headings may differ, words do not


def test_documents_count_pages_and_chars(local_run):
    names, result = local_run
    docs = dict(zip(names, result.values("documents")))
    assert [docs[n].pages for n in GOOD] == [1, 2, 1, 18]
    assert all(docs[n].chars == len(docs[n].markdown) > 0 for n in GOOD)
    assert docs[LONG].routes == {"text_layer": 18}


# ---- bad input -------------------------------------------------------------------------------
def test_bad_inputs_are_failed_rows_with_causes_and_the_rest_complete(local_run):
    names, result = local_run
    items = dict(zip(names, result.items("documents")))
    for name, says in BAD.items():
        item = items[name]
        assert item.status is cu.Status.FAILED and item.cause.kind == "input", (name, item)
        assert name in item.cause.message and says in item.cause.message, item.cause.message
    assert all(items[n].status is cu.Status.PRESENT for n in GOOD)


def test_missing_empty_and_encrypted_files_say_how_to_fix(tmp_path):
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(_zero_page_pdf())
    missing = open_pdf(str(tmp_path / "gone.pdf"))
    assert isinstance(missing, cu.ItemFailure) and "no such file" in str(missing.cause)
    assert "has no pages" in str(open_pdf(str(empty)).cause)
    wrong = open_pdf(str(PDFS / "pypdf_encrypted_pw_openpassword.pdf"), ("guess", "again"))
    assert "none of the passwords given opens it" in str(wrong.cause) and "passwords=" in str(wrong.cause)


def test_a_window_mineru_cannot_parse_fails_alone_naming_its_file():
    model = MinerU4()
    good = WindowRecord(str(PDFS / SMALL[0]), 0, 0, 1)
    bad = WindowRecord(str(PDFS / "docling_not_a_pdf.pdf"), 0, 0, 1)  # split would refuse it: a race
    out = model.parse([bad, good])
    assert isinstance(out[0], cu.ItemFailure) and isinstance(out[1], WindowMarkdown)
    assert "docling_not_a_pdf.pdf pages 1-1 of 1: MinerU 4 could not parse it" in str(out[0].cause)


def test_an_encrypted_file_parses_with_its_password():
    windows = SplitWindows(passwords=["guess", "openpassword"])([str(PDFS / "pypdf_encrypted_pw_openpassword.pdf")])[0]
    assert [(w.first_page, w.last_page, w.password) for w in windows] == [(0, 0, "openpassword")]
    (doc,) = join_windows([MinerU4().parse(windows)])
    assert doc.markdown.startswith("Lorem ipsum dolor sit amet")


# ---- windows ---------------------------------------------------------------------------------
def test_windows_come_back_in_page_order(local_run):
    names, result = local_run
    i = names.index(LONG)
    items = [it for it in result.items("windows") if it.lineage[0] == i]
    assert [it.lineage for it in items] == [(i, 0), (i, 1), (i, 2)]
    assert [it.value.pages for it in items] == [6, 6, 6]
    doc = result.values("documents")[i].markdown
    starts = [doc.find(_first_line(it.value.markdown)) for it in items]
    assert -1 not in starts and starts == sorted(starts), starts


def test_split_is_balanced_and_long_files_carry_the_whole_file_verdict():
    assert split_pages(285, 32) == [(i * 285 // 9, (i + 1) * 285 // 9 - 1) for i in range(9)]
    assert split_pages(18, 6) == [(0, 5), (6, 11), (12, 17)] and split_pages(1, 32) == [(0, 0)]
    # pages 3-5 of redp5110 alone look scanned to MinerU; the whole file is a text PDF
    windows = SplitWindows(window_pages=3)([str(PDFS / LONG)])[0]
    assert {w.classified_as for w in windows} == {"txt"}
    assert [w.page_range for w in windows[:2]] == ["1-3", "3-6"]  # page 3 read again as context
    assert [w.context_pages for w in windows[:2]] == [0, 1]
    (one,) = SplitWindows()([str(PDFS / SMALL[1])])[0]
    assert one.whole and one.page_range == "" and one.classified_as is None


def test_join_without_pages_uses_minerus_page_separator():
    parts = [WindowMarkdown("# A", 1, 3, "text_layer"), WindowMarkdown("", 1, 0, "text_layer"),
             WindowMarkdown("b", 2, 1, "ocr")]
    (doc,) = join_windows([parts])
    assert doc == DocumentMarkdown("# A\n\nb", 4, 6, {"text_layer": 2, "ocr": 2})


def test_records_check_themselves():
    with pytest.raises(ValueError, match="outside"):
        WindowRecord("a.pdf", 3, 5, 5)
    with pytest.raises(ValueError, match="context pages"):
        WindowRecord("a.pdf", 0, 1, 5, context_pages=1)
    with pytest.raises(ValueError, match="window_pages"):
        SplitWindows(window_pages=0)
    with pytest.raises(ValueError, match="tier"):
        MinerU4(tier="turbo")


# ---- the bundled recipe, on Ray --------------------------------------------------------------
def test_recipe_validates_and_takes_its_tier_from_set():
    recipe = load_recipe(RECIPE, ["pools.mineru.init.tier=standard"], input_given=True)
    assert recipe.description and recipe.input_spec is None
    assert recipe.data["pools"]["mineru"]["init"]["tier"] == "standard"
    assert recipe.data["pools"]["mineru"]["replicas"] == 2


@pytest.mark.slow
def test_recipe_on_ray_matches_native(ray_cluster, native):
    recipe = load_recipe(RECIPE, input_given=True)
    names = SMALL[:2] + ["docling_not_a_pdf.pdf"]
    result = cu.run(recipe.pipeline, [str(PDFS / n) for n in names], executor="ray", **recipe.run_options)
    docs = result.values("documents")
    assert [d.markdown for d in docs[:2]] == [native[n] for n in SMALL[:2]]
    assert isinstance(docs[2], cu.Issue) and docs[2].status is cu.Status.FAILED


def test_importing_the_backend_loads_no_pdf_library():
    probe = ("import sys; import curate.models.mineru4, curate.modalities.pdf.mineru4; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mineru', 'pypdfium2', 'docvortex')))")
    out = subprocess.run([sys.executable, "-c", probe], check=False, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


def _first_line(markdown: str) -> str:
    return next(line for line in markdown.splitlines() if line.strip() and "base64" not in line)


def _zero_page_pdf() -> bytes:
    """A well-formed PDF whose page tree is empty."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, obj in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (i, obj)
    xref = len(out)
    out += b"xref\n0 3\n0000000000 65535 f \n" + b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size 3 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)
