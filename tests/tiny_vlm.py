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
real one allows far more). The tokenizer, config.json's layout and the processor files come
from curate.models.tiny_checkpoints' helpers, shared with its tiny Qwen2.5-VL; the scripted
weights are MinerU's own.

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

from curate.models.tiny_checkpoints import (
    QWEN_VL_SPECIALS,
    byte_level,
    qwen_vl_config,
    save_checkpoint,
    write_processor_files,
    write_tokenizer,
)

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

SPECIALS = [*QWEN_VL_SPECIALS, "<|ref_start|>", "<|ref_end|>", "<|rotate_up|>", "<|rotate_right|>",
            "<|rotate_down|>", "<|rotate_left|>", "<|txt_contd_tgt|>"]  # Qwen2-VL's, then MinerU's

HIDDEN, HEADS, KV_HEADS, LAYERS = 320, 5, 1, 2  # head_dim 64, as the real model's
HEAD_DIM = HIDDEN // HEADS
VOCAB = 288  # padded; the tokenizer uses 284
TASK_DIMS = {"L": VOCAB + 0, "x": VOCAB + 1, "b": VOCAB + 2, "F": VOCAB + 3, "I": VOCAB + 4}
IMAGE_DIMS = range(VOCAB + 8, HIDDEN)  # where the vision tower writes; nothing reads them
MAX_PIXELS = 28 * 28 * 16  # at most 16 vision tokens per image (the real model allows far more)
MIN_PIXELS = 28 * 28 * 4


def _phrases() -> list[str]:
    """The whole-phrase tokens: layout lines and answers, generated but never produced by encoding."""
    return [*LINES, f"{TITLE_BOX[0]} {TITLE_BOX[1]} {TITLE_BOX[2]} {TITLE_BOX[3]}", "title",
            TEXT, TABLE_OTSL, FORMULA, IMAGE]


def _config(ids: dict[str, int]) -> dict:
    """config.json in the real checkpoint's flat layout (transformers 4 wrote it so)."""
    vision = {"depth": 1, "embed_dim": 32, "hidden_size": HIDDEN, "hidden_act": "quick_gelu", "mlp_ratio": 2,
              "num_heads": 1, "in_chans": 3, "in_channels": 3, "patch_size": 14, "spatial_patch_size": 14,
              "spatial_merge_size": 2, "temporal_patch_size": 2}
    return qwen_vl_config(ids, architecture="Qwen2VLForConditionalGeneration", model_type="qwen2_vl", hidden=HIDDEN,
                          heads=HEADS, kv_heads=KV_HEADS, layers=LAYERS, intermediate=64, max_positions=4096,
                          vocab_size=VOCAB, vision_config=vision)


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
            tid = ids[byte_level(letter)]
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
    t = lambda s: ids[s] if s in ids else ids[byte_level(s)]
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
    ids = write_tokenizer(path, SPECIALS, _phrases(), vocab_size=VOCAB, model_max_length=4096)
    flat = _config(ids)
    torch.manual_seed(0)
    model = Qwen2VLForConditionalGeneration(Qwen2VLConfig(**json.loads(json.dumps(flat))))
    if scripted:
        _script(model, ids)
    save_checkpoint(model, path, flat)
    write_processor_files(path, ids, "Qwen2VLProcessor", min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS,
                          size={"shortest_edge": MIN_PIXELS, "longest_edge": MAX_PIXELS})
    return path


if __name__ == "__main__":
    import sys

    start = time.perf_counter()
    out = build(sys.argv[1] if len(sys.argv) > 1 else "/tmp/tiny-mineru25", scripted="--random" not in sys.argv)
    size = sum(p.stat().st_size for p in out.iterdir())
    print(f"built {out} in {time.perf_counter() - start:.2f}s, {size / 1e6:.2f} MB")
