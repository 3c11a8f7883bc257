"""Reading an output directory back: Items in lineage order, for RunResult and `inspect`."""

from __future__ import annotations

from pathlib import Path

from curate.core.outcome import Item, Status
from curate.deps import require
from curate.errors import Cause, CurateError
from curate.io.commits import META
from curate.names import LINEAGE_COLUMNS


def output_path(out, name: str) -> Path:
    """The directory of output `name` in `out`; CurateError if `name` is not a directory
    directly inside `out` (a path, '..', or curate's own `_curate`): names come from a
    manifest too, and reading must not wander outside the output directory."""
    if not isinstance(name, str) or name in ("", ".", "..", META) or Path(name).name != name:
        raise CurateError(f"{name!r} is not an output name of {out}: an output is a directory directly "
                          f"inside it (not {META}/, not a path)")
    return Path(out) / name


def read_table(out, name: str, version: int | None = None, *, columns: list[str] | None = None, where=None):
    """All committed rows of one output as one Arrow table, in its latest version: where
    `curate rerun` wrote versions beside the run's rows, each entity's row comes from the
    newest version that has one, with a `version` column (`version=k`: as it was after version
    k; 1: the run's own rows). See `curate.rerun.versions`. `out`: a path, a URL
    (`s3://bucket/out`) or a `curate.io.location`.

    `columns`: read only these (and `entity_id` and `lineage`, which the versions need; a
    column no part has is left out). `where`: an Arrow expression pushed down to the parts,
    on columns a rerun does not change (`root_key`, `entity_id`): a row's versions must all
    match it or none, for the newest to win."""
    from curate.io.location import location
    from curate.rerun import versions

    loc = location(out)
    made = versions.existing(loc)  # listed once: checked against, then read
    versions.check_version(loc, version, made)
    base = read_parts(loc, name, columns=columns, where=where)
    newer = [(k, t) for k in made if version is None or k <= version
             if (t := read_parts(loc.child(versions.version_dir(k)), name, columns=columns, where=where)).num_rows]
    return versions.overlay(base, newer) if newer else base


def read_parts(out, name: str, *, columns: list[str] | None = None, where=None):
    """The committed rows of one output directory's output `name` (no versions): its part files
    read with the schema of all of them unified by name (`unified_schema`), not the first
    one's, so a column that a part lacks, or holds only nulls in, reads as None there and keeps
    its values in the other parts. `columns` and `where`: as `read_table` takes them."""
    ds = require("pyarrow.dataset", "reading an output directory")
    import pyarrow as pa

    from curate.io.location import location

    loc = location(out)
    output_path(loc.spec, name)  # the check of the name
    fs, files = loc.fs, loc.arrow_paths(name)  # the published parts: each one committed (curate.io.commits)
    if not files:
        return pa.table({c: [] for c in (columns or LINEAGE_COLUMNS)})
    schema = unified_schema(files, filesystem=fs)
    if schema is None:  # kinds that cannot be promoted: as JSON text throughout, as within a part
        import pyarrow.parquet as pq

        from curate.io.rows import concat_tables

        table = concat_tables([pq.read_table(f, filesystem=fs) for f in files])
        table = table.filter(where) if where is not None else table
        return table.select(_wanted(columns, table.schema)) if columns else table
    cols = _wanted(columns, schema) if columns else None
    return ds.dataset(files, format="parquet", schema=schema, filesystem=fs).to_table(columns=cols, filter=where)


def _wanted(columns: list[str], schema) -> list[str]:
    """`columns` with the ones versions need, those the schema has, in the schema's order."""
    wanted = {*columns, "entity_id", "lineage"}
    return [n for n in schema.names if n in wanted]


def unified_schema(files: list[str], filesystem=None):
    """The schema of the Parquet `files` (on `filesystem`: an fsspec one for object storage)
    read as one table: their columns by name, each type promoted as the parts of one flush are
    (nulls to any type, ints to floats, structs merged); None if a column's types cannot be
    promoted to one (ints in one part, text in another)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pa.unify_schemas([pq.read_schema(f, filesystem=filesystem) for f in files],
                                promote_options="permissive")
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        return None


def read_items(out, name: str) -> list[Item]:
    """Rows of an output as Items sorted by lineage. The value (of a PRESENT or DROPPED row) is
    the payload: the `value` column alone, or a dict of every column that is not a lineage
    column (payload fields keep their names as columns; a field named like a lineage column is
    refused when writing)."""
    rows = read_table(out, name).to_pylist()
    items = []
    for r in sorted(rows, key=lambda r: r["lineage"]):
        status = Status[r["status"].upper()]
        if status is Status.PRESENT:
            items.append(Item(tuple(r["lineage"]), status, _payload(r)))
        else:  # a DROPPED row keeps the columns of the value it had at its filter
            value = _payload(r) if status is Status.DROPPED else None
            items.append(Item(tuple(r["lineage"]), status, value, _cause(status, r["cause_kind"], r["cause"])))
    return items


def _payload(row: dict):
    """A row's payload: its `value` column alone, or a dict of its other columns; None for a
    DROPPED row whose payload columns are all empty (it was dropped with no value)."""
    payload = {k: v for k, v in row.items() if k not in LINEAGE_COLUMNS}
    if row["status"] == "dropped" and all(v is None for v in payload.values()):
        return None
    return payload["value"] if set(payload) == {"value"} else payload


def _cause(status: Status, kind: str | None, text: str | None):
    """A row's cause as a run in memory gives it: a drop reason stays text, any other a Cause."""
    if text is None or status is Status.DROPPED:
        return text
    return Cause.from_text(kind, text)
