"""`retry_failed`: run again the committed roots that FAILED or were SUPPRESSED, and replace
their rows atomically.

A committed root counts as failed when its root-level row (lineage of length 1) in any output
is failed or suppressed; a PRESENT root whose children failed (a page, a clip) is not retried,
as its other rows are good and rerunning it could change them. An input is a retry of a failed
root when its key is that root's key, or, since a fixed file has new content and so a new key,
when the part of its key before the last '@' (the file's path in `<path>@<digest>` keys) is
that of a failed root's key. The flush that commits a retried input's new rows also stages the
committed parts that held the failed root's rows, rewritten without them, and its commit
record names them ("rewrites", "retried", "removed"): a kill leaves the old rows or the new."""

from __future__ import annotations

from curate.io.commits import shard_parts

NOT_PRESENT = ("failed", "suppressed")  # root-level statuses that make a root a retry


def failed_roots(out, outputs) -> set[str]:
    """Root keys whose root-level row in any of `outputs` is failed or suppressed, read from
    the committed parts (so directories written before commit records said so work too);
    `out`: a path, a URL or a `curate.io.location`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from curate.io.location import location

    loc = location(out)
    keys: set[str] = set()
    for name in outputs:
        for f in loc.list(name, "*.parquet"):
            t = loc.read_parquet(f"{name}/{f}", columns=["root_key", "lineage", "status"])
            root = pc.and_(pc.equal(pc.list_value_length(t.column("lineage")), 1),
                           pc.is_in(t.column("status"), value_set=pa.array(NOT_PRESENT)))
            keys.update(t.filter(root).column("root_key").to_pylist())
    return keys


def path_part(key: str) -> str | None:
    """The part of a file's root key before its content digest (None: a key without one)."""
    return key.rsplit("@", 1)[0] if "@" in key else None


class Retry:
    """The failed committed roots of an output directory, which inputs replace them, and the
    committed parts that hold their rows."""

    def __init__(self, out, outputs, records: list[dict]):
        self.failed = failed_roots(out, outputs)
        self._left = set(self.failed)  # failed roots no input of this run has replaced yet
        self._by_path: dict[str, set[str]] = {}
        for k in self.failed:
            if (p := path_part(k)) is not None:
                self._by_path.setdefault(p, set()).add(k)
        self._parts: dict[str, set[str]] = {}  # failed root -> committed parts that may hold its rows
        for rec in records:
            mine = self.failed.intersection(rec["roots"])
            if mine:
                parts = {p for shards in rec["shards"].values() for p in shard_parts(shards)}
                for k in mine:
                    self._parts.setdefault(k, set()).update(parts)

    def replaced_by(self, key: str) -> list[str]:
        """The failed roots that the input of root key `key` replaces (each replaced once)."""
        mine = {key} if key in self._left else set()
        if (p := path_part(key)) is not None:
            mine |= self._by_path.get(p, set()) & self._left
        self._left -= mine
        return sorted(mine)

    def drop(self, keys: list[str]) -> tuple[set[str], set[str]]:
        """What the writer leaves out of the committed parts: the root keys and their parts."""
        return set(keys), {p for k in keys for p in self._parts.get(k, ())}
