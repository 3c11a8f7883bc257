"""Tiny clip embedders and a tiny aesthetic head, built offline in seconds, for tests and examples:
the real checkpoints' architectures and file sets, loaded by the same `from_pretrained(path)` code
as openai/clip-vit-large-patch14 or google/siglip-so400m-patch14-384. Their weights are random,
so a vector says nothing about what a clip shows; it does say whether two clips show the same
thing (identical pixels, identical vectors; a re-encoded or rescaled copy, nearly so), which is
what semantic dedup needs of it.

    python -m curate.models.tiny_embedders /tmp/tiny-clip            # a tiny CLIP (or --siglip)
    python -m curate.models.tiny_embedders --aesthetic /tmp/tiny-aesthetic --dim 32

What a tiny embedder directory holds, each file as the real checkpoint has it: config.json
(`CLIPModel`: a 2-layer vision tower of width 64 over 16-px patches of a 64-px image, a 2-layer
text tower of width 32, a projection of `dim`; or `SiglipModel` of the same sizes),
preprocessor_config.json (`CLIPImageProcessor`: shortest edge 64, centre crop 64, CLIP's
normalisation; `SiglipImageProcessor`: 64x64, mean and std 0.5) and model.safetensors. The
vision tower is a bag of patches: a wide patch embedding (`PATCH_STD`) and zero class and
position embeddings, so different pictures get different vectors (a random tower with them maps
every picture within a few degrees of one direction), while the same picture re-encoded,
rescaled or sampled at slightly shifted times keeps its vector.

The aesthetic head (`build_tiny_aesthetic`) is `curate.models.aesthetic`'s file set: the LAION
predictor's layer shapes on an input of `dim`, random.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

IMAGE_SIZE, PATCH = 64, 16  # 16 patches per frame: the layout of the picture, cheaply
VISION_HIDDEN, VISION_LAYERS, HEADS = 64, 2, 2
TEXT_HIDDEN, TEXT_VOCAB = 32, 99  # a text tower is part of the architecture; the embedder never runs it
DIM = 32  # the vector's length
PATCH_STD = 0.5  # the patch embedding's spread (SigLIP has no LayerNorm before its encoder: it sets the scale)
CLIP_MEAN, CLIP_STD = [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]


def _towers() -> tuple[dict, dict]:
    vision = {"hidden_size": VISION_HIDDEN, "intermediate_size": 2 * VISION_HIDDEN, "num_hidden_layers": VISION_LAYERS,
              "num_attention_heads": HEADS, "image_size": IMAGE_SIZE, "patch_size": PATCH}
    text = {"vocab_size": TEXT_VOCAB, "hidden_size": TEXT_HIDDEN, "intermediate_size": 2 * TEXT_HIDDEN,
            "num_hidden_layers": 2, "num_attention_heads": HEADS, "max_position_embeddings": 16,
            "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 1}
    return vision, text


def _bag_of_patches(vision_model, torch) -> None:
    """A wide patch embedding, and no class or position embedding: the tower's vector then comes
    from what the frame's patches show, not from a constant every image shares (a random tower
    with them maps every picture within a few degrees of one direction)."""
    with torch.no_grad():
        embeddings = vision_model.embeddings
        embeddings.patch_embedding.weight.normal_(0.0, PATCH_STD)
        embeddings.position_embedding.weight.zero_()
        if hasattr(embeddings, "class_embedding"):  # CLIP's; SigLIP pools with an attention head instead
            embeddings.class_embedding.zero_()


def build_tiny_clip(path: str | Path, seed: int = 0, dim: int = DIM) -> Path:
    """Write a tiny randomly initialised CLIP checkpoint to `path` (created); return the path."""
    import torch
    from transformers import CLIPConfig, CLIPModel

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    vision, text = _towers()
    torch.manual_seed(seed)
    model = CLIPModel(CLIPConfig(vision_config=vision, text_config=text, projection_dim=dim))
    _bag_of_patches(model.vision_model, torch)
    model.save_pretrained(path)
    image = {"image_processor_type": "CLIPImageProcessor", "do_resize": True, "size": {"shortest_edge": IMAGE_SIZE},
             "resample": 3, "do_center_crop": True, "crop_size": {"height": IMAGE_SIZE, "width": IMAGE_SIZE},
             "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": CLIP_MEAN,
             "image_std": CLIP_STD, "do_convert_rgb": True}
    (path / "preprocessor_config.json").write_text(json.dumps(image, indent=2))
    return path


def build_tiny_siglip(path: str | Path, seed: int = 0) -> Path:
    """Write a tiny randomly initialised SigLIP checkpoint to `path` (created); return the path.
    Its vectors have the vision tower's width (SigLIP has no projection)."""
    import torch
    from transformers import SiglipConfig, SiglipModel

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    vision, text = _towers()
    text["hidden_size"] = VISION_HIDDEN  # SigLIP's towers share a width
    text["intermediate_size"] = 2 * VISION_HIDDEN
    torch.manual_seed(seed)
    model = SiglipModel(SiglipConfig(vision_config=vision, text_config=text))
    _bag_of_patches(model.vision_model, torch)
    model.save_pretrained(path)
    image = {"image_processor_type": "SiglipImageProcessor", "do_resize": True,
             "size": {"height": IMAGE_SIZE, "width": IMAGE_SIZE}, "resample": 2, "do_rescale": True,
             "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": [0.5, 0.5, 0.5],
             "image_std": [0.5, 0.5, 0.5], "do_convert_rgb": True}
    (path / "preprocessor_config.json").write_text(json.dumps(image, indent=2))
    return path


def build_tiny_aesthetic(path: str | Path, dim: int = DIM, seed: int = 0) -> Path:
    """Write a tiny random aesthetic head for vectors of length `dim` to `path` (created)."""
    import torch

    from curate.models.aesthetic import head, save_head

    torch.manual_seed(seed)
    return save_head(head(dim), path, embedding_model="tiny-clip")


USAGE = ("usage: python -m curate.models.tiny_embedders [--siglip] PATH   (a tiny random CLIP or SigLIP)\n"
         "       python -m curate.models.tiny_embedders --aesthetic PATH [--dim N]   (a tiny random aesthetic head)")


def main(argv: list[str] | None = None) -> int:
    """`python -m curate.models.tiny_embedders [--siglip | --aesthetic [--dim N]] PATH`."""
    args = list(sys.argv[1:] if argv is None else argv)
    kind = "clip"
    dim = DIM
    if args[:1] in (["--siglip"], ["--aesthetic"]):
        kind = args.pop(0)[2:]
    if kind == "aesthetic" and len(args) == 3 and args[1] == "--dim" and args[2].isdigit():
        dim = int(args.pop(2))
        args.pop(1)
    if len(args) != 1 or args[0].startswith("-"):
        print(USAGE, file=sys.stderr)
        return 2
    start = time.perf_counter()
    build = {"clip": build_tiny_clip, "siglip": build_tiny_siglip}.get(kind)
    out = build(args[0]) if build else build_tiny_aesthetic(args[0], dim)
    size = sum(p.stat().st_size for p in out.iterdir())
    use = "pools.embedder.init.aesthetic" if kind == "aesthetic" else "pools.embedder.init.model"
    print(f"built a tiny {kind} in {out} ({size / 1e6:.2f} MB, {time.perf_counter() - start:.1f} s); "
          f"use it: --set {use}={out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
