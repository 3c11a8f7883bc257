"""Items -> Parquet rows: lineage columns first, then the payload's own columns.

Every row carries `root_key`, `entity_id` (root key + ordinal path: the same in every run),
`parent_id`, `ordinal`, `lineage` (input index, then ordinals), `status`, `cause_kind` and
`cause`. A payload that is a dataclass or a dict becomes one column per field, named as the
field (a field named like a lineage column is refused with PayloadError); anything else is a
single `value` column. Payload fields declared as files are written under the output
directory's `_files/` and their column holds the relative path.

Output names, file columns and extensions are plain names (`name_problem`, `plain_extension`):
`Pipeline.output` refuses others, and the writers check every resolved path again."""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import os
from pathlib import PurePath, PurePosixPath

from curate.core.lineage import entity_id
from curate.core.outcome import Item, Status, has_value
from curate.errors import CurateError, EngineError
from curate.names import (
    FILES_DIR,
    LINEAGE_COLUMNS,
    MAX_FIELD_BYTES,
    MAX_NAME,
    cut_bytes,
    file_part,
    file_spec,
    fill_template,
    name_problem,
)


class PayloadError(CurateError):
    """A payload cannot become a row of its output: one of its fields has the name of a
    lineage column, which every row already carries."""


ROW_HOOK = "__curate_row__"  # a record's method that gives its row's fields, when they are not its own


def payload_fields(value) -> dict:
    """The payload as named fields, each made of types Parquet stores (nested records as
    structs, sequences as lists, paths and enums as text). A record with a `__curate_row__()`
    method gives its fields from it: a record that an output's rows show in the columns of
    another (a clip dropped at its filter, in the columns of the captioned clips)."""
    hook = getattr(type(value), ROW_HOOK, None)
    if hook is not None:
        value = hook(value)
    value = plain(value)
    if isinstance(value, dict) and value and all(isinstance(k, str) for k in value):
        return value
    return {"value": value}


def plain(v):
    """`v` with dataclasses turned into dicts, tuples and sets into lists, paths into text."""
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: plain(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, (set, frozenset)):
        return sorted((plain(x) for x in v), key=repr)
    if isinstance(v, PurePath):
        return str(v)
    if isinstance(v, enum.Enum):
        return v.value
    return v


DEFERRED = "__value__"  # a row's payload not fetched yet: the writer expands it where it runs


def item_row(item: Item, root_key: str, defer: bool = False, output: str | None = None) -> dict:
    """One output row of an item: the lineage columns, then one column per payload field (a
    field named like a lineage column raises PayloadError naming `output`). With `defer`, the
    payload stays a reference under DEFERRED for `expand_payloads` to open."""
    path = item.lineage[1:]
    cause = item.cause
    row = {
        "root_key": root_key,
        "entity_id": entity_id(root_key, path),
        "parent_id": entity_id(root_key, path[:-1]) if path else None,
        "ordinal": item.lineage[-1],
        "lineage": list(item.lineage),
        "status": str(item.status),
        "cause_kind": None if cause is None else ("dropped" if item.status is Status.DROPPED else getattr(cause, "kind", None)),
        "cause": None if cause is None else str(cause),
    }
    if has_value(item):
        if defer:  # a DROPPED item's columns are those of the value it had at its filter
            row[DEFERRED] = item.value
        else:
            _add_payload(row, item.value, output)
    return row


def _add_payload(row: dict, value, output: str | None = None) -> None:
    """Add the payload's fields to `row` as columns of the same names; a field that has the
    name of a lineage column would overwrite (or be confused with) it, so it is refused."""
    fields = payload_fields(value)
    for k in fields:
        if k in LINEAGE_COLUMNS:
            raise PayloadError(_clash(k, row, output))
    row.update(fields)


def _clash(field: str, row: dict, output: str | None) -> str:
    where = f"output {output!r}" if output is not None else "an output"
    example = f"{output}_{field}" if output is not None and name_problem(output) is None else f"page_{field}"
    return (f"a payload of {where} (entity {row.get('entity_id')}) has a field named {field!r}, the name of a "
            f"lineage column; rename the field, e.g. {example!r}; these names are lineage columns of every "
            f"row: {', '.join(LINEAGE_COLUMNS)}")


def expand_payloads(rows: list[dict], resolve=lambda v: v, output: str | None = None) -> None:
    """Turn deferred payloads into columns, fetching each with `resolve` (PayloadError,
    naming `output`, for a field named like a lineage column)."""
    for row in rows:
        if DEFERRED in row:
            _add_payload(row, resolve(row.pop(DEFERRED)), output)


def file_name(entity: str, column: str, ext: str, template: str | None = None, fields: dict | None = None) -> str:
    """Deterministic path of a payload file, relative to its output's directory: the same
    entity gets the same name in every run, so a resumed run rewrites rather than duplicates.
    Without a template the name is a digest of the entity id; with one (`{key}/{route}/{key}`)
    it is filled from `fields` (see `template_fields`). The leading underscore of `_files/`
    keeps dataset readers (pyarrow, Ray Data) from taking the files for data."""
    if template is None:
        return f"{FILES_DIR}/{column}/{hashlib.sha256(entity.encode()).hexdigest()[:24]}{ext}"
    return f"{FILES_DIR}/{column}/{fill_template(template, fields or {}, ext)}"


def template_fields(row: dict) -> dict:
    """What a file name template may use: the row's payload fields, and `name` (the root
    key's file stem), `key` (that stem plus 8 hex of the root key's digest: unique per input),
    `ordinal`, `lineage` ('0-3-1'). `key` is a safe name part (`file_part`: Unicode letters
    kept) of at most MAX_NAME characters and MAX_FIELD_BYTES bytes, the stem cut to make room
    for the digest, so filling the template (which cuts every value to those) keeps it whole."""
    root = row["root_key"]
    stem = os.path.splitext(os.path.basename(root.rsplit("@", 1)[0]))[0] or root
    digest = hashlib.sha256(root.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    fields = {k: v for k, v in row.items() if k not in LINEAGE_COLUMNS}
    room = len(digest) + 1
    short = cut_bytes(file_part(stem, "doc")[:MAX_NAME - room], MAX_FIELD_BYTES - room).rstrip("._-") or "doc"
    fields.update(name=stem, key=f"{short}-{digest}", ordinal=row["ordinal"],
                  lineage="-".join(map(str, row["lineage"])))
    return fields


class StagedFile:
    """A payload file a worker staged: `rel` (relative to the output directory) and its size.
    Not a dataclass on purpose: a row's fields go through `rows.plain`, which would turn a
    dataclass into a dict."""

    __slots__ = ("rel", "nbytes")

    def __init__(self, rel: str, nbytes: int):
        self.rel, self.nbytes = rel, nbytes

    def __eq__(self, other) -> bool:
        return isinstance(other, StagedFile) and (self.rel, self.nbytes) == (other.rel, other.nbytes)

    def __hash__(self) -> int:
        return hash((self.rel, self.nbytes))

    def __repr__(self) -> str:
        return f"StagedFile({self.rel!r}, {self.nbytes})"


def spill_files(rows: list[dict], files: dict, out_dir, moves: list | None = None) -> tuple[int, int]:
    """Write declared byte (or text) columns as files under `out_dir` (an output's directory,
    or its staging twin: a path or a `curate.io.location`) and replace the value by the
    relative path. Each file must land under `_files/<column>/` of `out_dir` (EngineError
    otherwise, before writing); each is written whole (a temporary name and a rename, or one
    object). A file a worker staged already (a `StagedFile`, by `curate.io.staged_files`) is
    named the same way but not written: `(staged, final, nbytes)` goes to `moves`, for the
    commit to move it. Returns the files written here and their bytes."""
    from curate.io.location import location

    loc = location(out_dir)
    specs = {}
    for col, spec in files.items():
        parsed = file_spec(spec)
        if name_problem(col) is not None or col in LINEAGE_COLUMNS or parsed is None:
            raise EngineError(f"payload files column {col!r} ({spec!r}) is not a plain column name with a plain "
                              f"extension and safe name template; files would land outside {loc.show(FILES_DIR)}. "
                              "Pipeline.output should have refused it: please report it")
        specs[col] = parsed
    files_dir = loc.inside(FILES_DIR, "", "payload files directory") if files else None
    written = nbytes = 0
    for row in rows:
        for col, (ext, template) in specs.items():
            data = row.get(col)
            if data is None:
                continue
            rel = file_name(row["entity_id"], col, ext, template, template_fields(row) if template else None)
            resolved = loc.inside(rel, files_dir, f"payload file of column {col!r} for {row['entity_id']}")
            parts = PurePosixPath(resolved).relative_to(files_dir).parts
            if parts[0] != col or (template is None and parts != (col, PurePosixPath(rel).name)):
                raise EngineError(f"payload file of column {col!r} for {row['entity_id']} resolves to "
                                  f"{loc.show(resolved)}, outside its own place {loc.show(f'{files_dir}/{col}')}; "
                                  "refusing to write there")
            if isinstance(data, StagedFile):
                if moves is None:
                    raise EngineError(f"payload file of column {col!r} for {row['entity_id']} was staged by its "
                                      "worker, but this writer has no commit to move it: please report it")
                moves.append((data.rel, rel, data.nbytes))
            else:
                raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
                loc.write_bytes(rel, raw)
                written, nbytes = written + 1, nbytes + len(raw)
            row[col] = rel
    return written, nbytes


def arrow_type(t):
    """A pyarrow type from a type or a type name ("string", "int64", "list<float32>" ...)."""
    import pyarrow as pa

    if isinstance(t, pa.DataType):
        return t
    name = str(t).strip()
    if name.startswith("list<") and name.endswith(">"):
        return pa.list_(arrow_type(name[5:-1]))
    aliases = {"str": "string", "bytes": "binary", "float": "float64", "int": "int64", "bool": "bool_"}
    name = aliases.get(name, name)
    factory = getattr(pa, name, None)
    if factory is None:
        raise TypeError(f"unknown column type {t!r}; use a pyarrow type or a name such as 'string'")
    return factory()


JSON_TEXT = b"curate.json"  # field metadata of a column stored as JSON text while a part is built


def to_table(rows: list[dict], declared: dict, files: dict[str, str], previous=None):
    """An Arrow table of `rows`: lineage columns typed, declared payload columns typed, the
    rest inferred, and unified with `previous` (the schema of earlier parts) so every part of
    an output reads as one dataset: each inferred column is promoted to the type it and the
    earlier parts' type unify to (`_promoted`: nulls, also inside lists and structs, to any
    type; ints to floats; structs merged), so an earlier part whose list was empty in every row
    (list<null>) or whose struct lacked a field does not refuse the values that come later. A
    column stored as JSON text (values Arrow cannot type) carries JSON_TEXT in its field
    metadata until `concat_tables` drops it."""
    import pyarrow as pa

    fixed = {"root_key": pa.string(), "entity_id": pa.string(), "parent_id": pa.string(),
             "ordinal": pa.int64(), "lineage": pa.list_(pa.int64()), "status": pa.string(),
             "cause_kind": pa.string(), "cause": pa.string()}
    fixed.update({k: arrow_type(v) for k, v in declared.items()})
    fixed.update({k: pa.string() for k in files})
    names: list[str] = list(LINEAGE_COLUMNS)
    for row in rows:
        names.extend(k for k in row if k not in names)
    if previous is not None:
        names.extend(k for k in previous.names if k not in names)
    arrays, fields = [], []
    for name in names:
        col = [r.get(name) for r in rows]
        if name in fixed:
            array, as_json = _column(col, fixed[name])
        else:
            array, as_json = _column(col, None)
            if previous is not None and name in previous.names:
                array, as_json = _promoted(array, as_json, previous.field(name).type, col)
        arrays.append(array)
        fields.append(pa.field(name, array.type, metadata={JSON_TEXT: b"1"} if as_json else None))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _column(values: list, t):
    """An Arrow array of one column (typed `t`, else inferred), and whether it is JSON text:
    values Arrow cannot type (mixed kinds, opaque objects) are stored as JSON text rather than
    failing the flush; values that do not fit a declared type other than text raise."""
    import pyarrow as pa

    if t is None and (vectors := _vectors(values)) is not None:
        return vectors, False
    try:
        return (pa.array(values, type=t) if t is not None else pa.array(values)), False
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        if t is not None and not pa.types.is_string(t):
            raise
        return _json_text(values), True


def _vectors(values: list):
    """A column of numpy vectors as `fixed_size_list<dtype>[d]` (an embedding: readers get its
    length from the schema, and it is stored flat), when every value is a 1-D numpy float array
    of one length d >= 1 and one dtype; else None (inferred as any column: a column with a null
    row becomes `list<dtype>`, because Arrow's Parquet reader cannot read a null fixed-size list
    back, apache/arrow#35692, and every reader must read every part)."""
    first = values[0] if values else None
    dtype = getattr(first, "dtype", None)
    if dtype is None or getattr(first, "ndim", 0) != 1 or dtype.kind != "f" or not first.shape[0]:
        return None
    if not all(type(v) is type(first) and v.dtype == dtype and v.shape == first.shape for v in values):
        return None
    import numpy as np
    import pyarrow as pa

    return pa.FixedSizeListArray.from_arrays(pa.array(np.stack(values).reshape(-1)), first.shape[0])


def _promoted(array, as_json: bool, before, values: list):
    """A column inferred for this chunk, typed to agree with the earlier parts' type `before`
    as the chunks of one part are (`concat_tables`): cast to the type both unify to when they
    unify; made JSON text where they cannot (ints before and text now; the writer then makes
    the earlier parts' column JSON text too, `curate.io.parts.conform`)."""
    import pyarrow as pa

    if as_json or array.type == before:
        return array, as_json
    try:
        unified = pa.unify_schemas([pa.schema([("c", before)]), pa.schema([("c", array.type)])],
                                   promote_options="permissive").field("c").type
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return _json_text(values), True
    if unified == array.type:
        return array, False
    try:
        return array.cast(unified), False
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return array, False


def _json_text(values: list):
    import pyarrow as pa

    return pa.array([None if v is None else json.dumps(v, default=repr, sort_keys=True) for v in values],
                    type=pa.string())


def concat_tables(tables: list):
    """One table of the chunks of a part, each converted (typed) apart: types promoted as one
    conversion of all rows would (ints and floats to floats, structs merged, nulls to any
    type); a column whose kinds cannot be (ints in one chunk, text or JSON text in another)
    becomes JSON text throughout. Field metadata (JSON_TEXT) is dropped."""
    import pyarrow as pa

    def kind(f):
        return "json" if f.metadata and JSON_TEXT in f.metadata else f.type

    kinds: dict[str, set] = {}
    for t in tables:
        for f in t.schema:
            if not pa.types.is_null(f.type):
                kinds.setdefault(f.name, set()).add(kind(f))
    clash = {n for n, ks in kinds.items() if "json" in ks and len(ks) > 1}
    try:
        table = pa.concat_tables(as_json(tables, clash), promote_options="permissive") if len(tables) > 1 else tables[0]
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        clash = {n for n, ks in kinds.items() if len(ks) > 1}
        table = pa.concat_tables(as_json(tables, clash), promote_options="permissive")
    return table.cast(pa.schema([pa.field(f.name, f.type, f.nullable) for f in table.schema]))


def as_json(tables: list, names: set) -> list:
    """`tables` with the columns `names` as JSON text (those that are JSON text already kept)."""
    import pyarrow as pa

    out = []
    for t in tables:
        for n in names & set(t.column_names):
            f = t.schema.field(n)
            if not (f.metadata and JSON_TEXT in f.metadata) and not pa.types.is_null(f.type):
                t = t.set_column(t.schema.get_field_index(n), pa.field(n, pa.string(), metadata={JSON_TEXT: b"1"}),
                                 _json_text(t.column(n).to_pylist()))
        out.append(t)
    return out
