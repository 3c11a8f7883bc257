"""A tiny Qwen2.5-VL checkpoint, built offline in seconds, for tests and examples: the real one's
architecture and file set, loaded by the same `from_pretrained(path)` code as
Qwen/Qwen2.5-VL-7B-Instruct. Its weights are random, so its captions are noise; every code path
around the model (processor, chat template, generation, decoding) is the real one.

    python -m curate.models.tiny_checkpoints /tmp/tiny-qwen25vl   # or build_tiny_qwen25vl(path)
    curate run video_captions --input 'videos/*.mp4' --output out/ \\
        --set pools.captioner.init.model=/tmp/tiny-qwen25vl

What it writes, each file as the real checkpoint has it:

- config.json: `Qwen2_5_VLForConditionalGeneration`, model_type `qwen2_5_vl`, in the real file's
  flat layout: a 2-layer decoder (hidden 128, 2 heads of 64 as the real model's, 1 KV head,
  M-RoPE sections 16/24/24 halved to 8/12/12), a 2-block vision tower (hidden 32, window
  attention in block 0, full attention in block 1, patch 14, a 2x2 patch merger), and the real
  model's special token ids mapped onto the tiny vocabulary;
- tokenizer.json, tokenizer_config.json: a byte-level BPE tokenizer (`Qwen2Tokenizer`) built with
  `tokenizers`: the 256 byte symbols, a few dozen whole-word tokens (so the noise reads as words),
  and Qwen2.5-VL's special tokens (`<|im_start|>`, `<|im_end|>`, `<|vision_start|>`,
  `<|image_pad|>`, `<|video_pad|>`, `<|vision_end|>`, ...);
- chat_template.json (and the template in tokenizer_config.json, where vLLM reads it): Qwen2.5-VL's;
- preprocessor_config.json: `Qwen2VLImageProcessor` (the slow, PIL one works without
  torchvision), `max_pixels` at 16 vision tokens per image (the real one allows far more);
- processor_config.json (`Qwen2_5_VLProcessor`), generation_config.json, model.safetensors
  (about 1 MB).

The pieces any tiny Qwen-VL-family checkpoint needs are public, for other tiny checkpoints (the
tests' MinerU 2.5, a Qwen2-VL, uses them): `write_tokenizer` (a byte-level `Qwen2Tokenizer` with
the chat template), `qwen_vl_config` (config.json's flat layout), `write_processor_files`
(image processor, processor and generation configs) and `save_checkpoint`, with
`QWEN_VL_SPECIALS` and `QWEN_VL_CHAT_TEMPLATE`.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

QWEN_VL_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
                    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
                    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"]  # Qwen2(.5)-VL's first ones
SPECIALS = [*QWEN_VL_SPECIALS, "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
            "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"]  # Qwen2.5's, in order
WORDS = ["a", "the", "and", "of", "in", "on", "with", "to", "is", "are", "his", "her", "their", "it", "this", "clip",
         "video", "shows", "person", "man", "woman", "people", "car", "bike", "road", "street", "room", "table",
         "hand", "ball", "dog", "water", "light", "camera", "walks", "runs", "rides", "holds", "turns", "moves",
         "flips", "pancake", "kitchen", "outside", "inside", "slowly", "quickly", "then", "while", "near"]

QWEN_VL_CHAT_TEMPLATE = (  # Qwen2-VL's, and Qwen2.5-VL-7B-Instruct's chat_template.json (the same text)
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}<|im_start|>system\n"
    "You are a helpful assistant.<|im_end|>\n{% endif %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n{% else %}"
    "{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}Picture {{ image_count.value }}: "
    "{% endif %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}{% set video_count.value = video_count.value + 1 %}"
    "{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
CHAT_TEMPLATE = QWEN_VL_CHAT_TEMPLATE

HIDDEN, HEADS, KV_HEADS, LAYERS = 128, 2, 1, 2  # head_dim 64, the real model's
VISION_HIDDEN, VISION_DEPTH = 32, 2
VOCAB = 384  # padded; the tokenizer uses 256 bytes + WORDS + SPECIALS
MAX_PIXELS = 28 * 28 * 16  # at most 16 vision tokens per image
MIN_PIXELS = 28 * 28 * 4
# CLIP's normalisation, as every Qwen-VL image processor has it
IMAGE_MEAN, IMAGE_STD = [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]


# ---- the pieces every tiny Qwen-VL-family checkpoint needs -----------------------------------------
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table: the alphabet of Qwen2's byte-level vocabulary."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) \
        + list(range(ord("\u00ae"), ord("\u00ff") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def byte_level(text: str) -> str:
    """`text` as a byte-level vocabulary entry (how `write_tokenizer` stores a whole-text token)."""
    table = bytes_to_unicode()
    return "".join(table[b] for b in text.encode())


def write_tokenizer(path: Path, specials: list[str], tokens: list[str], *, vocab_size: int,
                    model_max_length: int, additional_special_tokens: list[str] | None = None) -> dict[str, int]:
    """Write tokenizer.json, tokenizer_config.json and chat_template.json (`QWEN_VL_CHAT_TEMPLATE`,
    also in tokenizer_config.json, where vLLM reads it) of a byte-level BPE `Qwen2Tokenizer`: the
    256 byte symbols, each of `tokens` as one whole token (generated, never produced by encoding,
    which goes byte by byte: there are no merges), then `specials`. Return token -> id."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    vocab = {ch: i for i, ch in enumerate(sorted(bytes_to_unicode().values()))}
    for token in tokens:
        vocab.setdefault(byte_level(token), len(vocab))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    if tok.get_vocab_size() > vocab_size:
        raise AssertionError(f"the tiny vocabulary has {tok.get_vocab_size()} tokens, over {vocab_size}")
    tok.save(str(path / "tokenizer.json"))
    config = {"tokenizer_class": "Qwen2Tokenizer", "bos_token": None, "eos_token": "<|im_end|>",
              "pad_token": "<|endoftext|>", "unk_token": None, "padding_side": "left",
              "model_max_length": model_max_length, "add_prefix_space": False, "errors": "replace",
              "clean_up_tokenization_spaces": False, "split_special_tokens": False}
    if additional_special_tokens is not None:
        config["additional_special_tokens"] = additional_special_tokens
    config["chat_template"] = QWEN_VL_CHAT_TEMPLATE
    (path / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    (path / "chat_template.json").write_text(json.dumps({"chat_template": QWEN_VL_CHAT_TEMPLATE}, indent=2))
    return tok.get_vocab(with_added_tokens=True)


def qwen_vl_config(ids: dict[str, int], *, architecture: str, model_type: str, hidden: int, heads: int,
                   kv_heads: int, layers: int, intermediate: int, max_positions: int, vocab_size: int,
                   vision_config: dict) -> dict:
    """config.json of a Qwen-VL-family checkpoint in the real files' flat (transformers 4) layout:
    the decoder's sizes, M-RoPE sections 8/12/12 (for heads of 64), the special token ids from the
    tokenizer's `ids`, and `vision_config` as given."""
    return {
        "architectures": [architecture], "model_type": model_type,
        "attention_dropout": 0.0, "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"], "hidden_act": "silu", "hidden_size": hidden,
        "intermediate_size": intermediate, "initializer_range": 0.02, "max_position_embeddings": max_positions,
        "max_window_layers": layers, "num_attention_heads": heads, "num_hidden_layers": layers,
        "num_key_value_heads": kv_heads, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
        "rope_scaling": {"type": "mrope", "mrope_section": [8, 12, 12]},  # sums to head_dim / 2
        "sliding_window": max_positions, "use_sliding_window": False, "tie_word_embeddings": False,
        "torch_dtype": "float32", "use_cache": True, "vocab_size": vocab_size,
        "image_token_id": ids["<|image_pad|>"], "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"], "vision_end_token_id": ids["<|vision_end|>"],
        "vision_token_id": ids["<|vision_pad|>"], "vision_config": vision_config,
    }


def write_processor_files(path: Path, ids: dict[str, int], processor_class: str, *, min_pixels: int,
                          max_pixels: int, **image_options) -> None:
    """Write preprocessor_config.json (`Qwen2VLImageProcessor`, patch 14, 2x2 merge, images of
    `min_pixels`..`max_pixels`, plus `image_options`), processor_config.json (`processor_class`)
    and generation_config.json (greedy, stopping at `<|im_end|>` or `<|endoftext|>`). After
    `save_pretrained`, which writes a generation_config.json of its own."""
    image = {"image_processor_type": "Qwen2VLImageProcessor", "processor_class": processor_class,
             "do_convert_rgb": True, "do_normalize": True, "do_rescale": True, "do_resize": True,
             "image_mean": IMAGE_MEAN, "image_std": IMAGE_STD, "rescale_factor": 1 / 255, "resample": 3,
             "min_pixels": min_pixels, "max_pixels": max_pixels, "patch_size": 14, "temporal_patch_size": 2,
             "merge_size": 2, **image_options}
    (path / "preprocessor_config.json").write_text(json.dumps(image, indent=2))
    (path / "processor_config.json").write_text(json.dumps({"processor_class": processor_class}, indent=2))
    (path / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": ids["<|endoftext|>"], "pad_token_id": ids["<|endoftext|>"],
         "eos_token_id": [ids["<|im_end|>"], ids["<|endoftext|>"]], "do_sample": False}, indent=2))


def save_checkpoint(model, path: Path, config: dict) -> None:
    """`model.save_pretrained(path)`, then config.json rewritten in the real file's flat layout."""
    model.save_pretrained(path)
    (path / "config.json").write_text(json.dumps(config, indent=2))


# ---- the tiny Qwen2.5-VL -----------------------------------------------------------------------------
def _config(ids: dict[str, int]) -> dict:
    vision = {"depth": VISION_DEPTH, "hidden_act": "silu", "hidden_size": VISION_HIDDEN, "intermediate_size": 64,
              "num_heads": 1, "in_chans": 3, "out_hidden_size": HIDDEN, "patch_size": 14, "spatial_merge_size": 2,
              "spatial_patch_size": 14, "window_size": 112, "fullatt_block_indexes": [VISION_DEPTH - 1],
              "tokens_per_second": 2, "temporal_patch_size": 2}
    return qwen_vl_config(ids, architecture="Qwen2_5_VLForConditionalGeneration", model_type="qwen2_5_vl",
                          hidden=HIDDEN, heads=HEADS, kv_heads=KV_HEADS, layers=LAYERS, intermediate=256,
                          max_positions=32768, vocab_size=VOCAB, vision_config=vision)


def build_tiny_qwen25vl(path: str | Path, seed: int = 0) -> Path:
    """Write a tiny randomly initialised Qwen2.5-VL checkpoint to `path` (created); return the path."""
    import torch
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    ids = write_tokenizer(path, SPECIALS, [f" {word}" for word in WORDS], vocab_size=VOCAB, model_max_length=32768,
                          additional_special_tokens=SPECIALS[1:])
    flat = _config(ids)
    torch.manual_seed(seed)
    model = Qwen2_5_VLForConditionalGeneration(Qwen2_5_VLConfig(**json.loads(json.dumps(flat))))
    with torch.no_grad():  # larger logits than the init's 0.02 spread: the noise is less repetitive
        model.lm_head.weight.normal_(0.0, 0.5)
    save_checkpoint(model, path, flat)
    write_processor_files(path, ids, "Qwen2_5_VLProcessor", min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS)
    return path


def main(argv: list[str] | None = None) -> int:
    """`python -m curate.models.tiny_checkpoints PATH`: build the tiny checkpoint at PATH."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m curate.models.tiny_checkpoints PATH   "
              "(writes a tiny random Qwen2.5-VL checkpoint to PATH)", file=sys.stderr)
        return 2
    start = time.perf_counter()
    out = build_tiny_qwen25vl(args[0])
    size = sum(p.stat().st_size for p in out.iterdir())
    print(f"built a tiny Qwen2.5-VL checkpoint in {out} ({size / 1e6:.1f} MB, {time.perf_counter() - start:.1f} s); "
          f"caption with it: --set pools.captioner.init.model={out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
