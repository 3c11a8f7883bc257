"""Output names, payload-file columns and extensions cannot write outside the output directory,
and payload fields never silently lose values to lineage columns.

Bad declarations are refused before anything runs (one PlanError listing every problem, each
with the user's file:line and a fix); the writers also refuse any path that would leave its base
directory, as a second line of defence; a payload field named like a lineage column stops the
run with a PayloadError instead of being renamed."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import curate as cu
from curate.core.outcome import Item, Status
from curate.errors import EngineError
from curate.io.commits import CommitLog, write_json_atomic
from curate.io.read import read_items
from curate.io.rows import PayloadError, expand_payloads, item_row, spill_files
from curate.names import LINEAGE_COLUMNS

THIS_FILE = os.path.basename(__file__)

Doc = cu.Domain("doc")


def record(batch: list) -> list:
    return [{"text": f"doc {x}", "scan": bytes([x % 256]) * 8} for x in batch]


def build(name="pages", *, files=None, schema=None, stage=record) -> cu.Pipeline:
    pipe = cu.Pipeline(Doc)
    pipe.output(name, pipe.source.map(stage), files=files, schema=schema)
    return pipe


def listing(d: Path) -> list[str]:
    """Every path under `d`, relative, sorted: what a run may have written there."""
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


def refused(tmp_path: Path, pipe: cu.Pipeline) -> list[str]:
    """Run `pipe` into tmp_path/out: it must raise PlanError and write nothing anywhere under
    tmp_path (the output directory's parent). Returns the problems."""
    (tmp_path / "keep.txt").write_text("there before the run")
    before = listing(tmp_path)
    with pytest.raises(cu.PlanError) as info:
        cu.run(pipe, range(3), executor="local", output_dir=tmp_path / "out")
    assert listing(tmp_path) == before
    return info.value.problems


# --- output names ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, why", [
    ("", "is empty"),
    ("../escape", "'/'"),
    ("_curate", "reserved"),
    (".hidden", "hidden"),
    ("..", "hidden"),
    ("pages/sub", "'/'"),
    ("a\\b", "'\\\\'"),
    ("x" * 101, "at most 100"),
    ("caf\u00e9", "'\u00e9'"),
], ids=["empty", "dotdot-escape", "_curate", "hidden", "dotdot", "subdir", "backslash", "too-long", "non-ascii"])
def test_an_output_name_that_is_not_one_plain_path_component_is_refused(tmp_path, name, why):
    (problem,) = refused(tmp_path, build(name))
    assert problem.startswith(f"{THIS_FILE}:")
    assert f"output name {name!r}" in problem and why in problem
    assert "use a name such as" in problem


def test_an_absolute_output_name_is_refused_and_nothing_is_written_there(tmp_path):
    target = tmp_path / "x" / "abs"
    (problem,) = refused(tmp_path, build(str(target)))
    assert repr(str(target)) in problem and "'/'" in problem
    assert not (tmp_path / "x").exists()


def test_an_output_name_that_is_not_text_is_refused(tmp_path):
    (problem,) = refused(tmp_path, build(7))
    assert "output name 7" in problem and "not text" in problem


def test_the_fix_for_a_bad_output_name_suggests_a_safe_one():
    pipe = build("../escape")
    with pytest.raises(cu.PlanError) as info:
        cu.compile_plan(pipe)
    assert "use a name such as 'escape'" in info.value.problems[0]


@pytest.mark.parametrize("name", ["pages", "Pages2", "2024-run", "pages.v2", "a_b-c.d", "x" * 100])
def test_plain_output_names_are_accepted(name):
    plan = cu.compile_plan(build(name))
    assert name in plan.outputs


# --- payload file columns and extensions ----------------------------------------------------

@pytest.mark.parametrize("column", ["../../evilcol", "../../../evilcol", "", "_files", ".scan", "a/b", "status",
                                    "entity_id"])
def test_a_files_column_that_is_not_a_plain_column_name_is_refused(tmp_path, column):
    (problem,) = refused(tmp_path, build(files={column: ".bin"}))
    assert problem.startswith(f"{THIS_FILE}:")
    assert f"output 'pages': files column {column!r}" in problem


def test_a_files_column_named_like_a_lineage_column_says_so(tmp_path):
    (problem,) = refused(tmp_path, build(files={"status": ".bin"}))
    assert "lineage column" in problem and "rename" in problem


@pytest.mark.parametrize("ext", ["./../../evilext", "/../x", "..", "", ".", "jpg/../../x", ".tar..gz",
                                 ".toolongextension1", "j p g", 7])
def test_a_files_extension_that_is_not_a_plain_extension_is_refused(tmp_path, ext):
    (problem,) = refused(tmp_path, build(files={"scan": ext}))
    assert problem.startswith(f"{THIS_FILE}:")
    assert f"output 'pages': files extension {ext!r} of column 'scan'" in problem
    assert "'.jpg'" in problem


@pytest.mark.parametrize("ext, normal", [("bin", ".bin"), (".bin", ".bin"), (".tar.gz", ".tar.gz"),
                                         ("JPG", ".JPG")])
def test_plain_extensions_are_accepted_with_a_leading_dot(tmp_path, ext, normal):
    out = tmp_path / "out"
    res = cu.run(build(files={"scan": ext}), range(3), executor="local", output_dir=out)
    rows = pq.read_table(out / "pages").to_pylist()
    assert len(rows) == 3
    for r in rows:
        assert r["scan"].startswith("_files/scan/") and r["scan"].endswith(normal)
        assert r["scan"].count("/") == 2
        assert (out / "pages" / r["scan"]).read_bytes() == bytes([r["lineage"][0]]) * 8
    assert cu.compile_plan(build(files={"scan": ext})).output_options["pages"]["files"] == {"scan": normal}
    assert res.counts == {"pages": {"present": 3}}


@pytest.mark.parametrize("column", ["../x", "status", ""])
def test_a_schema_column_that_is_not_a_plain_column_name_is_refused(tmp_path, column):
    (problem,) = refused(tmp_path, build(schema={column: "string"}))
    assert f"output 'pages': schema column {column!r}" in problem


def test_files_and_schema_that_are_not_mappings_are_refused(tmp_path):
    problems = refused(tmp_path, build(files=[".jpg"], schema="string"))
    assert len(problems) == 2
    assert any("files=" in p and "dict" in p for p in problems)
    assert any("schema=" in p and "dict" in p for p in problems)


def test_several_bad_names_in_one_pipeline_are_listed_in_one_plan_error(tmp_path):
    pipe = cu.Pipeline(Doc)
    mapped = pipe.source.map(record)
    pipe.output("", mapped)
    pipe.output("../escape", mapped)
    pipe.output(str(tmp_path / "x" / "abs"), mapped)
    pipe.output("_curate", mapped)
    pipe.output(".hidden", mapped)
    pipe.output("pages", mapped, files={"../../evilcol": ".bin", "scan": "./../../evilext"})
    pipe.output("scans", mapped, files={"scan": "/../x"})
    pipe.output("more", mapped, files={"scan": ".."})
    problems = refused(tmp_path, pipe)
    assert len(problems) == 9, "\n".join(problems)  # 'pages' has a bad column and a bad extension
    for bad in ("''", "'../escape'", repr(str(tmp_path / "x" / "abs")), "'_curate'", "'.hidden'",
                "'../../evilcol'", "'./../../evilext'", "'/../x'", "'..'"):
        assert any(bad in p for p in problems), f"{bad} is not named in:\n" + "\n".join(problems)
    assert all(p.startswith(f"{THIS_FILE}:") for p in problems)


# --- the writers refuse escaping paths themselves (defence in depth) -------------------------

def _row(entity: str, data: bytes) -> dict:
    return {"entity_id": entity, "status": "present", "scan": data}


@pytest.mark.parametrize("files", [{"../../../evilcol": ".bin"}, {"scan": "./../../evilext"}, {"scan": "/../x"},
                                   {"scan": ".."}, {"/abs": ".bin"}])
def test_spill_files_refuses_a_path_outside_the_files_directory(tmp_path, files):
    out_dir = tmp_path / "stage" / "pages"
    out_dir.mkdir(parents=True)
    before = listing(tmp_path)
    with pytest.raises(EngineError, match="outside"):
        spill_files([_row("a#0", b"A"), _row("a#1", b"B")], files, out_dir)
    assert listing(tmp_path) == before


def test_spill_files_refuses_a_files_directory_that_links_outside(tmp_path):
    out_dir, elsewhere = tmp_path / "stage" / "pages", tmp_path / "elsewhere"
    (out_dir / "_files").mkdir(parents=True)
    elsewhere.mkdir()
    (out_dir / "_files" / "scan").symlink_to(elsewhere)
    with pytest.raises(EngineError, match="outside"):
        spill_files([_row("a#0", b"A")], {"scan": ".bin"}, out_dir)
    assert not list(elsewhere.iterdir())


def test_spill_files_writes_one_file_per_entity_under_files(tmp_path):
    rows = [_row("a#0", b"A"), _row("a#1", b"B"), {"entity_id": "a#2", "status": "failed"}]
    spill_files(rows, {"scan": "bin"}, tmp_path)
    assert rows[0]["scan"] != rows[1]["scan"] and "scan" not in rows[2]
    assert [(tmp_path / r["scan"]).read_bytes() for r in rows[:2]] == [b"A", b"B"]
    assert all(Path(r["scan"]).parent == Path("_files/scan") for r in rows[:2])


def _staged(log: CommitLog, flush: str, output: str, files: dict[str, bytes] | None = None) -> dict:
    stage = log.stage_dir(flush)
    (stage / output).mkdir(parents=True, exist_ok=True)
    (stage / output / f"part-{flush}.parquet").write_bytes(b"P")
    for rel, data in (files or {}).items():
        (stage / output / rel).parent.mkdir(parents=True, exist_ok=True)
        (stage / output / rel).write_bytes(data)
    return {"flush": flush, "run": "r", "shards": {output: f"{output}/part-{flush}.parquet"}, "roots": [flush],
            "counts": {}}


@pytest.mark.parametrize("shards", [{"docs": "../escape/part-f.parquet"}, {"docs": "ABS/part-f.parquet"},
                                    {"docs": "_curate/commits/part-f.parquet"}, {"../escape": "docs/part-f.parquet"},
                                    {"docs": "docs/../../part-f.parquet"}])
def test_publishing_a_commit_record_whose_shard_leaves_the_output_directory_is_refused(tmp_path, shards):
    out = tmp_path / "out"
    log = CommitLog(out)
    rec = _staged(log, "f", "docs")
    # a record edited by hand (or a bug): recovery must not follow it
    rec["shards"] = {k: v.replace("ABS", str(tmp_path / "abs")) for k, v in shards.items()}
    write_json_atomic(log.commits_dir / "f.json", rec)
    before = listing(tmp_path)
    with pytest.raises(EngineError, match="outside"):
        CommitLog(out).recover()
    assert listing(tmp_path) == before


def test_publishing_a_commit_record_whose_flush_leaves_staging_is_refused(tmp_path):
    out = tmp_path / "out"
    log = CommitLog(out)
    rec = _staged(log, "f", "docs")
    rec["flush"] = "../.."  # recovery would otherwise delete the whole _curate directory
    write_json_atomic(log.commits_dir / "f.json", rec)
    before = listing(tmp_path)
    with pytest.raises(EngineError, match="outside"):
        CommitLog(out).recover()
    assert listing(tmp_path) == before


def test_staged_payload_files_are_published_under_their_outputs_files_directory(tmp_path):
    out = tmp_path / "out"
    log = CommitLog(out)
    rec = _staged(log, "g", "pages", {"_files/scan/abc.bin": b"S"})
    log.commit(rec)
    assert (out / "pages" / "_files" / "scan" / "abc.bin").read_bytes() == b"S"
    assert (out / "pages" / "part-g.parquet").read_bytes() == b"P"
    assert not (log.staging_dir / "g").exists()


# --- payload fields named like lineage columns ----------------------------------------------

def clashing(batch: list) -> list:
    return [{"v_status": "A", "status": "B"} for _ in batch]


def test_a_dict_payload_with_a_lineage_field_stops_the_parquet_run_with_a_payload_error(tmp_path):
    with pytest.raises(PayloadError) as info:
        cu.run(build(stage=clashing), range(3), executor="local", output_dir=tmp_path / "out")
    assert isinstance(info.value, cu.CurateError)
    msg = str(info.value)
    assert "'status'" in msg and "rename the field" in msg
    assert all(c in msg for c in LINEAGE_COLUMNS)
    assert not any(f.name.endswith(".parquet") for f in (tmp_path / "out").rglob("*"))  # nothing committed


@dataclass(frozen=True)
class Tagged:
    text: str
    lineage: str


def tagged(batch: list) -> list:
    return [Tagged(f"doc {x}", "scanned") for x in batch]


def test_a_dataclass_payload_with_a_lineage_field_stops_the_parquet_run_with_a_payload_error(tmp_path):
    with pytest.raises(PayloadError, match="'lineage'"):
        cu.run(build(stage=tagged), range(2), executor="local", output_dir=tmp_path / "out")


def test_the_payload_error_names_the_output_when_the_writer_knows_it():
    item = Item((0,), Status.PRESENT, {"cause": "x", "text": "y"})
    with pytest.raises(PayloadError) as info:
        item_row(item, "0", output="pages")
    msg = str(info.value)
    assert "output 'pages'" in msg and "'cause'" in msg and "'pages_cause'" in msg
    rows = [item_row(item, "0", defer=True)]
    with pytest.raises(PayloadError, match="output 'docs'.*'cause'"):
        expand_payloads(rows, output="docs")


def test_payload_fields_keep_their_names_as_columns(tmp_path):
    item = Item((0, 1), Status.PRESENT, {"v_status": "A", "text": "B", "value": 3})
    row = item_row(item, "k", output="pages")
    assert {k: row[k] for k in ("v_status", "text", "value")} == {"v_status": "A", "text": "B", "value": 3}
    assert row["status"] == "present"


def v_prefixed(batch: list) -> list:
    return [{"v_status": f"A{x}", "text": f"B{x}"} for x in batch]


def test_a_dict_payload_reads_back_from_parquet_as_the_in_memory_run_gives_it(tmp_path):
    memory = cu.run(build(stage=v_prefixed), range(4), executor="local")
    parquet = cu.run(build(stage=v_prefixed), range(4), executor="local", output_dir=tmp_path / "out")
    assert parquet.values("pages") == memory.values("pages") == [{"v_status": f"A{x}", "text": f"B{x}"}
                                                                  for x in range(4)]
    assert read_items(tmp_path / "out", "pages") == memory.items("pages")


def test_reading_an_output_name_that_leaves_the_directory_is_refused(tmp_path):
    out = tmp_path / "out"
    cu.run(build(), range(2), executor="local", output_dir=out)
    man = json.loads((out / "_curate" / "manifest.json").read_text())
    assert list(man["pipeline"]["outputs"]) == ["pages"]
    for name in ("..", "../out", "_curate", ""):
        with pytest.raises(cu.CurateError, match="not an output"):
            read_items(out, name)
