"""A tiny MinerU 2.5 checkpoint, built offline: the real one's architecture and file set, 3.6 MB of
weights, loaded by the same `from_pretrained` calls as the real checkpoint (nothing downloads).

MinerU2.5-2509-1.2B is a Qwen2-VL model (`Qwen2VLForConditionalGeneration`, model_type
`qwen2_vl`): a NaViT vision tower (32 blocks, embed_dim 1280, patch 14, a 2x2 patch merger) and a
Qwen2-0.5B-sized decoder (24 layers, hidden 896, 14 heads of 64, 2 KV heads, M-RoPE), Qwen2's
byte-level BPE tokenizer (`Qwen2Tokenizer`) with the Qwen2-VL chat template, a
`Qwen2VLImageProcessor` and a `Qwen2VLProcessor`. mineru-vl-utils relies on Qwen2's chat tokens
(`<|im_start|>`, `<|im_end|>` as the end of an answer, `<|vision_start|>`, `<|image_pad|>`,
`<|vision_end|>`, `<|box_start|>`, `<|box_end|>`) and MinerU's own (`<|ref_start|>`,
`<|ref_end|>`, `<|rotate_up|>`...); its prompts are "\\nLayout Detection:", "\\nText Recognition:",
"\\nTable Recognition:", "\\nFormula Recognition:", "\\nImage Analysis:".

`build(path)` writes the same files, small: config.json with the real one's keys in its flat
(transformers 4) layout, a 2-layer decoder (hidden 320, 5 heads of 64, 1 KV head), a 1-block
vision tower (embed_dim 32), a byte-level BPE tokenizer (the 256 byte symbols, no merges, the
special tokens above and a few whole-phrase tokens), the chat template, generation_config.json,
and an image processor whose `max_pixels` keeps every image at 16 vision tokens or fewer (the
real one allows far more). About 2 s once torch is imported.

`scripted=False` leaves the weights random: the text is random, and the client must survive it.
`scripted=True` (the default) then sets some weights by hand, so that the model answers each
MinerU prompt with a fixed text, whatever the image (the vision tower runs, but its output lands
in dimensions nothing reads):

- the decoder's residual stream holds a one-hot of the current token (token embeddings);
- layer 0's attention copies the prompt's task letter (the only `L`, `x`, `b`, `F` or `I` in the
  whole chat: "Layout", "Text", "Table", "Formula", "Image") into a task dimension (RoPE barely
  turns the slowest pair of dimensions, which carries the query and key), and every other
  attention and MLP output is zero;
- `lm_head` is a bigram table (the next token of each scripted token, weight 2) plus the first
  token of each task's answer (from its task dimension, weight 1), so after the prompt the model
  starts its task's answer and follows it to `<|im_end|>`.

So layout answers five blocks (`LAYOUT_BLOCKS`: header, title, text, table, equation; the title
through Qwen2's special tokens one by one, the others as whole-line tokens), and content answers
`TEXT`, `TABLE_OTSL` (which MinerU's post-processing turns into an HTML table), `FORMULA` or
`IMAGE`, by the prompt's task.
"""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

# What the scripted model answers, by the prompt's task letter.
TITLE_BOX = (80, 60, 920, 110)
LINES = [  # layout blocks after the title, each one token
    "<|box_start|>80 20 920 40<|box_end|><|ref_start|>header<|ref_end|><|rotate_up|>",
    "<|box_start|>80 130 920 400<|box_end|><|ref_start|>text<|ref_end|><|rotate_up|>",
    "<|box_start|>100 420 900 700<|box_end|><|ref_start|>table<|ref_end|><|rotate_up|>",
    "<|box_start|>200 720 800 790<|box_end|><|ref_start|>equation<|ref_end|><|rotate_up|>",
]
# MinerU's block types in reading order, and their boxes in thousandths of the page
LAYOUT_BLOCKS = [("header", (80, 20, 920, 40)), ("title", TITLE_BOX), ("text", (80, 130, 920, 400)),
                 ("table", (100, 420, 900, 700)), ("equation", (200, 720, 800, 790))]
TEXT = "A tiny model reads this region."
TABLE_OTSL = "<fcel>k<fcel>v<nl><fcel>1<fcel>2<nl>"
FORMULA = "E = m c^2"
IMAGE = "A picture."

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
            "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
            "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<|ref_start|>", "<|ref_end|>",
            "<|rotate_up|>", "<|rotate_right|>", "<|rotate_down|>", "<|rotate_left|>", "<|txt_contd_tgt|>"]

CHAT_TEMPLATE = (  # Qwen2-VL's
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

HIDDEN, HEADS, KV_HEADS, LAYERS = 320, 5, 1, 2  # head_dim 64, as the real model's
HEAD_DIM = HIDDEN // HEADS
VOCAB = 288  # padded; the tokenizer uses 284
TASK_DIMS = {"L": VOCAB + 0, "x": VOCAB + 1, "b": VOCAB + 2, "F": VOCAB + 3, "I": VOCAB + 4}
IMAGE_DIMS = range(VOCAB + 8, HIDDEN)  # where the vision tower writes; nothing reads them
MAX_PIXELS = 28 * 28 * 16  # at most 16 vision tokens per image (the real model allows far more)
MIN_PIXELS = 28 * 28 * 4


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table, which Qwen2's byte-level BPE writes its vocabulary in."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) \
        + list(range(ord("\u00ae"), ord("\u00ff") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def _byte_level(text: str) -> str:
    """`text` as a byte-level vocabulary entry."""
    table = _bytes_to_unicode()
    return "".join(table[b] for b in text.encode())


def _phrases() -> list[str]:
    """The whole-phrase tokens: layout lines and answers, generated but never produced by encoding."""
    return [*LINES, f"{TITLE_BOX[0]} {TITLE_BOX[1]} {TITLE_BOX[2]} {TITLE_BOX[3]}", "title",
            TEXT, TABLE_OTSL, FORMULA, IMAGE]


def _tokenizer(path: Path) -> dict[str, int]:
    """Write tokenizer.json, tokenizer_config.json and chat_template.json; return token -> id."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    vocab = {ch: i for i, ch in enumerate(sorted(_bytes_to_unicode().values()))}  # the 256 byte symbols
    for phrase in _phrases():
        vocab.setdefault(_byte_level(phrase), len(vocab))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))  # no merges: one token a byte
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SPECIALS])
    assert tok.get_vocab_size() <= VOCAB, tok.get_vocab_size()
    tok.save(str(path / "tokenizer.json"))
    config = {"tokenizer_class": "Qwen2Tokenizer", "bos_token": None, "eos_token": "<|im_end|>",
              "pad_token": "<|endoftext|>", "unk_token": None, "padding_side": "left", "model_max_length": 4096,
              "add_prefix_space": False, "errors": "replace", "clean_up_tokenization_spaces": False,
              "split_special_tokens": False, "chat_template": CHAT_TEMPLATE}  # vLLM templates with the tokenizer
    (path / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    (path / "chat_template.json").write_text(json.dumps({"chat_template": CHAT_TEMPLATE}, indent=2))
    return {**tok.get_vocab(with_added_tokens=True)}


def _config(ids: dict[str, int]) -> dict:
    """config.json in the real checkpoint's flat layout (transformers 4 wrote it so)."""
    return {
        "architectures": ["Qwen2VLForConditionalGeneration"], "model_type": "qwen2_vl",
        "attention_dropout": 0.0, "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"], "hidden_act": "silu", "hidden_size": HIDDEN,
        "intermediate_size": 64, "initializer_range": 0.02, "max_position_embeddings": 4096,
        "max_window_layers": LAYERS, "num_attention_heads": HEADS, "num_hidden_layers": LAYERS,
        "num_key_value_heads": KV_HEADS, "rms_norm_eps": 1e-6,
        "rope_scaling": {"type": "mrope", "mrope_section": [8, 12, 12]}, "rope_theta": 1000000.0,
        "sliding_window": 4096, "use_sliding_window": False, "tie_word_embeddings": False,
        "torch_dtype": "float32", "use_cache": True, "vocab_size": VOCAB,
        "image_token_id": ids["<|image_pad|>"], "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"], "vision_end_token_id": ids["<|vision_end|>"],
        "vision_token_id": ids["<|vision_pad|>"],
        "vision_config": {"depth": 1, "embed_dim": 32, "hidden_size": HIDDEN, "hidden_act": "quick_gelu",
                          "mlp_ratio": 2, "num_heads": 1, "in_chans": 3, "in_channels": 3, "patch_size": 14,
                          "spatial_patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2},
    }


def _processor_files(path: Path) -> None:
    image = {"image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2VLProcessor",
             "do_convert_rgb": True, "do_normalize": True, "do_rescale": True, "do_resize": True,
             "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
             "rescale_factor": 1 / 255, "resample": 3, "min_pixels": MIN_PIXELS, "max_pixels": MAX_PIXELS,
             "size": {"shortest_edge": MIN_PIXELS, "longest_edge": MAX_PIXELS},
             "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2}
    (path / "preprocessor_config.json").write_text(json.dumps(image, indent=2))


def _script(model, ids: dict[str, int]) -> None:
    """Set the weights that make the answers above (see the module docstring)."""
    import torch

    text = model.model.language_model
    sd = {k: v for k, v in model.state_dict().items()}
    with torch.no_grad():
        for value in sd.values():
            if value.is_floating_point():
                value.zero_()
        for module in text.modules():
            if type(module).__name__.endswith("RMSNorm"):
                module.weight.fill_(1.0)
        text.embed_tokens.weight[:, :VOCAB].copy_(torch.eye(VOCAB))  # one-hot of the token
        # the vision tower: random, but only into IMAGE_DIMS
        visual = model.model.visual
        g = torch.Generator().manual_seed(0)
        for p in visual.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.2)
        for norm in (visual.merger.ln_q, *[b.norm1 for b in visual.blocks], *[b.norm2 for b in visual.blocks]):
            norm.weight.fill_(1.0)
            norm.bias.zero_()
        last = visual.merger.mlp[2]
        keep = torch.zeros(HIDDEN, dtype=torch.bool)
        keep[list(IMAGE_DIMS)] = True
        last.weight[~keep] = 0.0
        last.bias[~keep] = 0.0
        # layer 0, head 0: attend to the task letter (RoPE barely turns its slowest pair of dims)
        attn = text.layers[0].self_attn
        slow = HEAD_DIM // 2 - 1
        attn.q_proj.bias[slow] = 4.0
        for k, (letter, dim) in enumerate(TASK_DIMS.items()):
            tid = ids[_byte_level(letter)]
            attn.k_proj.weight[slow, tid] = 4.0
            attn.v_proj.weight[k, tid] = 1.0
            attn.o_proj.weight[dim, k] = 1.0 / (HIDDEN ** 0.5)  # the normed one-hot is sqrt(HIDDEN) long
        # lm_head: the bigram chains, and each task's first token
        head = model.lm_head.weight
        for letter, chain in _chains(ids).items():
            head[chain[0], TASK_DIMS[letter]] = 1.0
            for cur, nxt in itertools.pairwise(chain):
                head[nxt, cur] = 2.0


def _chains(ids: dict[str, int]) -> dict[str, list[int]]:
    """Per task letter, the token ids of its answer, ending with <|im_end|>."""
    t = lambda s: ids[s] if s in ids else ids[_byte_level(s)]
    title = ["<|box_start|>", f"{TITLE_BOX[0]} {TITLE_BOX[1]} {TITLE_BOX[2]} {TITLE_BOX[3]}", "<|box_end|>",
             "<|ref_start|>", "title", "<|ref_end|>", "<|rotate_up|>"]
    layout = [LINES[0], *title, *LINES[1:]]
    chains = {"L": layout, "x": [TEXT], "b": [TABLE_OTSL], "F": [FORMULA], "I": [IMAGE]}
    out = {k: [t(s) for s in v] + [ids["<|im_end|>"]] for k, v in chains.items()}
    flat = [i for c in out.values() for i in c[:-1]]
    assert len(flat) == len(set(flat)), "a scripted token must have one successor"
    return out


def build(path: str | Path, scripted: bool = True) -> Path:
    """Write a tiny MinerU 2.5 checkpoint to `path` (created); return the path."""
    import torch
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    ids = _tokenizer(path)
    _processor_files(path)
    flat = _config(ids)
    torch.manual_seed(0)
    model = Qwen2VLForConditionalGeneration(Qwen2VLConfig(**json.loads(json.dumps(flat))))
    if scripted:
        _script(model, ids)
    model.save_pretrained(path)
    (path / "config.json").write_text(json.dumps(flat, indent=2))  # the real file's layout
    (path / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": ids["<|endoftext|>"], "eos_token_id": [ids["<|im_end|>"], ids["<|endoftext|>"]],
         "pad_token_id": ids["<|endoftext|>"], "do_sample": False}, indent=2))
    (path / "processor_config.json").write_text(json.dumps({"processor_class": "Qwen2VLProcessor"}, indent=2))
    return path


if __name__ == "__main__":
    import sys

    start = time.perf_counter()
    out = build(sys.argv[1] if len(sys.argv) > 1 else "/tmp/tiny-mineru25", scripted="--random" not in sys.argv)
    size = sum(p.stat().st_size for p in out.iterdir())
    print(f"built {out} in {time.perf_counter() - start:.2f}s, {size / 1e6:.2f} MB")
