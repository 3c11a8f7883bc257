"""A small OpenAI-compatible chat-completions server for tests of the http engines: the part of
`vllm serve` they use (GET /v1/models; POST /v1/chat/completions with `image_url` data-URL parts
and text parts), around a `complete(messages, images, body) -> str | Completion` callable: the
chat as a processor takes it (`{"type": "image"}` placeholders), the decoded PIL images in
order, and the request body (max_tokens, sampling...). Two completers around tiny transformers
checkpoints: `mineru25_completer` (greedy, `max_tokens`, `skip_special_tokens`, what
mineru-vl-utils' http-client sends) and `qwen_vl_completer` (QwenVL's own transformers engine,
with the request's temperature, top_p and repetition_penalty).

    with OpenAIServer(mineru25_completer(path), name="tiny-mineru25") as server:  # uvicorn, a free port
        MinerU25(engine="http-client", server_url=server.url)
        server.requests

Requests are answered one at a time (one lock around `complete`), each a batch of one. The
server counts requests in flight (arrived, not yet answered), so a test can check a client's
bound on concurrency; `meet=n` holds every request until `n` were in flight at once (then lets
them all go; later ones pass), so a client that may send `n` at once provably did, whatever the
machine's load; `hold_s` keeps each request in flight a while more before it is answered, so a
client sending more than it may overlaps them too.
"""

from __future__ import annotations

import base64
import io
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Self

DEFAULT_MAX_TOKENS = 512  # mineru-vl-utils' client may send no limit
MEET_WAIT_S = 60.0  # only ends a wait for `meet` requests that never come (the test then fails on the count)


@dataclass(frozen=True)
class Completion:
    """An answer with more than its text: why generation stopped, and the token counts."""

    text: str
    finish_reason: str = "stop"
    usage: dict | None = None


Complete = Callable[[list, list, dict], "str | Completion"]


def create_app(complete: Complete, name: str, hold_s: float = 0.0, meet: int = 0):
    """The FastAPI app answering chat completions for model `name` with `complete`."""
    from fastapi import FastAPI, HTTPException

    lock, count, met = threading.Lock(), threading.Lock(), threading.Event()
    app = FastAPI()
    app.state.requests = app.state.in_flight = app.state.max_in_flight = 0

    @app.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "tests"}]}

    @app.post("/v1/chat/completions")
    def chat(body: dict) -> dict:
        if body.get("model") != name:
            raise HTTPException(404, f"model {body.get('model')!r} is not served here; this serves {name!r}")
        with count:
            app.state.in_flight += 1
            app.state.max_in_flight = max(app.state.max_in_flight, app.state.in_flight)
            if app.state.in_flight >= meet:
                met.set()
        try:
            met.wait(MEET_WAIT_S)
            time.sleep(hold_s)
            messages, images = hf_messages(body.get("messages") or [])
            with lock:
                answer = complete(messages, images, body)
                app.state.requests += 1
        finally:
            with count:
                app.state.in_flight -= 1
        answer = Completion(answer) if isinstance(answer, str) else answer
        out = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
               "model": name, "choices": [{"index": 0, "message": {"role": "assistant", "content": answer.text},
                                           "finish_reason": answer.finish_reason}]}
        return out if answer.usage is None else {**out, "usage": answer.usage}

    return app


def hf_messages(messages: list) -> tuple[list, list]:
    """OpenAI messages -> (the processor's chat messages, the PIL images in order)."""
    from PIL import Image

    out, images = [], []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            out.append({"role": message["role"], "content": content})
            continue
        parts = []
        for part in content or []:
            if part.get("type") == "image_url":
                data = part["image_url"]["url"].split(",", 1)[1]
                images.append(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB"))
                parts.append({"type": "image"})
            elif part.get("type") == "text":
                parts.append({"type": "text", "text": part["text"]})
        out.append({"role": message["role"], "content": parts})
    return out, images


# ---- completers around tiny checkpoints -----------------------------------------------------------
def mineru25_completer(model_path: str, device: str = "cpu") -> Complete:
    """Greedy generation on a MinerU 2.5 checkpoint loaded as curate.models.mineru25 loads it:
    `max_completion_tokens` or `max_tokens`, `skip_special_tokens`, finish_reason and usage."""
    import torch
    from curate.models.mineru25 import load_transformers

    model, processor = load_transformers(model_path, device)
    eos = {t for t in _as_list(model.generation_config.eos_token_id) if t is not None}

    def complete(messages: list, images: list, body: dict) -> Completion:
        prompt = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        inputs = processor(text=[prompt], images=images or None, return_tensors="pt").to(model.device)
        limit = body.get("max_completion_tokens") or body.get("max_tokens") or DEFAULT_MAX_TOKENS
        with torch.no_grad():
            out = model.generate(**inputs, max_new_tokens=int(limit), do_sample=False)
        new = out[0, inputs["input_ids"].shape[1]:].tolist()
        stopped = bool(new) and new[-1] in eos
        text = processor.batch_decode([new[:-1] if stopped else new],
                                      skip_special_tokens=bool(body.get("skip_special_tokens", True)))[0]
        return Completion(text, "stop" if stopped else "length",
                          {"prompt_tokens": int(inputs["input_ids"].shape[1]), "completion_tokens": len(new)})

    return complete


def qwen_vl_completer(model_path: str) -> Complete:
    """QwenVL's transformers engine on the CPU, a batch of one, with the request's sampling
    (temperature, top_p, repetition_penalty) and `max_tokens`."""
    from curate.models.qwen_vl_engines import Request, TransformersEngine

    engine = TransformersEngine(model_path, "cpu", "auto", 1, {})

    def complete(messages: list, images: list, body: dict) -> str:
        engine.sampling = {"temperature": float(body.get("temperature") or 0.0),
                           "top_p": float(body.get("top_p") or 1.0),
                           "repetition_penalty": float(body.get("repetition_penalty") or 1.0)}
        (text,) = engine.generate([Request(messages, images)], int(body.get("max_tokens") or 64))
        return text

    return complete


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


class OpenAIServer:
    """uvicorn serving `create_app(complete, name, hold_s, meet)` on 127.0.0.1 at a free port, in a daemon thread."""

    def __init__(self, complete: Complete, name: str, hold_s: float = 0.0, meet: int = 0):
        self.app = create_app(complete, name, hold_s, meet)
        self.name = name

    def __enter__(self) -> Self:
        import uvicorn

        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError(f"the test server at {self.url} did not start")
            time.sleep(0.05)
        return self

    @property
    def requests(self) -> int:
        """Chat completions answered so far."""
        return self.app.state.requests

    @property
    def max_in_flight(self) -> int:
        """The most requests that were in flight at once."""
        return self.app.state.max_in_flight

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.socket.close()
