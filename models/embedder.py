"""Clip embeddings on a CLIP or SigLIP image tower: a clip's frames -> one float32 vector.

`ClipEmbedderModel(model=DIR)` loads any checkpoint whose transformers model has
`get_image_features` (CLIPModel, SiglipModel, Siglip2Model, ...) with `AutoModel.from_pretrained`
and its image processor with `AutoImageProcessor.from_pretrained` from the same local directory
(nothing downloads). The image processor is the slow (PIL) one, as the Qwen-VL backends use it:
it needs no torchvision and sizes frames the same on every machine.

- `embed(clips)`: per clip, its frames in time order (a list of images, or a mapping or object
  with `frames`) -> a unit-length float32 vector: each frame's image embedding L2-normalised,
  their mean, L2-normalised again (per-frame normalisation first, so no frame outweighs the
  others by its norm). A clip without frames is an ItemFailure.
- `embed_frames(images)`: the L2-normalised embedding of each image, an (n, d) float32 array,
  `batch_size` images per forward pass whatever clips they come from: a batch of clips of many
  videos costs the same passes as one long clip.

At most `max_frames` frames of a clip are used, evenly spread, first and last kept. The model
name the clips table records is the directory's name unless `model_name` says otherwise.
`python -m curate.models.tiny_embedders DIR` writes a tiny random CLIP for tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import curate as cu
from curate.deps import require
from curate.errors import CurateError

# Images per forward pass: a ViT-L/14 at 224 px holds ~20 MB of activations per image in fp16, so
# 64 fit any GPU beside the weights; on a CPU a pass of 64 small frames takes a few seconds.
DEFAULT_BATCH_SIZE = 64
# Frames of one clip that are embedded: 8 spread over a clip of up to 20 s see each of its
# moments, and semantic dedup compares clips, not frames (more are thinned evenly).
DEFAULT_MAX_FRAMES = 8
DOWNLOAD = ("download one first, e.g. huggingface-cli download openai/clip-vit-large-patch14 --local-dir "
            "/models/clip-vit-large-patch14 (or google/siglip-so400m-patch14-384; for a test, a tiny random one: "
            "python -m curate.models.tiny_embedders /tmp/tiny-clip), then give its path: "
            "--set pools.embedder.init.model=/models/clip-vit-large-patch14")


class ClipEmbedderModel:
    """A CLIP or SigLIP image tower over plain items, one model per worker (`embed`, `embed_frames`);
    recipes use it through the video stage `curate.modalities.video.embed:ClipEmbedder`."""

    requires = ("PIL", "torch", "transformers")  # checked before a run starts
    default_resources: dict = {}  # a CPU share by default; give the pool num_gpus: 1 on a GPU

    def __init__(self, model: str | None = None, device: str = "auto", dtype: str = "auto",
                 batch_size: int = DEFAULT_BATCH_SIZE, max_frames: int = DEFAULT_MAX_FRAMES,
                 model_name: str | None = None):
        check_options(model=model, batch_size=batch_size, max_frames=max_frames, dtype=dtype)
        torch = require("torch", "the clip embedder")
        transformers = require("transformers", "the clip embedder")
        self.torch, self.batch_size, self.max_frames = torch, batch_size, max_frames
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        if dtype == "auto":
            dtype = "float16" if self.device.startswith("cuda") else "float32"
        self.model = transformers.AutoModel.from_pretrained(model, dtype=getattr(torch, dtype)).to(self.device).eval()
        if not hasattr(self.model, "get_image_features"):
            raise CurateError(f"model={model!r} is a {type(self.model).__name__}, which has no image tower "
                              f"(get_image_features); give a CLIP or SigLIP checkpoint; {DOWNLOAD}")
        self.processor = transformers.AutoImageProcessor.from_pretrained(model, backend="pil")
        self.model_name = model_name or Path(model).name

    @property
    def dim(self) -> int:
        """The length of a vector: the checkpoint's projection size."""
        config = self.model.config
        return int(getattr(config, "projection_dim", None) or config.vision_config.hidden_size)

    def embed(self, clips: list) -> list:
        """Per clip (its frames in time order): its unit-length float32 vector, or an ItemFailure."""
        import numpy as np

        results: list = [None] * len(clips)
        spans, images = [], []  # per clip to embed: (its index, where its frames start, how many)
        for i, clip in enumerate(clips):
            try:
                frames = evenly(clip_frames(clip), self.max_frames)
            except cu.InputError as exc:
                results[i] = cu.ItemFailure(exc)
                continue
            spans.append((i, len(images), len(frames)))
            images.extend(frames)
        if images:
            vectors = self.embed_frames(images)
            for i, start, n in spans:
                results[i] = pooled(vectors[start:start + n], np)
        return results

    __call__ = embed

    def embed_frames(self, images: list):
        """The L2-normalised image embedding of each image, an (n, d) float32 array."""
        import numpy as np

        out = np.zeros((len(images), self.dim), np.float32)
        for start in range(0, len(images), self.batch_size):
            chunk = [to_rgb(im) for im in images[start:start + self.batch_size]]
            inputs = self.processor(images=chunk, return_tensors="pt")
            pixels = inputs["pixel_values"].to(self.device, self.model.dtype)
            with self.torch.inference_mode():
                features = self.model.get_image_features(pixel_values=pixels)
            if not self.torch.is_tensor(features):  # transformers 5: the projected output's pooler_output
                features = features.pooler_output
            out[start:start + len(chunk)] = features.float().cpu().numpy()
        return unit(out, np)


def clip_frames(clip) -> list:
    """The images of one clip item: a list of images (or records with `image`), or a mapping or
    object with `frames`; InputError when there is none or one is not an HxWx3 image."""
    if isinstance(clip, Mapping) or (hasattr(clip, "frames") and not isinstance(clip, (list, tuple))):
        frames = clip.get("frames") if isinstance(clip, Mapping) else getattr(clip, "frames", None)
    else:
        frames = clip
    if not isinstance(frames, (list, tuple)):
        raise cu.InputError(f"embed takes per clip its frames in time order (a list of images); got "
                            f"{type(frames).__name__}")
    if not frames:
        raise cu.InputError("the clip has no frames to embed; sample at least one frame per clip (the frames stage's "
                            "fps or frames), or filter out clips too short to sample")
    images = [getattr(f, "image", f) for f in frames]
    for n, image in enumerate(images):
        shape, size = getattr(image, "shape", None), getattr(image, "size", None)
        ok = (len(shape) == 3 and shape[2] == 3 and shape[0] and shape[1]) if shape is not None else (
            isinstance(size, tuple) and len(size) == 2 and all(size))
        if not ok:
            raise cu.InputError(f"frame {n} of the clip is not a non-empty HxWx3 image "
                                f"({type(image).__name__} {tuple(shape) if shape is not None else size})")
    return images


def evenly(items: list, limit: int) -> list:
    """At most `limit` of `items`, evenly spread, first and last kept."""
    if len(items) <= limit:
        return list(items)
    if limit == 1:
        return [items[len(items) // 2]]
    return [items[round(k * (len(items) - 1) / (limit - 1))] for k in range(limit)]


def to_rgb(image):
    """An RGB PIL image of an HxWx3 uint8 array or a PIL image."""
    from PIL import Image

    if isinstance(image, Image.Image):
        return image if image.mode == "RGB" else image.convert("RGB")
    return Image.fromarray(image if image.flags["C_CONTIGUOUS"] else image.copy(), "RGB")


def unit(vectors, np):
    """Each row of `vectors` scaled to length 1 (a zero row stays zero), as float32."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def pooled(frames, np):
    """One clip's vector from its frames' unit vectors: their mean, made unit length."""
    return unit(frames.mean(axis=0, dtype=np.float64), np)


def check_options(*, model, batch_size, max_frames, dtype) -> None:
    """Every problem with the options at once, each with its fix (a CurateError)."""
    problems = []
    if not model:
        problems.append(f"no model: give a local CLIP or SigLIP checkpoint directory; {DOWNLOAD}")
    elif not Path(str(model)).is_dir():
        problems.append(f"model={model!r}: no such directory (nothing downloads: model is a local path); {DOWNLOAD}")
    else:
        path = Path(str(model))
        missing = [f for f in ("config.json", "preprocessor_config.json") if not (path / f).is_file()]
        if not (any(path.glob("*.safetensors")) or any(path.glob("*.bin"))):
            missing.append("the weights (*.safetensors)")
        if missing:
            problems.append(f"model={model!r} is not a CLIP or SigLIP checkpoint: {', '.join(missing)} missing; "
                            f"{DOWNLOAD}")
    for name, value in (("batch_size", batch_size), ("max_frames", max_frames)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            problems.append(f"{name}={value!r}; give a whole number >= 1")
    if dtype not in ("auto", "float32", "float16", "bfloat16"):
        problems.append(f"dtype={dtype!r}; one of auto, float32, float16, bfloat16")
    if problems:
        raise CurateError("ClipEmbedder: " + "; ".join(problems))
