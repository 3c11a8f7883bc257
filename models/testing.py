"""A tiny Qwen2.5-VL checkpoint, built offline in seconds, for tests and examples: the real one's
architecture and file set, loaded by the same `from_pretrained(path)` code as
Qwen/Qwen2.5-VL-7B-Instruct. Its weights are random, so its captions are noise; every code path
around the model (processor, chat template, generation, decoding) is the real one.

    python -m curate.models.testing /tmp/tiny-qwen25vl        # or build_tiny_qwen25vl(path)
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
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
            "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>",
            "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>",
            "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"]  # Qwen2.5's, in order
WORDS = ["a", "the", "and", "of", "in", "on", "with", "to", "is", "are", "his", "her", "their", "it", "this", "clip",
         "video", "shows", "person", "man", "woman", "people", "car", "bike", "road", "street", "room", "table",
         "hand", "ball", "dog", "water", "light", "camera", "walks", "runs", "rides", "holds", "turns", "moves",
         "flips", "pancake", "kitchen", "outside", "inside", "slowly", "quickly", "then", "while", "near"]

CHAT_TEMPLATE = (  # Qwen2.5-VL-7B-Instruct's chat_template.json
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

HIDDEN, HEADS, KV_HEADS, LAYERS = 128, 2, 1, 2  # head_dim 64, the real model's
VISION_HIDDEN, VISION_DEPTH = 32, 2
VOCAB = 384  # padded; the tokenizer uses 256 bytes + WORDS + SPECIALS
MAX_PIXELS = 28 * 28 * 16  # at most 16 vision tokens per image
MIN_PIXELS = 28 * 28 * 4


def _bytes_to_unicode() -> dict[int, str]:
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


def _tokenizer(path: Path) -> dict[str, int]:
    """Write tokenizer.json, tokenizer_config.json and chat_template.json; return token -> id."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    table = _bytes_to_unicode()
    vocab = {ch: i for i, ch in enumerate(sorted(table.values()))}
    for word in WORDS:  # " word" as one token; encoding still goes byte by byte (no merges)
        vocab.setdefault("".join(table[b] for b in f" {word}".encode()), len(vocab))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SPECIALS])
    if tok.get_vocab_size() > VOCAB:
        raise AssertionError(f"the tiny vocabulary has {tok.get_vocab_size()} tokens, over {VOCAB}")
    tok.save(str(path / "tokenizer.json"))
    config = {"tokenizer_class": "Qwen2Tokenizer", "bos_token": None, "eos_token": "<|im_end|>",
              "pad_token": "<|endoftext|>", "unk_token": None, "padding_side": "left", "model_max_length": 32768,
              "add_prefix_space": False, "errors": "replace", "clean_up_tokenization_spaces": False,
              "split_special_tokens": False, "additional_special_tokens": SPECIALS[1:],
              "chat_template": CHAT_TEMPLATE}
    (path / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    (path / "chat_template.json").write_text(json.dumps({"chat_template": CHAT_TEMPLATE}, indent=2))
    return tok.get_vocab(with_added_tokens=True)


def _config(ids: dict[str, int]) -> dict:
    """config.json in the real checkpoint's flat layout."""
    return {
        "architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
        "attention_dropout": 0.0, "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"], "hidden_act": "silu", "hidden_size": HIDDEN,
        "intermediate_size": 256, "initializer_range": 0.02, "max_position_embeddings": 32768,
        "max_window_layers": LAYERS, "num_attention_heads": HEADS, "num_hidden_layers": LAYERS,
        "num_key_value_heads": KV_HEADS, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
        "rope_scaling": {"type": "mrope", "mrope_section": [8, 12, 12]},  # sums to head_dim / 2
        "sliding_window": 32768, "use_sliding_window": False, "tie_word_embeddings": False,
        "torch_dtype": "float32", "use_cache": True, "vocab_size": VOCAB,
        "image_token_id": ids["<|image_pad|>"], "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"], "vision_end_token_id": ids["<|vision_end|>"],
        "vision_token_id": ids["<|vision_pad|>"],
        "vision_config": {"depth": VISION_DEPTH, "hidden_act": "silu", "hidden_size": VISION_HIDDEN,
                          "intermediate_size": 64, "num_heads": 1, "in_chans": 3, "out_hidden_size": HIDDEN,
                          "patch_size": 14, "spatial_merge_size": 2, "spatial_patch_size": 14,
                          "window_size": 112, "fullatt_block_indexes": [VISION_DEPTH - 1],
                          "tokens_per_second": 2, "temporal_patch_size": 2},
    }


def _processor_files(path: Path, ids: dict[str, int]) -> None:
    image = {"image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2_5_VLProcessor",
             "do_convert_rgb": True, "do_normalize": True, "do_rescale": True, "do_resize": True,
             "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
             "rescale_factor": 1 / 255, "resample": 3, "min_pixels": MIN_PIXELS, "max_pixels": MAX_PIXELS,
             "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2}
    (path / "preprocessor_config.json").write_text(json.dumps(image, indent=2))
    (path / "processor_config.json").write_text(json.dumps({"processor_class": "Qwen2_5_VLProcessor"}, indent=2))
    (path / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": ids["<|endoftext|>"], "pad_token_id": ids["<|endoftext|>"],
         "eos_token_id": [ids["<|im_end|>"], ids["<|endoftext|>"]], "do_sample": False}, indent=2))


def build_tiny_qwen25vl(path: str | Path, seed: int = 0) -> Path:
    """Write a tiny randomly initialised Qwen2.5-VL checkpoint to `path` (created); return the path."""
    import torch
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    ids = _tokenizer(path)
    flat = _config(ids)
    torch.manual_seed(seed)
    model = Qwen2_5_VLForConditionalGeneration(Qwen2_5_VLConfig(**json.loads(json.dumps(flat))))
    with torch.no_grad():  # larger logits than the init's 0.02 spread: the noise is less repetitive
        model.lm_head.weight.normal_(0.0, 0.5)
    model.save_pretrained(path)
    (path / "config.json").write_text(json.dumps(flat, indent=2))  # the real file's flat layout
    _processor_files(path, ids)
    return path


def main(argv: list[str] | None = None) -> int:
    """`python -m curate.models.testing PATH`: build the tiny checkpoint at PATH."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m curate.models.testing PATH   (writes a tiny random Qwen2.5-VL checkpoint to PATH)",
              file=sys.stderr)
        return 2
    start = time.perf_counter()
    out = build_tiny_qwen25vl(args[0])
    size = sum(p.stat().st_size for p in out.iterdir())
    print(f"built a tiny Qwen2.5-VL checkpoint in {out} ({size / 1e6:.1f} MB, {time.perf_counter() - start:.1f} s); "
          f"caption with it: --set pools.captioner.init.model={out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
