"""MinerU 2.5 (opendatalab/MinerU2.5-2509-1.2B, a Qwen2-VL document model) through mineru-vl-utils'
own `MinerUClient`, over plain images: its two steps as two tasks of one model.

- `layout_blocks(images)` (`protocols.BlockLayout`): per page image, MinerU's layout blocks in
  reading order (objects with `type`, `bbox` in [0, 1] of the image, `angle`); `reading_plan`
  says which of them become regions and which are read (MinerU's page-level rules).
- `read_blocks(crops)` (`protocols.BlockReading`): per block crop (`{"image", "type"}`) its
  content, post-processed as MinerU does (a table as HTML, a formula as LaTeX; `plain_content`).

The PDF modality holds the records side (pages in, regions out, crops cut by MinerU's rules):
`curate.modalities.pdf.mineru25:MinerU25`, the class recipes name.

The model is MinerUClient's, on one of three engines (`ENGINES`, chosen by `engine`):

- `transformers` (CPU or GPU): the checkpoint loaded with mineru-vl-utils' loader, in this actor;
- `vllm-engine` (GPU): vLLM's offline `LLM` in this actor, with MinerU's no-repeat-ngram logits
  processor where vLLM supports it;
- `http-client`: an OpenAI-compatible server (`vllm serve`, `mineru-openai-server`) at
  `server_url`; the actor holds no weights, so the pool needs no GPU.

`model` is a local directory (nothing downloads): fetch it first, e.g. `huggingface-cli download
opendatalab/MinerU2.5-2509-1.2B --local-dir /models/MinerU2.5`.

Compared with the client's one-call `two_step_extract`: the same layout, crops, prompts, sampling
and per-block post-processing (tables to HTML, formulas fixed and bracketed). Two page-level
touches are not reproduced, because a block is read apart from its page: the equations of an
`equation_block` stay separate formulas (not one `array`), and an image inside a table stays its
own figure block (the table is read without it). Container blocks (`list`, `image_block`,
`equation_block`) are not read: their items are.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

from curate.models._transformers import image_only_processor
from curate.models.registry import Engines

import curate as cu
from curate.deps import require
from curate.errors import CurateError

ENGINES = Engines("MinerU 2.5", default="transformers")
CONTAINERS = frozenset({"list", "image_block", "equation_block"})  # their items are the regions
IMAGE_TYPES = frozenset({"image", "chart"})  # read only with image_analysis (MinerU's "Image Analysis")
CAPTION_HOLDERS = frozenset({"image", "chart", "image_block"})  # a caption inside one is dropped
COVERED = 0.9  # share of a block's area inside another that makes it internal (MinerU's threshold)
IMAGE_MIN_SIDE, IMAGE_MIN_AREA = 0.1, 0.01  # of the page: smaller images are not analysed (MinerU's)
# Sequences per generate() on the transformers engine (MinerU's choice for a GPU of 16 GB or more);
# vLLM schedules a whole Call batch itself (0 = all at once); HTTP sends max_concurrency requests.
DEFAULT_BATCH_SIZE = {"transformers": 8, "vllm-engine": 0, "http-client": 0}


class MinerU25Model:
    """MinerU 2.5 layout and block reading on one model, over images: `layout_blocks` and
    `read_blocks`. `sizing` is the client's crop sizes, for whoever cuts the blocks' crops."""

    requires = ENGINES.requires  # the modules its engine imports, checked before a run starts
    default_resources = ENGINES.default_resources  # what each worker holds for its engine

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
        options.update(ENGINES.build(engine, model=model, device=device, dtype=dtype, server_url=server_url,
                                     model_name=model_name, http_timeout=http_timeout,
                                     engine_options=engine_options or {}))
        self.client = vl.MinerUClient(**options)
        helper = self.client.helper  # crops are cut by the client's own sizes
        self.sizing = {"min_edge": helper.min_image_edge, "max_edge_ratio": helper.max_image_edge_ratio}

    def layout_blocks(self, images: list) -> list:
        """Per page image (numpy RGB or PIL): MinerU's blocks in reading order, or an ItemFailure."""
        results: list = [None] * len(images)
        todo = []
        for i, image in enumerate(images):
            try:
                todo.append((i, _pil(image)))
            except cu.InputError as exc:
                results[i] = cu.ItemFailure(exc)
        if todo:
            found = self.client.batch_layout_detect([pil for _, pil in todo])
            for (i, _), blocks in zip(todo, found, strict=True):
                results[i] = list(blocks)
        return results

    def read_blocks(self, crops: list) -> list:
        """Per block crop (`{"image": numpy RGB or PIL, "type": MinerU block type}`): its content
        (text; a table as HTML; a formula as LaTeX), or an ItemFailure."""
        results: list = [None] * len(crops)
        todo = []
        for i, crop in enumerate(crops):
            try:
                todo.append((i, _pil(crop["image"]), crop["type"]))
            except cu.InputError as exc:
                results[i] = cu.ItemFailure(exc)
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


# ---- which blocks become regions, and which are read (MinerU's page-level rules) ---------
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


# ---- content as a region holds it ------------------------------------------------------------------
def plain_content(block_type: str, text: str | None) -> str:
    """MinerU's post-processed content as a region holds it: a formula without its display
    brackets (`\\[ ... \\]`), anything else as it is; None (nothing read) as ""."""
    text = (text or "").strip()
    if block_type == "equation" and text.startswith("\\[") and text.endswith("\\]"):
        text = text[2:-2].strip()
    return str(text)


# ---- images -------------------------------------------------------------------------------------
def _pil(image):
    """A plain image (numpy (H, W, 3) uint8 RGB, or PIL) as an RGB PIL image, or InputError."""
    from PIL import Image

    if isinstance(image, Image.Image):
        return image if image.mode == "RGB" else image.convert("RGB")
    shape = getattr(image, "shape", None)
    if not shape or len(shape) != 3 or shape[2] != 3 or not shape[0] or not shape[1]:
        raise cu.InputError(f"expected a non-empty RGB image (numpy HxWx3 uint8 or PIL); got {type(image).__name__} "
                            f"of shape {shape}: render the page (or cut the crop) first")
    return Image.fromarray(image if image.flags["C_CONTIGUOUS"] else image.copy(), "RGB")


# ---- engines -----------------------------------------------------------------------------------
def _check_options(model, engine, server_url, batch_size, max_new_tokens) -> None:
    if engine not in ENGINES.names:
        raise CurateError(f"engine {engine!r}; one of {', '.join(ENGINES.names)}")
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


# Each engine's part of MinerUClient's options. What each imports: mineru-vl-utils (MinerU's client),
# then its model runtime; vllm-engine also takes MinerU 4's logits processors (mineru). transformers
# keeps the default worker (its device is the init's: tests and `--set ...device=cpu` run it on CPUs).
@ENGINES.register("transformers", modules=("mineru_vl_utils", "torch", "transformers"))
def _transformers_options(model, device, dtype, **_) -> dict:
    vlm, processor = load_transformers(model, device, dtype)
    return {"model": vlm, "processor": processor}


@ENGINES.register("vllm-engine", modules=("mineru_vl_utils", "vllm", "mineru"), resources={"num_gpus": 1})
def _vllm_options(model, engine_options, **_) -> dict:
    return {"vllm_llm": _vllm_engine(model, engine_options)}


@ENGINES.register("http-client", modules=("mineru_vl_utils",))  # the server holds the weights
def _http_options(server_url, model_name, http_timeout, **_) -> dict:
    return {"server_url": server_url, "model_name": model_name, "http_timeout": http_timeout}


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
