"""One schema for every part file of an output, so that standard readers with default options
(pandas, pyarrow.dataset, DuckDB's glob, Ray Data, Daft: each takes the first part's schema, or
refuses parts that differ) read every column of every part.

An output's schema only widens: a new column is added after the known ones, a type is
promoted as pyarrow promotes (nulls to any type, ints to floats, structs merged), and a column
whose kinds cannot be promoted (ints in one part, text in a later one) becomes JSON text in
every part. When a flush widens the schema, the parts already on disk are rewritten to it in
the same commit (`PartRewriter`): their copies are staged under the flush's staging
directory with the same names and the commit record lists them under "rewrites", so a kill
leaves either the old set of parts or the new one. A rewrite happens only when the schema
changes (or, for `retry_failed`, when a part holds rows of a retried root), so a run whose
first flush already shows every column pays nothing."""

from __future__ import annotations

from pathlib import Path


def merge(known, new):
    """The schema that holds parts of schema `known` (None: none yet) and of `new`: `known`'s
    columns first in their order, then `new`'s others in theirs; each shared column typed as
    both unify to, or as text (JSON text) where they cannot be."""
    import pyarrow as pa

    if known is None:
        return new
    fields = {f.name: f for f in known}
    extra = []
    for f in new:
        if f.name not in fields:
            extra.append(f)
            continue
        before = fields[f.name]
        if before.type.equals(f.type):
            continue
        try:
            t = pa.unify_schemas([pa.schema([before]), pa.schema([pa.field(f.name, f.type)])],
                                 promote_options="permissive").field(f.name).type
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            t = pa.string()  # kinds that cannot be promoted: JSON text, as within one part
        fields[f.name] = pa.field(f.name, t)
    return pa.schema(list(fields.values()) + extra)


def same(a, b) -> bool:
    """Whether two part schemas are one (names, order, types; metadata aside)."""
    return a is not None and b is not None and a.equals(b, check_metadata=False)


def conform(table, schema):
    """`table` with exactly `schema`'s columns in its order and types: missing columns as
    nulls, types promoted; a column that `schema` types as text but `table` holds as another
    kind (the JSON text of a clash) is written as JSON text."""
    import pyarrow as pa

    from curate.io.rows import as_json

    def text(t) -> bool:
        return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t)

    clash = {f.name for f in schema if pa.types.is_string(f.type) and f.name in table.column_names
             and not text(table.schema.field(f.name).type)}
    (table,) = as_json([table], clash)
    table = pa.concat_tables([schema.empty_table(), table.select([n for n in table.column_names if n in schema.names])],
                             promote_options="permissive")
    return table.select(schema.names).cast(schema).combine_chunks()


def vector_lists(schema, known, table):
    """`schema` with each fixed-size list column that a part would hold a null in made a list of
    the same values: Arrow's Parquet reader cannot read a null fixed-size list back
    (apache/arrow#35692). A part would when `table` (conformed to `schema`) holds one, or when the
    parts written before (of schema `known`) lack the column."""
    import pyarrow as pa

    fields, changed = [], False
    for f in schema:
        if pa.types.is_fixed_size_list(f.type) and (
                table.column(f.name).null_count or (known is not None and f.name not in known.names)):
            f = pa.field(f.name, pa.list_(f.type.value_field), f.nullable, f.metadata)
            changed = True
        fields.append(f)
    return pa.schema(fields, metadata=schema.metadata) if changed else schema


class PartRewriter:
    """The committed parts of an output directory and their schemas, read when a run's writer
    starts (so a resumed run starts from the schema already on disk); rewrites into a flush's
    staging directory the parts that do not match an output's schema, or that hold rows of
    roots being replaced."""

    def __init__(self, out, names):
        from curate.io.location import location

        self.out = None if out is None else location(out)
        self.disk: dict[str, dict[str, object]] = {}  # output -> {part path in out: its schema}
        for name in names:
            files = self.out.list(name, "*.parquet") if self.out is not None else []
            self.disk[name] = {f"{name}/{f}": self.out.read_schema(f"{name}/{f}") for f in files}

    def schema(self, name: str):
        """The schema that holds every committed part of output `name` (None: no part yet)."""
        known = None
        for s in self.disk[name].values():
            known = merge(known, s)
        return known

    def rewrite(self, name: str, schema, stage, row_group_rows: int, drop_roots: set[str],
                candidates: set[str]) -> tuple[list[str], dict[str, int]]:
        """Stage rewrites of output `name`'s committed parts that differ from `schema`, or that
        are among `candidates` and hold rows whose root key is in `drop_roots` (those rows
        left out), into the location `stage`. Returns the parts staged and the rows left out
        per status."""
        import pyarrow as pa
        import pyarrow.compute as pc

        staged, removed = [], {}
        for part, s in self.disk[name].items():
            drop = bool(drop_roots) and part in candidates
            if same(s, schema) and not drop:
                continue
            table = self.out.read_parquet(part)
            if drop:
                gone = pc.is_in(table.column("root_key"), value_set=pa.array(sorted(drop_roots), pa.string()))
                for st in table.filter(gone).column("status").to_pylist():
                    removed[st] = removed.get(st, 0) + 1
                if pc.any(gone).as_py() is not True and same(s, schema):
                    continue  # none of its rows is replaced: nothing to rewrite
                table = table.filter(pc.invert(gone))
            self.disk[name][part] = stage.write_parquet(conform(table, schema), f"{name}/{Path(part).name}",
                                                       row_group_rows)
            staged.append(part)
        return staged, removed

    def committed(self, name: str, parts: dict[str, object]) -> None:
        """This flush's parts of output `name` (path in out -> schema) are on disk now."""
        self.disk[name].update(parts)
