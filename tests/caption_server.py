"""A small OpenAI-compatible chat-completions server around a Qwen2.5-VL checkpoint, for tests of
QwenVL's http engine: the part of `vllm serve` it uses (GET /v1/models, POST /v1/chat/completions
with `image_url` data-URL parts and text parts, `max_tokens`, temperature, top_p,
repetition_penalty). Generation is QwenVL's own transformers engine, one request at a time, each a
batch of one. It counts requests in flight (arrived, not yet answered), so a test can check the
client's bound on concurrency; `hold_s` keeps each request in flight a while before it generates,
so concurrent requests overlap for sure.

    with CaptionServer(model_path, hold_s=0.2) as server:   # uvicorn on 127.0.0.1, a free port
        QwenVL(engine="http", server_url=server.url, max_concurrency=3)
        server.max_in_flight
"""

from __future__ import annotations

import base64
import io
import socket
import threading
import time
import uuid
from typing import Self

from curate.models.qwen_vl import Request, TransformersEngine


def create_app(model_path: str, name: str, hold_s: float = 0.0):
    """The FastAPI app serving the checkpoint at `model_path` as model `name`."""
    from fastapi import FastAPI, HTTPException

    engine = TransformersEngine(model_path, "cpu", "auto", 1, {})
    lock, count = threading.Lock(), threading.Lock()
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
        try:
            time.sleep(hold_s)
            request = _request(body.get("messages") or [])
            with lock:
                engine.sampling = {"temperature": float(body.get("temperature") or 0.0),
                                   "top_p": float(body.get("top_p") or 1.0),
                                   "repetition_penalty": float(body.get("repetition_penalty") or 1.0)}
                (text,) = engine.generate([request], int(body.get("max_tokens") or 64))
                app.state.requests += 1
        finally:
            with count:
                app.state.in_flight -= 1
        return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
                "model": name, "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                            "finish_reason": "stop"}]}

    return app


def _request(messages: list) -> Request:
    """OpenAI messages -> QwenVL's Request (image placeholders, the PIL images in order)."""
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
    return Request(out, images)


class CaptionServer:
    """uvicorn serving `create_app(...)` on 127.0.0.1 at a free port, in a daemon thread."""

    def __init__(self, model_path: str, name: str = "tiny-qwen25vl", hold_s: float = 0.0):
        self.app = create_app(model_path, name, hold_s)
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
