"""MinerU 4 (mineru 4.x) as a batched stage: PDF page windows to Markdown.

    mineru = cu.Pool(Mineru4, init={"tier": "flash"}, replicas=2, num_cpus=0.5)
    parsed = windows.map(mineru.stage("parse"))     # windows: modalities/pdf/windows.py

Each window is one `mineru.parser` call on its pages (`page_range`), as `mineru.parser.parse`
does it. The tiers are MinerU's own:

- `flash` (the default): the PDF's text layer read by MinerU's native analyzer, on CPU, without
  weights. A file with no usable text layer needs MinerU's OCR models even at this tier.
- `basic`: OCR and layout models; `standard` and `advanced`: those plus MinerU's VLM. Their
  weights come from `model` (MinerU's model root, its `model.base_dir`, read as local files),
  else from MinerU's own configuration (`~/.mineru`, `MINERU_MODEL_*`), which may download them.
  `server_url` sends the VLM calls of standard/advanced to an OpenAI-compatible server (MinerU's
  `VlmConfig.server_url`; its key from `MINERU_MODEL_VLM_API_KEY`).
- `api_url`: the whole parse runs on a MinerU API server instead (MinerU's `MinerUApiParser`:
  a local `mineru-api`, or https://mineru.net/api with `MINERU_API_KEY`), window by window.

Only `flash` is tested here (this project's machines have no MinerU weights).

MinerU logs a few INFO lines per call through loguru, and the PDF libraries under it (pypdf,
pypdfium2) warn about every repaired file and closed bitmap; `log_level` ("error" by default)
keeps all of them out of the workers' output; give "info" to see them.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from curate.modalities.pdf.windows import WindowMarkdown, WindowRecord, read_pdf_bytes

import curate as cu
from curate.deps import require

TIERS = ("flash", "basic", "standard", "advanced")
OCR_MODES = ("auto", "txt", "ocr")
QUIET = "error"  # MinerU's loguru level in the workers: its per-call INFO lines are noise in a batch job
CHATTY_LIBRARIES = ("pypdf", "pypdfium2")  # std-logging loggers under MinerU, held to the same level
# Modules MinerU imports on its first parse; importing them in __init__ puts that cost in the
# worker's start-up (reported apart) instead of its first window.
WARM_MODULES = ("mineru.backend.analysis.pdf.pipeline", "mineru.backend.postprocess.document", "mineru.render",
                "docvortex.analyzers.native.pdf.pipeline", "docvortex.render._internal.markdown.renderer")
# Where a failure means "MinerU could not get its models", not "the file is bad".
MODEL_FETCH_MODULES = ("modelscope", "modelscope_hub", "huggingface_hub", "requests", "urllib3")


class Mineru4:
    """One MinerU 4 parser per worker; `parse` turns page windows into Markdown."""

    requires = ("mineru",)  # checked before a run starts (curate.deps.check_installed)

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

    def parse(self, windows: list[WindowRecord]) -> list[WindowMarkdown | cu.ItemFailure]:
        """Per window: its Markdown (and its pages in MinerU's format when its document has
        several windows), or an ItemFailure whose cause names the file and pages."""
        return [self._one(w) for w in windows]

    __call__ = parse

    def _one(self, window: WindowRecord) -> WindowMarkdown | cu.ItemFailure:
        if not isinstance(window, WindowRecord):
            return cu.ItemFailure(cu.InputError(f"Mineru4.parse takes a WindowRecord, got {type(window).__name__}; "
                                                "split documents with curate.modalities.pdf.windows:SplitWindows"))
        # The user's ocr_mode wins; "auto" takes the whole document's verdict where the split
        # made one, since MinerU's own would look only at this window's pages.
        mode = self.ocr_mode if self.ocr_mode != "auto" else (window.classified_as or "auto")
        started = time.perf_counter()
        try:
            result = self._call(window, mode)
        except Exception as exc:  # noqa: BLE001 (MinerU raises many types; each is this window's failure)
            return cu.ItemFailure(_cause(window, exc))
        return _window_markdown(window, result, self.tier, time.perf_counter() - started)

    def _call(self, window: WindowRecord, mode: str):
        parser = self._parsers[mode]
        if window.password is None:
            return parser.parse(window.path, page_range=window.page_range)
        import tempfile  # MinerU opens paths and takes no password: parse a decrypted scratch copy

        with tempfile.TemporaryDirectory(prefix="curate-mineru4-") as scratch:
            copy = Path(scratch) / Path(window.path).name
            copy.write_bytes(read_pdf_bytes(window.path, window.password))
            return parser.parse(copy, page_range=window.page_range)


def _window_markdown(window: WindowRecord, result, tier: str, seconds: float) -> WindowMarkdown:
    """The window's own pages (context pages dropped) as Markdown, plus MinerU's page records
    when the document has other windows to be rendered with."""
    middle = result.middle_json
    pages_json = None
    if not window.whole:
        import json

        middle.pages = [p for p in middle.pages if p.page_idx >= window.first_page]  # our own copy
        # to_dict keeps the images (ParseResult.to_dict would drop them)
        pages_json = json.dumps(middle.to_dict(skip_defaults=True), ensure_ascii=False)
    markdown = result.markdown()
    parse_mode = (middle.extensions.get("mineru") or {}).get("parse_mode")
    route = "layout" if tier != "flash" else ("ocr" if parse_mode == "ocr" else "text_layer")
    return WindowMarkdown(markdown, window.pages, len(markdown), route, round(seconds, 3), pages_json)


def _cause(window: WindowRecord, exc: Exception):
    """A failed window's cause: the file and pages, what MinerU said, and the fix."""
    what = f"{type(exc).__name__}: {exc}".strip()
    if len(what) > 300:
        what = what[:297] + "..."
    chain, e = [], exc
    while e is not None and len(chain) < 10:
        chain.append(type(e).__module__.split(".")[0])
        e = e.__cause__ or e.__context__
    if any(m in MODEL_FETCH_MODULES for m in chain):
        return (f"{window}: MinerU needs its models for these pages (no usable text layer, or a tier "
                f"above flash) and could not fetch them ({what}); give Mineru4 init model: DIR (a MinerU "
                "model root, e.g. from `mineru-models-download`), or let MinerU download them")
    return cu.InputError(f"{window}: MinerU 4 could not parse it ({what}); check that the file opens in a "
                         "PDF viewer, or repair it (qpdf in.pdf out.pdf)")
