"""The commit log that makes Parquet output survive a kill at any moment.

A flush writes its shards (and payload files) under `_curate/staging/<flush>/`, then
atomically creates `_curate/commits/<flush>.json` naming its shards and roots: that rename
is the commit point. Only then are the staged files moved into place. Recovery finishes the
moves of committed flushes and deletes everything staged but never committed, so the set of
rows on disk is always the rows of the committed roots, each exactly once."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

META = "_curate"


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
        stage = self.staging_dir / rec["flush"]
        for output, shard in rec["shards"].items():
            src, dst = stage / output / Path(shard).name, self.out / shard
            if src.exists():
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.replace(src, dst)
            elif not dst.exists():
                raise FileNotFoundError(f"committed shard {dst} is missing from {self.out}; "
                                        "the output directory was modified by hand")
        for output in rec["shards"]:  # payload files the flush wrote for this output
            files = stage / output / "_files"
            if files.exists():
                for f in files.rglob("*"):
                    if f.is_file():
                        dst = self.out / output / f.relative_to(stage / output)
                        dst.parent.mkdir(parents=True, exist_ok=True)
                        os.replace(f, dst)
        if stage.exists():
            shutil.rmtree(stage)
