"""Qwen2.5-VL, a backend over plain items: a clip's frames and a prompt -> its caption; a video's
clip captions -> its summary. One model per worker serves both tasks, each its own Call:

- `caption(items)`: per item, a `protocols.TimedCaptionItem` (a mapping, or an object, with
  `frames`: images in time order, optional `prompt`, a template, and `timestamps`: each frame's
  time in seconds), or a bare list of images -> its caption, a str.
- `summarize(videos)`: per video, its clip captions in order (str) -> a summary of the video
  (None for a video without captions, or with `summaries: false`).

The video modality's stage (`curate.modalities.video.captions:QwenVL`, what the recipes name)
builds this backend once per worker and turns FrameRecords into items and captions into
ClipCaption records.

Frames go to the model as images, one `<|image_pad|>` block per frame in one user message,
never through Qwen2.5-VL's video path: that needs transformers' video processor, which needs
torchvision (not on a CPU-only install), and images travel the same way through all three
engines (transformers, vLLM's `multi_modal_data`, OpenAI `image_url` parts). The price: a
frame costs its own vision tokens (the video path merges two frames per temporal patch) and time
is given by order and by the timestamps in the prompt, not by M-RoPE's time ids; `max_pixels`
caps each frame's size, hence its tokens.

Engines (`engine`), one per worker, chosen from `ENGINES` (models/registry.py), each with the
modules it imports and what its worker holds; the classes are in `qwen_vl_engines.py`, and the
prompt, frame preparation and output cleanup here are shared:

- `transformers` (CPU or GPU; by default a CPU worker): the checkpoint through
  `Qwen2_5_VLForConditionalGeneration.from_pretrained`, with the slow (PIL) image processor, so
  no torchvision; `batch_size` sequences per `generate`, left-padded, clips of similar frame
  counts together.
- `vllm` (one GPU per worker by default): vLLM's offline `LLM(...)` in the worker,
  `LLM.generate` with `multi_modal_data` (a whole Call batch at once: vLLM schedules it);
  `gpu_memory_utilization`, `max_model_len`, `engine_options` (more `LLM` keywords).
- `http`: a running OpenAI-compatible server (`vllm serve MODEL --limit-mm-per-prompt
  '{"image": 32}'`) at `server_url`, chat completions with `image_url` data-URL parts, at most
  `max_concurrency` requests in flight per worker; the worker holds no weights (no GPU).

`model` is a local directory (nothing downloads). `python -m curate.models.tiny_checkpoints
PATH` writes a tiny random one for tests.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Mapping
from pathlib import Path

from curate.models.qwen_vl_engines import HttpEngine, Request, TransformersEngine, VllmEngine
from curate.models.registry import Engines

import curate as cu
from curate.errors import CurateError

# Frames of one clip the model sees (more are thinned evenly; vLLM's image limit per prompt): the
# video sampler's own cap (MAX_FRAMES_PER_CLIP), so the frames it samples pass whole.
DEFAULT_MAX_FRAMES = 32
DEFAULT_PROMPT = ("These {frames} frames are sampled in time order from one video clip, at {timestamps} s. "
                  "Describe the clip in one or two sentences: the setting, the main subjects and what they do.")
DEFAULT_SUMMARY_PROMPT = ("Here are the captions of the consecutive clips of one video, in order:\n{captions}\n"
                          "Summarize the whole video in two or three sentences.")
PROMPT_FIELDS = {"caption": ("frames", "timestamps"), "summary": ("captions", "clips")}
DEFAULT_MAX_NEW_TOKENS = 128  # a caption of one or two sentences, with room to finish them
DEFAULT_SUMMARY_MAX_NEW_TOKENS = 256
# Sequences per generate() on the transformers engine (a 7B model's activations for 4 clips of
# 32 frames fit a 24 GB GPU); vLLM schedules a whole Call batch itself; HTTP sends max_concurrency.
DEFAULT_BATCH_SIZE = {"transformers": 4, "vllm": 0, "http": 0}
DEFAULT_MAX_PIXELS = 448 * 448  # per frame: at most 256 vision tokens (the frames stage sizes them smaller)
DEFAULT_MAX_CONCURRENCY = 16  # requests in flight per actor on the http engine
HTTP_TIMEOUT_S = 600  # one request: a long generation on a busy server
HTTP_NUM_CPUS = 0.25  # an http worker only sizes and encodes frames, then waits: curate's default CPU share
DOWNLOAD = ("download it first, e.g. huggingface-cli download Qwen/Qwen2.5-VL-7B-Instruct --local-dir "
            "/models/Qwen2.5-VL-7B-Instruct (for a test, a tiny random one: python -m curate.models.tiny_checkpoints "
            "/tmp/tiny-qwen25vl), then give its path: --set pools.captioner.init.model=/models/Qwen2.5-VL-7B-Instruct")


ENGINES = Engines("QwenVL", default="transformers")  # registered below the class; PIL sizes the frames


class QwenVLModel:
    """Qwen2.5-VL over plain items, one model per worker for both tasks (`caption`, `summarize`);
    recipes use it through the video modality's stage, `curate.modalities.video.captions:QwenVL`."""

    requires = ENGINES.requires  # the modules its engine imports, checked before a run starts
    default_resources = ENGINES.default_resources  # what each worker holds for its engine

    def __init__(self, model: str | None = None, engine: str = "transformers", device: str = "auto",
                 dtype: str = "auto", batch_size: int | None = None, prompt: str = DEFAULT_PROMPT,
                 summary_prompt: str = DEFAULT_SUMMARY_PROMPT, summaries: bool = True,
                 max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
                 summary_max_new_tokens: int = DEFAULT_SUMMARY_MAX_NEW_TOKENS, temperature: float = 0.0,
                 top_p: float = 1.0, repetition_penalty: float = 1.05, max_frames: int = DEFAULT_MAX_FRAMES,
                 max_pixels: int = DEFAULT_MAX_PIXELS, model_name: str | None = None,
                 server_url: str | None = None, max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
                 http_timeout_s: float = HTTP_TIMEOUT_S, image_format: str = "jpeg",
                 gpu_memory_utilization: float = 0.9, max_model_len: int = 16384,
                 engine_options: dict | None = None):
        check_options(model=model, engine=engine, server_url=server_url, prompt=prompt, summary_prompt=summary_prompt,
                      batch_size=batch_size, max_new_tokens=max_new_tokens, max_frames=max_frames,
                      max_pixels=max_pixels, max_concurrency=max_concurrency, image_format=image_format)
        self.engine_name, self.prompt, self.summary_prompt, self.summaries = engine, prompt, summary_prompt, summaries
        self.max_frames, self.max_pixels = max_frames, max_pixels
        self.model_name = model_name or (Path(model).name if model else None)
        self.sampling = {"temperature": float(temperature), "top_p": float(top_p),
                         "repetition_penalty": float(repetition_penalty)}
        self.max_new_tokens, self.summary_max_new_tokens = max_new_tokens, summary_max_new_tokens
        self.engine = ENGINES.build(
            engine, model=model, device=device, dtype=dtype, sampling=self.sampling, max_frames=max_frames,
            batch_size=DEFAULT_BATCH_SIZE[engine] if batch_size is None else batch_size, server_url=server_url,
            model_name=model_name, max_concurrency=max_concurrency, http_timeout_s=http_timeout_s,
            image_format=image_format, gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len,
            engine_options=engine_options or {})
        self.model_name = getattr(self.engine, "model_name", self.model_name)  # http: as the server names it

    # ---- the tasks ------------------------------------------------------------------------------
    def caption(self, clips: list) -> list:
        """Per clip (a CaptionItem, or its images in time order): its caption, or an ItemFailure."""
        results: list = [None] * len(clips)
        todo: list[tuple[int, Request]] = []
        for i, clip in enumerate(clips):
            try:
                frames, prompt, times = caption_item(clip, self.prompt)
            except cu.InputError as exc:
                results[i] = cu.ItemFailure(exc)
                continue
            frames, times = evenly(frames, self.max_frames), evenly(times, self.max_frames)
            text = fill(prompt, frames=len(frames), timestamps=", ".join(f"{t:.1f}" for t in times) or "unknown")
            todo.append((i, caption_request([to_pil(f, self.max_pixels) for f in frames], text)))
        if todo:
            texts = self.engine.generate([r for _, r in todo], self.max_new_tokens)
            for (i, _), text in zip(todo, texts, strict=True):
                results[i] = text if isinstance(text, cu.ItemFailure) else clean_text(text)
        return results

    def summarize(self, videos: list) -> list:
        """Per video (its clip captions in order): a summary; None without captions or with summaries off."""
        results: list = [None] * len(videos)
        todo = []
        for i, captions in enumerate(videos):
            texts = [t.strip() for t in captions or [] if isinstance(t, str) and t.strip()]
            if self.summaries and texts:
                listed = "\n".join(f"{n}. {t}" for n, t in enumerate(texts, 1))
                todo.append((i, Request([{"role": "user", "content": fill(self.summary_prompt, captions=listed,
                                                                           clips=len(texts))}], [])))
        if todo:
            texts = self.engine.generate([r for _, r in todo], self.summary_max_new_tokens)
            for (i, _), text in zip(todo, texts, strict=True):
                results[i] = text if isinstance(text, cu.ItemFailure) else clean_text(text)
        return results

    def close(self) -> None:
        """Release the engine's threads (http); the model goes with the worker."""
        getattr(self.engine, "close", lambda: None)()


# ---- the engines: each takes the options it needs (the rest are the other engines') ------------------
@ENGINES.register("transformers", modules=("PIL", "torch", "transformers"))
def _transformers(*, model, device, dtype, batch_size, sampling, **_) -> TransformersEngine:
    return TransformersEngine(model, device, dtype, batch_size, sampling)


@ENGINES.register("vllm", modules=("PIL", "vllm"), resources={"num_gpus": 1})
def _vllm(*, model, sampling, max_frames, dtype, gpu_memory_utilization, max_model_len, engine_options,
          **_) -> VllmEngine:
    return VllmEngine(model, sampling, max_frames=max_frames, dtype=dtype,
                      gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len, **engine_options)


@ENGINES.register("http", modules=("PIL",), resources={"num_cpus": HTTP_NUM_CPUS})
def _http(*, server_url, model_name, max_concurrency, http_timeout_s, sampling, image_format, **_) -> HttpEngine:
    return HttpEngine(server_url, model_name, max_concurrency, http_timeout_s, sampling, image_format)


# ---- shared: items, prompts, frames, output ------------------------------------------------------
def caption_item(item, default_prompt: str) -> tuple[list, str, list[float]]:
    """(images, prompt template, timestamps) of one caption item: a list of images, or a mapping or
    an object with `frames` (and optional `prompt` and `timestamps`, one per frame); InputError when
    it has no frames or a frame is not an image. Timestamps that do not match the frames are dropped."""
    if isinstance(item, (list, tuple)):
        frames, prompt, times = list(item), default_prompt, []
    elif isinstance(item, Mapping) or hasattr(item, "frames"):
        get = item.get if isinstance(item, Mapping) else lambda k: getattr(item, k, None)
        frames, prompt, times = get("frames"), get("prompt") or default_prompt, list(get("timestamps") or [])
        if not isinstance(frames, (list, tuple)):
            raise cu.InputError(f"a caption item's frames must be a list of frames; got {type(frames).__name__}")
        frames = list(frames)
    else:
        raise cu.InputError(f"caption takes per clip its frames in time order (a list of FrameRecords) or a "
                            f"mapping with frames and prompt; got {type(item).__name__}")
    if not frames:
        raise cu.InputError("the clip has no frames to caption; sample at least one frame per clip (the frames "
                            "stage's fps and size), or filter out clips too short to sample")
    for n, image in enumerate(frames):
        check_image(n, image)
    return frames, str(prompt), [float(t) for t in times] if len(times) == len(frames) else []


def check_image(n: int, image) -> None:
    """InputError unless frame `n` of a clip is a non-empty HxWx3 array or a PIL image."""
    shape, size = getattr(image, "shape", None), getattr(image, "size", None)
    if shape is not None and (len(shape) != 3 or shape[2] != 3 or not shape[0] or not shape[1]):
        raise cu.InputError(f"frame {n} of the clip has shape {tuple(shape)}, not a non-empty HxWx3 image")
    if shape is None and not (isinstance(size, tuple) and len(size) == 2 and all(size)):
        raise cu.InputError(f"frame {n} of the clip is a {type(image).__name__}, not a FrameRecord or an image")


def evenly(items: list, limit: int) -> list:
    """At most `limit` of `items`, evenly spread, first and last kept (a long clip's frames)."""
    if len(items) <= limit:
        return list(items)
    if limit == 1:
        return [items[0]]
    return [items[round(k * (len(items) - 1) / (limit - 1))] for k in range(limit)]


def caption_request(images: list, text: str) -> Request:
    """The chat of one clip: its frames as images, in order, then the instruction."""
    content = [*({"type": "image"} for _ in images), {"type": "text", "text": text}]
    return Request([{"role": "user", "content": content}], images)


def fill(template: str, **fields) -> str:
    """The template with its fields filled (check_options has checked their names)."""
    return template.format_map(fields)


def to_pil(image, max_pixels: int):
    """An RGB PIL image of at most `max_pixels` (resized keeping its aspect ratio when larger)."""
    from PIL import Image

    if not isinstance(image, Image.Image):
        image = Image.fromarray(image if image.flags["C_CONTIGUOUS"] else image.copy(), "RGB")
    elif image.mode != "RGB":
        image = image.convert("RGB")
    width, height = image.size
    if width * height > max_pixels:
        scale = math.sqrt(max_pixels / (width * height))
        image = image.resize((max(1, int(width * scale)), max(1, int(height * scale))), Image.Resampling.BICUBIC)
    return image


_SPECIAL = re.compile(r"<\|[a-z_]+\|>|</?tool_call>")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ufffd]")


def clean_text(text: str | None) -> str:
    """A model's answer as a caption: no leftover special tokens, control or replacement characters,
    runs of whitespace as one space, no enclosing quotes."""
    text = _CONTROL.sub("", _SPECIAL.sub("", text or ""))
    text = " ".join(text.split())
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


# ---- options --------------------------------------------------------------------------------------
def check_options(*, model, engine, server_url, prompt, summary_prompt, batch_size, max_new_tokens, max_frames,
                  max_pixels, max_concurrency, image_format) -> None:
    """Every problem with the options at once, each with its fix (a CurateError)."""
    problems = []
    if engine not in ENGINES.names:
        problems.append(f"engine {engine!r}; one of {', '.join(ENGINES.names)}")
    elif engine == "http" and not server_url:
        problems.append("engine http needs server_url, the OpenAI-compatible server that serves the model, e.g. "
                        "server_url: http://127.0.0.1:8000 (vllm serve /models/Qwen2.5-VL-7B-Instruct)")
    elif engine != "http":
        problems += _model_problems(model)
    for kind, template in (("caption", prompt), ("summary", summary_prompt)):
        problems += _template_problems(kind, template)
    for name, value, least in (("batch_size", batch_size, 0), ("max_new_tokens", max_new_tokens, 1),
                               ("max_frames", max_frames, 1), ("max_pixels", max_pixels, 28 * 28),
                               ("max_concurrency", max_concurrency, 1)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < least):
            problems.append(f"{name}={value!r}; give a whole number >= {least}")
    if image_format not in ("jpeg", "png"):
        problems.append(f"image_format={image_format!r}; jpeg (small requests) or png (lossless)")
    if problems:
        raise CurateError("QwenVL: " + "; ".join(problems))


def _model_problems(model) -> list[str]:
    if not model:
        return [f"no model: give a local Qwen2.5-VL checkpoint directory; {DOWNLOAD}"]
    path = Path(str(model))
    if not path.is_dir():
        return [f"model={model!r}: no such directory (nothing downloads: model is a local path); {DOWNLOAD}"]
    needed = ("config.json", "tokenizer_config.json", "preprocessor_config.json")
    missing = [f for f in needed if not (path / f).is_file()]
    weights = any(path.glob("*.safetensors")) or any(path.glob("*.bin"))
    if missing or not weights:
        what = ", ".join(missing + ([] if weights else ["the weights (*.safetensors)"]))
        return [f"model={model!r} has no Qwen2.5-VL weights: {what} missing; {DOWNLOAD}"]
    return []


def _template_problems(kind: str, template) -> list[str]:
    allowed = PROMPT_FIELDS[kind]
    name = "prompt" if kind == "caption" else "summary_prompt"
    if not isinstance(template, str) or not template.strip():
        return [f"{name}={template!r}; give the instruction text"]
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        return [f"{name} is not a valid template ({exc}); write literal braces as {{{{ and }}}}"]
    bad = sorted({f for f in fields if f.split(".")[0].split("[")[0] not in allowed})
    if bad:
        unknown, listed = (", ".join("{" + f + "}" for f in names) for names in (bad, allowed))
        problem = f"{name} has unknown field(s) {unknown}; it may use {listed} (literal braces: {{{{ and }}}})"
        return [problem]
    return []
