"""An output of a curate directory as five standard readers see it with their default options
(pandas, pyarrow.dataset, DuckDB's glob, Ray Data, Daft), each as (columns, rows), to compare
with curate's own reader: a reader that took one part's schema for the whole directory loses
columns, and one that refused parts that differ raises."""

from __future__ import annotations

import math
from pathlib import Path

from curate.io.read import read_table

READERS = ("pandas", "pyarrow.dataset", "duckdb", "ray.data", "daft")


def plain(v):
    """A reader's value as plain Python: numpy arrays and scalars, NaN (pandas' null in a float
    column) and tuples made comparable with curate's own rows."""
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
        v = v.tolist()
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, float) and v.is_integer():
        return int(v)  # pandas makes an int column with nulls float
    return v


def rows_of(columns: list[str], records: list[dict]) -> list[dict]:
    return sorted(({c: plain(r.get(c)) for c in columns} for r in records), key=lambda r: r["entity_id"])


def read(reader: str, out: Path, name: str) -> tuple[list[str], list[dict]]:
    """Output `name` of `out` read by `reader` with its default options."""
    d = Path(out) / name
    if reader == "pandas":
        import pandas as pd

        df = pd.read_parquet(d)
        cols = list(df.columns)
        return cols, rows_of(cols, df.to_dict("records"))
    if reader == "pyarrow.dataset":
        import pyarrow.dataset as pds

        t = pds.dataset(d, format="parquet").to_table()
        return t.column_names, rows_of(t.column_names, t.to_pylist())
    if reader == "duckdb":
        import duckdb

        t = duckdb.connect().execute(f"SELECT * FROM read_parquet('{d}/*.parquet')").to_arrow_table()
        return t.column_names, rows_of(t.column_names, t.to_pylist())
    if reader == "ray.data":
        import ray

        ds = ray.data.read_parquet(str(d))
        cols = ds.schema().names
        return cols, rows_of(cols, ds.take_all())
    if reader == "daft":
        import daft

        t = daft.read_parquet(f"{d}/*.parquet").to_arrow()
        return t.column_names, rows_of(t.column_names, t.to_pylist())
    raise ValueError(reader)


def curate_view(out: Path, name: str) -> tuple[list[str], list[dict]]:
    """The output as curate reads it (every part's schema unified)."""
    t = read_table(out, name)
    return t.column_names, rows_of(t.column_names, t.to_pylist())


def assert_readers_agree(out: Path, name: str, readers=READERS) -> tuple[list[str], list[dict]]:
    """Every reader gets curate's columns, in its order, and its rows, value for value."""
    want_cols, want_rows = curate_view(out, name)
    for reader in readers:
        cols, rows = read(reader, out, name)
        assert cols == want_cols, (reader, name, sorted(set(want_cols) - set(cols)), cols)
        assert rows == want_rows, (reader, name)
    return want_cols, want_rows
