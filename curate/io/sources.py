"""Input sources: iterators over root inputs, never the corpus in memory, and `path_key`, the
stable root key of a file input (its path plus a hash of its content).

Relative paths are joined to a base directory (a recipe passes its own; `list_file` entries are
relative to the list file). A source yields paths whether or not the files exist: a missing
file fails its own input in the stage that opens it, and never the run. (Paths, globs and
directories given on the command line are expanded and checked up front: `curate.io.files`.)"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import stat
from collections.abc import Iterable, Iterator
from typing import Any

from curate.errors import CurateError, InputError
from curate.io.remote import is_url

HASH_CHUNK_BYTES = 1 << 20  # stream files through sha256 in 1 MiB reads: flat memory for any size
KEY_HASH_CHARS = 16  # 64 bits of sha256: collisions are negligible for any corpus size
MISSING = "missing"  # the key's hash part for a file that cannot be read
PARQUET_BATCH_ROWS = 4096  # rows read at once from a Parquet source: bounds memory per read


def paths(items: Iterable[str | os.PathLike], base_dir: str | os.PathLike = ".") -> Iterator[str]:
    """Each path of `items` as a string, relative ones joined to `base_dir`."""
    for p in items:
        yield _join(base_dir, p)


class SourceError(CurateError):
    """An input source names nothing to read (a glob that matches no file)."""


def glob(pattern: str, base_dir: str | os.PathLike = ".") -> Iterator[str]:
    """Files matching `pattern` (`**` recurses) under `base_dir`, sorted by path so every run
    sees the same input order. The names are listed at once (to sort them), so a pattern that
    matches no file raises SourceError here, before any run starts."""
    matches = sorted(_glob_matches(pattern, os.fspath(base_dir)))
    files = [f for f in (_join(base_dir, m) for m in matches) if not os.path.isdir(f)]
    if not files:
        where = "" if os.path.isabs(pattern) else f" under {os.path.abspath(base_dir)}"
        raise SourceError(f"input glob {pattern!r} matches no file{where}; check the pattern and the "
                          "directory (a recipe's relative patterns start at the recipe's directory, "
                          "--input patterns at the working directory)")
    return iter(files)


def _glob_matches(pattern: str, root: str) -> set[str]:
    """What `glob.glob(pattern, root_dir=root, recursive=True)` matches, except that `**` never
    enters a directory it is already inside. The standard glob follows a symlink back to an
    ancestor (`photos/up -> ..`) until the OS refuses the path (40 links deep), listing the same
    files under ever longer names, and with two such links it branches both ways at every level:
    2^40 paths, a run that never starts. Here a link to a directory that the walk has gone
    through, or that holds the current one, is a loop and is not followed; links to anywhere
    else are followed as before. Hidden names (a leading `.`) are matched only by a
    pattern part that starts with `.`, and `**` skips them, as in the standard glob."""
    import glob as globlib

    if "**" not in pattern:  # every part matches one level: no loop can make it recurse
        return set(globlib.glob(pattern, root_dir=root, recursive=True))
    absolute = os.path.isabs(pattern)
    start = os.path.abspath(os.sep) if absolute else root
    parts = [p for p in pattern.split(os.sep) if p]
    found: set[str] = set()

    def walk(rel: str, parts: list[str], inside: frozenset) -> None:
        here = os.path.join(start, rel) if rel else start
        if not parts:
            found.add(rel)
            return
        head, rest = parts[0], parts[1:]
        if head == "**":
            walk(rel, rest, inside)  # `**` matches no directory, or one or more:
            above = _real_ancestors(here)
            for name in _names(here):
                if name.startswith("."):
                    continue
                child = os.path.join(rel, name) if rel else name
                ident = _dir_identity(os.path.join(here, name))
                if ident is None:
                    if not rest:  # a trailing `**` lists files too
                        found.add(child)
                elif ident not in inside and ident not in above:  # else a link back to where it is: a loop
                    if not rest:
                        found.add(child)
                    walk(child, parts, inside | {ident})
        elif globlib.has_magic(head):
            for name in _names(here):
                if (not name.startswith(".") or head.startswith(".")) and fnmatch.fnmatchcase(name, head):
                    _step(walk, here, rel, name, rest, inside)
        else:
            _step(walk, here, rel, head, rest, inside)

    walk("", parts, frozenset())
    found.discard("")
    if pattern.endswith(os.sep):  # a trailing separator matches directories only
        found = {m + os.sep for m in found if _dir_identity(os.path.join(start, m))}
    return {os.sep + m for m in found} if absolute else found


def below(directory: str) -> set[str]:
    """Every name under `directory`, recursively, relative to it (files and directories), with
    `glob`'s care: hidden names skipped, a link back to a directory already walked not followed."""
    return _glob_matches("**", directory)


def _step(walk, here: str, rel: str, name: str, rest: list[str], inside: frozenset) -> None:
    """Go on matching `rest` below `name` (a directory), or take `name` as a match if it exists."""
    full = os.path.join(here, name)
    if rest and _dir_identity(full) is None:
        return
    if not rest and not os.path.lexists(full):
        return
    walk(os.path.join(rel, name) if rel else name, rest, inside)


def _real_ancestors(directory: str) -> set[tuple[int, int]]:
    """The identities of `directory` (links resolved) and of every directory above it."""
    out, at = set(), os.path.realpath(directory)
    while True:
        ident = _dir_identity(at)
        if ident is not None:
            out.add(ident)
        parent = os.path.dirname(at)
        if parent == at:
            return out
        at = parent


def _names(directory: str) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:  # unreadable, or gone: nothing matches below it (as in the standard glob)
        return []


def _dir_identity(path: str) -> tuple[int, int] | None:
    """(device, inode) of the directory `path` leads to (following links), None if it is none."""
    try:
        st = os.stat(path)
    except OSError:  # missing, a dangling link, a symlink loop, no permission
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


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
    """`pyarrow.parquet`, or a CurateError that says how to install it."""
    from curate.deps import require

    return require("pyarrow.parquet", "a Parquet input")


def path_key(path: str | os.PathLike, base_dir: str | os.PathLike | None = None) -> str:
    """`PATH@HASH`: the path as given (relative to `base_dir` when one is given, `/`-separated)
    and the first 16 hex digits of the sha256 of the file's content. The same file gives the
    same key on every run; an edited file gets a new one. A file that cannot be read, or is not a
    regular file (a directory, a named pipe, a device), gets `PATH@missing`, and the stage that
    opens it fails that input."""
    return keyed_path(path, base_dir, file_digest(path))


def keyed_path(path: str | os.PathLike, base_dir: str | os.PathLike | None, digest: str) -> str:
    """`PATH@DIGEST`, PATH shown as `path_key` shows it (relative to `base_dir` if given)."""
    shown = os.fspath(path)
    if is_url(shown):  # an object: relative to the prefix `base_dir`, else its name
        from curate.io.listing import parent, relative

        return f"{relative(shown, os.fspath(base_dir) if base_dir is not None else parent(shown))}@{digest}"
    if base_dir is not None:
        try:
            shown = os.path.relpath(shown, base_dir)
        except ValueError:  # another drive (Windows): keep the path as given
            pass
    return f"{shown.replace(os.sep, '/')}@{digest}"


def file_digest(path: str | os.PathLike) -> str:
    """The hash part of a file's key: 16 hex of its sha256, or `missing` if it cannot be read.
    An object's URL: from the store's fingerprint of it (`curate.io.listing`), not its bytes."""
    if is_url(path):
        from curate.io.listing import object_digest

        return object_digest(path)
    try:
        return _sha256_file(path)[:KEY_HASH_CHARS]
    except OSError:
        return MISSING


def _sha256_file(path: str | os.PathLike) -> str:
    """The file's sha256; OSError for anything but a regular file: a named pipe would block the
    driver until something wrote to it, and a device (/dev/zero) never ends."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise OSError(f"{os.fspath(path)} is not a regular file")
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(HASH_CHUNK_BYTES):
            h.update(chunk)
    return h.hexdigest()


def parent_dir(path: str) -> str:
    """The directory holding a file (made absolute), or the prefix holding an object's URL."""
    if is_url(path):
        from curate.io.listing import parent

        return parent(path)
    return os.path.dirname(os.path.abspath(path))


def _join(base_dir: str | os.PathLike, path: str | os.PathLike) -> str:
    p = os.fspath(path)
    return p if os.path.isabs(p) or is_url(p) else os.path.normpath(os.path.join(os.fspath(base_dir), p))


# ---- sources described by a spec (a recipe's `input:`) ---------------------------------------
SOURCE_KINDS = ("glob", "paths", "list_file", "parquet")
PARQUET_KEYS = ("path", "column", "paths")
SPEC_EXAMPLE = ('{glob: "data/*.pdf"} (or paths: [a.pdf], list_file: files.txt, '
                'parquet: {path: files.parquet, column: path})')


def check_spec(spec: Any, base_dir: str | os.PathLike = ".") -> list[tuple[tuple, str]]:
    """Problems of a source spec ({kind: value}) as (path inside the spec, message with a fix);
    empty when `open_spec` can read it. Files named by the spec itself must exist."""
    kinds = [k for k in spec if k in SOURCE_KINDS] if isinstance(spec, dict) else []
    if len(kinds) != 1:
        return [((), f"input must name exactly one of {', '.join(SOURCE_KINDS)}; write e.g. input: {SPEC_EXAMPLE}")]
    out = [((k,), f"input: unknown key {k!r}; give one of {', '.join(SOURCE_KINDS)}") for k in spec if k not in kinds]
    kind, v = kinds[0], spec[kinds[0]]
    if kind == "glob" and not (isinstance(v, str) and v):
        out.append(((kind,), f"input glob is {v!r}, not a pattern; write e.g. glob: \"data/books/*.txt\""))
    elif kind == "paths" and not (isinstance(v, list) and v and all(isinstance(p, str) and p for p in v)):
        out.append(((kind,), f"input paths is {v!r}, not a list of paths; write e.g. paths: [a.txt, b.txt]"))
    elif kind == "list_file":
        if not (isinstance(v, str) and v):
            out.append(((kind,), f"input list_file is {v!r}, not a path; write e.g. list_file: inputs.txt"))
        elif not os.path.isfile(_join(base_dir, v)):
            out.append(((kind,), f"list file {_join(base_dir, v)} does not exist; check the path "
                                 "(relative paths are relative to the recipe's directory)"))
    elif kind == "parquet":
        out += _check_parquet(v, base_dir)
    return out


def _check_parquet(v: Any, base_dir) -> list[tuple[tuple, str]]:
    example = "parquet: {path: files.parquet, column: path}"
    if not isinstance(v, dict) or not all(isinstance(v.get(k), str) and v.get(k) for k in ("path", "column")):
        return [(("parquet",), f"input parquet is {v!r}; it needs path: and column:, e.g. {example}")]
    out = [(("parquet", k), f"input parquet: unknown key {k!r}; its keys are {', '.join(PARQUET_KEYS)}")
           for k in v if k not in PARQUET_KEYS]
    if not isinstance(v.get("paths", False), bool):
        out.append((("parquet", "paths"), "input parquet paths: must be true (the column holds file paths) "
                                          "or false; write e.g. paths: true"))
    full = _join(base_dir, v["path"])
    try:
        names = require_pyarrow_parquet().ParquetFile(full).schema_arrow.names
    except ImportError as exc:
        return out + [(("parquet",), str(exc))]
    except Exception as exc:  # missing or not Parquet: either way the spec must change
        return out + [(("parquet", "path"), f"cannot read {full} as Parquet ({type(exc).__name__}: {exc}); "
                                            "check the path (relative to the recipe's directory)")]
    if v["column"] not in names:
        out.append((("parquet", "column"), f"{full} has no column {v['column']!r}; use one of {names}"))
    return out


def open_spec(spec: dict, base_dir: str | os.PathLike = ".") -> Iterator[Any]:
    """A fresh iterator over the inputs a checked spec describes; relative paths are joined to
    `base_dir` (Parquet `paths: true` values: to the Parquet file's directory)."""
    kind, v = next((k, spec[k]) for k in SOURCE_KINDS if k in spec)
    if kind == "glob":
        return glob(v, base_dir)
    if kind == "paths":
        return paths(v, base_dir)
    if kind == "list_file":
        return list_file(_join(base_dir, v))
    full = _join(base_dir, v["path"])
    values = parquet_column(full, v["column"])
    return paths(values, os.path.dirname(full)) if v.get("paths") else values


def spec_yields_paths(spec: dict) -> bool:
    """Whether the inputs of a spec are file paths (so `path_key` can key them)."""
    return "parquet" not in spec or bool(spec["parquet"].get("paths"))
