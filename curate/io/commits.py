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
moves). Its "removed" counts the rows those rewrites left out, per output and status.

The same protocol runs on object storage (`s3://bucket/out`, through `curate.io.location`),
which has no atomic rename: staged objects have names unique to their flush (run id and
sequence), the commit record is one PUT (visible whole or not at all: no temporary name), and
publication copies each staged object into place, then deletes it (see `_publish` for why a
kill between copies is safe). Payload files that workers staged themselves (under
`_curate/staging/files/<run>/`, `curate.io.staged_files`) are named by the record's "files"
and moved the same way; recovery deletes every staged file no committed record names.
Readers list `<output>/*.parquet`, where only published, and so
committed, parts ever appear; staging lives under `_curate/`, which no reader lists."""

from __future__ import annotations

import json
import posixpath
from pathlib import Path

from curate.errors import EngineError
from curate.io.location import inside, location, sync_file, write_json_atomic  # noqa: F401 (their home was here)

META = "_curate"
COMMITS, STAGING = f"{META}/commits", f"{META}/staging"
STAGED_FILES = f"{STAGING}/files"  # payload files staged by workers (curate.io.staged_files)


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
    """Committed flushes of one output directory (a path, a URL, or a `curate.io.location`)."""

    def __init__(self, out):
        self.loc = location(out)
        self.out = self.loc.spec
        self.commits_dir = self.loc.path(COMMITS)
        self.staging_dir = self.loc.path(STAGING)
        self.loc.mkdirs(COMMITS)
        self.loc.mkdirs(STAGING)

    def records(self) -> list[dict]:
        return [json.loads(self.loc.read_text(f"{COMMITS}/{n}")) for n in self.loc.list(COMMITS, "*.json")]

    def recover(self) -> list[dict]:
        """Finish interrupted moves of committed flushes, drop uncommitted ones; returns the
        commit records."""
        records = self.records()
        committed = set()
        staged = {f"{STAGED_FILES}/{f}" for f in self.loc.files(STAGED_FILES)}  # one listing, not a check per file
        for rec in records:
            committed.add(rec["flush"])
            self._publish(rec, staged)
        for name in self.loc.list(STAGING):  # files/ too: what no commit named, or a killed run's
            if name not in committed:
                self.loc.delete_tree(f"{STAGING}/{name}")
        for tmp in self.loc.list(COMMITS, "*.tmp"):
            self.loc.delete(f"{COMMITS}/{tmp}")
        return records

    def stage_dir(self, flush: str) -> Path | str:
        """A fresh staging directory for `flush`: a Path, or the URL of a prefix."""
        rel = f"{STAGING}/{flush}"
        self.loc.delete_tree(rel)
        self.loc.mkdirs(rel)
        return self.loc.path(rel)

    def commit(self, record: dict) -> None:
        """The commit point, then publication of the staged files."""
        self.loc.sync(f"{STAGING}/{record['flush']}")
        self.loc.write_json(f"{COMMITS}/{record['flush']}.json", record)
        self._publish(record)

    def _publish(self, rec: dict, staged_files: set[str] | None = None) -> None:
        """Move a committed flush's staged shards and payload files into place. Every path is
        checked before anything moves: a shard lands directly in its output's directory, a
        payload file under that directory's `_files/`, and nothing outside the output directory
        or inside `_curate/` is written or deleted, whatever the commit record says.

        On object storage a move is a copy, then the delete of the staged object, and a
        rewrite's copy replaces the committed part of the same name (one PUT: readers see the
        old part or the new one). A kill between two copies leaves some parts new and some old
        in place, but the commit record exists, so the flush is committed and every staged
        object not yet deleted is still there: recovery copies it again (the copy is
        idempotent) and only then deletes it. A staged object is deleted only after its copy
        succeeded, so a missing staged object means its copy is in place. What the rename of a
        flush's files gave locally (all or nothing) is given by the commit record: before it,
        nothing of the flush is outside staging; after it, recovery finishes the moves.

        The record's "files" are payload files its workers staged under `_curate/staging/files/`
        (`curate.io.staged_files`), each moved to `<output>/_files/<column>/...`. Recovery gives
        `staged_files`, the staged files that are still there (listed once): one that is gone
        was moved already."""
        flush, loc = rec["flush"], self.loc
        stage = loc.inside(f"{STAGING}/{flush}", STAGING, f"staging directory of flush {flush!r}")
        shard_moves, file_moves = [], []
        outputs = {o: shard_parts(s) for o, s in rec["shards"].items()}
        for o, parts in rec.get("rewrites", {}).items():
            outputs[o] = outputs.get(o, []) + shard_parts(parts)
        for output, shards in outputs.items():
            out_dir = loc.inside(output, "", f"output {output!r} of flush {flush!r}")
            if out_dir == META or out_dir.startswith(META + "/"):
                raise EngineError(f"output {output!r} of flush {flush!r} resolves to {loc.show(out_dir)}, inside "
                                  f"curate's own {loc.show(META)}; refusing to write there (a commit record edited "
                                  "by hand, or a bug in curate: please report it)")
            staged = f"{STAGING}/{flush}/{output}"
            for shard in shards:
                src = loc.inside(f"{staged}/{Path(shard).name}", stage, f"staged shard of output {output!r}")
                dst = loc.inside(shard, out_dir, f"shard {shard!r} of output {output!r}")
                if posixpath.dirname(dst) != out_dir:
                    raise EngineError(f"shard {shard!r} of output {output!r} resolves to {loc.show(dst)}, outside the "
                                      f"output's own directory {loc.show(out_dir)}; refusing to write there (a commit "
                                      "record edited by hand, or a bug in curate: please report it)")
                shard_moves.append((src, dst))
            files = f"{staged}/_files"  # payload files the flush wrote for this output
            if loc.exists(files):
                loc.inside(files, stage, f"staged payload files of output {output!r}")
                files_dir = loc.inside(f"{out_dir}/_files", out_dir, f"payload files directory of output {output!r}")
                for f in loc.files(files):
                    dst_f = loc.inside(f"{out_dir}/_files/{f}", files_dir,
                                       f"payload file _files/{f} of output {output!r}")
                    file_moves.append((f"{files}/{f}", dst_f))
        for src, dst in shard_moves:
            if loc.exists(src):
                loc.move(src, dst)
            elif not loc.exists(dst):
                raise FileNotFoundError(f"committed shard {loc.show(dst)} is missing from {loc}; "
                                        "the output directory was modified by hand")
        for output, pairs in rec.get("files", {}).items():
            file_moves.extend(_staged_moves(loc, flush, output, pairs, staged_files))
        loc.move_all(file_moves)  # on object storage: the copies concurrently, the deletes in bulk
        loc.delete_tree(stage)  # nothing there (already published) is fine


def _staged_moves(loc, flush: str, output: str, pairs, only: set[str] | None) -> list[tuple[str, str]]:
    """The moves of payload files a commit record names for `output`, each checked before any
    moves: from under `_curate/staging/files/` to under `<output>/_files/<column>/`. With `only`
    (recovery: the staged files still there), the others are passed over unchecked: they were
    moved already, and a resume of 100,000 files resolves no path it does not move."""
    what = "(a commit record edited by hand, or a bug in curate: please report it)"
    out_dir = loc.inside(output, "", f"output {output!r} of flush {flush!r}")
    if out_dir == META or out_dir.startswith(META + "/") or not isinstance(pairs, list):
        raise EngineError(f"the payload files of output {output!r} of flush {flush!r} are {pairs!r} in "
                          f"{loc.show(out_dir)}; refusing to move them there {what}")
    files_dir = f"{out_dir}/_files"
    moves = []
    for pair in pairs:
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
            raise EngineError(f"flush {flush!r} names the payload file move {pair!r}, not [staged, final] {what}")
        if only is not None and pair[0] not in only:
            continue
        src = loc.inside(pair[0], STAGED_FILES, f"staged payload file of output {output!r}")
        dst = loc.inside(f"{out_dir}/{pair[1]}", files_dir, f"payload file {pair[1]!r} of output {output!r}")
        if len(posixpath.relpath(dst, loc.inside(files_dir, out_dir, "payload files directory")).split("/")) < 2:
            raise EngineError(f"payload file {pair[1]!r} of output {output!r} resolves to {loc.show(dst)}, not "
                              f"inside a column's directory under {loc.show(files_dir)} {what}")
        moves.append((src, dst))
    return moves
