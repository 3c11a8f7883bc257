"""Page-level routing: the pages the CPU route reads badly go to a VLM (MinerU 2.5), the rest
stay as the CPU read them (`recipes/pdf_to_markdown_routed.yaml`).

- `needs_vlm(page)` is the rule: "" when the CPU route's `PageMarkdown` is good enough, else why
  not (every reason that applies, joined by "; "). It reads the page's attributes: OCR
  confidence, text quality, whether the page has an equation, whether it has a table that came
  out unstructured. A field that was not measured (None) never routes a page; a page routed to
  OCR (it shows an image or drawings) whose Markdown has no text, only figures or nothing, does
  (handwriting RapidOCR cannot see or reads as scraps, a photo, a chart to describe).
- `Router` is the rule as a map stage with its thresholds as `init` (set them with `--set`).
- `vlm_pages` is the expand from a checked page to 0 children (it stays on CPU) or 1 (itself,
  to render and read with the VLM pool, batched with the other documents' routed pages).
- `choose` joins back: the VLM's reading of a routed page (route "layout", the reason why), the
  CPU's reading of every other page.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from curate.modalities.pdf.records import LOW_OCR_CONFIDENCE, ROUTES, PageMarkdown, PageRecord

import curate as cu

__all__ = ["needs_vlm", "Router", "vlm_pages", "choose", "has_structured_table", "VLM_ROUTE"]

# PageMarkdown.route of a page the VLM read: MinerU 2.5's own route ("layout", as in its own recipe), so a
# page reads the same in both recipes and the documents' `routes` keep their keys
VLM_ROUTE = "layout"
# A page whose OCR lines average under this has many misread lines (handwriting, a faint or noisy
# scan), which a VLM reads better; the readable scans of ../shared/data/pdfs average above it
# (docs/guides/pdf-to-markdown.md, "Routed per page"). The same threshold flags the page's reason.
MIN_OCR_CONFIDENCE = LOW_OCR_CONFIDENCE
# text_quality.py scores a page 0..1 by how much of its text looks like words; under half is
# mostly noise (a broken font encoding that OCR did not fix either).
MIN_TEXT_QUALITY = 0.5
# The CPU route writes a formula as LaTeX only where the text layer has it in math fonts
# (formulas.py): a page with a formula it could not (a scan's, one in a text font) goes to the VLM.
ROUTE_EQUATIONS = True
# A table region whose cells the CPU route could not find comes out as text: the VLM reads it as HTML.
ROUTE_TABLES = True
NEVER = ("empty",)  # a blank page has nothing for a VLM to read, whatever the thresholds say

MARKDOWN_TABLE = re.compile(r"^\|.*\|\s*\n\|[\s:|-]*-[\s:|-]*\|\s*$", re.MULTILINE)  # a header row, then |---|
HTML_TABLE = re.compile(r"<table[\s>]", re.IGNORECASE)
IMAGE = re.compile(r"!\[[^\]\n]*\]\([^)\n]*\)")  # a figure's placeholder, ![figure]()


def has_structured_table(markdown: str) -> bool:
    """Whether `markdown` holds a table as rows and cells: a Markdown table or an HTML one."""
    return bool(MARKDOWN_TABLE.search(markdown) or HTML_TABLE.search(markdown))


def needs_vlm(page: PageMarkdown, *, min_ocr_confidence: float = MIN_OCR_CONFIDENCE,
              min_text_quality: float = MIN_TEXT_QUALITY, equations: bool = ROUTE_EQUATIONS,
              tables: bool = ROUTE_TABLES, always: Iterable[str] = ()) -> str:
    """Why the VLM should read this page instead of the CPU route ("" when it should not):
    every reason that applies, in a fixed order, joined by "; ". `always` lists CPU routes whose
    pages all go to the VLM (`[ocr]`: every scan, as FinePDFs routes)."""
    if page.route in NEVER:
        return ""
    why = []
    if page.route in always:
        why.append(f"route {page.route} always goes to the VLM")
    if page.ocr_confidence is not None and page.ocr_confidence < min_ocr_confidence:
        why.append(f"ocr confidence {page.ocr_confidence:.2f} < {min_ocr_confidence:.2f}")
    if page.route == "ocr" and not IMAGE.sub("", page.markdown).strip():  # an OCR page is never blank
        why.append("OCR wrote no text on a page that shows an image or drawings")
    if page.text_quality is not None and page.text_quality < min_text_quality:
        why.append(f"text quality {page.text_quality:.2f} < {min_text_quality:.2f}")
    if equations and page.has_equation and not page.equation_latex:
        why.append("an equation the CPU route could not write as LaTeX (a scan, or no math fonts)")
    if tables and page.has_table and not has_structured_table(page.markdown):
        why.append("a table the CPU route could not structure")
    return "; ".join(why)


class Router:
    """Map stage: per page's CPU reading (`PageMarkdown`), `needs_vlm`'s verdict under this
    stage's thresholds ("" or why). Its arguments are `needs_vlm`'s keywords."""

    def __init__(self, min_ocr_confidence: float = MIN_OCR_CONFIDENCE, min_text_quality: float = MIN_TEXT_QUALITY,
                 equations: bool = ROUTE_EQUATIONS, tables: bool = ROUTE_TABLES, always: list | tuple = ()):
        for name, value in (("min_ocr_confidence", min_ocr_confidence), ("min_text_quality", min_text_quality)):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise cu.CurateError(f"Router {name}={value!r}; give a number (0..1 routes pages scoring under "
                                     f"it; above 1 routes every page that has the score), e.g. {name}: 0.9")
        for name, value in (("equations", equations), ("tables", tables)):
            if not isinstance(value, bool):
                raise cu.CurateError(f"Router {name}={value!r}; give true or false")
        always = [always] if isinstance(always, str) else list(always or ())
        unknown = [r for r in always if r not in ROUTES]
        if unknown:
            raise cu.CurateError(f"Router always={always!r}: {unknown} not a route; list routes of {ROUTES}, "
                                 "e.g. always: [ocr] sends every scanned page to the VLM")
        self.rule = {"min_ocr_confidence": float(min_ocr_confidence), "min_text_quality": float(min_text_quality),
                     "equations": equations, "tables": tables, "always": tuple(always)}

    def __call__(self, pages: list) -> list:
        """Per page: "" (it stays on the CPU route) or why it goes to the VLM; an ItemFailure
        for an item that is not a PageMarkdown."""
        return [needs_vlm(p, **self.rule) if isinstance(p, PageMarkdown) else cu.ItemFailure(cu.InputError(
            f"Router takes the CPU route's PageMarkdown rows; got {type(p).__name__}: route the output of "
            "curate.modalities.pdf.assemble:page_markdown")) for p in pages]


def vlm_pages(items: list[tuple[PageRecord, str]]) -> list[list[PageRecord]]:
    """Expand per (checked page, verdict): [the page, without its text layer, to render and read
    with the VLM] when the verdict gives a reason, else [] (the page stays on CPU)."""
    return [[dataclasses.replace(page, text="")] if why else [] for page, why in items]


def choose(items: list[tuple[PageMarkdown, str, list[PageMarkdown]]]) -> list[PageMarkdown]:
    """Per page (its CPU reading, the verdict, the VLM's readings: 0 or 1): the VLM's reading
    (route VLM_ROUTE) with the verdict as its reason when the page went to the VLM; else the CPU
    reading. A routed page with no VLM reading (its VLM page failed and the reduce dropped it,
    `on_child_failure: drop`) keeps the CPU reading, its reason saying so."""
    return [_choose(cpu, why, list(vlm)) for cpu, why, vlm in items]


def _choose(cpu: PageMarkdown, why: str, vlm: list[PageMarkdown]) -> PageMarkdown:
    if not why:
        return cpu
    if not vlm:
        return dataclasses.replace(cpu, reason=f"{cpu.reason}; the VLM failed on this page (wanted for: {why}), "
                                               f"so the {cpu.route} reading is kept")
    (read,) = vlm  # vlm_pages gives a page one child at most
    return dataclasses.replace(read, route=VLM_ROUTE, reason=f"{why} (the CPU route was {cpu.route})")
