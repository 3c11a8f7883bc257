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


# ---- every part carries the output's whole schema: standard readers with default options ----------
from readers import READERS, assert_readers_agree  # noqa: E402

from curate.io.commits import CommitLog, write_json_atomic  # noqa: E402
from curate.names import LINEAGE_COLUMNS  # noqa: E402

NO_RAY = tuple(r for r in READERS if r != "ray.data")  # Ray Data is read in its own test (a cluster)


def dropped_first(batch: list) -> list:
    return [x != 0 for x in batch]


def text_of(batch: list) -> list:
    return [{"text": f"text {x}", "n": x} for x in batch]


def one_part_per_root_filtered(tmp_path, n: int):
    """Input 0 is DROPPED by a filter: the first part holds one DROPPED row and no payload."""
    pipe = cu.Pipeline(Row)
    pipe.output("rows", pipe.source.filter(dropped_first).map(text_of))
    out = tmp_path / "out"
    cu.run(pipe, list(range(n)), executor="local", output_dir=out, input_batch_size=1, inflight=1,
           sink_options={"shard_rows": 1})
    return out


def part_columns(out, name: str = "rows") -> list[list[str]]:
    return [pq.read_schema(f).names for f in sorted((out / name).glob("*.parquet"))]


@pytest.mark.parametrize("make", ["failed", "dropped", "widened"])
def test_standard_readers_see_every_column_when_the_first_part_has_no_payload(tmp_path, make):
    """Bug: pandas, pyarrow.dataset and DuckDB took the first part's 8 lineage columns as the
    output's schema and silently dropped every payload column; Daft refused the later parts."""
    if make == "failed":
        out = one_part_per_root(tmp_path, failed_first, 3)
    elif make == "dropped":
        out = one_part_per_root_filtered(tmp_path, 3)
    else:
        out = one_part_per_root(tmp_path, typed_late, 2)
    cols = part_columns(out)
    assert all(c == cols[-1] for c in cols) and len(cols[0]) > 8, cols  # one schema, payload included
    schemas = [pq.read_schema(f) for f in sorted((out / "rows").glob("*.parquet"))]
    assert all(s.equals(schemas[0]) for s in schemas)
    columns, rows = assert_readers_agree(out, "rows", NO_RAY)
    first = pq.read_table(min((out / "rows").glob("*.parquet"))).column("status").to_pylist()
    if make == "widened":  # the first part typed nothing (empty list, None, a struct without `b`)
        assert {"xs", "none", "rec", "num", "deep"} <= set(columns)
    else:
        assert first == [make] and "text" in columns


def test_ray_data_sees_every_column_when_the_first_part_is_failed(tmp_path, ray_cluster):
    out = one_part_per_root(tmp_path, failed_first, 3)
    columns, _ = assert_readers_agree(out, "rows", ("ray.data",))
    assert "text" in columns


def test_kinds_that_clash_across_parts_read_alike_in_every_reader(tmp_path):
    """An int column in one part and text in a later one: every part holds it as JSON text."""
    out = one_part_per_root(tmp_path, int_then_text, 2)
    _, rows = assert_readers_agree(out, "rows", NO_RAY)
    assert sorted(r["v"] for r in rows) == ['"a"', "1"]


def test_a_resumed_run_widens_the_parts_already_on_disk(tmp_path):
    """The first run commits only a FAILED row (8 columns); the resumed run's writer starts
    from that schema, and its first part with a payload rewrites the old part to match."""
    pipe = cu.Pipeline(Row)
    pipe.output("rows", pipe.source.map(failed_first))
    out = tmp_path / "out"
    cu.run(pipe, [0], executor="local", output_dir=out)
    assert part_columns(out) == [list(LINEAGE_COLUMNS)]
    cu.run(pipe, [0, 1, 2], executor="local", output_dir=out, resume=True, input_batch_size=1, inflight=1,
           sink_options={"shard_rows": 1})
    cols = part_columns(out)
    assert len(cols) == 3 and all(c == cols[0] for c in cols) and "text" in cols[0]
    _, rows = assert_readers_agree(out, "rows", NO_RAY)
    assert len(rows) == 3


def _widening_flush(tmp_path, monkeypatch, record: bool):
    """A directory whose one part holds a FAILED row; then a resumed run whose first flush
    widens the schema, killed at its commit: before the commit record is written, or (with
    `record`) after it, before anything is published."""
    pipe = cu.Pipeline(Row)
    pipe.output("rows", pipe.source.map(failed_first))
    out = tmp_path / "out"
    cu.run(pipe, [0], executor="local", output_dir=out)
    old = {f.name: f.read_bytes() for f in (out / "rows").glob("*.parquet")}

    def killed(log, rec):
        if record:
            write_json_atomic(log.commits_dir / f"{rec['flush']}.json", rec)
        raise KeyboardInterrupt  # what a SIGKILL leaves: nothing after this point ran

    monkeypatch.setattr(CommitLog, "commit", killed)
    with pytest.raises(KeyboardInterrupt):
        cu.run(pipe, [0, 1], executor="local", output_dir=out, resume=True)
    monkeypatch.undo()
    CommitLog(out).recover()
    return out, old


def test_a_kill_before_the_commit_record_leaves_the_old_parts(tmp_path, monkeypatch):
    out, old = _widening_flush(tmp_path, monkeypatch, False)
    assert {f.name: f.read_bytes() for f in (out / "rows").glob("*.parquet")} == old
    assert not any((out / "_curate" / "staging").iterdir())


def test_a_kill_after_the_commit_record_publishes_the_new_parts(tmp_path, monkeypatch):
    out, old = _widening_flush(tmp_path, monkeypatch, True)
    cols = part_columns(out)
    assert len(cols) == 2 and cols[0] == cols[1] and "text" in cols[0]
    (first,) = old
    assert (out / "rows" / first).read_bytes() != old[first]  # rewritten in place, same name
    _, rows = assert_readers_agree(out, "rows", NO_RAY)
    assert sorted(r["status"] for r in rows) == ["failed", "present"]


def test_a_resume_brings_the_parts_of_an_older_directory_to_one_schema(tmp_path):
    """A directory written before parts shared one schema (its first part has the lineage
    columns only, its second the payload too): the resumed run's first flush rewrites it."""
    out = one_part_per_root(tmp_path, failed_first, 2)
    first = min((out / "rows").glob("*.parquet"))
    pq.write_table(pq.read_table(first).select(list(LINEAGE_COLUMNS)), first)  # as the old writer left it
    assert part_columns(out)[0] != part_columns(out)[1]
    pipe = cu.Pipeline(Row)
    pipe.output("rows", pipe.source.map(failed_first))
    res = cu.run(pipe, [0, 1, 2], executor="local", output_dir=out, resume=True)
    cols = part_columns(out)
    assert len(cols) == 3 and all(c == cols[0] for c in cols) and "text" in cols[0]
    (record,) = [r for r in CommitLog(out).records() if r["run"] == res.run_id]
    # the old first part lacked `text`; the second typed it null (None only): both widen to text
    assert sorted(record["rewrites"]["rows"]) == sorted(f"rows/{p.name}" for p in (out / "rows").glob("*.parquet")
                                                        if p.name.startswith(first.name[:-len("-00000.parquet")]))
    assert_readers_agree(out, "rows", NO_RAY)
