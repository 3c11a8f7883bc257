"""Input sources: iterators over root inputs, never the corpus in memory, and `path_key`, the
stable root key of a file input (its path plus a hash of its content).

Relative paths are joined to a base directory: the recipe's for `paths` and `glob`, the list
file's own for `list_file`. A source yields paths whether or not the files exist: a missing file
fails its own input in the stage that opens it, and never the run."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from typing import Any

from curate.errors import InputError

HASH_CHUNK_BYTES = 1 << 20  # stream files through sha256 in 1 MiB reads: flat memory for any size
KEY_HASH_CHARS = 16  # 64 bits of sha256: collisions are negligible for any corpus size
MISSING = "missing"  # the key's hash part for a file that cannot be read
PARQUET_BATCH_ROWS = 4096  # rows read at once from a Parquet source: bounds memory per read


def paths(items: Iterable[str | os.PathLike], base_dir: str | os.PathLike = ".") -> Iterator[str]:
    """Each path of `items` as a string, relative ones joined to `base_dir`."""
    for p in items:
        yield _join(base_dir, p)


def glob(pattern: str, base_dir: str | os.PathLike = ".") -> Iterator[str]:
    """Files matching `pattern` (`**` recurses) under `base_dir`, sorted by path so every run
    sees the same input order. Only the names are listed up front, to sort them."""
    import glob as globlib

    matches = sorted(globlib.glob(pattern, root_dir=os.fspath(base_dir), recursive=True))
    for m in matches:
        full = _join(base_dir, m)
        if not os.path.isdir(full):
            yield full


def list_file(path: str | os.PathLike) -> Iterator[str]:
    """The paths listed in a text file, one per line; blank lines and lines starting with `#`
    are skipped, and relative paths are relative to the list file's directory."""
    base = os.path.dirname(os.fspath(path))
    with open(path, encoding="utf-8") as f:
        for line in f:
            entry = line.strip()
            if entry and not entry.startswith("#"):
                yield _join(base, entry)


def parquet_column(path: str | os.PathLike, column: str,
                   batch_rows: int = PARQUET_BATCH_ROWS) -> Iterator[Any]:
    """The values of one column of a Parquet file, in row order, read `batch_rows` at a time."""
    pq = require_pyarrow_parquet()
    f = pq.ParquetFile(path)
    if column not in f.schema_arrow.names:
        raise InputError(f"{os.fspath(path)} has no column {column!r}; its columns are "
                       f"{f.schema_arrow.names}")
    for batch in f.iter_batches(batch_size=batch_rows, columns=[column]):
        yield from batch.column(0).to_pylist()


def require_pyarrow_parquet():
    """`pyarrow.parquet`, or an ImportError that says how to install it."""
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ImportError("reading Parquet inputs needs pyarrow; install it with "
                          "`pip install 'curate[parquet]'` (or `pip install pyarrow`)") from exc
    return pq


def path_key(path: str | os.PathLike, base_dir: str | os.PathLike | None = None) -> str:
    """`PATH@HASH`: the path as given (relative to `base_dir` when one is given, `/`-separated)
    and the first 16 hex digits of the sha256 of the file's content. The same file gives the
    same key on every run; an edited file gets a new one. A file that cannot be read gets
    `PATH@missing`, and the stage that opens it fails that input."""
    shown = os.fspath(path)
    if base_dir is not None:
        try:
            shown = os.path.relpath(shown, base_dir)
        except ValueError:  # another drive (Windows): keep the path as given
            pass
    shown = shown.replace(os.sep, "/")
    try:
        digest = _sha256_file(path)
    except OSError:
        return f"{shown}@{MISSING}"
    return f"{shown}@{digest[:KEY_HASH_CHARS]}"


def _sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(HASH_CHUNK_BYTES):
            h.update(chunk)
    return h.hexdigest()


def _join(base_dir: str | os.PathLike, path: str | os.PathLike) -> str:
    p = os.fspath(path)
    return p if os.path.isabs(p) else os.path.normpath(os.path.join(os.fspath(base_dir), p))
