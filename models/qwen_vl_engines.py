"""QwenVL's engines (`curate.models.qwen_vl`), one per actor, each `generate(requests,
max_new_tokens) -> list[str | ItemFailure]` over `Request`s (chat messages with image
placeholders, and the images): QwenVL builds the requests and cleans the answers, the same for
all three.

- `TransformersEngine`: the checkpoint in this actor, `batch_size` sequences per `generate`,
  left-padded, requests of similar image counts together; the slow (PIL) image processor
  without the video processor, so no torchvision.
- `VllmEngine`: vLLM's offline `LLM.generate` with `multi_modal_data`, a whole batch at once.
- `HttpEngine`: an OpenAI-compatible server's chat completions with `image_url` data-URL parts,
  at most `max_concurrency` in flight; a 4xx is the item's failure, the rest transient.
"""

from __future__ import annotations

import base64
import importlib.util
import io
import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from curate.models._transformers import chat_template, image_only_processor

import curate as cu
from curate.deps import require
from curate.errors import CurateError


@dataclass(frozen=True, slots=True)
class Request:
    """One generation: chat messages with `{"type": "image"}` placeholders, and those images in order."""

    messages: list
    images: list


class TransformersEngine:
    """The checkpoint through transformers in this actor: sub-batches of `batch_size` sequences."""

    def __init__(self, model: str, device: str, dtype: str, batch_size: int, sampling: dict):
        torch = require("torch", "Qwen2.5-VL on the transformers engine")
        transformers = require("transformers", "Qwen2.5-VL on the transformers engine")
        self.torch, self.sampling = torch, sampling
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        if dtype == "auto":
            dtype = "bfloat16" if self.device.startswith("cuda") else "float32"
        placed = importlib.util.find_spec("accelerate") is not None  # loads straight onto the device
        self.model = transformers.Qwen2_5_VLForConditionalGeneration.from_pretrained(
            model, dtype=getattr(torch, dtype), **({"device_map": {"": self.device}} if placed else {}))
        self.model = self.model.to(self.device).eval()
        self.processor = image_only_processor(model, "Qwen2_5_VLProcessor", padding_side="left")
        self.batch_size = batch_size or 1_000_000
        eos = self.model.generation_config.eos_token_id
        self.eos = set(eos if isinstance(eos, (list, tuple)) else [eos]) - {None}

    def generate(self, requests: list[Request], max_new_tokens: int) -> list[str]:
        order = sorted(range(len(requests)), key=lambda i: len(requests[i].images))  # similar lengths together
        out: list = [None] * len(requests)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            for i, text in zip(chunk, self._generate([requests[i] for i in chunk], max_new_tokens), strict=True):
                out[i] = text
        return out

    def _generate(self, requests: list[Request], max_new_tokens: int) -> list[str]:
        texts = [self.processor.apply_chat_template(r.messages, tokenize=False, add_generation_prompt=True)
                 for r in requests]
        images = [im for r in requests for im in r.images] or None
        inputs = self.processor(text=texts, images=images, padding=True, return_tensors="pt").to(self.device)
        options = {"max_new_tokens": max_new_tokens, "do_sample": self.sampling["temperature"] > 0,
                   "repetition_penalty": self.sampling["repetition_penalty"]}
        if options["do_sample"]:
            options.update(temperature=self.sampling["temperature"], top_p=self.sampling["top_p"])
        else:
            options.update(temperature=None, top_p=None, top_k=None)  # the checkpoint's sampling defaults off
        with self.torch.inference_mode():
            ids = self.model.generate(**inputs, **options)
        new = ids[:, inputs["input_ids"].shape[1]:].tolist()
        return self.processor.batch_decode([_until_eos(seq, self.eos) for seq in new], skip_special_tokens=True)


def _until_eos(ids: list[int], eos: set[int]) -> list[int]:
    for n, token in enumerate(ids):
        if token in eos:
            return ids[:n]
    return ids


class VllmEngine:
    """vLLM's offline engine in this actor (GPU): `LLM(...).generate` with `multi_modal_data`."""

    def __init__(self, model: str, sampling: dict, max_frames: int, **options):
        vllm = require("vllm", "Qwen2.5-VL on the vllm engine")
        self.vllm, self.sampling = vllm, sampling
        options.setdefault("limit_mm_per_prompt", {"image": max_frames})
        self.llm = vllm.LLM(model=model, **options)
        self.template = chat_template(model, self.llm.get_tokenizer())

    def generate(self, requests: list[Request], max_new_tokens: int) -> list[str]:
        tokenizer = self.llm.get_tokenizer()
        prompts = []
        for r in requests:
            text = tokenizer.apply_chat_template(r.messages, chat_template=self.template, tokenize=False,
                                                 add_generation_prompt=True)
            prompts.append({"prompt": text, "multi_modal_data": {"image": r.images}} if r.images else {"prompt": text})
        params = self.vllm.SamplingParams(max_tokens=max_new_tokens, **self.sampling)
        outputs = self.llm.generate(prompts, sampling_params=params, use_tqdm=False)
        return [o.outputs[0].text for o in outputs]


class HttpEngine:
    """An OpenAI-compatible server's chat completions, at most `max_concurrency` requests in flight."""

    def __init__(self, server_url: str, model_name: str | None, max_concurrency: int, timeout_s: float,
                 sampling: dict, image_format: str):
        self.url, self.timeout_s, self.sampling = server_url.rstrip("/"), timeout_s, sampling
        self.image_format = image_format
        self.model_name = model_name or self._served_model()
        self.pool = ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="qwen-vl-http")

    def _served_model(self) -> str:
        body = self._call("GET", "/v1/models", None)
        names = [m.get("id") for m in body.get("data", [])]
        if not names:
            raise CurateError(f"{self.url}/v1/models lists no model; start the server with one "
                              "(vllm serve /models/Qwen2.5-VL-7B-Instruct), or give model_name")
        return names[0]

    def generate(self, requests: list[Request], max_new_tokens: int) -> list:
        return list(self.pool.map(lambda r: self._complete(r, max_new_tokens), requests))

    def _complete(self, request: Request, max_new_tokens: int):
        images = iter(request.images)
        messages = [{"role": m["role"], "content": m["content"] if isinstance(m["content"], str) else
                     [self._image_part(next(images)) if p["type"] == "image" else p for p in m["content"]]}
                    for m in request.messages]
        body = {"model": self.model_name, "messages": messages, "max_tokens": max_new_tokens, **self.sampling}
        try:
            answer = self._call("POST", "/v1/chat/completions", body)
        except cu.InputError as exc:
            return cu.ItemFailure(exc)
        return answer["choices"][0]["message"].get("content") or ""

    def _image_part(self, image) -> dict:
        buffer = io.BytesIO()
        image.save(buffer, format=self.image_format.upper(), **({"quality": 95} if self.image_format == "jpeg" else {}))
        data = base64.b64encode(buffer.getvalue()).decode("ascii")
        return {"type": "image_url", "image_url": {"url": f"data:image/{self.image_format};base64,{data}"}}

    def _call(self, method: str, path: str, body: dict | None) -> dict:
        """The server's JSON answer; a 4xx is the item's InputError, anything else a TransientError."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:500]
            if 400 <= exc.code < 500 and exc.code not in (408, 429):
                raise cu.InputError(f"{self.url}{path} refused the request ({exc.code}): {detail}") from None
            raise cu.TransientError(f"{self.url}{path} answered {exc.code}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            raise cu.TransientError(f"{self.url}{path} did not answer ({exc}); is the server up?") from None

    def close(self) -> None:
        self.pool.shutdown(wait=False)
