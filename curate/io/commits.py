"""The commit log that makes Parquet output survive a kill at any moment.

A flush writes its shards (and payload files) under `_curate/staging/<flush>/`, then
atomically creates `_curate/commits/<flush>.json` naming its shards and roots: that rename
is the commit point. Only then are the staged files moved into place. Recovery finishes the
moves of committed flushes and deletes everything staged but never committed, so the set of
rows on disk is always the rows of the committed roots, each exactly once.

A flush's shard of an output is one file, or a list of part files when its roots were large
(`{"pages": ["pages/part-F.parquet", "pages/part-F_00001.parquet"]}`): the parts live in the
same staging directory and are committed, recovered and published together, as one shard.

A record may also name "rewrites": committed parts of earlier flushes, staged again under
their own names (rewritten to a wider schema, or without the rows of roots a retry replaces:
see `curate.io.parts`, `curate.io.retry`); publishing replaces the old files by os.replace, so
a kill leaves the old set of parts (not committed) or the new one (recovery finishes the
moves). Its "removed" counts the rows those rewrites left out, per output and status."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from curate.errors import EngineError

META = "_curate"


def inside(path: Path, base: Path, what: str) -> Path:
    """`path` resolved (symlinks and `..` followed); EngineError unless it lies strictly inside
    `base` (resolved too). Guards every path curate writes, moves or deletes in an output
    directory: declarations are validated, so this failing means a bug or a hand-edited file."""
    resolved, root = Path(path).resolve(), Path(base).resolve()
    if resolved == root or not resolved.is_relative_to(root):
        raise EngineError(f"{what} {path} resolves to {resolved}, outside {root}; refusing to write there "
                          "(an output directory edited by hand, or a bug in curate: please report it)")
    return resolved


def write_json_atomic(path: Path, data) -> None:
    """Write JSON to a temporary name, fsync, rename: a reader sees the old or the new file."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True, default=str)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync(path.parent)


def _fsync(path: Path) -> None:
    """Flush a file's (or a directory's entries') data to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def record_counts(records: list[dict]) -> dict[str, dict[str, int]]:
    """Rows per output and status on disk after `records`: each one's rows, less the rows its
    rewrites removed (the replaced rows of retried roots)."""
    out: dict[str, dict[str, int]] = {}
    for rec in records:
        for key, sign in (("counts", 1), ("removed", -1)):
            for name, c in rec.get(key, {}).items():
                d = out.setdefault(name, {})
                for st, n in c.items():
                    d[st] = d.get(st, 0) + sign * n
    return {name: {st: n for st, n in c.items() if n} for name, c in out.items()}


def shard_parts(shards) -> list[str]:
    """The part files of one output's shard in a commit record: one path, or a list of them."""
    if isinstance(shards, str):
        return [shards]
    if isinstance(shards, list) and shards and all(isinstance(p, str) for p in shards):
        return shards
    raise EngineError(f"a commit record names the shard {shards!r}, neither a path nor a list of paths "
                      "(a commit record edited by hand, or a bug in curate: please report it)")


class CommitLog:
    """Committed flushes of one output directory."""

    def __init__(self, out: Path):
        self.out = out
        self.commits_dir = out / META / "commits"
        self.staging_dir = out / META / "staging"
        self.commits_dir.mkdir(parents=True, exist_ok=True)
        self.staging_dir.mkdir(parents=True, exist_ok=True)

    def records(self) -> list[dict]:
        return [json.loads(p.read_text()) for p in sorted(self.commits_dir.glob("*.json"))]

    def recover(self) -> list[dict]:
        """Finish interrupted moves of committed flushes, drop uncommitted ones; returns the
        commit records."""
        records = self.records()
        committed = set()
        for rec in records:
            committed.add(rec["flush"])
            self._publish(rec)
        for d in self.staging_dir.iterdir():
            if d.name in committed:
                continue
            if d.is_dir():
                shutil.rmtree(d)
            else:
                d.unlink()
        for tmp in self.commits_dir.glob("*.tmp"):
            tmp.unlink()
        return records

    def stage_dir(self, flush: str) -> Path:
        d = self.staging_dir / flush
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        return d

    def commit(self, record: dict) -> None:
        """The commit point, then publication of the staged files."""
        stage = self.staging_dir / record["flush"]
        for f in stage.rglob("*"):
            if f.is_file():
                _fsync(f)
        write_json_atomic(self.commits_dir / f"{record['flush']}.json", record)
        self._publish(record)

    def _publish(self, rec: dict) -> None:
        """Move a committed flush's staged shards and payload files into place. Every path is
        checked before anything moves: a shard lands directly in its output's directory, a
        payload file under that directory's `_files/`, and nothing outside the output directory
        or inside `_curate/` is written or deleted, whatever the commit record says."""
        flush = rec["flush"]
        stage = inside(self.staging_dir / flush, self.staging_dir, f"staging directory of flush {flush!r}")
        meta = (self.out / META).resolve()
        shard_moves, file_moves = [], []
        outputs = {o: shard_parts(s) for o, s in rec["shards"].items()}
        for o, parts in rec.get("rewrites", {}).items():
            outputs[o] = outputs.get(o, []) + shard_parts(parts)
        for output, shards in outputs.items():
            out_dir = inside(self.out / output, self.out, f"output {output!r} of flush {flush!r}")
            if out_dir == meta or out_dir.is_relative_to(meta):
                raise EngineError(f"output {output!r} of flush {flush!r} resolves to {out_dir}, inside curate's "
                                  f"own {meta}; refusing to write there (a commit record edited by hand, or a "
                                  "bug in curate: please report it)")
            for shard in shards:
                src = self.staging_dir / flush / output / Path(shard).name
                inside(src, stage, f"staged shard of output {output!r}")
                dst = inside(self.out / shard, out_dir, f"shard {shard!r} of output {output!r}")
                if dst.parent != out_dir:
                    raise EngineError(f"shard {shard!r} of output {output!r} resolves to {dst}, outside the output's "
                                      f"own directory {out_dir}; refusing to write there (a commit record edited by "
                                      "hand, or a bug in curate: please report it)")
                shard_moves.append((src, dst))
            staged = self.staging_dir / flush / output
            files = staged / "_files"  # payload files the flush wrote for this output
            if files.exists():
                inside(files, stage, f"staged payload files of output {output!r}")
                files_dir = inside(out_dir / "_files", out_dir, f"payload files directory of output {output!r}")
                for f in files.rglob("*"):
                    if f.is_file():
                        dst_f = inside(out_dir / f.relative_to(staged), files_dir,
                                       f"payload file {f.relative_to(staged)} of output {output!r}")
                        file_moves.append((f, dst_f))
        for src, dst in shard_moves:
            if src.exists():
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.replace(src, dst)
            elif not dst.exists():
                raise FileNotFoundError(f"committed shard {dst} is missing from {self.out}; "
                                        "the output directory was modified by hand")
        for src, dst in file_moves:
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dst)
        if stage.exists():
            shutil.rmtree(stage)
