"""MinerU 4 (mineru 4.x) over PDF files: a run of a file's pages to Markdown.

    model = MinerU4Model(tier="flash")
    (parsed,) = model.parse([{"path": "a.pdf", "page_range": "1-64", "ocr_mode": "auto", "label": "a.pdf"}])

`parse` (`protocols.PdfParse`) is one `mineru.parser` call per item (a `PdfPart`) on its pages
(`page_range`), as `mineru.parser.parse` does it; `classify` is MinerU's whole-file verdict
(text layer or scan) and `render_pages` renders page records of several calls as one document.
Cutting files into windows and joining them back is the PDF modality's
(`curate.modalities.pdf.mineru4`, whose `MinerU4` class the recipes name). The tiers are MinerU's own:

- `flash` (the default): the PDF's text layer read by MinerU's native analyzer, on CPU, without
  weights. A file with no usable text layer needs MinerU's OCR models even at this tier.
- `basic`: OCR and layout models; `standard` and `advanced`: those plus MinerU's VLM. Their
  weights come from `model` (MinerU's model root, its `model.base_dir`, read as local files),
  else from MinerU's own configuration (`~/.mineru`, `MINERU_MODEL_*`), which may download them.
  `server_url` sends the VLM calls of standard/advanced to an OpenAI-compatible server (MinerU's
  `VlmConfig.server_url`; its key from `MINERU_MODEL_VLM_API_KEY`).
- `api_url`: the whole parse runs on a MinerU API server instead (MinerU's `MinerUApiParser`:
  a local `mineru-api`, or https://mineru.net/api with `MINERU_API_KEY`), item by item.

Only `flash` is tested here (this project's machines have no MinerU weights).

MinerU logs a few INFO lines per call through loguru, and the PDF libraries under it (pypdf,
pypdfium2) warn about every repaired file and closed bitmap; `log_level` ("error" by default)
keeps all of them out of the workers' output; give "info" to see them.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import curate as cu
from curate.deps import require

TIERS = ("flash", "basic", "standard", "advanced")
OCR_MODES = ("auto", "txt", "ocr")
QUIET = "error"  # MinerU's loguru level in the workers: its per-call INFO lines are noise in a batch job
CHATTY_LIBRARIES = ("pypdf", "pypdfium2")  # std-logging loggers under MinerU, held to the same level
# Modules MinerU imports on its first parse; importing them in __init__ puts that cost in the
# worker's start-up (reported apart) instead of its first call.
WARM_MODULES = ("mineru.backend.analysis.pdf.pipeline", "mineru.backend.postprocess.document", "mineru.render",
                "docvortex.analyzers.native.pdf.pipeline", "docvortex.render._internal.markdown.renderer")
# Where a failure means "MinerU could not get its models", not "the file is bad".
MODEL_FETCH_MODULES = ("modelscope", "modelscope_hub", "huggingface_hub", "requests", "urllib3")


class MinerU4Model:
    """One MinerU 4 parser per worker; `parse` turns runs of a PDF's pages into Markdown."""

    requires = ("mineru",)  # checked before a run starts (curate.deps.check_installed)
    # the engine's default worker (curate.defaults.DEFAULT_NUM_CPUS); the bundled recipe gives 0.5
    default_resources: dict = {}

    def __init__(self, tier: str = "flash", ocr_mode: str = "auto", model: str | None = None,
                 server_url: str | None = None, api_url: str | None = None, device: str | None = None,
                 batch_size: int | None = None, image_analysis: bool = True, log_level: str = QUIET):
        if tier not in TIERS:
            raise ValueError(f"tier={tier!r}; one of {TIERS}, e.g. --set pools.mineru.init.tier=standard")
        if ocr_mode not in OCR_MODES:
            raise ValueError(f"ocr_mode={ocr_mode!r}; one of {OCR_MODES}")
        self.tier, self.ocr_mode, self.model, self.device = tier, ocr_mode, model, device
        self.server_url, self.api_url, self.batch_size = server_url, api_url, batch_size
        if model is not None:  # before MinerU reads its configuration (at import); the worker's own process
            os.environ["MINERU_MODEL_BASE_DIR"] = str(Path(model).expanduser())
            os.environ["MINERU_MODEL_SOURCE"] = "local"
        if device is not None:
            os.environ["MINERU_DEVICE_MODE"] = device
        require("mineru", "the MinerU 4 backend")
        import importlib

        import mineru.parser
        from mineru.config import VlmConfig, config
        from mineru.utils.logger import configure_global_log_level

        configure_global_log_level(log_level)
        for name in CHATTY_LIBRARIES:
            logging.getLogger(name).setLevel(log_level.upper())
        if model is not None:  # MinerU was perhaps imported earlier in this process
            config.model.base_dir, config.model.source = os.environ["MINERU_MODEL_BASE_DIR"], "local"
        vlm = None
        if server_url is not None:
            vlm = VlmConfig(**{**config.model.vlm.model_dump(), "server_url": server_url})
        self._parsers = {mode: self._parser(mineru.parser, mode, image_analysis, vlm) for mode in OCR_MODES}
        for name in WARM_MODULES if api_url is None else ():
            try:
                importlib.import_module(name)
            except ImportError:  # a later MinerU moved it: the first window imports what it needs
                pass

    def _parser(self, parser_module, mode: str, image_analysis: bool, vlm):
        if self.api_url is not None:
            return parser_module.MinerUApiParser(api_url=self.api_url, tier=self.tier, ocr_mode=mode,
                                                 include_images=True)
        return parser_module.MinerUParser(tier=self.tier, parse_mode=mode, image_analysis=image_analysis,
                                          vlm_config=vlm)

    def parse(self, parts: list) -> list:
        """Per `PdfPart`: its `ParsedPdf` (Markdown, and its kept pages in MinerU's format when
        asked), or an ItemFailure whose cause names the part (`label`)."""
        return [self._one(part) for part in parts]

    __call__ = parse

    def _one(self, part: dict):
        started = time.perf_counter()
        try:
            result = self._call(part)
        except Exception as exc:  # noqa: BLE001 (MinerU raises many types; each is this part's failure)
            return cu.ItemFailure(_cause(part["label"], exc))
        seconds = time.perf_counter() - started
        middle = result.middle_json
        pages_json = None
        if part.get("with_pages"):
            middle.pages = [p for p in middle.pages if p.page_idx >= part.get("keep_from", 0)]  # our own copy
            # to_dict keeps the images (ParseResult.to_dict would drop them)
            pages_json = json.dumps(middle.to_dict(skip_defaults=True), ensure_ascii=False)
        markdown = result.markdown()
        parse_mode = (middle.extensions.get("mineru") or {}).get("parse_mode")
        return {"markdown": markdown, "pages_json": pages_json, "parse_mode": parse_mode, "seconds": seconds}

    def _call(self, part: dict):
        parser = self._parsers[part.get("ocr_mode", self.ocr_mode)]
        if part.get("data") is None:
            return parser.parse(part["path"], page_range=part.get("page_range", ""))
        import tempfile  # MinerU opens paths and takes no password: parse a decrypted scratch copy

        with tempfile.TemporaryDirectory(prefix="curate-mineru4-") as scratch:
            copy = Path(scratch) / Path(part["path"]).name
            copy.write_bytes(part["data"])
            return parser.parse(copy, page_range=part.get("page_range", ""))


def classify(data: bytes) -> str:
    """MinerU's own whole-document verdict on a PDF's bytes, "txt" (usable text layer) or "ocr",
    as its `ocr_mode: auto` takes it (mineru.backend.analysis.pdf.pipeline: PDFDocument(bytes).classify())."""
    require("mineru", "classifying a PDF the way MinerU 4 does")
    # docvortex is MinerU 4's PDF layer, installed with it
    from docvortex.document.pdf import PDFDocument

    with PDFDocument(data) as doc:
        return doc.classify()


def render_pages(middles: list[str]) -> str:
    """Render pages of several calls (MiddleJson dicts as JSON, in order) as one MinerU document."""
    require("mineru", "joining MinerU 4 windows")
    from mineru.render import render_markdown
    from mineru.types import MiddleJson

    parts = [json.loads(m) for m in middles]
    whole = dict(parts[0], pages=[page for part in parts for page in part["pages"]], is_full_document=True)
    return render_markdown(MiddleJson.from_dict(whole))


def _cause(label: str, exc: Exception):
    """A failed part's cause: the file and pages, what MinerU said, and the fix."""
    what = f"{type(exc).__name__}: {exc}".strip()
    if len(what) > 300:
        what = what[:297] + "..."
    chain, e = [], exc
    while e is not None and len(chain) < 10:
        chain.append(type(e).__module__.split(".")[0])
        e = e.__cause__ or e.__context__
    if any(m in MODEL_FETCH_MODULES for m in chain):
        return (f"{label}: MinerU needs its models for these pages (no usable text layer, or a tier "
                f"above flash) and could not fetch them ({what}); give MinerU4 init model: DIR (a MinerU "
                "model root, e.g. from `mineru-models-download`), or let MinerU download them")
    return cu.InputError(f"{label}: MinerU 4 could not parse it ({what}); check that the file opens in a "
                         "PDF viewer, or repair it (qpdf in.pdf out.pdf)")
