"""Hangs and interrupts from the command line, in real subprocesses: Ctrl-C commits the roots
that finished (even with nothing flushed yet), marks the run interrupted, says how to continue,
and `--resume` then gives the rows of an uninterrupted run; `curate inspect` counts rows of a
run that never finished from the commit log."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hang_stages import RECIPE

TESTS = Path(__file__).resolve().parent
N_DOCS, HANG_DOC = 8, 5


def job(tmp_path: Path) -> Path:
    recipe = tmp_path / "hang.yaml"
    recipe.write_text(RECIPE)
    pq.write_table(pa.table({"doc": [str(i) for i in range(N_DOCS)]}), tmp_path / "docs.parquet")
    return recipe


def curate(*args: str, hang: bool = False) -> subprocess.Popen:
    env = dict(os.environ, RAY_ADDRESS="", PYTHONPATH=os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])))
    env.pop("CURATE_TEST_HANG_DOC", None)
    if hang:
        env["CURATE_TEST_HANG_DOC"] = str(HANG_DOC)
    return subprocess.Popen([sys.executable, "-m", "curate.cli", *args, "--no-progress"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=TESTS)


def rows(out: Path, name: str) -> list[dict]:
    return sorted(pq.read_table(out / name).to_pylist(), key=lambda r: r["lineage"])


@pytest.mark.parametrize("executor", ["local", "ray"])
def test_ctrl_c_commits_finished_roots_and_resume_completes_the_run(tmp_path, executor):
    recipe = job(tmp_path)
    ref = tmp_path / "ref"
    p = curate("run", str(recipe), "--output", str(ref), "--executor", executor)
    assert p.wait(timeout=300) == 0, p.stderr.read()[-3000:]

    out = tmp_path / "out"
    p = curate("run", str(recipe), "--output", str(out), "--executor", executor, hang=True)
    for line in p.stdout:  # the documents before the hanging one are done once it hangs
        if "blocked on" in line:
            break
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err[-3000:]
    assert "interrupted: 5 input(s) are committed" in err and "--resume" in err
    assert "Traceback" not in err
    man = json.loads((out / "_curate" / "manifest.json").read_text())
    assert [r["status"] for r in man["runs"]] == ["interrupted"]
    assert sorted(r["root_key"] for r in rows(out, "docs")) == [str(i) for i in range(HANG_DOC)]

    inspect = subprocess.run([sys.executable, "-m", "curate.cli", "inspect", str(out)], capture_output=True, text=True)
    assert inspect.returncode == 0
    assert "was interrupted" in inspect.stdout and "docs: 5 present" in inspect.stdout

    p = curate("run", str(recipe), "--output", str(out), "--executor", executor, "--resume")
    assert p.wait(timeout=300) == 0, p.stderr.read()[-3000:]
    for name in ("docs", "pages"):
        assert rows(out, name) == rows(ref, name)
    man = json.loads((out / "_curate" / "manifest.json").read_text())
    assert [r["status"] for r in man["runs"]] == ["interrupted", "completed"]
    assert man["runs"][1]["roots_skipped"] == HANG_DOC
