"""Output that survives crashes: a real subprocess killed with SIGKILL at several points,
then resumed, yields exactly the rows of an uninterrupted run; the commit log's recovery of
each crash window; refusing to mix runs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from kills import sigkill_after

import curate as cu
from curate.io.commits import CommitLog, write_json_atomic

JOB = Path(__file__).with_name("resume_job.py")


def start(out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(JOB), str(out), *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(out: Path, *extra: str) -> str:
    p = start(out, *extra)
    stdout, stderr = p.communicate(timeout=300)
    assert p.returncode == 0, stderr[-3000:]
    return stdout


def kill_after(out: Path, batches: int, *extra: str) -> None:
    """Start the job and SIGKILL it once it has run `batches` OCR batches (read from its
    stdout); its later batches wait for the kill (--hold-after), so the kill lands while it
    is working, whatever the machine's speed or load."""
    p = start(out, "--hold-after", str(batches), *extra)
    assert sigkill_after(p, batches) == -signal.SIGKILL, "the run ended before its kill"


def rows(out: Path) -> dict[str, list[dict]]:
    result = {}
    for name in ("pages", "docs"):
        table = pq.read_table(out / name)
        result[name] = sorted(table.to_pylist(), key=lambda r: r["lineage"])
    return result


def files(out: Path) -> dict[str, bytes]:
    base = out / "pages"
    return {str(f.relative_to(base)): f.read_bytes() for f in (base / "_files").rglob("*") if f.is_file()}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reference")
    finish(out)
    return out


@pytest.mark.parametrize("kill_points", [[1], [4], [9], [17], [3, 12]], ids=lambda k: "kill-" + "-".join(map(str, k)))
def test_killed_and_resumed_run_has_exactly_the_rows_of_an_uninterrupted_run(tmp_path, reference, kill_points):
    out = tmp_path / "out"
    kill_after(out, kill_points[0])
    for k in kill_points[1:]:  # killed again while resuming
        kill_after(out, k, "--resume")
    finish(out, "--resume")
    got, want = rows(out), rows(reference)
    for name in want:
        ids = [r["entity_id"] for r in got[name]]
        assert len(ids) == len(set(ids)), f"{name}: duplicate rows"
        assert got[name] == want[name], f"{name}: rows differ from the uninterrupted run"
    assert files(out) == files(reference)
    man = json.loads((out / "_curate" / "manifest.json").read_text())
    assert [r["status"] for r in man["runs"]] == ["interrupted"] * len(kill_points) + ["completed"]
    assert man["counts"] == json.loads((reference / "_curate" / "manifest.json").read_text())["counts"]
    assert not list((out / "_curate" / "staging").iterdir())


def test_a_ray_run_killed_and_resumed_has_the_rows_of_an_uninterrupted_run(tmp_path, reference):
    out = tmp_path / "out"
    kill_after(out, 3, "--executor", "ray")
    finish(out, "--resume", "--executor", "ray")
    assert rows(out) == rows(reference)
    assert files(out) == files(reference)
    man = json.loads((out / "_curate" / "manifest.json").read_text())
    assert [r["status"] for r in man["runs"]] == ["interrupted", "completed"]


def test_rows_carry_lineage_typed_payloads_and_causes(reference):
    pages = rows(reference)["pages"]
    first = pages[0]
    assert first["root_key"] == "1" and first["entity_id"] == "1#0" and first["parent_id"] == "1"
    assert first["lineage"] == [1, 0] and first["ordinal"] == 0 and first["status"] == "present"
    assert first["text"] == "DOC 1 PAGE 0" and first["scan"].startswith("_files/scan/")
    assert (reference / "pages" / first["scan"]).read_bytes() == bytes([1, 0]) * 64
    bad = [r for r in pages if r["status"] == "failed"]
    assert bad and all(r["cause_kind"] == "input" and "unreadable" in r["cause"] for r in bad)
    dropped = [r for r in pages if r["status"] == "dropped"]
    assert dropped and all(r["cause"] == "blank page" for r in dropped)
    for r in dropped:  # a dropped page keeps its value at the filter: its text and its scan's file
        assert r["text"] == f"DOC {r['root_key']} PAGE 3" and r["no"] == 3
        assert (reference / "pages" / r["scan"]).read_bytes() == bytes([int(r["root_key"]) % 256, 3]) * 64
    schema = pq.read_schema(next((reference / "docs").glob("*.parquet")))
    assert str(schema.field("value").type) == "string"


def test_output_dir_with_committed_rows_is_not_mixed_into_without_resume(reference):
    from resume_job import build

    with pytest.raises(cu.CurateError, match="resume=True"):
        cu.run(build(), range(3), executor="local", output_dir=reference)


def test_resume_with_a_different_pipeline_is_refused(tmp_path):
    from resume_job import build

    cu.run(build(), range(3), executor="local", output_dir=tmp_path)
    other = cu.Pipeline(cu.Domain("doc"))
    other.output("docs", other.source.map(lambda xs: xs))
    with pytest.raises(cu.CurateError, match="different pipeline"):
        cu.run(other, range(3), executor="local", output_dir=tmp_path, resume=True)


def _flush(log: CommitLog, name: str, payload: bytes) -> dict:
    stage = log.stage_dir(name)
    (stage / "docs").mkdir()
    (stage / "docs" / f"part-{name}.parquet").write_bytes(payload)
    return {"flush": name, "run": "r", "shards": {"docs": f"docs/part-{name}.parquet"}, "roots": [name], "counts": {}}


def test_recovery_drops_a_flush_staged_but_never_committed(tmp_path):
    log = CommitLog(tmp_path)
    _flush(log, "a", b"A")
    records = CommitLog(tmp_path).recover()
    assert records == [] and not (tmp_path / "docs").exists()
    assert not list((tmp_path / "_curate" / "staging").iterdir())


def test_recovery_publishes_a_flush_committed_but_not_yet_moved(tmp_path):
    log = CommitLog(tmp_path)
    rec = _flush(log, "b", b"B")
    write_json_atomic(log.commits_dir / "b.json", rec)  # killed right after the commit point
    records = CommitLog(tmp_path).recover()
    assert [r["flush"] for r in records] == ["b"]
    assert (tmp_path / "docs" / "part-b.parquet").read_bytes() == b"B"


def test_recovery_ignores_a_half_written_commit_record(tmp_path):
    log = CommitLog(tmp_path)
    _flush(log, "c", b"C")
    (log.commits_dir / "c.json.tmp").write_text('{"flush": "c", "sha')  # killed while writing it
    assert CommitLog(tmp_path).recover() == []
    assert not list(log.commits_dir.iterdir()) and not (tmp_path / "docs").exists()


def test_a_committed_shard_deleted_by_hand_is_reported(tmp_path):
    log = CommitLog(tmp_path)
    log.commit(_flush(log, "d", b"D"))
    (tmp_path / "docs" / "part-d.parquet").unlink()
    with pytest.raises(FileNotFoundError, match="modified by hand"):
        CommitLog(tmp_path).recover()
