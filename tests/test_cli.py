"""The `curate` command line on the bundled example recipe: run, resume, validate, inspect,
report, overrides and exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curate.cli import EXIT_BROKEN_PIPE, EXIT_ERROR, EXIT_OK, EXIT_PARTIAL, main

ROOT = Path(__file__).resolve().parent.parent
BOOKS = str(ROOT / "examples" / "books.yaml")
LOCAL = ["--executor", "local", "--no-progress"]


@pytest.fixture(scope="module")
def done(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "books"
    assert main(["run", BOOKS, "--output", str(out), *LOCAL]) == EXIT_PARTIAL  # one bad book
    return out


def test_run_writes_every_output_and_exits_3_when_an_input_failed(done, capsys):
    books = pq.read_table(done / "books").to_pylist()
    assert sorted(r["status"] for r in books) == ["failed", "present", "present", "present"]
    # relative to the glob's root, data/books/: the name and 16 hex of the content
    assert all(re.fullmatch(r"[a-z_]+\.txt@[0-9a-f]{16}", r["root_key"]) for r in books)
    assert pq.read_table(done / "paragraphs").num_rows == 29
    man = json.loads((done / "_curate" / "manifest.json").read_text())
    assert man["recipe"].startswith("# The Book -> Chapter") and man["runs"][0]["status"] == "completed"


def test_resume_of_a_finished_directory_redoes_nothing(done, capsys):
    assert main(["run", BOOKS, "--output", str(done), "--resume", *LOCAL]) == EXIT_PARTIAL
    man = json.loads((done / "_curate" / "manifest.json").read_text())
    last = man["runs"][-1]
    assert last["roots_skipped"] == 4 and last["roots_done"] == 0
    assert man["counts"]["books"] == {"failed": 1, "present": 3}


def test_a_recipes_run_resume_and_progress_are_taken_not_passed_twice(done, capsys):
    """`run: {resume: true, progress: false}` in a recipe (here by --set) resumes the directory
    quietly; `curate run` passed both as keywords of its own as well, a TypeError."""
    sets = ["--set", "run.resume=true", "--set", "run.progress=false"]
    assert main(["run", BOOKS, "--output", str(done), "--executor", "local", *sets]) == EXIT_PARTIAL
    last = json.loads((done / "_curate" / "manifest.json").read_text())["runs"][-1]
    assert last["resumed"] and last["roots_skipped"] == 4 and last["roots_done"] == 0


def test_run_into_a_used_directory_without_resume_is_an_error(done, capsys):
    assert main(["run", BOOKS, "--output", str(done), *LOCAL]) == EXIT_ERROR
    assert "--resume" in capsys.readouterr().err


def test_inspect_lists_counts_and_the_top_failure_cause(done, capsys):
    assert main(["inspect", str(done)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "books: 1 failed, 3 present" in out and "paragraphs: 6 dropped, 23 present" in out
    assert "InputError: missing_chapters.txt" in out and "e.g. books missing_chapters.txt@" in out


@pytest.mark.parametrize("command", [["inspect"], ["show", "paragraphs", "3"]])
def test_a_reader_that_closes_stdout_ends_the_command_quietly(done, command):
    """`curate inspect OUT | head`: the read end is closed before the command writes a byte,
    so its first flush meets a broken pipe, every time."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "curate.cli", command[0], str(done), *command[1:]],
                              stdout=write, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    finally:
        os.close(write)
    assert proc.returncode == EXIT_BROKEN_PIPE
    assert proc.stderr == ""  # no BrokenPipeError traceback, no "Exception ignored" at exit


def test_report_writes_the_timeline_and_summary(done, capsys):
    assert main(["report", str(done)]) == EXIT_OK
    run = json.loads((done / "_curate" / "manifest.json").read_text())["runs"][-1]["run"]  # the latest
    png = done / "_curate" / run / "report.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = (done / "_curate" / run / "summary.md").read_text()
    assert "WordStats" in summary and "InputError" in summary


def test_validate_and_overrides(tmp_path, capsys):
    assert main(["validate", BOOKS]) == EXIT_OK
    assert "ok (8 calls" in capsys.readouterr().out
    assert main(["validate", BOOKS, "--set", "steps.stats.map.batch_size=eight"]) == EXIT_ERROR
    assert "books.yaml:" in capsys.readouterr().err
    out = tmp_path / "two"
    code = main(["run", BOOKS, "--output", str(out), "--set", "run.inflight=1", *LOCAL,
                 "--input", str(ROOT / "examples/data/books/a*.txt"), "--input", str(ROOT / "examples/data/books/moby_dick.txt")])
    assert code == EXIT_OK
    assert pq.read_table(out / "books").num_rows == 2


def test_a_recipe_with_three_mistakes_lists_all_three(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(Path(BOOKS).read_text()
                   .replace('"books:read_titles"', '"books:read_titels"')
                   .replace("into: chapter,", "into: paragraph,")
                   .replace("batch_size: 8", "batch_size: eight"))
    (tmp_path / "books.py").write_text((ROOT / "examples" / "books.py").read_text())
    assert main(["validate", str(bad)]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert "3 problem(s)" in err and err.count("bad.yaml:") >= 3
    assert "read_titels" in err and "paragraph" in err and "eight" in err


def test_the_console_script_runs_and_reports_usage_errors(tmp_path):
    exe = Path(sys.executable).with_name("curate")
    proc = subprocess.run([str(exe), "run"], capture_output=True, text=True)
    assert proc.returncode == 2 and "recipe" in proc.stderr
    proc = subprocess.run([str(exe), "validate", BOOKS], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
