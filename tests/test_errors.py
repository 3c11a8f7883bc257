"""Clear errors instead of tracebacks or silence: each is one line with a fix and exit code 1
from the command line; a stage that returns a bare value gets the contract's message; a refused
run leaves no run in the manifest and a failed one names only files that exist."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import curate as cu
from curate.cli import EXIT_ERROR, EXIT_OK, EXIT_PARTIAL, main

ROOT = Path(__file__).resolve().parent.parent
BOOKS = str(ROOT / "examples" / "books.yaml")
LOCAL = ["--executor", "local", "--no-progress"]
Doc = cu.Domain("doc")


def one_line_error(capsys, *needles: str) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for n in needles:
        assert n in err, err
    return err


def test_output_that_is_a_file_is_one_line(tmp_path, capsys):
    f = tmp_path / "out.txt"
    f.write_text("not a directory")
    assert main(["run", BOOKS, "--output", str(f), *LOCAL]) == EXIT_ERROR
    one_line_error(capsys, "is a file", "give a directory")
    assert main(["run", BOOKS, "--output", str(f / "sub"), *LOCAL]) == EXIT_ERROR
    one_line_error(capsys, f"{f} is a file")


def test_resume_after_a_shard_was_deleted_is_one_line(tmp_path, capsys):
    out = tmp_path / "books"
    assert main(["run", BOOKS, "--output", str(out), *LOCAL]) == EXIT_PARTIAL
    capsys.readouterr()
    next((out / "paragraphs").glob("*.parquet")).unlink()
    assert main(["run", BOOKS, "--output", str(out), "--resume", *LOCAL]) == EXIT_ERROR
    one_line_error(capsys, "cannot resume", "is missing", "new output directory")


def test_an_input_glob_that_matches_nothing_is_an_error_before_the_run(tmp_path, capsys):
    out = tmp_path / "books"
    assert main(["run", BOOKS, "--output", str(out), *LOCAL, "--input", str(tmp_path / "none" / "*.txt")]) == EXIT_ERROR
    one_line_error(capsys, "matches no file", "none/*.txt")
    assert not out.exists()
    recipe = tmp_path / "books.yaml"
    recipe.write_text(Path(BOOKS).read_text().replace('glob: "data/books/*.txt"', 'glob: "nothing/*.txt"'))
    assert main(["validate", str(recipe)]) == EXIT_OK  # the data may come later: only a warning
    assert "warning: input glob 'nothing/*.txt' matches no file" in capsys.readouterr().err
    assert main(["run", str(recipe), "--output", str(out), *LOCAL]) == EXIT_ERROR
    one_line_error(capsys, "input glob 'nothing/*.txt' matches no file")


def test_a_key_function_that_raises_is_one_line_from_the_cli(tmp_path, capsys, monkeypatch):
    from curate.io import sources

    def broken(path):
        raise OSError("disk on fire")

    monkeypatch.setattr(sources, "file_digest", broken)  # what the recipe's file keys hash with
    assert main(["run", BOOKS, "--output", str(tmp_path / "o"), *LOCAL]) == EXIT_ERROR
    one_line_error(capsys, "key= raised OSError: disk on fire for input 0", "fix the key function")


def test_a_stage_returning_a_bare_value_gets_the_contract_message():
    pipe = cu.Pipeline(Doc)
    pipe.output("out", pipe.source.map(cu.stage(lambda xs: 42, name="answer", retries=0)))
    res = cu.run(pipe, [1], executor="local")
    cause = res.items("out")[0].cause
    assert cause.error_type == "UserCodeError"
    assert "stage answer returned a int (42) for a batch of 1" in cause.message
    assert "must return a list with one result per input item" in cause.message


def test_a_refused_run_is_not_recorded_and_a_failed_one_names_only_files_that_exist(tmp_path):
    pipe = cu.Pipeline(Doc)
    pipe.output("out", pipe.source.map(lambda xs: xs))
    out = tmp_path / "o"
    with pytest.raises(cu.CurateError):  # refused before it started: an unknown executor option
        cu.run(pipe, [1, 2], executor="local", output_dir=out, key=lambda x: "same", input_batch_size=0)
    man = out / "_curate" / "manifest.json"
    assert not man.exists() or json.loads(man.read_text())["runs"] == []
    with pytest.raises(cu.RootKeyError):  # started, then failed
        cu.run(pipe, [1, 2], executor="local", output_dir=out, key=lambda x: "same")
    runs = json.loads(man.read_text())["runs"]
    assert [r["status"] for r in runs] == ["failed"] and "RootKeyError" in runs[0]["error"]
    assert (out / runs[0]["metrics"]).exists()


def test_a_stage_that_cannot_be_built_fails_its_items_at_once(executor, recorder):
    class Model:
        def __init__(self, path):
            recorder.add("build")
            raise cu.CurateError(f"no weights at {path}; download them first")

        def __call__(self, xs):
            return xs

    pipe = cu.Pipeline(Doc)
    pipe.output("out", pipe.source.map(cu.stage(Model, init={"path": "/nowhere"}, batch_size=4)))
    res = cu.run(pipe, range(6), executor=executor)
    items = res.items("out")
    assert all(it.status is cu.Status.FAILED for it in items)
    assert items[0].cause.kind == "setup" and "no weights at /nowhere" in items[0].cause.message
    assert len(recorder.values("build")) == 2  # one attempt per batch of 4, no retries, no splitting


def test_an_issue_has_the_same_cause_in_memory_and_read_back_from_parquet(tmp_path):
    """Issue.cause is a Cause either way, with the same kind, Call, error type and message
    (the traceback is not stored in rows); a drop reason is text either way."""

    def check(xs):
        return [cu.ItemFailure(cu.InputError(f"{x}: unreadable")) if x == 1 else
                cu.ItemFailure("Note: no value") if x == 2 else x for x in xs]

    pipe = cu.Pipeline(Doc)
    kept = pipe.source.map(cu.stage(check, name="check")).filter(cu.stage(lambda xs: [x != 3 for x in xs],
                                                                          name="odd"))
    pipe.output("out", kept)
    mem = cu.run(pipe, [0, 1, 2, 3], executor="local").values("out")
    disk = cu.run(pipe, [0, 1, 2, 3], executor="local", output_dir=tmp_path / "o").values("out")
    assert [type(v.cause) for v in mem[1:]] == [cu.Cause, cu.Cause, str]
    for m, d in zip(mem[1:], disk[1:]):
        assert type(d.cause) is type(m.cause) and str(d.cause) == str(m.cause)
    for m, d in zip(mem[1:3], disk[1:3]):
        assert (d.cause.kind, d.cause.call, d.cause.message) == (m.cause.kind, m.cause.call, m.cause.message)
    assert disk[1].cause.error_type == "InputError" and disk[1].cause.message == "1: unreadable"
