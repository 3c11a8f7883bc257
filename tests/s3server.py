"""A real S3 API on 127.0.0.1 for the tests: moto's server mode in its own process (`python -m
moto.server`), never a mocked client; and `FlakyProxy`, a real HTTP proxy in front of it that
answers chosen requests with an error (503 SlowDown) so that retries meet a real failure.

`s3_endpoint` (session) starts the server and sets the standard variables (`AWS_ENDPOINT_URL`,
keys, region) in this process, so every client curate makes (s3fs, boto3, pyarrow) finds it the
way a user's would find MinIO; processes started afterwards inherit them. `s3_bucket` makes a new
bucket per test."""

from __future__ import annotations

import http.client
import itertools
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

START_TIMEOUT_S = 60.0  # the server process importing moto and flask on a loaded 2-core machine
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}
_buckets = itertools.count()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2).close()
        return True
    except urllib.error.HTTPError:
        return True  # an S3 error document is an answer: the server is up
    except OSError:
        return False


class MotoServer:
    """`python -m moto.server` on a free port of 127.0.0.1, stopped by `close`."""

    def __init__(self):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # its request log goes to a file: a pipe nobody reads fills after ~600 requests and
        # blocks the server's every thread on its next log line
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(self.url):  # a condition, polled: the server is up when it answers
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise RuntimeError(f"moto's server exited ({self.proc.returncode}): "
                                   f"{self.log.read().decode(errors='replace')[-2000:]}")
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"moto's server did not answer on {self.url} within {START_TIMEOUT_S} s")
            time.sleep(0.1)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class FlakyProxy:
    """An HTTP proxy on 127.0.0.1 in front of `upstream` that answers with `status` (and an S3
    error document) the requests for which `fail(method, path)` is true, and forwards the rest.
    `failed` counts the requests it failed; `seen` lists (method, path) of every request."""

    def __init__(self, upstream: str, fail, status: int = 503, code: str = "SlowDown"):
        host, port = upstream.removeprefix("http://").split(":")
        self.fail, self.failed, self.seen = fail, 0, []
        lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall

            def log_message(self, *args):  # quiet
                pass

            def _handle(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with lock:
                    proxy.seen.append((self.command, self.path))
                    refuse = proxy.fail(self.command, self.path)
                    proxy.failed += bool(refuse)
                if refuse:
                    doc = (f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code>"
                           "<Message>injected by the test's proxy</Message></Error>").encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(doc)))
                    self.end_headers()
                    self.wfile.write(doc)
                    return
                conn = http.client.HTTPConnection(host, int(port), timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                headers["Host"] = f"{host}:{port}"
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                head = self.command == "HEAD"  # its Content-Length is the object's size, not of a body
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", resp.getheader("Content-Length", "0") if head else str(len(data)))
                self.end_headers()
                if not head:
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="session")
def s3_endpoint():
    """The endpoint URL of a moto server for the session, set as `AWS_ENDPOINT_URL` with test
    credentials in this process's environment (and so in every process started after)."""
    pytest.importorskip("moto.server", reason="moto's server mode (moto[s3], flask, flask-cors: the local S3 "
                                              "API server) is not installed")
    server = MotoServer()
    saved = {k: os.environ.get(k) for k in [*CREDENTIALS, "AWS_ENDPOINT_URL"]}
    os.environ.update(CREDENTIALS, AWS_ENDPOINT_URL=server.url)
    yield server.url
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    server.close()


def make_bucket(endpoint: str, name: str) -> str:
    import boto3

    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3_bucket(s3_endpoint):
    """A new, empty bucket on the session's server: its name."""
    return make_bucket(s3_endpoint, f"curate-test-{os.getpid()}-{next(_buckets)}")
