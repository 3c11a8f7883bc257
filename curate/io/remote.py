"""Object storage and other remote file systems, through fsspec: `s3://` (s3fs), `gs://`
(gcsfs), and any URL fsspec knows. Inputs and outputs given as URLs go through here; local
paths never do (they keep the local code and its guarantees).

Configuration is the store's standard one, read by its client library, never by curate:
`AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_PROFILE` / `AWS_REGION`, and
`AWS_ENDPOINT_URL` (or `AWS_ENDPOINT_URL_S3`) for MinIO, Ceph, R2 or a local server. The one
exception is `CURATE_STORAGE_OPTIONS`, a JSON object of fsspec storage options for the URL's
protocol (`{"s3": {"anon": true}}`), for what has no standard variable.

Transient errors (a 503 SlowDown, a dropped connection) are retried twice over: by the store's
client (botocore's retry modes: `AWS_MAX_ATTEMPTS`, `AWS_RETRY_MODE`) and by `retried`, which
runs a whole read or write again after a backoff. A missing object or a refused permission is
not transient: it raises at once."""

from __future__ import annotations

import json
import os
import random
import re
import time
from typing import Any, Callable, TypeVar

from curate.errors import CurateError

T = TypeVar("T")
_URL = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
LOCAL_PROTOCOLS = ("file", "local")  # file:///x is the path /x: the local code handles it
PACKAGES = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs"}
EXTRA = {"s3fs": "curate[s3]", "gcsfs": "curate[gcs]"}  # what installs each protocol's library
ATTEMPTS = 4  # whole-operation tries on a transient error, after the client's own retries
BACKOFF_S = 0.5  # first wait; doubled each try, with jitter
CONFIG_PREFIXES = ("AWS_", "GOOGLE_", "GCS_", "AZURE_", "CURATE_STORAGE_OPTIONS")
_filesystems: dict[tuple, Any] = {}  # (protocol, options, config()) -> its file system, made once
NOT_TRANSIENT = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError, FileExistsError)


class StorageError(CurateError):
    """A URL cannot be used: no library for its protocol, or the store refused (naming the URL)."""


def is_url(spec: Any) -> bool:
    """Whether `spec` is a remote URL (`s3://b/k`); a local path or `file://` URL is not."""
    if not isinstance(spec, str):
        return False
    m = _URL.match(spec)
    return bool(m) and m.group(1).lower() not in LOCAL_PROTOCOLS


def protocol(url: str) -> str:
    return _URL.match(url).group(1).lower()


def storage_options(proto: str) -> dict:
    """fsspec options for `proto` from `CURATE_STORAGE_OPTIONS` (empty when unset)."""
    raw = os.environ.get("CURATE_STORAGE_OPTIONS")
    if not raw:
        return {}
    try:
        opts = json.loads(raw)
    except ValueError as exc:
        raise StorageError(f"CURATE_STORAGE_OPTIONS is not JSON ({exc}); write e.g. "
                           '\'{"s3": {"anon": true}}\'') from None
    if not isinstance(opts, dict) or not isinstance(opts.get(proto, {}), dict):
        raise StorageError(f"CURATE_STORAGE_OPTIONS must map protocols to option objects, e.g. "
                           f'\'{{"{proto}": {{"anon": true}}}}\'; got {raw[:120]!r}')
    return dict(opts.get(proto, {}))


def filesystem(url: str):
    """(fsspec file system, the URL's path without the protocol) for a remote URL; StorageError
    naming the package to install when its protocol's library is missing."""
    proto = protocol(url)
    try:
        import fsspec
    except ImportError:
        pkg = PACKAGES.get(proto, "fsspec")
        raise StorageError(f"{url}: reading or writing {proto}:// URLs needs fsspec and {pkg}; install them with: "
                           f"pip install \"{EXTRA.get(pkg, pkg)}\"") from None
    opts = storage_options(proto)
    key = (proto, json.dumps(opts, sort_keys=True, default=str), config())
    fs = _filesystems.get(key)
    if fs is None:
        try:
            # not fsspec's own instance cache: its key leaves out the environment, so a process whose
            # AWS_ENDPOINT_URL (or keys) changed would go on talking to the store it first met
            fs = fsspec.filesystem(proto, skip_instance_cache=True, **opts)
        except (ImportError, ValueError) as exc:
            pkg = PACKAGES.get(proto)
            hint = f"pip install \"{EXTRA.get(pkg, pkg)}\"" if pkg else "install the fsspec implementation of this protocol"
            raise StorageError(f"{url}: no file system for {proto}:// ({exc}); {hint}") from None
        _filesystems[key] = fs
    return fs, type(fs)._strip_protocol(url)


def config() -> tuple:
    """The environment a store's client reads its configuration from (`AWS_*`, `GOOGLE_*`, ...):
    part of the key of the file systems `filesystem` keeps, so a changed endpoint or key gets a
    new client."""
    return tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(CONFIG_PREFIXES)))


def url_of(fs, path: str) -> str:
    """The URL of `path` on `fs` (as `filesystem` split it)."""
    return fs.unstrip_protocol(path)


def retried(what: str, fn: Callable[[], T], attempts: int = ATTEMPTS, backoff_s: float = BACKOFF_S) -> T:
    """`fn()`, run again after a backoff when it raises a transient error (anything but a
    missing object, a refused permission, or a CurateError); the last error is raised as it is."""
    for attempt in range(attempts):
        try:
            return fn()
        except NOT_TRANSIENT:
            raise
        except CurateError:
            raise
        except Exception:  # noqa: BLE001 - the store's client raises many kinds for one 503
            if attempt == attempts - 1:
                raise
            time.sleep(backoff_s * 2 ** attempt * (1 + random.random()))  # backoff, not synchronisation
    raise AssertionError("unreachable")


def describe(exc: BaseException) -> str:
    """An error of the store as one line: its type and message (the client's own text)."""
    return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else 'no detail'}"
