"""MinerU 2.5 (opendatalab/MinerU2.5-2509-1.2B, a Qwen2-VL document model) through mineru-vl-utils'
own `MinerUClient`: its two steps as two tasks of one actor, so one shared pool serves both Calls.

- `layout(pages)`: an expand, PageImage -> its regions in reading order (`RegionRecord`: bbox in
  points on the unrotated page, kind one of REGION_KINDS, a title's level where MinerU knows it),
  each region that MinerU reads carrying its crop, cut from the full-resolution page image by
  MinerU's own rules (`curate.modalities.pdf.crops`).
- `content(regions)`: a map over region crops, batched across pages and documents: the text of
  each (a table as HTML, a formula as LaTeX, "" for a figure when `image_analysis` is off).
  `content_regions(regions)` is the same Call returning the regions with their content and
  without their crops (what the recipe uses: the pixels go no further than the model).

`page_markdown` writes a page's Markdown row from its regions (assemble.py's writer), for
`recipes/pdf_to_markdown_mineru25.yaml`.

The model is MinerUClient's, on one of three engines:

- `transformers` (CPU or GPU): the checkpoint loaded with mineru-vl-utils' loader, in this actor;
- `vllm-engine` (GPU): vLLM's offline `LLM` in this actor, with MinerU's no-repeat-ngram logits
  processor where vLLM supports it;
- `http-client`: an OpenAI-compatible server (`vllm serve`, `mineru-openai-server`) at
  `server_url`; the actor holds no weights, so the pool needs no GPU.

`model` is a local directory (nothing downloads): fetch it first, e.g. `huggingface-cli download
opendatalab/MinerU2.5-2509-1.2B --local-dir /models/MinerU2.5`.

Compared with the client's one-call `two_step_extract`: the same layout, crops, prompts, sampling
and per-block post-processing (tables to HTML, formulas fixed and bracketed). Two page-level
touches are not reproduced, because a region is read apart from its page: the equations of an
`equation_block` stay separate formulas (not one `array`), and an image inside a table stays its
own figure region (the table is read without it). Container blocks (`list`, `image_block`,
`equation_block`) are not regions: their items are.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import time
from pathlib import Path

from curate.modalities.pdf import crops
from curate.modalities.pdf.records import PageImage, RegionRecord
from curate.models._transformers import image_only_processor

import curate as cu
from curate.deps import require
from curate.errors import CurateError

ENGINES = ("transformers", "vllm-engine", "http-client")
# what each engine imports: mineru-vl-utils (MinerU's client), then its model runtime; vllm-engine also
# takes MinerU 4's logits processors (mineru)
ENGINE_MODULES = {"transformers": ("mineru_vl_utils", "torch", "transformers"),
                  "vllm-engine": ("mineru_vl_utils", "vllm", "mineru"), "http-client": ("mineru_vl_utils",)}
SOURCE = "mineru25"  # RegionRecord.source of what this backend found

# MinerU 2.5 block type (mineru_vl_utils.structs.BlockType) -> region kind (records.REGION_KINDS)
KIND_OF = {
    "text": "text", "ref_text": "text", "index": "text", "phonetic": "text", "formula_number": "text",
    "title": "title", "doc_title": "title", "paragraph_title": "title", "list_item": "list",
    "table": "table", "image": "figure", "chart": "figure", "unknown": "figure",
    "caption": "caption", "table_caption": "caption", "image_caption": "caption", "code_caption": "caption",
    "equation": "formula", "code": "code", "algorithm": "code",
    "footnote": "footnote", "table_footnote": "footnote", "image_footnote": "footnote", "page_footnote": "footnote",
    "header": "header", "footer": "footer", "page_number": "page_number", "aside_text": "aside",
}
TITLE_LEVEL = {"doc_title": 1, "paragraph_title": 2}  # a plain "title" has no known level (0)
# region kind -> the block type whose prompt and post-processing its content gets (text by default)
BLOCK_OF = {"title": "title", "list": "list_item", "table": "table", "figure": "image", "caption": "caption",
            "formula": "equation", "code": "code", "footnote": "footnote", "header": "header",
            "footer": "footer", "page_number": "page_number", "aside": "aside_text"}
CONTAINERS = frozenset({"list", "image_block", "equation_block"})  # their items are the regions
IMAGE_TYPES = frozenset({"image", "chart"})  # read only with image_analysis (MinerU's "Image Analysis")
CAPTION_HOLDERS = frozenset({"image", "chart", "image_block"})  # a caption inside one is dropped
COVERED = 0.9  # share of a block's area inside another that makes it internal (MinerU's threshold)
IMAGE_MIN_SIDE, IMAGE_MIN_AREA = 0.1, 0.01  # of the page: smaller images are not analysed (MinerU's)
# Sequences per generate() on the transformers engine (MinerU's choice for a GPU of 16 GB or more);
# vLLM schedules a whole Call batch itself (0 = all at once); HTTP sends max_concurrency requests.
DEFAULT_BATCH_SIZE = {"transformers": 8, "vllm-engine": 0, "http-client": 0}


class MinerU25:
    """MinerU 2.5 layout and content recognition on one model; meant for a shared pool:
    `vlm = cu.Pool(MinerU25, init={"model": path}, num_gpus=1)`, then `vlm.stage("layout")`
    (an expand into regions) and `vlm.stage("content_regions", batch_size=64)` (a map over them)."""

    @staticmethod
    def requires(init: dict) -> tuple[str, ...]:
        """The modules its engine needs (checked before a run starts): see ENGINE_MODULES."""
        return ENGINE_MODULES.get(init.get("engine", "transformers"), ())

    def __init__(self, model: str | None = None, engine: str = "transformers", server_url: str | None = None,
                 device: str = "cuda", batch_size: int | None = None, max_new_tokens: int | None = None,
                 dtype: str = "auto", model_name: str | None = None, image_analysis: bool = False,
                 max_concurrency: int = 100, http_timeout: int = 600, engine_options: dict | None = None):
        _check_options(model, engine, server_url, batch_size, max_new_tokens)
        vl = require("mineru_vl_utils", "the MinerU 2.5 backend (curate.models.mineru25)")
        from mineru_vl_utils.mineru_client import DEFAULT_SAMPLING_PARAMS

        self.engine, self.model, self.device, self.image_analysis = engine, model, device, image_analysis
        self.batch_size = DEFAULT_BATCH_SIZE[engine] if batch_size is None else batch_size
        params = {task: dataclasses.replace(p, max_new_tokens=max_new_tokens) if max_new_tokens else p
                  for task, p in DEFAULT_SAMPLING_PARAMS.items()}
        options = {"backend": engine, "sampling_params": params, "image_analysis": image_analysis, "use_tqdm": False,
                   "batch_size": self.batch_size, "max_concurrency": max_concurrency}
        if engine == "transformers":
            options["model"], options["processor"] = load_transformers(model, device, dtype)
        elif engine == "vllm-engine":
            options["vllm_llm"] = _vllm_engine(model, engine_options or {})
        else:
            options.update(server_url=server_url, model_name=model_name, http_timeout=http_timeout)
        self.client = vl.MinerUClient(**options)
        helper = self.client.helper  # crops are cut by the client's own sizes
        self.sizing = {"min_edge": helper.min_image_edge, "max_edge_ratio": helper.max_image_edge_ratio}

    # ---- the two tasks ----------------------------------------------------------------------
    def layout(self, pages: list) -> list:
        """Per page: its regions in reading order, those to read with their crop; or an ItemFailure."""
        results: list = [None] * len(pages)
        todo = []
        for i, page in enumerate(pages):
            try:
                todo.append((i, page, _page_pil(page)))
            except cu.InputError as exc:
                results[i] = cu.ItemFailure(exc)
        if todo:
            start = time.perf_counter()
            found = self.client.batch_layout_detect([pil for _, _, pil in todo])
            share = (time.perf_counter() - start) / len(todo)
            for (i, page, _), blocks in zip(todo, found, strict=True):
                results[i] = self._regions(page, list(blocks), share)
        return results

    def content(self, regions: list) -> list:
        """Per region: its content (text; a table as HTML; a formula as LaTeX; "" where MinerU reads
        nothing, as a figure without image_analysis), or an ItemFailure."""
        results: list = [None] * len(regions)
        todo = []
        for i, region in enumerate(regions):
            try:
                pil = _crop_pil(region)
            except cu.InputError as exc:
                results[i] = cu.ItemFailure(exc)
                continue
            if pil is None:
                results[i] = ""
            else:
                todo.append((i, pil, BLOCK_OF.get(region.kind, "text")))
        if todo:
            # one prompt after another: the transformers engine batches only neighbours that share one
            todo.sort(key=lambda job: self._task(job[2]))
            texts = self.client.batch_content_extract([pil for _, pil, _ in todo], [t for _, _, t in todo])
            for (i, _, block_type), text in zip(todo, texts, strict=True):
                results[i] = plain_content(block_type, text)
        return results

    def _task(self, block_type: str) -> str:
        """The prompt a block type is read with (MinerU's prompts table; the default for the rest)."""
        return block_type if block_type in self.client.prompts else "[default]"

    def content_regions(self, regions: list) -> list:
        """Per region: the region with its `content`, its crop dropped (the pixels end here) and
        its share of the reading time added to `seconds`; or an ItemFailure. The recipe's Call."""
        start = time.perf_counter()
        texts = self.content(regions)
        read = sum(1 for r in regions if getattr(r, "crop", None) is not None)
        share = (time.perf_counter() - start) / max(read, 1)
        out = []
        for region, text in zip(regions, texts, strict=True):
            if not isinstance(text, cu.ItemFailure):
                spent = share if region.crop is not None else 0.0
                text = dataclasses.replace(region, content=text, crop=None, seconds=region.seconds + spent)
            out.append(text)
        return out

    # ---- one page ---------------------------------------------------------------------------
    def _regions(self, page: PageImage, blocks: list, seconds: float) -> list[RegionRecord]:
        """The page's blocks as regions: bbox from [0, 1] of the image to points on the unrotated
        page, a crop for each block MinerU would read, the page's layout time shared out."""
        height, width = page.image.shape[:2]
        plan = reading_plan(blocks, self.image_analysis)
        regions = []
        for order, (block, read) in enumerate(plan):
            x0, y0, x1, y1 = block.bbox
            box_px = (x0 * width, y0 * height, x1 * width, y1 * height)  # as the client cuts it
            crop = None
            if read:
                try:
                    crop = crops.cut(page.image, box_px, block.angle, **self.sizing)
                except ValueError:  # under a pixel: the client skips it too
                    crop = None
            bbox = crops.unrotated(tuple(v / page.scale for v in box_px), page.page)
            regions.append(RegionRecord(kind=KIND_OF.get(block.type, "unknown"), bbox=bbox, order=order,
                                        source=SOURCE, crop=crop, level=TITLE_LEVEL.get(block.type, 0),
                                        seconds=seconds / len(plan)))
        return regions


# ---- which blocks become regions, and which are read ------------------------------------------
def reading_plan(blocks: list, image_analysis: bool) -> list[tuple]:
    """(block, read?) per block that becomes a region, in reading order: MinerU's page-level
    choices of `prepare_for_extract` (captions inside a figure go, containers give way to their
    items, an image is read only with image_analysis, when big enough and not inside an image_block)."""
    holders = [b for b in blocks if b.type in CAPTION_HOLDERS]
    groups = [b for b in blocks if b.type == "image_block"]
    plan = []
    for block in blocks:
        if block.type in CONTAINERS:
            continue
        if block.type == "image_caption" and any(_inside(block, h) for h in holders):
            continue
        read = True
        if block.type in IMAGE_TYPES:
            read = image_analysis and _big_enough(block) and not any(_inside(block, g) for g in groups)
        plan.append((block, read))
    return plan


def _inside(inner, outer) -> bool:
    a, b = inner.bbox, outer.bbox
    area = max(0.0, a[2] - a[0]) * max(0.0, a[3] - a[1])
    w, h = min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])
    return area > 0 and w > 0 and h > 0 and w * h / area >= COVERED


def _big_enough(block) -> bool:
    x0, y0, x1, y1 = block.bbox
    return (x1 - x0 > IMAGE_MIN_SIDE and y1 - y0 > IMAGE_MIN_SIDE) or (x1 - x0) * (y1 - y0) > IMAGE_MIN_AREA


# ---- content as a region holds it, and the page's Markdown --------------------------------------
def plain_content(block_type: str, text: str | None) -> str:
    """MinerU's post-processed content as a region holds it: a formula without its display
    brackets (`\\[ ... \\]`), anything else as it is; None (nothing read) as ""."""
    text = (text or "").strip()
    if block_type == "equation" and text.startswith("\\[") and text.endswith("\\]"):
        text = text[2:-2].strip()
    return str(text)


def page_markdown(items: list) -> list:
    """Map over zipped (page record, its regions): the page's Markdown row (`PageMarkdown`, route
    "layout"), by `curate.modalities.pdf.assemble.page_markdown`, which takes a text-layer and an
    OCR branch: here the regions are the layout model's, and the OCR branch is empty."""
    from curate.modalities.pdf.assemble import page_markdown as assemble_page

    return assemble_page([(page, list(regions), []) for page, regions in items])


# ---- items to images ---------------------------------------------------------------------------
def _page_pil(page):
    """The page's image as PIL, or an InputError saying what is wrong with the item."""
    if not isinstance(page, PageImage):
        raise cu.InputError(f"layout takes PageImage items (a rendered page); got {type(page).__name__}: "
                            "render the pages first (the render stage of curate.modalities.pdf)")
    height, width = page.image.shape[:2]
    if not height or not width:
        raise cu.InputError(f"page {page.page.index} of {page.page.path} rendered to an empty image "
                            f"({width}x{height} px); check the page's size and the render scale")
    return _pil(page.image)


def _crop_pil(region):
    """The region's crop as PIL; None when MinerU reads nothing there; InputError when unusable."""
    if not isinstance(region, RegionRecord):
        raise cu.InputError(f"content takes RegionRecord items (from layout); got {type(region).__name__}")
    if region.crop is None:
        return None
    shape = getattr(region.crop, "shape", None)
    if not shape or len(shape) != 3 or shape[2] != 3 or not shape[0] or not shape[1]:
        raise cu.InputError(f"region {region.order} ({region.kind}) has a crop of shape {shape}, not a "
                            "non-empty HxWx3 image; cut it with curate.modalities.pdf.crops")
    return _pil(region.crop)


def _pil(array):
    from PIL import Image

    return Image.fromarray(array if array.flags["C_CONTIGUOUS"] else array.copy(), "RGB")


# ---- engines -----------------------------------------------------------------------------------
def _check_options(model, engine, server_url, batch_size, max_new_tokens) -> None:
    if engine not in ENGINES:
        raise CurateError(f"engine {engine!r}; one of {', '.join(ENGINES)}")
    if engine == "http-client" and not server_url:
        raise CurateError("engine http-client needs server_url, the OpenAI-compatible server that serves "
                          "MinerU 2.5, e.g. server_url: http://127.0.0.1:30000 (vllm serve /models/MinerU2.5)")
    if engine != "http-client" and not (model and (Path(model) / "config.json").is_file()):
        raise CurateError(f"model={model!r} is not a local MinerU 2.5 checkpoint (a directory with config.json); "
                          "download it first, e.g. huggingface-cli download opendatalab/MinerU2.5-2509-1.2B "
                          "--local-dir /models/MinerU2.5, then give its path: model: /models/MinerU2.5 (in the "
                          "recipe: --set pools.vlm.init.model=/models/MinerU2.5)")
    for name, value in (("batch_size", batch_size), ("max_new_tokens", max_new_tokens)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise CurateError(f"{name}={value!r}; give a whole number >= 0 (or leave it out)")


def load_transformers(model: str, device: str = "cpu", dtype: str = "auto"):
    """(model, processor) of a checkpoint, loaded by mineru-vl-utils' own loader. Without
    torchvision (needed by the checkpoint's video processor, which MinerU never uses), the processor
    is assembled from the same files with the PIL image processor."""
    require("transformers", "MinerU 2.5 on the transformers engine")
    torch = require("torch", "MinerU 2.5 on the transformers engine")
    from mineru_vl_utils.transformers_loading import load_transformers_model, load_transformers_processor

    with_accelerate = importlib.util.find_spec("accelerate") is not None  # device_map needs it
    vlm = load_transformers_model(model, device_map={"": device} if with_accelerate else None)
    if not with_accelerate:
        vlm = vlm.to(device)
    if dtype != "auto":
        vlm = vlm.to(getattr(torch, dtype))
    vlm.eval()
    try:
        processor = load_transformers_processor(model)
    except ImportError:
        processor = image_only_processor(model, "Qwen2VLProcessor")
    return vlm, processor


def _vllm_engine(model: str, engine_options: dict):
    """vLLM's offline engine on the checkpoint, as MinerU builds it (its logits processor where it works)."""
    vllm = require("vllm", "MinerU 2.5 on the vllm-engine engine")
    options = {"model": model, **engine_options}
    if "logits_processors" not in options and _custom_logits_processors():
        from mineru_vl_utils import MinerULogitsProcessor

        options["logits_processors"] = [MinerULogitsProcessor]
    return vllm.LLM(**options)


def _custom_logits_processors() -> bool:
    """MinerU's own test of whether this vLLM and GPU take its no-repeat-ngram logits processor."""
    try:
        from mineru.model.vlm.engine_utils import enable_custom_logits_processors
    except ImportError:
        return False
    return enable_custom_logits_processors()
