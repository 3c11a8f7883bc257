"""The output directory is read as-is by the usual tools: pyarrow, pandas and Ray Data; and by
curate's own reader as one table when its parts differ in their columns and types."""

from __future__ import annotations

import pyarrow.dataset as pds
import pyarrow.parquet as pq
import pytest
from resume_job import build

import curate as cu
from curate.io.read import read_items, read_table


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    d = tmp_path_factory.mktemp("readers")
    res = cu.run(build(), range(25), executor="local", output_dir=d, sink_options={"shard_rows": 20})
    assert len(list((d / "pages").glob("*.parquet"))) > 1  # several shards, one schema
    return d, res.counts


def test_pyarrow_and_pandas_read_every_shard(out):
    d, counts = out
    table = pds.dataset(d / "pages", format="parquet").to_table()
    assert table.num_rows == sum(counts["pages"].values())
    df = table.to_pandas()
    assert set(df["status"]) == {"present", "failed", "dropped"}
    assert df["entity_id"].is_unique


def test_ray_data_reads_the_output_directory(out, ray_cluster):
    import ray

    d, counts = out
    ds = ray.data.read_parquet(str(d / "docs"))
    assert ds.count() == sum(counts["docs"].values())
    statuses = {r["status"] for r in ds.take_all()}
    assert statuses <= {"present", "suppressed"} and "present" in statuses
    pages = ray.data.read_parquet(str(d / "pages"))  # payload files under _files/ are not data
    assert pages.count() == sum(counts["pages"].values())


def test_duckdb_queries_the_output_directory(out):
    import duckdb

    d, counts = out
    con = duckdb.connect()
    rows = con.execute(f"SELECT status, count(*) FROM read_parquet('{d}/pages/*.parquet') GROUP BY status").fetchall()
    assert dict(rows) == counts["pages"]
    (n,) = con.execute(f"SELECT count(DISTINCT entity_id) FROM read_parquet('{d}/docs/*.parquet')").fetchone()
    assert n == sum(counts["docs"].values())


def test_daft_reads_the_output_directory(out):
    import daft

    d, counts = out
    df = daft.read_parquet(f"{d}/docs/*.parquet")
    got = df.groupby("status").count("entity_id").to_pydict()
    assert dict(zip(got["status"], got["entity_id"])) == counts["docs"]


# ---- parts that differ in their columns' types read as one table ------------------------------------
Row = cu.Domain("row")


def one_part_per_root(tmp_path, stage, n: int):
    """Run `stage` over inputs 0..n-1 into tmp_path/out, each root its own flush (part file)."""
    pipe = cu.Pipeline(Row)
    pipe.output("rows", pipe.source.map(stage))
    out = tmp_path / "out"
    cu.run(pipe, list(range(n)), executor="local", output_dir=out, input_batch_size=1, inflight=1,
           sink_options={"shard_rows": 1})
    assert len(list((out / "rows").glob("*.parquet"))) == n
    return out


def typed_late(batch: list) -> list:
    """Input 0 leaves every column's type open (empty list, None, a struct without `b`); input 1
    fills them, and turns an int into a float."""
    late = {0: {"xs": [], "none": None, "rec": {"a": 1}, "num": 1, "deep": [{"p": None}]},
            1: {"xs": ["a"], "none": "now text", "rec": {"a": 2, "b": "new"}, "num": 2.5, "deep": [{"p": [1]}]}}
    return [late[x] for x in batch]


def test_a_type_left_open_in_one_part_is_filled_in_a_later_one(tmp_path):
    """Bug: a later flush was typed by the earlier part's type, so list<null> refused ['a']
    (ArrowInvalid: the run died), an int part refused 2.5, and a struct dropped a new field."""
    out = one_part_per_root(tmp_path, typed_late, 2)
    later = pq.read_schema(max((out / "rows").glob("*.parquet")))  # the later part: the types it and the first unify to
    assert {n: str(later.field(n).type) for n in ("xs", "none", "rec", "num")} == {
        "xs": "list<element: string>", "none": "string", "rec": "struct<a: int64, b: string>", "num": "double"}
    assert [i.value for i in read_items(out, "rows")] == [
        {"xs": [], "none": None, "rec": {"a": 1, "b": None}, "num": 1.0, "deep": [{"p": None}]},
        {"xs": ["a"], "none": "now text", "rec": {"a": 2, "b": "new"}, "num": 2.5, "deep": [{"p": [1]}]}]


def failed_first(batch: list) -> list:
    return [cu.ItemFailure(cu.InputError("input 0 is bad")) if x == 0
            else {"text": None if x == 1 else f"text {x}"} for x in batch]


def test_a_first_part_without_payload_columns_hides_none_of_the_later_ones(tmp_path):
    """Bug: the output was read with its first part's schema: a part of FAILED rows alone has no
    payload column (every later value was dropped), one whose column is all None types it null
    (the later text failed to cast)."""
    out = one_part_per_root(tmp_path, failed_first, 3)
    items = read_items(out, "rows")
    assert [i.status for i in items] == [cu.Status.FAILED, cu.Status.PRESENT, cu.Status.PRESENT]
    assert [i.value for i in items[1:]] == [{"text": None}, {"text": "text 2"}]
    assert read_table(out, "rows").schema.field("text").type == "string"


def int_then_text(batch: list) -> list:
    return [{"v": 1 if x == 0 else "a"} for x in batch]


def test_kinds_that_cannot_be_promoted_across_parts_read_as_json_text(tmp_path):
    """An int in one part and text in a later one cannot share a type: the run still writes
    both, and reading gives the column as JSON text throughout, as within one part."""
    out = one_part_per_root(tmp_path, int_then_text, 2)
    assert [i.value for i in read_items(out, "rows")] == [{"v": "1"}, {"v": '"a"'}]
