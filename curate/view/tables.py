"""An output as the viewer's table: its light columns read once (and again only when a new
part is committed), then filtered, sorted and paged in Arrow for each request.

Light columns are those a table can show in a row: numbers, booleans and short text. A column
is heavy when its Parquet chunks hold more than HEAVY_BYTES a row uncompressed (a page's
Markdown, an embedding, a page's layout boxes) or when it is a list or struct (other than the
lineage): the row's own page (`/row`) reads those, for that row alone. So opening a 100,000-row
output reads a few numeric columns, not its text."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from curate.names import LINEAGE_COLUMNS

HEAVY_BYTES = 256  # uncompressed bytes a row above which a column is left out of the table
SCHEMA_PARTS = 8  # part files whose footers decide which columns are heavy (parts share a writer)
PAGE_ROWS = 50  # rows on one page of a table
FACET_MAX = 12  # a text or boolean column with at most this many distinct values is a facet
FACETS_FIRST = ("status", "cause_kind", "route", "language", "keep", "method", "kind", "split")
NOT_FACETS = {"root_key", "entity_id", "parent_id", "cause", "lineage"}
NULL = "(none)"  # a facet's value for rows where the column is null
EMPTY = "(empty)"  # a facet's value for rows where the text is ""


@dataclass(frozen=True)
class Query:
    """What a table page shows: facet values (column -> value), numeric ranges (column ->
    (low, high), either None), a sort column, and a page number (0-based)."""

    facets: dict = field(default_factory=dict)
    ranges: dict = field(default_factory=dict)
    sort: str | None = None
    desc: bool = False
    page: int = 0

    @classmethod
    def from_params(cls, params: dict[str, str]) -> "Query":
        """From a request's query parameters: `f.<col>=value`, `min.<col>=x`, `max.<col>=x`,
        `sort=col`, `desc=1`, `page=N`. Unparsable numbers are ignored (a form left blank)."""
        facets, ranges = {}, {}
        for k, v in params.items():
            if k.startswith("f.") and v != "":
                facets[k[2:]] = v
            elif k.startswith(("min.", "max.")) and (x := _number(v)) is not None:
                lo, hi = ranges.get(k[4:], (None, None))
                ranges[k[4:]] = (x, hi) if k.startswith("min.") else (lo, x)
        page = params.get("page", "0")
        return cls(facets, ranges, params.get("sort") or None, params.get("desc") == "1",
                   int(page) if page.isdigit() else 0)

    def params(self, **change) -> dict[str, str]:
        """This query's parameters, with `change` applied (facet=(col, value|None), page=N,
        sort=col, desc=bool); a changed filter or sort goes back to page 0."""
        facets = dict(self.facets)
        if "facet" in change:  # (column, value): filter on it; (column, None): not on that column
            col, value = change.pop("facet")
            facets.pop(col, None)
            if value is not None:
                facets[col] = value
            change.setdefault("page", 0)
        out = {f"f.{k}": v for k, v in sorted(facets.items())}
        for col, (lo, hi) in sorted(self.ranges.items()):
            if lo is not None:
                out[f"min.{col}"] = _fmt(lo)
            if hi is not None:
                out[f"max.{col}"] = _fmt(hi)
        sort = change.get("sort", self.sort)
        if sort:
            out["sort"] = sort
            if change.get("desc", self.desc):
                out["desc"] = "1"
        page = change.get("page", self.page if "sort" not in change else 0)
        if page:
            out["page"] = str(page)
        return out

    @property
    def filtered(self) -> bool:
        return bool(self.facets or self.ranges)


@dataclass
class Page:
    """One page of a filtered table: its rows (dicts of the light columns), how many rows match,
    the facets (column -> [(value, count)] over the matching rows) and the numeric columns with
    their range over the whole output."""

    rows: list[dict]
    matched: int
    total: int
    columns: list[str]
    facets: dict[str, list[tuple[str, int]]]
    numeric: dict[str, tuple[float, float]]
    page: int
    pages: int
    problems: list[str]


class LightTable:
    """An output's light columns in lineage order, cached against its list of parts."""

    def __init__(self, loc, name: str):
        self.loc, self.name = loc, name
        self._key = None
        self.table = None
        self.heavy: list[str] = []
        self.numeric: dict[str, tuple[float, float]] = {}  # of the whole table: the range form's hints
        self.facet_names: list[str] = []

    def load(self):
        """The table, read again only when the output's parts (or versions) changed."""
        from curate.rerun import versions

        made = versions.existing(self.loc)
        key = (tuple(self.loc.list(self.name, "*.parquet")) if self.loc.exists(self.name) else (),
               tuple((k, tuple(self.loc.child(versions.version_dir(k)).list(self.name, "*.parquet"))
                      if self.loc.child(versions.version_dir(k)).exists(self.name) else ()) for k in made))
        if key != self._key:
            self.table, self.heavy = _read_light(self.loc, self.name)
            self.numeric, self.facet_names = numeric_ranges(self.table), facet_columns(self.table)
            self._key = key
        return self.table

    def page(self, query: Query) -> Page:
        import pyarrow.compute as pc

        table = self.load()
        problems = []
        mask = None
        for col, value in query.facets.items():
            if col not in table.column_names:
                problems.append(f"no column {col!r} to filter on")
                continue
            m = _facet_mask(table.column(col), value)
            mask = m if mask is None else pc.and_(mask, m)
        numeric = self.numeric
        for col, (lo, hi) in query.ranges.items():
            if col not in numeric:
                problems.append(f"no numeric column {col!r} to filter on")
                continue
            c = table.column(col)
            for bound, op in ((lo, pc.greater_equal), (hi, pc.less_equal)):
                if bound is not None:
                    m = pc.fill_null(op(c, bound), False)
                    mask = m if mask is None else pc.and_(mask, m)
        matched = table.filter(mask) if mask is not None else table
        if query.sort and query.sort in matched.column_names and query.sort != "lineage":
            matched = _sorted(matched, query.sort, query.desc)
        elif query.sort and query.sort != "lineage":
            problems.append(f"no column {query.sort!r} to sort by")
        pages = max(1, math.ceil(matched.num_rows / PAGE_ROWS))
        page = min(query.page, pages - 1)
        shown = matched.slice(page * PAGE_ROWS, PAGE_ROWS)
        columns = [c for c in table.column_names if c not in ("parent_id",)]
        return Page(shown.to_pylist(), matched.num_rows, table.num_rows, columns,
                    facet_counts(matched, self.facet_names), numeric, page, pages, problems)


def _sorted(table, column: str, desc: bool):
    """`table` sorted by `column` (stable: ties keep lineage order), its nulls last."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = table.column(column)
    valid = table.filter(pc.is_valid(col))
    order = pc.sort_indices(valid, [(column, "descending" if desc else "ascending")])
    return pa.concat_tables([valid.take(order), table.filter(pc.is_null(col))])


def _read_light(loc, name: str):
    """The output's light columns (see the module docstring) in lineage order, and the heavy
    columns' names."""
    from curate.io.read import read_table

    columns, heavy = schema_columns(loc, name)
    light = [c for c in columns if c not in heavy]
    table = read_table(loc, name, columns=light or None)
    if "version" not in table.column_names and table.num_rows:  # versions' overlay is in lineage order
        table = table.take(lineage_order(table))
    return table, heavy


def lineage_order(table):
    """Indices that put `table` in lineage order, in Arrow: an output's rows are all at one level,
    so their lineages have one length, and each entry is a sort key of its own."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lineage = table.column("lineage")
    lengths = pc.list_value_length(lineage)
    depth = pc.max(lengths).as_py() or 0
    if pc.min(lengths).as_py() != depth:  # not one level: Python's list order
        return pa.array(sorted(range(table.num_rows), key=lineage.to_pylist().__getitem__), pa.int64())
    keys = pa.table({f"l{i}": pc.list_element(lineage, i) for i in range(depth)})
    return pc.sort_indices(keys, [(f"l{i}", "ascending") for i in range(depth)])


def output_columns(loc, name: str) -> list[str]:
    """Every column of the output's parts, in first-seen order."""
    return schema_columns(loc, name)[0]


def schema_columns(loc, name: str) -> tuple[list[str], list[str]]:
    """The output's columns (every part's, in first-seen order) and the heavy ones among them
    (see the module docstring; sizes from the first SCHEMA_PARTS parts), from one read of each
    part's footer."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names: dict[str, None] = {}
    sizes: dict[str, int] = {}
    rows = 0
    heavy = set()
    for i, path in enumerate(loc.arrow_paths(name) if loc.exists(name) else []):
        meta = pq.ParquetFile(path, filesystem=getattr(loc, "fs", None)).metadata
        for f in meta.schema.to_arrow_schema():
            names.setdefault(f.name)
            if f.name != "lineage" and (pa.types.is_list(f.type) or pa.types.is_large_list(f.type)
                                        or pa.types.is_struct(f.type) or pa.types.is_fixed_size_list(f.type)
                                        or pa.types.is_map(f.type) or pa.types.is_binary(f.type)):
                heavy.add(f.name)
        if i >= SCHEMA_PARTS:
            continue
        rows += meta.num_rows
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            for c in range(rg.num_columns):
                col = rg.column(c)
                top = col.path_in_schema.split(".")[0]
                sizes[top] = sizes.get(top, 0) + col.total_uncompressed_size
    heavy |= {n for n, b in sizes.items() if rows and b / rows > HEAVY_BYTES and n not in LINEAGE_COLUMNS}
    heavy.discard("cause")  # a failure's cause is what a reader of the table looks for
    return list(names), sorted(heavy)


def numeric_ranges(table) -> dict[str, tuple[float, float]]:
    """Each numeric payload column's (min, max) over `table` (columns of nulls left out)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = {}
    for f in table.schema:
        if f.name in ("lineage",) or not (pa.types.is_integer(f.type) or pa.types.is_floating(f.type)):
            continue
        mm = pc.min_max(table.column(f.name))
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if lo is not None and not (isinstance(lo, float) and math.isnan(lo)):
            out[f.name] = (lo, hi)
    return out


def facet_columns(table) -> list[str]:
    """The facet columns of a table: FACETS_FIRST, then any other text or boolean column with at
    most FACET_MAX distinct values."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = [n for n in FACETS_FIRST if n in table.column_names]
    names += [f.name for f in table.schema if f.name not in names and f.name not in NOT_FACETS
              and (pa.types.is_string(f.type) or pa.types.is_large_string(f.type) or pa.types.is_boolean(f.type))]
    return [n for n in names if n in FACETS_FIRST[:2] or pa.types.is_null(table.schema.field(n).type)
            or pc.count_distinct(table.column(n), mode="all").as_py() <= FACET_MAX]


def facet_counts(matched, names: list[str]) -> dict[str, list[tuple[str, int]]]:
    """Facet column -> (value, rows among `matched`), most first."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = {}
    for n in names:
        if pa.types.is_null(matched.schema.field(n).type):  # no value anywhere (cause_kind of a clean run)
            out[n] = [(NULL, matched.num_rows)] if matched.num_rows else []
            continue
        counts = pc.value_counts(matched.column(n)).to_pylist() if matched.num_rows else []
        values = sorted(((_label(c["values"]), c["counts"]) for c in counts), key=lambda vc: (-vc[1], vc[0]))
        if values or n == "status":
            out[n] = values
    return out


def _facet_mask(column, value: str):
    import pyarrow as pa
    import pyarrow.compute as pc

    if value == NULL:
        return pc.is_null(column)
    if value == EMPTY:
        value = ""
    if pa.types.is_boolean(column.type):
        return pc.fill_null(pc.equal(column, value == "true"), False)
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        return pc.fill_null(pc.equal(pc.cast(column, pa.string()), value), False)
    return pc.fill_null(pc.equal(column, value), False)


def _label(value) -> str:
    if value is None:
        return NULL
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if value != "" else EMPTY


def _number(text: str) -> float | None:
    try:
        x = float(text)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)
