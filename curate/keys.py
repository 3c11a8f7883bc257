"""Default root keys (no `key=`): from the content where an input is a file or bytes, else
the input index, with a digest of the input recorded so that a resume whose inputs changed
under the same indices is refused instead of skipping or mixing them.

- a str or os.PathLike naming an existing regular file: `name@<16 hex of its sha256>`
  (`sources.path_key` relative to the file's parent), so inserting or reordering files keeps
  every file's key;
- an object's URL (`s3://b/pdfs/a.pdf`): `name@<16 hex of the store's ETag and size>`, asked
  of the store (one HEAD; `curate.io.listing`), never read;
- bytes (or a bytearray): `bytes@<16 hex of their sha256>`;
- anything else: the input index as text, with a 64-bit digest of the value (its pickle, or
  its repr where it does not pickle) kept in the commit record of its root.

`RootKeys` checks every key of a run, given by `key=` or by default: a non-empty str, unique."""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import reprlib
from array import array
from typing import Any, Callable

from curate.errors import RootKeyError
from curate.io.remote import is_url

BYTES_KEY = "bytes"  # the name part of a bytes input's key
PICKLE_PROTOCOL = 4  # a fixed protocol: the same value gives the same digest on every Python 3.8+
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # a repr that names a memory address differs every run


def content_key(value: Any) -> str | None:
    """The default key of a file or bytes input (see the module doc), None for any other."""
    from curate.io import sources

    if isinstance(value, (bytes, bytearray)):
        return f"{BYTES_KEY}@{hashlib.sha256(value).hexdigest()[:sources.KEY_HASH_CHARS]}"
    if _is_file(value) or is_url(value):  # an object's URL: keyed by the store's fingerprint of it
        return sources.path_key(value, sources.parent_dir(os.fspath(value)))
    return None


def _is_file(value) -> bool:
    if not isinstance(value, (str, os.PathLike)):
        return False
    try:
        return os.path.isfile(value)
    except (ValueError, TypeError):  # a str with a NUL, a PathLike that gives bytes
        return False


def value_digest(value: Any) -> int:
    """A 64-bit digest of an index-keyed input (0: it has none that is stable across runs)."""
    h = hashlib.blake2b(digest_size=8)
    if not _feed(h, value):
        return 0
    return int.from_bytes(h.digest(), "little") or 1


def _feed(h, value: Any) -> bool:
    """Hash `value` into `h`; sets are hashed in a sorted order (their own order changes with
    Python's string hash seed). False if the value has no stable form."""
    if isinstance(value, (set, frozenset)):
        parts = sorted(value_digest(v) for v in value)
        h.update(b"S" + b"".join(p.to_bytes(8, "little") for p in parts))
        return all(parts)
    if type(value) in (list, tuple, dict):
        h.update(type(value).__name__.encode() + len(value).to_bytes(8, "little"))
        items = (x for kv in value.items() for x in kv) if isinstance(value, dict) else value
        return all(_feed(h, x) for x in items)
    try:
        h.update(pickle.dumps(value, protocol=PICKLE_PROTOCOL))
        return True
    except Exception:  # noqa: BLE001 - not picklable (a lock, a generator): its repr, if stable
        text = repr(value)
        h.update(text.encode("utf-8", "surrogatepass"))
        return _ADDRESS.search(text) is None


class IndexDigests:
    """The digests of the index-keyed roots committed in an output directory, 8 bytes a root."""

    def __init__(self, records: list[dict] = ()):
        self._at = array("Q")
        for rec in records:
            for k, hexd in rec.get("inputs", {}).items():
                self._put(int(k), int(hexd, 16))

    def _put(self, index: int, digest: int) -> None:
        if index >= len(self._at):
            self._at.extend(bytes(8 * (index + 1 - len(self._at))))
        self._at[index] = digest

    def forget(self, indices) -> None:
        """No check for these roots: a retry runs them again, from their input as it is now."""
        for i in indices:
            if i < len(self._at):
                self._at[i] = 0

    def __bool__(self) -> bool:
        return len(self._at) > 0

    def check_all(self, inputs) -> None:
        """Before a resume starts: `check` every index-keyed input of a list."""
        for i, v in enumerate(inputs):
            keyed_by_content = isinstance(v, (bytes, bytearray)) or _is_file(v) or is_url(v)
            if i < len(self._at) and self._at[i] and not keyed_by_content:
                self.check(i, v, value_digest(v))

    def check(self, index: int, value: Any, digest: int) -> None:
        """Refuse input `index` if the root committed under that index had another input."""
        old = self._at[index] if index < len(self._at) else 0
        if old and digest and old != digest:
            raise RootKeyError(
                f"input {index} ({reprlib.repr(value)}) is not the input this output directory committed as "
                f"root {index}: the inputs changed since the directory was written (one inserted, removed, "
                "reordered or edited), and these roots are keyed by input index, so resuming would skip the "
                "new input and mix their rows; pass key= (a stable key per input, e.g. an id field), or use a "
                "new output directory")


def digest_hex(digest: int) -> str:
    """How a digest is written in a commit record."""
    return f"{digest:016x}"


class RootKeys:
    """Checks the stable key of every input: a str (an int is taken as its decimal text), not
    empty, and unique among the inputs of this run, skipped ones included. A 64-bit digest per
    input (and its index) is kept, so a duplicate can name both inputs. Without `key=`, a file
    or bytes input is keyed by its content and any other by its index (`content_key`); then
    `digest` is that input's value digest, else None."""

    def __init__(self, key: Callable[[Any], Any] | None):
        self._key = key
        self._seen: dict[int, int] = {}  # key digest -> input index
        self.digest: int | None = None  # of the last input, where it is keyed by its index

    def __call__(self, value: Any, index: int) -> str:
        self.digest = None
        if self._key is None:
            k = content_key(value)
            if k is None:  # keyed by index: they cannot collide (and have no '@')
                self.digest = value_digest(value)
                return str(index)
            return self._unique(k, value, index)
        try:
            k = self._key(value)
        except Exception as exc:  # noqa: BLE001 - the user's key function: say which input broke it
            raise RootKeyError(f"key= raised {type(exc).__name__}: {exc} for input {index} ({_short(value)}); "
                               "fix the key function: it must return a str for every input") from exc
        if isinstance(k, int) and not isinstance(k, bool):
            k = str(k)
        if not isinstance(k, str) or not k:
            raise RootKeyError(f"key= returned {k!r} for input {index} ({_short(value)}); a root key must be "
                               "a non-empty str (or an int), e.g. a path plus a content hash "
                               "(curate.io.sources.path_key); join several parts into one text, "
                               "e.g. f\"{a}/{b}\"")
        return self._unique(k, value, index)

    def _unique(self, k: str, value: Any, index: int) -> str:
        digest = int.from_bytes(hashlib.blake2b(k.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")
        first = self._seen.setdefault(digest, index)
        if first == index:
            return k
        if self._key is None:
            raise RootKeyError(f"input {index} ({_short(value)}) has the same name and content as input {first} "
                               f"(default key {k!r}); root keys must be unique, or their rows would mix; remove "
                               "the duplicate, or pass key= to tell them apart")
        raise RootKeyError(f"key= gave input {index} ({_short(value)}) the key {k!r}, which input {first} "
                           "already has; root keys must be unique, or their rows would mix and a resumed "
                           "run would skip the second input; make the key tell them apart (e.g. include "
                           "the full path or a content hash), or remove the duplicate input")


def _short(value: Any) -> str:
    return reprlib.repr(value)
