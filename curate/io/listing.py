"""Inputs given as URLs (`s3://b/pdfs/**/*.pdf`, `s3://b/pdfs/`, `s3://b/pdfs/a.pdf`), listed on
the driver before a run starts, and keyed without reading a byte of any object.

- a URL glob lists the objects it matches (`**` recurses); its root is the URL before its first
  wildcard part;
- a URL prefix that is no object (`s3://b/pdfs/` or `s3://b/pdfs`) is taken as a directory:
  every object below it, recursively, filtered by the recipe's extensions; its root is itself;
- an object's URL is that object; its root is its parent prefix.
As on local disk, names with a part that starts with `.` below the root are skipped, and so are
"folder" marker objects (a key ending in `/`).

An object's root key is `<its key relative to the root>@<16 hex>`, like a local file's, but the
hex is the sha256 of the store's own fingerprint from the listing (`ETag:size` on S3; gcs:
`md5Hash`, else `etag`), so keying a million objects costs the listing, not a million reads.
S3's ETag of a single-part upload is the MD5 of the content; a multipart upload's is the MD5 of
the parts' MD5s plus `-N`, so the same bytes uploaded again as multipart (or in other part
sizes) get a new key, and a resume runs that object again under it."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from curate.io import remote
from curate.io.sources import KEY_HASH_CHARS, MISSING, SourceError

WILDCARDS = "*?["
FINGERPRINTS = ("ETag", "md5Hash", "etag", "crc32c")  # the first a listing gives names the content (S3, gcs)
CHANGED = ("LastModified", "mtime", "updated")  # else when it was last written (with the size)


def is_glob(url: str) -> bool:
    return any(ch in url for ch in WILDCARDS)


def digest(info: dict) -> str:
    """16 hex of the sha256 of an object's fingerprint in its listing entry (see the module doc)."""
    mark = next((info[k] for k in FINGERPRINTS if info.get(k)), None)
    if mark is None:
        mark = next((info[k] for k in CHANGED if info.get(k)), "")
    text = f"{str(mark).strip(chr(34))}:{info.get('size')}"
    return hashlib.sha256(text.encode()).hexdigest()[:KEY_HASH_CHARS]


def expand(spec: str, extensions: Sequence[str] = ()) -> tuple[str, str, list[str], list[str]]:
    """(kind, root URL, object URLs sorted, their digests) of URL input `spec`; SourceError
    naming it and the fix when it names nothing, StorageError when the store cannot be asked."""
    fs, path = remote.filesystem(spec)
    info = None
    if is_glob(path):
        found = _found(spec, lambda: fs.glob(path, detail=True))
        root = _glob_root(path)
        kind = "glob"
    else:
        info = _info(fs, spec, path)
        if info is not None and info.get("type") != "directory":
            return "file", remote.url_of(fs, _parent(path)), [remote.url_of(fs, path)], [digest(info)]
        root = path.rstrip("/")
        found = _found(spec, lambda: fs.find(root, detail=True)) if info is not None else {}
        kind = "directory"
    ends = tuple(e.lower() for e in extensions) if kind == "directory" else ()
    entries = sorted((p, i) for p, i in found.items() if _keep(p, i, root, ends))
    if not entries:
        raise SourceError(_nothing(spec, kind, extensions, info is not None))
    return kind, remote.url_of(fs, root), [remote.url_of(fs, p) for p, _ in entries], [digest(i) for _, i in entries]


def object_digest(url: str) -> str:
    """The digest of one object asked of the store (a HEAD), or `missing` if there is none:
    for a URL named in a list (`paths:`), which fails its own input when it is read."""
    fs, path = remote.filesystem(url)
    try:
        info = _ask(url, lambda: fs.info(path), passed=(FileNotFoundError, PermissionError))
    except (FileNotFoundError, PermissionError):  # the stage that reads it says why, naming the URL
        return MISSING
    return MISSING if info.get("type") == "directory" else digest(info)


def relative(url: str, root: str) -> str:
    """`url` below `root` (both URLs), as a key shows it; the object's name if it is not below."""
    prefix = root.rstrip("/") + "/"
    return url[len(prefix):] if url.startswith(prefix) else url.rsplit("/", 1)[-1]


def parent(url: str) -> str:
    """The prefix holding an object's URL: `s3://b/pdfs/a.pdf` -> `s3://b/pdfs`."""
    return url.rsplit("/", 1)[0]


def _info(fs, spec: str, path: str) -> dict | None:
    try:
        return _ask(spec, lambda: fs.info(path))
    except FileNotFoundError:
        return None


def _found(spec: str, fn) -> dict:
    """What a listing found ({path: info}); none when the bucket or prefix does not exist."""
    try:
        return _ask(spec, fn)
    except FileNotFoundError:
        return {}


def _ask(spec: str, fn, passed: tuple = (FileNotFoundError,)):
    """`fn()` retried on transient errors; a store that still does not answer, or refuses, is a
    StorageError naming the input, the store's error and where the endpoint comes from (the
    errors in `passed` are raised as they are)."""
    try:
        return remote.retried(f"listing {spec}", fn)
    except passed:
        raise
    except PermissionError as exc:
        raise remote.StorageError(f"input {spec!r}: the store refused to list it ({remote.describe(exc)}); give "
                                  "credentials that may list and read it (AWS_ACCESS_KEY_ID and "
                                  "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or the machine's role)") from None
    except remote.StorageError:
        raise
    except Exception as exc:  # noqa: BLE001 - the client's many kinds of "no answer"
        raise remote.StorageError(f"input {spec!r}: the store did not answer ({remote.describe(exc)}); check "
                                  f"the endpoint ({_endpoint()}), the bucket's name and the network") from None


def _endpoint() -> str:
    import os

    url = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    return f"AWS_ENDPOINT_URL={url}" if url else "AWS_ENDPOINT_URL is not set: the store's default endpoint"


def _glob_root(path: str) -> str:
    parts = path.split("/")
    return "/".join(parts[:next(i for i, p in enumerate(parts) if is_glob(p))]).rstrip("/")


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else path


def _keep(path: str, info: dict, root: str, ends: tuple[str, ...]) -> bool:
    """An object to read: not a directory or folder marker, no hidden part below the root, and
    (for a prefix) named with one of the extensions."""
    if info.get("type") == "directory" or path.endswith("/"):
        return False
    below = path[len(root) + 1:] if path.startswith(root + "/") else path.rsplit("/", 1)[-1]
    if any(part.startswith(".") for part in below.split("/")):
        return False
    return not ends or path.lower().endswith(ends)


def _nothing(spec: str, kind: str, extensions: Sequence[str], exists: bool) -> str:
    where = f"; check the bucket, the endpoint ({_endpoint()}) and the credentials"
    if kind == "glob":
        return (f"input glob {spec!r} matches no object{where}, and the pattern (quote it so the shell leaves "
                "it: --input 's3://bucket/pdfs/*.pdf')")
    if exists:
        wanted = f"named *{', *'.join(extensions)}" if extensions else "that is not hidden"
        return (f"input prefix {spec!r} holds no object {wanted} (searched recursively); check the prefix, or "
                "give the objects or a glob")
    return f"input {spec!r} is no object and no prefix with objects below it{where}, and the URL"
