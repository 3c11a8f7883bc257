"""transformers loading that the Qwen-VL-family backends share (`qwen_vl`, `mineru25`). Private;
everything heavy is imported inside the functions, so importing this module stays light."""

from __future__ import annotations

import json
from pathlib import Path


def image_only_processor(model: str, processor_class: str, **tokenizer_options):
    """The checkpoint's `processor_class` (a transformers Qwen-VL processor, e.g. "Qwen2VLProcessor",
    "Qwen2_5_VLProcessor") built from its tokenizer, chat template and slow (PIL) image processor,
    without the video processor: that needs torchvision (not on a CPU-only install), and images
    are all these backends send. `tokenizer_options` go to `AutoTokenizer.from_pretrained`."""
    import transformers
    from transformers.processing_utils import ProcessorMixin

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        # what the full processor's __init__ sets, less the video processor
        self.image_token = getattr(tokenizer, "image_token", None) or "<|image_pad|>"
        self.video_token = getattr(tokenizer, "video_token", None) or "<|video_pad|>"
        self.image_token_id = tokenizer.convert_tokens_to_ids(self.image_token)
        self.video_token_id = tokenizer.convert_tokens_to_ids(self.video_token)
        ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)

    base = getattr(transformers, processor_class)
    image_only = type(f"ImageOnly{processor_class}", (base,), {"__init__": __init__, "__module__": __name__})
    tokenizer = transformers.AutoTokenizer.from_pretrained(model, **tokenizer_options)
    image_processor = transformers.AutoImageProcessor.from_pretrained(model, backend="pil")
    return image_only(image_processor, tokenizer, chat_template=chat_template(model, tokenizer))


def chat_template(model: str, tokenizer=None) -> str | None:
    """The checkpoint's chat template: chat_template.jinja or .json beside the weights, else the tokenizer's."""
    jinja, js = Path(model) / "chat_template.jinja", Path(model) / "chat_template.json"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    if js.is_file():
        return json.loads(js.read_text(encoding="utf-8"))["chat_template"]
    return getattr(tokenizer, "chat_template", None)
