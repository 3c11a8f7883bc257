"""Where an output directory lives: a local directory (`LocalDir`) or a prefix on object
storage (`RemoteDir`, any fsspec file system: `s3://bucket/out`). The commit log, the part
writer and rewriter, payload files, the manifest and the readers address files by their path
relative to the output directory (`pages/part-x.parquet`) and go through one of these.

What each operation guarantees, on both:
- `write_bytes` / `write_json` / `write_parquet`: the object is visible whole or not at all.
  Locally: a temporary name, fsync, `os.replace` (as curate always did). On object storage: a
  single PUT (or a multipart upload, completed in one call), which S3 makes visible whole.
- `move`: locally `os.replace` (atomic); on object storage a server-side copy, then the delete
  of the source. It is not atomic, so the commit protocol never relies on it being so: a move
  is only done after the commit record exists, and is redone by recovery while its source is
  still there (`curate.io.commits`).
- `inside`: the path guard. Locally symlinks and `..` are followed (`commits.inside`); object
  stores have no symlinks, so the check there is on the normalised key.
- listings are read afresh (fsspec's listing cache is dropped first), so a reader in one
  process sees what another process committed; S3 lists what was written (strong
  read-after-write consistency).

fsspec and s3fs are imported only for a URL (`curate.io.remote`); the local code path never
touches them."""

from __future__ import annotations

import fnmatch
import json
import os
import posixpath
import shutil
from pathlib import Path

from curate.errors import EngineError


def inside(path: Path, base: Path, what: str) -> Path:
    """`path` resolved (symlinks and `..` followed); EngineError unless it lies strictly inside
    `base` (resolved too). Guards every path curate writes, moves or deletes in an output
    directory: declarations are validated, so this failing means a bug or a hand-edited file."""
    resolved, root = Path(path).resolve(), Path(base).resolve()
    if resolved == root or not resolved.is_relative_to(root):
        raise EngineError(f"{what} {path} resolves to {resolved}, outside {root}; refusing to write there "
                          "(an output directory edited by hand, or a bug in curate: please report it)")
    return resolved


def write_whole(target: Path, data: bytes) -> None:
    """Write `data` to a temporary name beside `target`, fsync, rename: a reader sees the old
    file or the new one, never part of it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)


def write_json_atomic(path: Path, data) -> None:
    """Write JSON whole (`write_whole`), then fsync the directory's entries."""
    write_whole(path, _json_bytes(data))
    sync_file(path.parent)


def sync_file(path: Path) -> None:
    """Flush a file's (or a directory's entries') data to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def location(spec) -> "LocalDir | RemoteDir":
    """The location of an output directory given as a path, a URL, or a location already."""
    if isinstance(spec, (LocalDir, RemoteDir)):
        return spec
    from curate.io.remote import is_url

    return RemoteDir(spec) if is_url(spec) else LocalDir(Path(spec))


def _json_bytes(data) -> bytes:
    return json.dumps(data, indent=1, sort_keys=True, default=str).encode()


class LocalDir:
    """An output directory on the local file system: today's code, with its fsyncs, renames
    and symlink-resolving guards."""

    remote = False
    fs = None  # pyarrow's own local file system

    def __init__(self, root: Path):
        self.root = Path(root)
        self.spec = self.root  # what users gave: a Path here, a URL string for a RemoteDir

    def __str__(self) -> str:
        return str(self.root)

    def path(self, rel: str = "") -> Path:
        return self.root / rel if rel else self.root

    def child(self, rel: str) -> "LocalDir":
        return LocalDir(self.path(rel))

    def absolute(self) -> str:
        """A spelling that another process (a Ray actor on this node) opens the same directory by."""
        return str(self.root.resolve())

    def show(self, rel: str = "") -> str:
        return str(self.path(rel))

    def inside(self, rel: str, base: str, what: str) -> str:
        """`rel` resolved, relative to the root; EngineError unless strictly inside `base`."""
        resolved = inside(self.path(rel), self.path(base), what)
        return resolved.relative_to(self.root.resolve()).as_posix()

    def exists(self, rel: str = "") -> bool:
        return self.path(rel).exists()

    def is_dir(self, rel: str = "") -> bool:
        return self.path(rel).is_dir()

    def is_file(self, rel: str = "") -> bool:
        return self.path(rel).is_file()

    def list(self, rel: str, pattern: str = "*") -> list[str]:
        """Names directly under `rel` matching `pattern`, sorted ([] if `rel` is not a directory)."""
        d = self.path(rel)
        return sorted(p.name for p in d.glob(pattern)) if d.is_dir() else []

    def files(self, rel: str) -> list[str]:
        """Every file below `rel`, as paths relative to it, sorted."""
        d = self.path(rel)
        return sorted(f.relative_to(d).as_posix() for f in d.rglob("*") if f.is_file()) if d.exists() else []

    def read_bytes(self, rel: str) -> bytes:
        return self.path(rel).read_bytes()

    def read_text(self, rel: str) -> str:
        return self.path(rel).read_text()

    def write_bytes(self, rel: str, data: bytes) -> None:
        write_whole(self.path(rel), data)

    def write_json(self, rel: str, data) -> None:
        write_json_atomic(self.path(rel), data)

    def mkdirs(self, rel: str = "") -> None:
        self.path(rel).mkdir(parents=True, exist_ok=True)

    def sync(self, rel: str) -> None:
        """fsync every file below `rel` (a flush's staging, before its commit record)."""
        for f in self.path(rel).rglob("*"):
            if f.is_file():
                sync_file(f)

    def move(self, src: str, dst: str) -> None:
        target = self.path(dst)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(self.path(src), target)

    def move_all(self, pairs: list[tuple[str, str]]) -> None:
        """Move each (src, dst), one after another (a rename each)."""
        for src, dst in pairs:
            self.move(src, dst)

    def delete(self, rel: str) -> None:
        self.path(rel).unlink()

    def delete_tree(self, rel: str) -> None:
        p = self.path(rel)
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()

    # ---- Parquet ------------------------------------------------------------------------
    def write_parquet(self, table, rel: str, row_group_rows: int):
        """Write a part through a temporary name; its schema as read back."""
        import pyarrow.parquet as pq

        path = self.path(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        pq.write_table(table, tmp, row_group_size=row_group_rows)
        os.replace(tmp, path)
        return pq.read_schema(path)

    def read_schema(self, rel: str):
        import pyarrow.parquet as pq

        return pq.read_schema(self.path(rel))

    def arrow_paths(self, rel: str, pattern: str = "*.parquet") -> list[str]:
        """The paths of the files `list` names, for pyarrow (with `self.fs`)."""
        return [str(self.path(f"{rel}/{n}")) for n in self.list(rel, pattern)]

    def read_parquet(self, rel: str, columns=None):
        import pyarrow.parquet as pq

        return pq.read_table(self.path(rel), columns=columns)


class RemoteDir:
    """An output directory as a prefix on an fsspec file system (`s3://bucket/out`). Every
    call is retried on a transient error (`curate.io.remote.retried`); a missing object or a
    refused permission raises at once."""

    remote = True

    def __init__(self, url: str):
        from curate.io.remote import filesystem

        self.url = self.spec = url.rstrip("/")
        self.fs, self.root = filesystem(self.url)
        self.root = self.root.rstrip("/")

    def __str__(self) -> str:
        return self.url

    def _p(self, rel: str = "") -> str:
        return f"{self.root}/{rel}" if rel else self.root

    def _do(self, what: str, rel: str, fn):
        from curate.io.remote import retried

        return retried(f"{what} {self.show(rel)}", fn)

    def child(self, rel: str) -> "RemoteDir":
        return RemoteDir(self.show(rel))

    def path(self, rel: str = "") -> str:
        """The spelling of `rel`: its URL (what a LocalDir gives as a Path)."""
        return self.show(rel)

    def absolute(self) -> str:
        return self.url

    def show(self, rel: str = "") -> str:
        return f"{self.url}/{rel}" if rel else self.url

    def inside(self, rel: str, base: str, what: str) -> str:
        """`rel` normalised; EngineError unless strictly inside `base` (keys have no symlinks,
        so `..` and an absolute path are all there is to refuse)."""
        norm = posixpath.normpath(rel) if rel else "."
        root = posixpath.normpath(base) if base else "."
        ok = not rel.startswith("/") and norm != root and not norm.startswith("../") and norm != ".." and (
            root == "." or norm.startswith(root + "/"))
        if not ok:
            raise EngineError(f"{what} {rel} resolves to {self.show(norm)}, outside {self.show(base)}; refusing to "
                              "write there (an output directory edited by hand, or a bug in curate: please report it)")
        return norm

    def _fresh(self, rel: str) -> None:
        self.fs.invalidate_cache(self._p(rel))  # another process may have written since we listed

    def exists(self, rel: str = "") -> bool:
        self._fresh(rel)
        return self._do("checking", rel, lambda: self.fs.exists(self._p(rel)))

    def is_dir(self, rel: str = "") -> bool:
        self._fresh(rel)
        return self._do("checking", rel, lambda: self.fs.isdir(self._p(rel)))

    def is_file(self, rel: str = "") -> bool:
        self._fresh(rel)
        return self._do("checking", rel, lambda: self.fs.isfile(self._p(rel)))

    def list(self, rel: str, pattern: str = "*") -> list[str]:
        self._fresh(rel)
        found = self._do("listing", rel, lambda: self.fs.ls(self._p(rel), detail=False) if self.fs.isdir(self._p(rel))
                         else [])
        names = (posixpath.basename(e.rstrip("/")) for e in found)
        return sorted(n for n in names if fnmatch.fnmatchcase(n, pattern))

    def files(self, rel: str) -> list[str]:
        self._fresh(rel)
        base = self._p(rel) + "/"
        found = self._do("listing", rel, lambda: self.fs.find(self._p(rel)))
        return sorted(f[len(base):] for f in found if f.startswith(base))

    def read_bytes(self, rel: str) -> bytes:
        return self._do("reading", rel, lambda: self.fs.cat_file(self._p(rel)))

    def read_text(self, rel: str) -> str:
        return self.read_bytes(rel).decode()

    def write_bytes(self, rel: str, data: bytes) -> None:
        self._do("writing", rel, lambda: self.fs.pipe_file(self._p(rel), bytes(data)))

    def write_json(self, rel: str, data) -> None:
        self.write_bytes(rel, _json_bytes(data))

    def mkdirs(self, rel: str = "") -> None:
        """Nothing: a prefix exists once an object is under it."""

    def sync(self, rel: str) -> None:
        """Nothing: a PUT that returned is durable."""

    def move(self, src: str, dst: str) -> None:
        """Copy, then delete the source: the copy is whole when it appears (a server-side
        copy); a kill between the two leaves both, and the move is done again."""
        self._do("copying", src, lambda: self.fs.copy(self._p(src), self._p(dst)))
        self._do("deleting", src, lambda: self.fs.rm_file(self._p(src)))

    def move_all(self, pairs: list[tuple[str, str]]) -> None:
        """Move each (src, dst): every copy first, made concurrently (fsspec's batches), then the
        sources deleted in bulk (S3's DeleteObjects: up to 1,000 a request). A source is deleted
        only once every copy succeeded; a kill or an error leaves sources to copy again."""
        if not pairs:
            return
        srcs, dsts = [self._p(s) for s, _ in pairs], [self._p(d) for _, d in pairs]
        where = posixpath.dirname(pairs[0][0])
        self._do(f"copying {len(pairs)} files from", where, lambda: self.fs.copy(srcs, dsts))
        self._do(f"deleting {len(pairs)} files from", where, lambda: self.fs.rm(srcs))

    def delete(self, rel: str) -> None:
        self._do("deleting", rel, lambda: self.fs.rm_file(self._p(rel)))

    def delete_tree(self, rel: str) -> None:
        if self.exists(rel):
            self._do("deleting", rel, lambda: self.fs.rm(self._p(rel), recursive=True))

    # ---- Parquet ------------------------------------------------------------------------
    def write_parquet(self, table, rel: str, row_group_rows: int):
        """Write a part as one object; its schema as read back from the bytes written."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, row_group_size=row_group_rows)
        data = sink.getvalue()
        self.write_bytes(rel, data.to_pybytes())
        return pq.read_schema(pa.BufferReader(data))

    def read_schema(self, rel: str):
        import pyarrow.parquet as pq

        return self._do("reading", rel, lambda: pq.read_schema(self._p(rel), filesystem=self.fs))

    def read_parquet(self, rel: str, columns=None):
        import pyarrow.parquet as pq

        return self._do("reading", rel, lambda: pq.read_table(self._p(rel), columns=columns, filesystem=self.fs))

    def arrow_paths(self, rel: str, pattern: str = "*.parquet") -> list[str]:
        """The file system paths of the files `list` names, for pyarrow with `self.fs`."""
        return [self._p(f"{rel}/{n}") for n in self.list(rel, pattern)]
