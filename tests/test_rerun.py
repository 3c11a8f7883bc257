"""`curate rerun`: one step run again on committed rows, as a new version beside the old (a small
recipe of text files, tests/rerun_recipe.yaml, on the local executor): what it picks and writes,
what readers see, the manifest, errors, and a SIGKILL then --resume. The bundled recipes' reruns
(video captions, PDF OCR) are in tests/test_rerun_recipes.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from kills import sigkill_after

from curate.cli import main
from curate.errors import CurateError
from curate.io.read import read_table
from curate.recipe import RecipeError, load_recipe
from curate.rerun import RerunError, rerun
from curate.rerun.recorded import RecordedRoot, RecordedRow, Rows, one, pick, present
from curate.rerun.select import SelectorError, selected_ids
from curate.rerun.versions import overlay

HERE = Path(__file__).parent
RECIPE = HERE / "rerun_recipe.yaml"
DOCS = {"a.txt": "one\ntwo\nx\nthree", "b.txt": "four\nbad\nfive", "c.txt": "six\nseven", "d.txt": "BROKEN"}
LOCAL = ["--executor", "local", "--no-progress"]


def write_docs(d: Path) -> Path:
    d.mkdir()
    for name, text in DOCS.items():
        (d / name).write_text(text)
    return d


@pytest.fixture
def out(tmp_path) -> Path:
    docs = write_docs(tmp_path / "docs")
    o = tmp_path / "out"
    assert main(["run", str(RECIPE), "--input", str(docs), "--output", str(o), *LOCAL]) == 3  # d.txt FAILED
    return o


def rows(out: Path, name: str, version: int | None = None) -> dict[str, dict]:
    return {r["entity_id"]: r for r in read_table(out, name, version=version).to_pylist()}


def test_a_rerun_writes_the_picked_rows_as_a_new_version(out, capsys):
    before = {n: rows(out, n) for n in ("lines", "docs")}
    assert main(["rerun", str(out), "--step", "label", "--set", "steps.label.map.init.tag=v2",
                 "--where", "score >= 4", *LOCAL]) == 0
    printed = capsys.readouterr().out
    assert "version 2" in printed and "4 rows picked in 3 inputs" in printed
    # picked: the PRESENT lines scoring >= 4 (three, four, five, seven): only they ran the label step again
    ran = [line.split() for line in printed.splitlines() if line.startswith("ran label")]
    assert sum(int(r[2]) for r in ran) == 4  # items labelled: the four picked lines, no other
    lines, docs = rows(out, "lines"), rows(out, "docs")
    assert set(lines) == set(before["lines"]) and set(docs) == set(before["docs"])
    changed = {e for e, r in lines.items() if r["version"] == 2}
    assert {lines[e]["text"] for e in changed} == {"three", "four", "five", "seven"}
    for e, r in lines.items():
        old = before["lines"][e]
        assert (r["entity_id"], r["lineage"], r["parent_id"], r["status"]) == \
               (old["entity_id"], old["lineage"], old["parent_id"], old["status"])
        if e in changed:
            assert r["label"] == f"v2:{r['text'].upper()}"
        else:  # every other row as it was, DROPPED and FAILED ones too
            assert {k: v for k, v in r.items() if k != "version"} == old and r["version"] == 1
    # the documents of the picked lines, from every line's label (the new and the recorded ones)
    a = next(e for e in docs if e.startswith("a.txt"))
    assert docs[a]["version"] == 2 and docs[a]["value"] == "v1:ONE v1:TWO v2:THREE"
    assert [r["version"] for e, r in docs.items() if e.startswith("d.txt")] == [1]  # FAILED: not rerun
    # version 1 is still there, and what raw readers read in OUT/<output>
    assert rows(out, "lines", version=1) == before["lines"]
    assert pa.parquet.read_table(out / "lines").num_rows == len(before["lines"])
    man = json.loads((out / "_curate" / "manifest.json").read_text())
    (v,) = man["reruns"]
    assert (v["version"], v["step"], v["where"], v["status"], v["picked"], v["inputs"]) == (2, "label", "score >= 4",
                                                                                          "done", 4, 3)
    assert v["rows"] == {"lines": {"present": 4}, "docs": {"present": 3}}
    assert main(["inspect", str(out)]) == 0
    assert "version 2 (_versions/v2): rerun --step label --where 'score >= 4', done" in capsys.readouterr().out


def test_versions_stack_and_each_reads_as_it_was(out, capsys):
    rerun(out, "label", ["steps.label.map.init.tag=v2"], executor="local", progress=False)
    rerun(out, "label", ["steps.label.map.init.tag=v3"], "text == 'two'", executor="local", progress=False)
    labels = {v: {r["text"]: r["label"] for r in rows(out, "lines", v).values() if r["status"] == "present"}
              for v in (1, 2, 3, None)}
    assert labels[1]["two"] == "v1:TWO" and labels[2]["two"] == "v2:TWO" and labels[3]["two"] == "v3:TWO"
    assert labels[3]["one"] == "v2:ONE" and labels[None] == labels[3]
    assert main(["show", str(out), "lines", "1", "--version", "1", "--column", "label"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("v1:TWO")
    with pytest.raises(CurateError, match="has no version 4; its versions: 1, 2, 3"):
        read_table(out, "lines", version=4)


def test_a_killed_rerun_resumes_to_the_rows_of_an_unkilled_one(tmp_path):
    docs = write_docs(tmp_path / "docs")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    outs = []
    for name in ("whole", "killed"):
        o = tmp_path / name
        assert main(["run", str(RECIPE), "--input", str(docs), "--output", str(o), *LOCAL]) == 3
        outs.append(o)
    args = ["rerun", "--step", "label", "--set", "steps.label.map.init.tag=v2", *LOCAL]
    cmd = [sys.executable, "-m", "curate.cli"]
    done = subprocess.run([*cmd, args[0], str(outs[0]), *args[1:]], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    # one input at a time, each committed when done: killed while labelling c.txt's lines, a and b committed
    p = subprocess.Popen([*cmd, args[0], str(outs[1]), *args[1:]], env={**env, "RERUN_HOLD": "six"},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert sigkill_after(p, 1, " six") == -signal.SIGKILL
    man = json.loads((outs[1] / "_curate" / "manifest.json").read_text())
    assert man["reruns"][0]["status"] == "running"
    again = subprocess.run([*cmd, "rerun", str(outs[1]), "--resume", *LOCAL], env=env, capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0, again.stderr[-2000:]
    ran = {t for line in again.stdout.splitlines() if line.startswith("ran label") for t in line.split()[3:]}
    assert ran == {"six", "seven"}  # the committed inputs were not run again
    for name in ("lines", "docs"):
        assert rows(outs[1], name) == rows(outs[0], name)
    assert json.loads((outs[1] / "_curate" / "manifest.json").read_text())["reruns"][0]["status"] == "done"


def test_what_a_rerun_refuses(out, tmp_path):
    with pytest.raises(RerunError, match=r"has no rerun entry for step 'scored' \(its entries: label\)"):
        rerun(out, "scored", executor="local")
    with pytest.raises(RerunError, match="give --step STEP, the step to run again: .* has rerun entries for label"):
        rerun(out, None, executor="local")
    with pytest.raises(SelectorError, match="no column 'words' in this output"):
        rerun(out, "label", where="words > 3", executor="local")
    with pytest.raises(RerunError, match="picks no PRESENT row of output 'lines'"):
        rerun(out, "label", where="score > 100", executor="local")
    with pytest.raises(RerunError, match="has no rerun to resume"):
        rerun(out, "label", resume=True, executor="local")
    with pytest.raises(RerunError, match="holds no curate output"):
        rerun(tmp_path / "nothing", "label")
    import curate as cu

    pipe = cu.Pipeline(cu.Domain("doc"))
    pipe.output("docs", pipe.source)
    cu.run(pipe, ["x"], executor="local", output_dir=tmp_path / "py")
    with pytest.raises(RerunError, match="written by curate.run from Python, which records no recipe"):
        rerun(tmp_path / "py", "label")


def test_a_recipes_rerun_section_is_checked_with_its_lines(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(RECIPE.read_text().replace("    select: lines\n", "    chose: lines\n"))
    with pytest.raises(RecipeError) as exc:
        load_recipe(bad, input_optional=True)
    text = str(exc.value)
    assert "rerun entry 'label' has an unknown key 'chose'" in text and "needs select: OUTPUT" in text
    assert "bad.yaml:" in text


# ---- the pieces, driven directly -------------------------------------------------------------
def recorded(*specs) -> RecordedRoot:
    rows = [RecordedRow(f"k#{o}", 1, o, st, cause, {"x": o}, sel) for o, st, cause, sel in specs]
    return RecordedRoot("k", 0, {"lines": rows})


def test_recorded_rows_replay_their_verdicts_and_the_pick():
    root = recorded((0, "present", None, True), (1, "dropped", "short", False), (2, "failed", "boom", False),
                    (3, "present", None, False))
    (kids,) = Rows("lines")([root])
    assert [k.ordinal for k in kids] == [0, 1, 2, 3]
    verdicts = present(kids)
    assert verdicts[0] is True and verdicts[1] == (False, "short") and str(verdicts[2].cause) == "boom"
    assert [len(p) for p in pick(kids)] == [1, 0, 0, 0] and one([[7], []]) == [7, None]
    with pytest.raises(CurateError, match="has no row for child 1"):
        Rows("lines")([recorded((0, "present", None, True), (2, "present", None, True))])


def test_the_overlay_takes_each_rows_newest_version():
    def t(ids, val):
        return pa.table({"entity_id": ids, "lineage": [[0, int(i[-1])] for i in ids], "v": [val] * len(ids)})

    latest = overlay(t(["k#0", "k#1", "k#2"], "a"), [(2, t(["k#1"], "b")), (3, t(["k#2", "k#1"], "c"))]).to_pylist()
    assert [(r["entity_id"], r["v"], r["version"]) for r in latest] == [("k#0", "a", 1), ("k#1", "c", 3),
                                                                         ("k#2", "c", 3)]


def test_where_is_arrow_over_the_columns():
    table = pa.table({"entity_id": list("abcd"), "x": [0.5, 0.9, None, 0.1], "r": ["ocr", "ocr", "text", None]})
    assert selected_ids(table, "x < 0.8") == {"a", "d"}  # a null satisfies no comparison
    assert selected_ids(table, "x < 0.8 and r == 'ocr'") == {"a"}
    assert selected_ids(table, "0.8 > x or r is None") == {"a", "d"}
    assert selected_ids(table, "r not in ['ocr'] and x is not None") == {"d"}
    assert selected_ids(table, None) == set("abcd")
    for bad, why in (("x <", "is not a condition"), ("x < y", "a value must be"), ("len(r) > 2", "compare a column"),
                     ("x > 'a'", "cannot be evaluated")):
        with pytest.raises(SelectorError, match=why):
            selected_ids(table, bad)


def test_validate_builds_every_rerun_entry(tmp_path, capsys):
    from curate.recipe import bundled

    for found in bundled.available():
        assert main(["validate", str(found.path)]) == 0
    printed = capsys.readouterr().out
    assert "video_captions" in printed and "rerun steps captions" in printed and "rerun steps ocr" in printed
    bad = tmp_path / "bad.yaml"
    bad.write_text(RECIPE.read_text().replace("      - label\n", "      - labels\n"))
    assert main(["validate", str(bad)]) == 1
    assert "rerun entry 'label' reuses step 'labels', which the recipe does not have" in capsys.readouterr().err
