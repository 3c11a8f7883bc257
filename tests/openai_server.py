"""A small OpenAI-compatible chat-completions server around a transformers VLM, for tests: the part
of `vllm serve` that mineru-vl-utils' http-client uses (GET /v1/models, POST /v1/chat/completions
with `image_url` data-URL parts, greedy decoding, `max_tokens`, `skip_special_tokens`).

    with OpenAIServer(model_path) as server:    # uvicorn on 127.0.0.1, a free port, in a thread
        MinerU25(engine="http-client", server_url=server.url)

Requests are answered one at a time (one lock around generate), each as a batch of one.
"""

from __future__ import annotations

import base64
import io
import socket
import threading
import time
import uuid
from typing import Self

DEFAULT_MAX_TOKENS = 512


def create_app(model_path: str, name: str = "tiny-mineru25", device: str = "cpu"):
    """The FastAPI app serving the checkpoint at `model_path` as model `name`."""
    import torch
    from curate.models.mineru25 import load_transformers
    from fastapi import FastAPI, HTTPException

    model, processor = load_transformers(model_path, device)
    eos = {t for t in _as_list(model.generation_config.eos_token_id) if t is not None}
    lock = threading.Lock()
    app = FastAPI()
    app.state.requests = 0

    @app.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "tests"}]}

    @app.post("/v1/chat/completions")
    def chat(body: dict) -> dict:
        if body.get("model") != name:
            raise HTTPException(404, f"model {body.get('model')!r} is not served here; this serves {name!r}")
        messages, images = _hf_messages(body.get("messages") or [])
        prompt = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        inputs = processor(text=[prompt], images=images or None, return_tensors="pt").to(model.device)
        limit = body.get("max_completion_tokens") or body.get("max_tokens") or DEFAULT_MAX_TOKENS
        with lock, torch.no_grad():
            app.state.requests += 1
            out = model.generate(**inputs, max_new_tokens=int(limit), do_sample=False)
        new = out[0, inputs["input_ids"].shape[1]:].tolist()
        stopped = bool(new) and new[-1] in eos
        text = processor.batch_decode([new[:-1] if stopped else new],
                                      skip_special_tokens=bool(body.get("skip_special_tokens", True)))[0]
        return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
                "model": name, "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                            "finish_reason": "stop" if stopped else "length"}],
                "usage": {"prompt_tokens": int(inputs["input_ids"].shape[1]), "completion_tokens": len(new)}}

    return app


def _hf_messages(messages: list) -> tuple[list, list]:
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


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


class OpenAIServer:
    """uvicorn serving `create_app(...)` on 127.0.0.1 at a free port, in a daemon thread."""

    def __init__(self, model_path: str, name: str = "tiny-mineru25"):
        self.app = create_app(model_path, name)
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

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.socket.close()
