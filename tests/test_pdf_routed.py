"""Page-level routing (curate.modalities.pdf.routing, recipes/pdf_to_markdown_routed.yaml): the rule
on constructed CPU readings, one reason at a time and together; the stage's options; the expand
and the choice; then the bundled recipe end to end on a tiny MinerU 2.5 built offline
(tests/tiny_vlm.py): a document of a text-layer page (read well: stays on CPU) and a scanned page
(RapidOCR reads it, then `--set steps.routes.map.init.always=[ocr]` sends it to the VLM), so one
document mixes routes, beside a text-only document that never meets the VLM. One scan only:
RapidOCR is most of the test's time."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import tiny_vlm
from pdf_samples import mixed_pdf, write_pdf

from curate.cli import EXIT_OK, main
from curate.modalities.pdf import routing
from curate.modalities.pdf.assemble import region_markdown
from curate.modalities.pdf.records import ROUTES, PageMarkdown, PageRecord, RegionRecord
from curate.modalities.pdf.routing import Router, choose, has_structured_table, needs_vlm, vlm_pages

import curate as cu

RECIPES = Path(__file__).resolve().parent.parent / "recipes"
TABLE_MD = "| a | b |\n| --- | --- |\n| 1 | 2 |"
TABLE_HTML = "<table><tr><td rowspan=\"2\">a</td><td>b</td></tr><tr><td>2</td></tr></table>"
TABLE_TEXT = "a b\n1 2"  # a table region whose cells were not found: its words as lines
TINY_KINDS = ["header", "title", "text", "table", "formula"]  # the tiny model's layout (test_mineru25.py)
TINY_CONTENT = {"table": "<table><tr><td>k</td><td>v</td></tr><tr><td>1</td><td>2</td></tr></table>",
                "formula": tiny_vlm.FORMULA}


def page(route: str = "text_layer", markdown: str = "Some text.", **fields) -> PageMarkdown:
    return PageMarkdown(markdown=markdown, route=route, chars=len(markdown), reason="ok", **fields)


# ---- the rule -------------------------------------------------------------------------------------
def test_a_page_read_well_stays_on_cpu():
    assert needs_vlm(page()) == ""  # nothing measured: nothing routes it
    assert needs_vlm(page("ocr", ocr_confidence=0.97, text_quality=0.9)) == ""
    assert needs_vlm(page(has_table=True, markdown=TABLE_MD)) == ""
    assert needs_vlm(page(has_table=True, markdown=f"Text.\n\n{TABLE_HTML}")) == ""
    assert needs_vlm(page(has_figure=True)) == ""


def test_each_reason_routes_a_page_and_says_why():
    assert needs_vlm(page("ocr", ocr_confidence=0.62)) == "ocr confidence 0.62 < 0.90"
    assert needs_vlm(page(text_quality=0.2)) == "text quality 0.20 < 0.50"
    assert needs_vlm(page(has_equation=True)) == "an equation the CPU route could not write as LaTeX (a scan, or no math fonts)"
    assert needs_vlm(page(has_table=True, markdown=TABLE_TEXT)) == "a table the CPU route could not structure"
    assert needs_vlm(page("ocr"), always=["ocr"]) == "route ocr always goes to the VLM"
    both = needs_vlm(page("ocr", ocr_confidence=0.5, has_equation=True, has_table=True, markdown=TABLE_TEXT))
    assert both == ("ocr confidence 0.50 < 0.90; an equation the CPU route could not write as LaTeX (a scan, or no math fonts); "
                    "a table the CPU route could not structure")


def test_an_equation_written_as_latex_stays_on_the_cpu():
    assert needs_vlm(page(has_equation=True, equation_latex=True)) == ""
    assert needs_vlm(page(has_equation=True, equation_latex=False)) == "an equation the CPU route could not write as LaTeX (a scan, or no math fonts)"


def test_thresholds_and_switches_move_the_rule():
    low = page("ocr", ocr_confidence=0.93, text_quality=0.6)
    assert needs_vlm(low) == ""
    assert needs_vlm(low, min_ocr_confidence=0.95) == "ocr confidence 0.93 < 0.95"
    assert needs_vlm(low, min_text_quality=1.01) == "text quality 0.60 < 1.01"  # above 1: every scored page
    assert needs_vlm(low, min_ocr_confidence=0.93) == ""  # at the threshold: read well enough
    assert needs_vlm(page(has_equation=True), equations=False) == ""
    assert needs_vlm(page(has_table=True, markdown=TABLE_TEXT), tables=False) == ""
    assert needs_vlm(page("text_layer"), always=["ocr"]) == ""


def test_a_blank_page_never_goes_to_the_vlm():
    blank = page("empty", markdown="", ocr_confidence=0.1, text_quality=0.0, has_equation=True)
    assert needs_vlm(blank, always=["empty"], min_ocr_confidence=2.0) == ""


def test_a_structured_table_is_rows_and_cells():
    assert has_structured_table(TABLE_MD) and has_structured_table(f"Intro.\n\n{TABLE_MD}\n\nMore.")
    assert has_structured_table(TABLE_HTML) and has_structured_table("<TABLE border=1><tr><td>x</td></tr></TABLE>")
    assert not has_structured_table(TABLE_TEXT)
    assert not has_structured_table("| a pipe | in a sentence |")  # no --- row: not a table
    assert not has_structured_table("see <tables> of the appendix")


# ---- the stages -----------------------------------------------------------------------------------
def test_the_router_stage_takes_its_thresholds_and_refuses_bad_ones():
    stage = Router(min_ocr_confidence=0.95, always=["ocr"])
    got = stage([page("ocr", ocr_confidence=0.99), page(), "not a page"])
    assert got[:2] == ["route ocr always goes to the VLM", ""]
    assert isinstance(got[2], cu.ItemFailure) and isinstance(got[2].cause, cu.InputError)
    assert "takes the CPU route's PageMarkdown" in str(got[2].cause)
    assert Router(always="ocr")([page("ocr")]) == ["route ocr always goes to the VLM"]  # one route as text
    with pytest.raises(cu.CurateError, match=r"min_ocr_confidence='high'; give a number"):
        Router(min_ocr_confidence="high")
    with pytest.raises(cu.CurateError, match=r"min_text_quality=True; give a number"):
        Router(min_text_quality=True)
    with pytest.raises(cu.CurateError, match=r"equations='yes'; give true or false"):
        Router(equations="yes")
    with pytest.raises(cu.CurateError, match=r"\['scan'\] not a route.*always: \[ocr\]"):
        Router(always=["ocr", "scan"])


def test_the_expand_gives_a_routed_page_one_child_and_others_none():
    record = PageRecord(path="/d.pdf", index=3, width_pt=200, height_pt=100, text="its text layer", text_chars=14)
    assert vlm_pages([(record, ""), (record, "an equation")]) == [[], [dataclasses.replace(record, text="")]]


def test_the_choice_takes_the_vlms_reading_of_a_routed_page_only():
    cpu, vlm = page("ocr", markdown="CPU words"), page("layout", markdown="VLM words", has_equation=True)
    stayed, routed, failed = choose([(cpu, "", []), (cpu, "ocr confidence 0.50 < 0.90", [vlm]),
                                     (cpu, "an equation", [])])
    assert stayed == cpu
    assert (routed.route, routed.markdown, routed.has_equation) == ("layout", "VLM words", True)  # the VLM's row
    assert routed.reason == "ocr confidence 0.50 < 0.90 (the CPU route was ocr)"
    assert (failed.route, failed.markdown) == ("ocr", "CPU words")  # its VLM page was dropped: CPU kept
    assert failed.reason == "ok; the VLM failed on this page (wanted for: an equation), so the ocr reading is kept"


# ---- the bundled recipe ------------------------------------------------------------------------------
def test_the_routed_recipe_is_the_default_recipe_then_one_block():
    """Its CPU route is pdf_to_markdown's, step for step, pool for pool: a change there must be
    copied here (everything up to page_markdown, and the curation block and documents after it,
    which read the routed pages), and this says so."""
    import yaml

    default, routed = (yaml.safe_load((RECIPES / f"{name}.yaml").read_text())
                       for name in ("pdf_to_markdown", "pdf_to_markdown_routed"))
    ids = [step["id"] for step in default["steps"]]
    cpu = ids.index("page_markdown") + 1
    assert routed["steps"][:cpu] == default["steps"][:cpu], "copy pdf_to_markdown's steps into the routed recipe"
    assert {k: v for k, v in routed["pools"].items() if k != "vlm"} == default["pools"]
    assert routed["domains"] == {**default["domains"], "vlm_page": "page", "vlm_region": "vlm_page"}
    tail = default["steps"][cpu:]  # page signals and filter, documents, document signals and filter
    block = [step["id"] for step in routed["steps"][cpu:-len(tail)]]
    assert block[0] == "routes" and block[-1] == "routed" and routed["outputs"] == default["outputs"]
    first = tail[0]
    assert routed["steps"][-len(tail):] == [{**first, "map": {**first["map"], "from": "routed"}}, *tail[1:]]


def tiny_page_markdown() -> str:
    regions = [RegionRecord(k, (0, 0, 1, 1), i, content=TINY_CONTENT.get(k, tiny_vlm.TEXT))
               for i, k in enumerate(TINY_KINDS)]
    return "\n\n".join(filter(None, map(region_markdown, regions)))


def test_the_bundled_recipe_sends_the_pages_read_badly_to_the_vlm(tmp_path, capsys):
    from curate.recipe import bundled

    assert bundled.find("pdf_to_markdown_routed").bundled
    model = tiny_vlm.build(tmp_path / "tiny-mineru25")
    texts = ["The text layer of the first document.", "The text layer of the second document."]
    docs = [mixed_pdf(tmp_path / "mixed.pdf", texts[0]), write_pdf(tmp_path / "plain.pdf", texts[1:])]
    out = tmp_path / "out"
    code = main(["run", "pdf_to_markdown_routed", "--input", str(docs[0]), "--input", str(docs[1]),
                 "--output", str(out), "--executor", "local", "--no-progress", "--set", "pools.ocr.replicas=1",
                 "--set", "pools.vlm.num_gpus=0", "--set", "pools.vlm.init.device=cpu",
                 "--set", f"pools.vlm.init.model={model}", "--set", "steps.routes.map.init.always=[ocr]"])
    assert code == EXIT_OK, capsys.readouterr()
    pages = sorted(pq.read_table(out / "pages").to_pylist(), key=lambda r: r["lineage"])
    assert [(p["lineage"], p["status"], p["route"]) for p in pages] == [
        ([0, 0], "present", "text_layer"), ([0, 1], "present", "layout"), ([1, 0], "present", "text_layer")]
    for cpu, text in ((pages[0], texts[0]), (pages[2], texts[1])):
        assert cpu["markdown"] == text and cpu["reason"] == "ok"  # read well: the CPU's reading, untouched
    vlm = pages[1]  # the scan: read by RapidOCR first, then again by the VLM
    assert vlm["markdown"] == tiny_page_markdown() and vlm["regions"] == len(TINY_KINDS)
    assert vlm["reason"] == "route ocr always goes to the VLM (the CPU route was ocr)"
    rows = sorted(pq.read_table(out / "documents").to_pylist(), key=lambda r: r["lineage"])
    assert [(r["status"], r["pages"]) for r in rows] == [("present", 2), ("present", 1)]
    assert rows[0]["routes"] == {r: (1 if r in ("text_layer", "layout") else 0) for r in ROUTES}
    assert rows[0]["markdown"].startswith(texts[0] + "\n\n") and tiny_vlm.TEXT in rows[0]["markdown"]
    assert rows[1]["markdown"] == texts[1]


@pytest.mark.parametrize("on_failure", ["suppress", "drop"])
def test_a_routed_page_whose_vlm_fails_suppresses_its_document_or_keeps_its_cpu_reading(tmp_path, on_failure):
    doc = write_pdf(tmp_path / "two.pdf", ["Page one of the text layer.", "Page two of the text layer."])
    out = tmp_path / "out"
    main(["run", "pdf_to_markdown_routed", "--input", str(doc), "--output", str(out), "--executor", "local",
          "--no-progress", "--set", "pools.vlm.num_gpus=0", "--set", f"pools.vlm.init.model={tmp_path / 'none'}",
          "--set", "steps.routes.map.init.always=[text_layer]",
          "--set", f"steps.vlm_page.reduce.on_child_failure={on_failure}"])
    pages = sorted(pq.read_table(out / "pages").to_pylist(), key=lambda r: r["lineage"])
    (row,) = pq.read_table(out / "documents").to_pylist()
    if on_failure == "suppress":  # as any failed page: the document is SUPPRESSED, the cause says how to fix it
        assert [p["status"] for p in pages] == ["suppressed"] * 2 and row["status"] == "suppressed"
        assert row["cause_kind"] == "setup" and "not a local MinerU 2.5 checkpoint" in row["cause"]
    else:
        assert [(p["status"], p["route"]) for p in pages] == [("present", "text_layer")] * 2
        assert pages[0]["reason"] == ("ok; the VLM failed on this page (wanted for: route text_layer always goes "
                                      "to the VLM), so the text_layer reading is kept")
        assert row["status"] == "present" and row["markdown"].startswith("Page one of the text layer.")
