"""The layout pool's skip test (`layout_skip`): which pages it reads by the rules instead of the
layout model, decided on generated pages from what the pool reads anyway, and what the pool
does with the decision (the page's reason says it; `skip: never` and the feature choice).

The decision is a pure function: `decide` over `PageFacts` is tested on plain numbers, `facts`
on the "dict" extraction of pages eval_set and PyMuPDF write here (deterministic; no timing)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from curate.modalities.pdf.layout_skip import (
    MAX_MATH_CHARS,
    MAX_PATHS,
    MAX_SCRIPTS,
    Decision,
    PageFacts,
    decide,
    image_features,
)

pymupdf = pytest.importorskip("pymupdf")

from curate.modalities.pdf import eval_set  # noqa: E402
from curate.modalities.pdf.regions import text_flags  # noqa: E402

A4 = eval_set.A4
BODY = ("A page of plain prose in one column, the kind of page a report or a novel is made of, "
        "set in one font at one size. ") * 6


def _facts(page):
    from curate.modalities.pdf.layout import page_facts

    return page_facts(page, page.get_text("dict", flags=text_flags(pymupdf))["blocks"], page.get_cdrawings())


def _page(build, tmp_path: Path, name: str = "page.pdf"):
    """A one-page PDF written by `build(page)`, saved and opened again (as the pool reads it)."""
    doc = pymupdf.open()
    build(doc.new_page(width=A4[0], height=A4[1]))
    doc.save(tmp_path / name)
    return pymupdf.open(tmp_path / name)[0]


def _prose(page, top: float = 120) -> None:
    """A heading and two paragraphs of body text, in one column."""
    page.insert_text((eval_set.MARGIN, top - 30), "A Heading Above Plain Prose", fontsize=16, fontname="hebo")
    eval_set._paragraphs(page, (eval_set.MARGIN, top, A4[0] - eval_set.MARGIN, 700), [BODY, BODY])


# ---- decide, on plain numbers ------------------------------------------------------------------
def test_a_page_with_nothing_but_text_in_one_column_is_skipped():
    assert decide(PageFacts(lines=40, paths=MAX_PATHS, scripts=MAX_SCRIPTS)) == Decision(
        True, "single column, no tables, figures, formulas or running heads")


@pytest.mark.parametrize("fact, value, why", [
    ("images", 1, "an image"), ("paths", MAX_PATHS + 1, "vector paths"), ("rotation", 90, "turned by /Rotate"),
    ("vertical", 3, "vertical text"), ("columns", True, "two columns"), ("grid_rows", 3, "a table without rules"),
    ("math_fonts", 1, "math font"), ("math_chars", 10, "math symbols"), ("scripts", MAX_SCRIPTS + 1, "super"),
    ("edge_lines", 1, "running head"), ("apart_lines", 1, "running head"), ("captions", 1, "caption"),
    ("mono", 4, "monospaced")])
def test_anything_the_model_reads_differently_runs_it_and_says_why(fact, value, why):
    got = decide(replace(PageFacts(lines=40), **{fact: value}))
    assert not got.skip and why in got.why, got


# ---- facts, on generated pages -------------------------------------------------------------------
def test_a_heading_over_plain_prose_skips_the_model(tmp_path):
    f = _facts(_page(_prose, tmp_path))
    assert f.lines > 10 and decide(f).skip, f


def test_the_eval_sets_hyphenated_page_skips_it(tmp_path):
    f = _facts(_page(eval_set.hyphenated, tmp_path))
    assert decide(f).skip, f  # a title and six lines: the rules read it as the model does (but for the title's level)


@pytest.mark.parametrize("build, why", [
    (eval_set.two_columns, "two columns"), (eval_set.booktabs, "vector paths"),
    (eval_set.borderless, "a table without rules"), (eval_set.figure, "vector paths"),
    (eval_set.running_header, "running head"), (eval_set.rotated, "turned by /Rotate")])
def test_the_eval_sets_hard_pages_run_the_model(tmp_path, build, why):
    got = decide(_facts(_page(build, tmp_path)))
    assert not got.skip and why in got.why, got


def test_a_page_with_formulas_runs_the_model(tmp_path):
    def build(page):
        _prose(page)
        y = 400
        for base in ("x", "y", "z"):  # x^2, y^2, z^2: raised small digits after a letter, as TeX sets them
            page.insert_text((100, y), f"{base} + 1 = {base}", fontsize=10, fontname="tiro")
            page.insert_text((100 + pymupdf.get_text_length(f"{base} + 1 = {base}", "tiro", 10), y - 4), "2",
                             fontsize=7, fontname="tiro")
            y += 20

    got = decide(_facts(_page(build, tmp_path)))
    assert not got.skip and "super- or subscripts" in got.why, got


def test_a_page_number_below_the_body_runs_the_model(tmp_path):
    """The model drops a lone page number under the text as a footer; the rules keep it as
    text unless it sits in their margin (the code-and-formula PDF's page 2)."""
    def build(page):
        _prose(page)
        page.insert_text((A4[0] / 2, 740), "7", fontsize=10, fontname="tiro")

    got = decide(_facts(_page(build, tmp_path)))
    assert not got.skip and "running head or footer" in got.why, got


def test_a_running_head_set_apart_below_the_edge_zone_runs_the_model(tmp_path):
    """A TeX book's running head sits 14% down the page, a gap above its text: the model drops
    it, the rules keep it (pymupdf_mupdf_explored.pdf)."""
    def build(page):
        page.insert_text((eval_set.MARGIN, 115), "CHAPTER 9. THE DEVICE INTERFACE", fontsize=10, fontname="tiro")
        page.insert_text((A4[0] - eval_set.MARGIN - 15, 115), "44", fontsize=10, fontname="tiro")
        eval_set._paragraphs(page, (eval_set.MARGIN, 140, A4[0] - eval_set.MARGIN, 700), [BODY, BODY])

    got = decide(_facts(_page(build, tmp_path)))
    assert not got.skip and "running head or footer" in got.why, got


def test_a_page_with_an_image_runs_the_model(tmp_path):
    def build(page):
        _prose(page, top=400)
        pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 40, 40), False)
        pix.clear_with(128)
        page.insert_image(pymupdf.Rect(56, 120, 356, 320), pixmap=pix)

    got = decide(_facts(_page(build, tmp_path)))
    assert not got.skip and got.why == "an image", got


# ---- the pool -----------------------------------------------------------------------------------
def _checked(path: Path):
    from curate.modalities.pdf.documents import PdfPages
    from curate.modalities.pdf.pdf_text import PdfText

    return PdfText().check([PdfPages()([str(path)])[0][0]])[0]


class _Model:
    """A stand-in for the layout model: no boxes (every line becomes a leftover block), and the
    feature set each page was read with."""

    def __init__(self, asked: list, features: str):
        self.asked, self.features = asked, features

    def predict(self, page):
        self.asked.append(self.features)
        return []


@pytest.fixture
def asked(monkeypatch):
    from curate.modalities.pdf import layout

    calls: list[str] = []
    monkeypatch.setattr(layout, "_layout_model", lambda threads, features: _Model(calls, features))
    return calls


def test_a_skipped_page_is_read_by_the_rules_and_its_reason_says_so(tmp_path, asked):
    from curate.modalities.pdf.assemble import page_markdown
    from curate.modalities.pdf.layout import Layout

    _page(_prose, tmp_path, "prose.pdf")
    page = _checked(tmp_path / "prose.pdf")
    (regions,) = Layout().regions([page])
    row = page_markdown([(page, regions, [])])[0]
    assert asked == [] and all(r.source == "text_layer" for r in regions)
    assert row.reason == "ok; layout: skipped (single column, no tables, figures, formulas or running heads)"
    assert row.markdown.startswith("# A Heading Above Plain Prose\n\nA page of plain prose")
    (regions,) = Layout(skip="never").regions([page])  # the model on every page but the plain ones
    assert asked == ["imf+rf"] and page_markdown([(page, regions, [])])[0].reason == "ok"


def test_features_auto_takes_the_image_features_only_on_a_page_with_an_image_or_formulas(tmp_path, asked):
    from curate.modalities.pdf.layout import Layout

    eval_set.write_eval_set(tmp_path, ["eval_two_columns.pdf"])

    def image(page):
        _prose(page, top=400)
        pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 40, 40), False)
        pix.clear_with(128)
        page.insert_image(pymupdf.Rect(56, 120, 356, 320), pixmap=pix)

    def formula(page):
        eval_set.two_columns(page)
        page.insert_text((100, 760), "a + b = g", fontsize=10, fontname="symb")  # alpha + beta = gamma, in Symbol

    _page(image, tmp_path, "image.pdf")
    _page(formula, tmp_path, "formula.pdf")
    pages = [_checked(tmp_path / n) for n in ("eval_two_columns.pdf", "image.pdf", "formula.pdf")]
    Layout(features="auto").regions(pages)
    assert asked == ["rf", "imf+rf", "imf+rf"]


def test_image_features_are_wanted_for_images_and_formulas_only():
    assert not image_features(PageFacts(lines=40, columns=True, paths=30, grid_rows=4, edge_lines=2))
    assert image_features(PageFacts(images=1)) and image_features(PageFacts(math_fonts=1))
    assert image_features(PageFacts(math_chars=MAX_MATH_CHARS + 1)) and not image_features(PageFacts(math_chars=1))


def test_an_unknown_skip_setting_is_refused_with_the_choices():
    from curate.modalities.pdf.layout import Layout

    with pytest.raises(ValueError, match="skip='sometimes'; one of auto, never"):
        Layout(skip="sometimes")
