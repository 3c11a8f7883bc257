"""retry_failed (`curate run --retry-failed`): the committed roots that FAILED or were
SUPPRESSED run again once their cause is fixed, and their new rows replace the old ones in one
commit; the other roots' rows are untouched, and a kill leaves the old rows or the new ones."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import curate as cu
from curate.cli import EXIT_ERROR, EXIT_OK, EXIT_PARTIAL, main
from curate.io.commits import CommitLog, write_json_atomic
from curate.io.outdir import OutputDir
from curate.io.sources import path_key

ROOT = Path(__file__).resolve().parent.parent
PDFS = ROOT / "examples" / "data" / "pdfs"
Doc = cu.Domain("doc")
Line = Doc.child("line")


def read_docs(batch: list) -> list:
    """A file's text, or a FAILED row when the file is missing or says BAD."""
    out = []
    for p in batch:
        path = Path(p)
        if not path.is_file():
            out.append(cu.ItemFailure(cu.InputError(f"{p} is missing")))
        elif path.read_text().startswith("BAD"):
            out.append(cu.ItemFailure(cu.InputError(f"{p} is damaged")))
        else:
            out.append({"text": path.read_text()})
    return out


def lines(batch: list) -> list:
    return [d["text"].splitlines() for d in batch]


def pipeline() -> cu.Pipeline:
    pipe = cu.Pipeline(Doc)
    docs = pipe.source.map(read_docs)
    pipe.output("docs", docs)
    pipe.output("lines", docs.expand(lines, into=Line))
    return pipe


def corpus(tmp_path: Path) -> list[str]:
    d = tmp_path / "in"
    d.mkdir()
    for name, text in (("a.txt", "a1\na2"), ("b.txt", "BAD"), ("c.txt", "c1")):
        (d / name).write_text(text)
    return [str(d / n) for n in ("a.txt", "b.txt", "c.txt")]


def run(inputs, out, **kw):
    return cu.run(pipeline(), inputs, executor="local", output_dir=out, key=path_key, **kw)


def rows(out: Path) -> dict[str, list[dict]]:
    return {n: sorted(pq.read_table(out / n).to_pylist(), key=lambda r: r["lineage"]) for n in ("docs", "lines")}


def of(table: list[dict], file: str) -> list[dict]:
    return [r for r in table if r["root_key"].startswith(file) or f"/{file}@" in r["root_key"]]


@pytest.fixture
def fixed(tmp_path):
    """A directory where b.txt FAILED, then b.txt fixed (new content: a new key, same path)."""
    inputs, out = corpus(tmp_path), tmp_path / "out"
    run(inputs, out)
    before = rows(out)
    assert [r["status"] for r in of(before["docs"], "b.txt")] == ["failed"]
    Path(inputs[1]).write_text("b1\nb2\nb3")
    return inputs, out, before


def test_a_plain_resume_cannot_fix_a_failed_input(fixed):
    """Bug: a FAILED input counted as committed; the rerun refused, the resume kept it failed
    (or, for a fixed file with a new key, wrote it twice: the old FAILED row stayed)."""
    inputs, out, before = fixed
    with pytest.raises(cu.CurateError, match="already holds"):
        run(inputs, out)
    assert OutputDir(out).failed_roots() == {of(before["docs"], "b.txt")[0]["root_key"]}


def test_retry_failed_replaces_exactly_the_failed_roots_rows(fixed):
    inputs, out, before = fixed
    res = run(inputs, out, retry_failed=True)
    after = rows(out)
    for name in ("docs", "lines"):  # the other roots' rows, value for value
        for f in ("a.txt", "c.txt"):
            assert of(after[name], f) == of(before[name], f)
    assert [(r["status"], r["text"]) for r in of(after["docs"], "b.txt")] == [("present", "b1\nb2\nb3")]
    assert [r["value"] for r in of(after["lines"], "b.txt")] == ["b1", "b2", "b3"]
    assert of(after["docs"], "b.txt")[0]["root_key"] == path_key(inputs[1])
    assert res.counts == {"docs": {"present": 1}, "lines": {"present": 3}}  # this run's rows
    assert OutputDir(out).counts() == {"docs": {"present": 3}, "lines": {"present": 6}}
    assert OutputDir(out).failed_roots() == set()
    (last,) = [r for r in OutputDir(out).manifest()["runs"] if r.get("retry_failed")]
    assert last["roots_retried"] == 1 and last["roots_done"] == 1 and last["roots_skipped"] == 2
    again = run(inputs, out, retry_failed=True)  # nothing left to retry
    assert again.metrics.to_dict() and OutputDir(out).last_run()["roots_retried"] == 0


def test_a_root_that_failed_under_the_same_key_is_retried(tmp_path):
    """A missing file (key = its path alone) that appears: the same root key runs again."""
    d = tmp_path / "in"
    d.mkdir()
    (d / "a.txt").write_text("a1")
    inputs, out = [str(d / "a.txt"), str(d / "b.txt")], tmp_path / "out"
    cu.run(pipeline(), inputs, executor="local", output_dir=out, key=str)
    (d / "b.txt").write_text("b1")
    cu.run(pipeline(), inputs, executor="local", output_dir=out, key=str, resume=True)
    assert OutputDir(out).counts()["docs"] == {"present": 1, "failed": 1}  # a resume leaves it failed
    cu.run(pipeline(), inputs, executor="local", output_dir=out, key=str, retry_failed=True)
    docs = rows(out)["docs"]
    assert [(r["root_key"], r["status"]) for r in docs] == [(inputs[0], "present"), (inputs[1], "present")]


def _killed_retry(fixed, monkeypatch, record: bool):
    inputs, out, before = fixed

    def killed(log, rec):
        if record:  # the commit record is on disk; nothing was published
            write_json_atomic(log.commits_dir / f"{rec['flush']}.json", rec)
        raise KeyboardInterrupt  # what a SIGKILL leaves: nothing after this point ran

    monkeypatch.setattr(CommitLog, "commit", killed)
    with pytest.raises(KeyboardInterrupt):
        run(inputs, out, retry_failed=True)
    monkeypatch.undo()
    CommitLog(out).recover()
    return inputs, out, before


def test_a_kill_between_staging_and_commit_leaves_the_old_rows(fixed, monkeypatch):
    inputs, out, before = _killed_retry(fixed, monkeypatch, record=False)
    assert rows(out) == before
    assert OutputDir(out).counts()["docs"] == {"present": 2, "failed": 1}
    run(inputs, out, retry_failed=True)  # and the retry can still be done
    assert OutputDir(out).counts()["docs"] == {"present": 3}


def test_a_kill_after_the_commit_record_leaves_the_new_rows(fixed, monkeypatch):
    inputs, out, before = _killed_retry(fixed, monkeypatch, record=True)
    after = rows(out)
    assert [r["status"] for r in of(after["docs"], "b.txt")] == ["present"]
    assert of(after["docs"], "a.txt") == of(before["docs"], "a.txt")
    assert OutputDir(out).counts()["docs"] == {"present": 3}


def test_the_command_line_retries_a_fixed_pdf(tmp_path, capsys):
    """`curate run --retry-failed` after replacing a broken PDF by a good one."""
    d = tmp_path / "in"
    d.mkdir()
    (d / "good.pdf").write_bytes((PDFS / "small_tiny.pdf").read_bytes())
    (d / "x.pdf").write_bytes((PDFS / "pdfjs_bug1020226_broken.pdf").read_bytes())
    out = tmp_path / "out"
    argv = ["run", "pdf_to_markdown", "--input", str(d / "*.pdf"), "--output", str(out), "--executor", "local",
            "--no-progress"]
    assert main(argv) == EXIT_PARTIAL
    assert main(["inspect", str(out)]) == EXIT_OK
    assert "--retry-failed" in capsys.readouterr().out
    (d / "x.pdf").write_bytes((PDFS / "small_tiny.pdf").read_bytes())  # fixed: new content, same path
    assert main(argv) == EXIT_ERROR  # a plain rerun is refused
    assert main([*argv, "--retry-failed"]) == EXIT_OK
    assert "retried 1 failed input(s)" in capsys.readouterr().out
    docs = sorted(pq.read_table(out / "documents").to_pylist(), key=lambda r: r["root_key"])
    assert [(Path(r["root_key"].rsplit("@", 1)[0]).name, r["status"]) for r in docs] == [
        ("good.pdf", "present"), ("x.pdf", "present")]
    man = json.loads((out / "_curate" / "manifest.json").read_text())
    assert man["runs"][-1]["roots_retried"] == 1


class Strict:
    """Fails every input until constructed with `ok=True` (a cause fixed by a change of init)."""

    def __init__(self, ok: bool):
        self.ok = ok

    def __call__(self, batch: list) -> list:
        return [{"n": x} if self.ok else cu.ItemFailure(cu.InputError(f"{x}: not ok")) for x in batch]


def strict(ok: bool) -> cu.Pipeline:
    pipe = cu.Pipeline(Doc)
    pipe.output("docs", pipe.source.map(cu.stage(Strict, init={"ok": ok})))
    return pipe


def test_a_retry_accepts_changed_init_and_records_it(tmp_path):
    out = tmp_path / "out"
    cu.run(strict(False), [1, 2], executor="local", output_dir=out)
    with pytest.raises(cu.CurateError, match="changed"):
        cu.run(strict(True), [1, 2], executor="local", output_dir=out, resume=True)
    cu.run(strict(True), [1, 2], executor="local", output_dir=out, retry_failed=True)
    assert [(r["root_key"], r["status"], r["n"]) for r in rows_of(out)] == [("0", "present", 1), ("1", "present", 2)]
    last = OutputDir(out).last_run()
    assert last["roots_retried"] == 2 and last["changed_code"]


def rows_of(out: Path) -> list[dict]:
    return sorted(pq.read_table(out / "docs").to_pylist(), key=lambda r: r["lineage"])


def test_retry_failed_on_ray_replaces_the_rows_where_the_writer_runs(fixed, ray_cluster):
    """On Ray the writer is an actor on the driver's node: it gets the roots to leave out."""
    inputs, out, before = fixed
    cu.run(pipeline(), inputs, executor="ray", output_dir=out, key=path_key, retry_failed=True)
    after = rows(out)
    assert [r["status"] for r in of(after["docs"], "b.txt")] == ["present"]
    assert of(after["lines"], "a.txt") == of(before["lines"], "a.txt")
    assert OutputDir(out).counts() == {"docs": {"present": 3}, "lines": {"present": 6}}
