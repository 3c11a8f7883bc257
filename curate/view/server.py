"""`curate view OUT`: the standard library's threading HTTP server over `Views`, read-only (GET
and HEAD), bound to 127.0.0.1 unless told otherwise.

Each answer carries the pages' Content-Security-Policy (no script at all), `nosniff` and no
referrer. Bound to a loopback address, the server answers only requests whose Host header
names a loopback host: a web page elsewhere cannot reach it through a DNS name rebound to
127.0.0.1. Files are sent with byte ranges, which a `<video>` element asks for."""

from __future__ import annotations

import ipaddress
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, unquote, urlsplit

from curate.view.links import Links
from curate.view.render import CSP
from curate.view.site import Site
from curate.view.views import Response, Views

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "[::1]"}
_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")
COPY_CHUNK = 1 << 16


class ViewServer(ThreadingHTTPServer):
    daemon_threads = True  # a browser's open keep-alive connection does not hold the process

    def __init__(self, address, views: Views):
        self.views = views
        self.loopback = _is_loopback(address[0])
        super().__init__(address, Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}/"


class Handler(BaseHTTPRequestHandler):
    server: ViewServer
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 (the standard library's name)
        self._answer(send_body=True)

    def do_HEAD(self):  # noqa: N802
        self._answer(send_body=False)

    def log_message(self, format, *args):  # noqa: A002: one line per request on stderr, as a server's log
        sys.stderr.write(f"curate view: {self.address_string()} {format % args}\n")

    def _answer(self, send_body: bool) -> None:
        if self.server.loopback and not _loopback_host(self.headers.get("Host", "")):
            return self._send(Response(403, "text/plain; charset=utf-8", b"curate view answers only to a loopback "
                                       b"host name (localhost, 127.0.0.1)\n"), send_body)
        parts = urlsplit(self.path)
        params = dict(parse_qsl(parts.query, keep_blank_values=True))
        route = unquote(parts.path).lstrip("/")
        self._send(self.server.views.get(route, params), send_body)

    def _send(self, resp: Response, send_body: bool) -> None:
        if resp.file is None:
            self._headers(resp.status, resp.content_type, len(resp.body))
            if send_body:
                self.wfile.write(resp.body)
            return
        size = resp.file.stat().st_size
        start, end = 0, size - 1
        m = _RANGE.match(self.headers.get("Range", ""))
        status = 200
        if m and size and (m.group(1) or m.group(2)):
            if m.group(1):
                start, end = int(m.group(1)), min(int(m.group(2) or size - 1), size - 1)
            else:
                start = max(size - int(m.group(2)), 0)
            if start > end:
                self._headers(416, "text/plain", 0, extra={"Content-Range": f"bytes */{size}"})
                return
            status = 206
        extra = {"Accept-Ranges": "bytes"}
        if status == 206:
            extra["Content-Range"] = f"bytes {start}-{end}/{size}"
        self._headers(status, resp.content_type, end - start + 1 if size else 0, extra)
        if send_body and size:
            with open(resp.file, "rb") as f:
                f.seek(start)
                _copy(f, self.wfile, end - start + 1)

    def _headers(self, status: int, ctype: str, length: int, extra: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(length))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()


def _copy(src, dst, n: int) -> None:
    while n > 0:
        chunk = src.read(min(COPY_CHUNK, n))
        if not chunk:
            break
        dst.write(chunk)
        n -= len(chunk)


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _loopback_host(header: str) -> bool:
    """Whether a Host header ("localhost:8765", "[::1]:8765") names a loopback host."""
    if header.startswith("["):
        host = header[1:header.find("]")] if "]" in header else header
    else:
        host = header.rsplit(":", 1)[0] if ":" in header else header
    return _is_loopback(host)


def make_server(out, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> ViewServer:
    """The server for output directory `out` (not started; port 0: any free port)."""
    return ViewServer((host, port), Views(Site(out), Links(static=False)))


def start(out, host: str = DEFAULT_HOST, port: int = 0) -> ViewServer:
    """A server for `out` answering in a background thread (for tests and notebooks); stop it
    with `server.shutdown(); server.server_close()`."""
    server = make_server(out, host, port)
    threading.Thread(target=server.serve_forever, name="curate-view", daemon=True).start()
    return server


def serve(out, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> None:
    """Serve `out` until Ctrl-C."""
    server = make_server(out, host, port)
    print(f"curate view: serving {out} at {server.url} (Ctrl-C stops it)", flush=True)
    if not server.loopback:
        print(f"curate view: warning: bound to {host}, not a loopback address: anyone who can reach this "
              "machine can read the output directory and its inputs", file=sys.stderr)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()

