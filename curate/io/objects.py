"""A node-local cache of input objects: `local_copy(url)` is a local file holding the object,
downloaded by the worker that first needs it, so stages open input files the way they open
local ones (PyMuPDF, FFmpeg and decord all want a path) while rows, lineage and causes keep
the URL. A local path is returned as it is: the local code path is unchanged.

- Where: `CURATE_CACHE_DIR`, else `<system temp dir>/curate-inputs-<uid>`; one file per object
  version, named by a hash of its URL and its fingerprint (ETag and size), so an object
  uploaded again under the same URL is downloaded again, never read stale.
- Whole files only: a download is written to a temporary name beside its final one and
  renamed into place (atomic on one file system), so two workers racing for one object both
  get a whole file (the last rename wins; both wrote the same bytes).
- Bounded: after each download, the cache's files past `CURATE_CACHE_BYTES` (default
  `DEFAULT_CACHE_BYTES`) are deleted, least recently used first (every use refreshes a
  file's time). The file just downloaded is never deleted, so one object larger than the
  bound still works; an open file that another worker deletes stays readable until closed
  (POSIX), and a deleted copy a worker asks for again is downloaded again.
- Transient store errors are retried (`remote.retried`); a missing object or a refused read
  is an InputError naming the URL, the store's error and the fix, so it is one FAILED row."""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import time
import uuid
from collections import OrderedDict

from curate.errors import InputError, TransientError
from curate.io import remote

CACHE_DIR_ENV = "CURATE_CACHE_DIR"
CACHE_BYTES_ENV = "CURATE_CACHE_BYTES"
DEFAULT_CACHE_BYTES = 16 * 2**30  # a node's working set of inputs (documents and videos in flight) many times over
PART = ".part-"  # in a temporary download's name: never counted or evicted as a copy, until stale
STALE_PART_S = 3600.0  # a temporary download this old was left by a killed worker: deleted
NAME_HASH_CHARS = 32  # of the sha256 naming a copy: collisions are negligible

MEMO_ENTRIES = 4096  # copies a worker remembers (one store lookup each): its inputs in flight, many times over
_known: OrderedDict[tuple[str, str], str] = OrderedDict()  # (cache dir, URL) -> its copy, least recent first
_lock = threading.Lock()


def cache_dir(create: bool = True) -> str:
    """The cache directory (created on first use)."""
    d = os.environ.get(CACHE_DIR_ENV) or os.path.join(tempfile.gettempdir(), f"curate-inputs-{os.getuid()}")
    if create:
        os.makedirs(d, exist_ok=True)
    return d


def cache_bytes() -> int:
    """The cache's bound in bytes (`CURATE_CACHE_BYTES`, else DEFAULT_CACHE_BYTES)."""
    raw = os.environ.get(CACHE_BYTES_ENV)
    if not raw:
        return DEFAULT_CACHE_BYTES
    try:
        return max(0, int(raw))
    except ValueError:
        raise InputError(f"{CACHE_BYTES_ENV}={raw!r} is not a number of bytes; write e.g. "
                         f"{CACHE_BYTES_ENV}={DEFAULT_CACHE_BYTES}") from None


def local_copy(path: str) -> str:
    """A local file holding the input `path`: `path` itself unless it is a URL, else this
    node's cached copy of the object (downloaded now if it has none). A missing object or a
    refused read raises InputError naming the URL and the fix; a store that does not answer
    after the retries raises TransientError (the engine retries the item)."""
    if not remote.is_url(path):
        return path
    known = (cache_dir(create=False), path)
    with _lock:
        local = _known.get(known)
        if local is not None:
            _known.move_to_end(known)
    if local is not None and _touch(local):
        return local
    local = _fetch(path)
    with _lock:
        _known[known] = local
        _known.move_to_end(known)
        while len(_known) > MEMO_ENTRIES:
            _known.popitem(last=False)
    return local


def _touch(local: str) -> bool:
    """Mark a copy as just used; False if it is gone (evicted by another worker)."""
    return _if_there(os.utime, local)


def _fetch(url: str) -> str:
    fs, path = remote.filesystem(url)
    info = _read(url, "look it up", lambda: fs.info(path))
    if info.get("type") == "directory":
        raise InputError(f"{url}: a prefix (a directory), not an object; give the objects below it, e.g. "
                         f"--input '{url.rstrip('/')}/*.pdf', or the prefix itself as --input")
    from curate.io.listing import digest

    name = hashlib.sha256(f"{url}\n{digest(info)}".encode()).hexdigest()[:NAME_HASH_CHARS]
    ext = os.path.splitext(path.rsplit("/", 1)[-1])[1][:16]
    final = os.path.join(cache_dir(), name + "".join(c for c in ext if c.isalnum() or c == "."))
    if _touch(final):
        return final
    size = info.get("size")
    place(final, lambda tmp: _read(url, "read it", lambda: _download(fs, path, tmp, size)))
    evict(os.path.dirname(final), cache_bytes(), keep=final)
    return final


def _download(fs, path: str, tmp: str, size) -> None:
    fs.get_file(path, tmp)
    got = os.path.getsize(tmp)
    if size is not None and got != size:  # cut short, or replaced while read: read it again
        raise OSError(f"read {got} of the {size} bytes the store listed")


def _read(url: str, what: str, fn):
    """`fn()` retried on transient errors; the store's refusals as InputError/TransientError."""
    try:
        return remote.retried(f"{what}: {url}", fn)
    except FileNotFoundError as exc:
        raise InputError(f"{url}: no such object ({remote.describe(exc)}); check the URL, and whether the "
                         "object was deleted or renamed after the inputs were listed") from None
    except PermissionError as exc:
        raise InputError(f"{url}: the store refused to {what} ({remote.describe(exc)}); give this machine "
                         "credentials that may read it (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE "
                         "or its role), or fix the bucket's policy") from None
    except remote.StorageError:
        raise
    except Exception as exc:  # noqa: BLE001 - transient after every retry: the engine may try again
        raise TransientError(f"{url}: the store did not answer after {remote.ATTEMPTS} tries "
                             f"({remote.describe(exc)}); check the endpoint and the network") from None


def place(final: str, fill) -> None:
    """`fill(tmp)` writes a whole file at a temporary name beside `final`, then it is renamed
    to `final` in one step: a reader sees no file or a whole one, and of two racing writers
    the last rename wins. A temporary file that `fill` leaves behind on an error is removed."""
    tmp = f"{final}{PART}{os.getpid()}-{threading.get_ident()}-{uuid.uuid4().hex[:8]}"
    try:
        fill(tmp)
        os.replace(tmp, final)
    except BaseException:
        try:
            os.remove(tmp)
        except FileNotFoundError:
            pass
        raise


def evict(directory: str, bound: int, keep: str | None = None) -> list[str]:
    """Delete the least recently used copies in `directory` until their bytes are at most
    `bound` (never `keep`), and temporary downloads older than STALE_PART_S. Returns the
    paths deleted. Another worker deleting the same files at once is harmless."""
    now, copies, deleted = time.time(), [], []
    for entry in _entries(directory):
        try:
            st = entry.stat()
        except FileNotFoundError:
            continue
        if PART in entry.name:
            if now - st.st_mtime > STALE_PART_S and _remove(entry.path):
                deleted.append(entry.path)
            continue
        copies.append((st.st_mtime, entry.path, st.st_size))
    total = sum(size for _, _, size in copies)
    for _, path, size in sorted(copies):
        if total <= bound:
            break
        if path != keep and _remove(path):
            deleted.append(path)
            total -= size
    return deleted


def _entries(directory: str) -> list:
    try:
        with os.scandir(directory) as it:
            return [e for e in it if e.is_file(follow_symlinks=False)]
    except FileNotFoundError:
        return []


def _remove(path: str) -> bool:
    return _if_there(os.remove, path)


def _if_there(op, path: str) -> bool:
    """`op(path)`; False if there is no such file (another worker deleted it first)."""
    try:
        op(path)
        return True
    except FileNotFoundError:
        return False
