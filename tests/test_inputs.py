"""What identifies an input across runs (issue 21, points 7, 8, 10): a file's key is its path
relative to its input's root plus a content hash, whatever the working directory or the
glob's spelling; a resume rooted elsewhere, or whose index-keyed inputs changed, is refused
before anything runs; the Python API keys files and bytes by content; `--input DIR` expands to
the recipe's files; a missing path is refused up front; each --input's file count is shown."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import curate as cu
from curate.cli import EXIT_ERROR, EXIT_PARTIAL, main
from curate.io import sources

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BOOKS = EXAMPLES / "books.yaml"
BOOK_FILES = sorted((EXAMPLES / "data" / "books").glob("*.txt"))  # 4 books, one of them FAILS


def curate_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`curate ARGS` in a fresh process started in `cwd` (what a user's shell does)."""
    return subprocess.run([sys.executable, "-m", "curate.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def books_in(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for f in BOOK_FILES:
        shutil.copy(f, folder / f.name)
    return folder


def rows(out: Path, name: str = "books") -> list[dict]:
    return pq.read_table(out / name).to_pylist()


# ---- point 7: a file's key does not depend on the cwd or on the glob's spelling ------------------
def test_a_resume_from_the_parent_with_an_absolute_glob_writes_no_row_twice(tmp_path):
    books_in(tmp_path / "folder" / "in2")
    out = tmp_path / "out"
    first = curate_cli(tmp_path / "folder", "run", str(BOOKS), "--input", "in2/*.txt", "--output", str(out),
                       "--executor", "local", "--no-progress")
    assert first.returncode == EXIT_PARTIAL, first.stderr  # one book FAILS by design
    before = sorted(r["root_key"] for r in rows(out))
    again = curate_cli(tmp_path, "run", str(BOOKS), "--input", str(tmp_path / "folder" / "in2" / "*.txt"),
                       "--output", str(out), "--executor", "local", "--no-progress", "--resume")
    assert again.returncode == EXIT_PARTIAL, again.stderr
    after = rows(out)
    assert sorted(r["root_key"] for r in after) == before and len(before) == len(BOOK_FILES)
    assert sorted(r["lineage"][0] for r in after) == list(range(len(BOOK_FILES)))  # each input once
    last = json.loads((out / "_curate" / "manifest.json").read_text())["runs"][-1]
    assert (last["roots_done"], last["roots_skipped"]) == (0, len(BOOK_FILES))
    assert last["inputs"][0]["root"] == str(tmp_path / "folder" / "in2")


def test_a_resume_whose_inputs_are_rooted_elsewhere_is_refused_naming_both_keys(tmp_path):
    books_in(tmp_path / "folder" / "in2")
    out = tmp_path / "out"
    first = curate_cli(tmp_path / "folder", "run", str(BOOKS), "--input", "in2/*.txt", "--output", str(out),
                       "--executor", "local", "--no-progress")
    assert first.returncode == EXIT_PARTIAL, first.stderr
    manifest = (out / "_curate" / "manifest.json").read_text()
    # the same files, through a glob rooted one level up: keys in2/NAME@HASH instead of NAME@HASH
    again = curate_cli(tmp_path, "run", str(BOOKS), "--input", "folder/**/*.txt", "--output", str(out),
                       "--executor", "local", "--no-progress", "--resume")
    assert again.returncode == EXIT_ERROR
    msg = again.stderr
    assert "'in2/alice_in_wonderland.txt@" in msg and "as 'alice_in_wonderland.txt@" in msg
    assert str(tmp_path / "folder" / "in2") in msg  # the root of the run being resumed
    assert f"--input '{tmp_path / 'folder' / 'in2' / '*.txt'}' --resume" in msg  # the command to use
    assert "Traceback" not in msg
    assert (out / "_curate" / "manifest.json").read_text() == manifest  # refused: no entry, no rows
    assert len(rows(out)) == len(BOOK_FILES)


def test_glob_roots_and_keys():
    from curate.io import files

    assert files.glob_root("in2/*.pdf", "/w") == "/w/in2"
    assert files.glob_root("/w/in2/**/x*.pdf", "/elsewhere") == "/w/in2"
    assert files.glob_root("*.pdf", "/w") == "/w"
    assert files.glob_root("../d/[ab].pdf", "/w/x") == "/w/d"
    found = files.expand([str(BOOK_FILES[0]), str(EXAMPLES / "data" / "*" / "m*.txt")])
    assert [g.kind for g in found.groups] == ["file", "glob"]
    assert found.key(str(BOOK_FILES[0])).startswith("alice_in_wonderland.txt@")
    assert found.key(str(EXAMPLES / "data" / "books" / "moby_dick.txt")).startswith("books/moby_dick.txt@")
    assert list(found) == [found[i] for i in range(len(found))] and found[-1] == found[len(found) - 1]


def test_file_name_templates_take_the_name_of_a_nested_key():
    """`{name}` and `{key}` of payload file templates use the key's file name, not its folders."""
    from curate.io.rows import template_fields

    row = {"root_key": "sub/dir/Report.pdf@0123456789abcdef", "ordinal": 0, "lineage": [0], "markdown": "x"}
    fields = template_fields(row)
    assert fields["name"] == "Report" and fields["key"].startswith("Report-") and "/" not in fields["key"]


def test_a_file_named_by_two_inputs_is_refused(tmp_path):
    from curate.io import files

    with pytest.raises(sources.SourceError, match="is named by input .* and by input .*give each file once"):
        files.expand([str(BOOK_FILES[0]), str(EXAMPLES / "data" / "books")])


# ---- point 8: the Python API's default keys --------------------------------------------------
Doc = cu.Domain("doc")


def text_pipeline():
    pipe = cu.Pipeline(Doc)
    pipe.output("docs", pipe.source.map(lambda paths: [Path(p).read_text() for p in paths]))
    return pipe


def test_api_resume_after_inserting_a_file_that_sorts_first_processes_it(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    for name in ("b", "c"):
        (d / f"{name}.txt").write_text(f"text of {name}")
    out = tmp_path / "out"
    cu.run(text_pipeline(), sorted(map(str, d.iterdir())), executor="local", output_dir=out)
    (d / "a.txt").write_text("text of a")
    cu.run(text_pipeline(), sorted(map(str, d.iterdir())), executor="local", output_dir=out, resume=True)
    got = {r["root_key"].split("@")[0]: (r["status"], r["value"]) for r in rows(out, "docs")}
    assert got == {n: ("present", f"text of {n[0]}") for n in ("a.txt", "b.txt", "c.txt")}


def test_default_keys_follow_content_for_files_and_bytes(tmp_path):
    (tmp_path / "x.bin").write_bytes(b"abc")
    pipe = cu.Pipeline(Doc)
    pipe.output("docs", pipe.source.map(lambda xs: [len(x) if isinstance(x, bytes) else 0 for x in xs]))
    keys = cu.run(pipe, [str(tmp_path / "x.bin"), b"abc", {"n": 1}], executor="local").root_keys()
    assert keys[0] == sources.path_key(tmp_path / "x.bin", tmp_path) and keys[0].startswith("x.bin@")
    assert keys[1] == f"bytes@{keys[0].split('@')[1]}" and keys[2] == "2"  # the same sha256; an index
    with pytest.raises(cu.RootKeyError, match="input 1 .* same name and content as input 0.*pass key="):
        cu.run(pipe, [b"abc", b"abc"], executor="local")


def index_pipeline():
    pipe = cu.Pipeline(Doc)
    pipe.output("docs", pipe.source.map(lambda xs: [x["id"] * 10 for x in xs]))
    return pipe


@pytest.mark.parametrize("form", [list, iter], ids=["list", "iterator"])
def test_a_resume_whose_index_keyed_input_changed_is_refused(tmp_path, form):
    out = tmp_path / "out"
    cu.run(index_pipeline(), [{"id": 1}, {"id": 2}], executor="local", output_dir=out)
    committed = sorted(r["root_key"] for r in rows(out, "docs"))
    with pytest.raises(cu.RootKeyError, match=r"input 0 \(\{'id': 0\}\) is not the input .* inputs changed since "
                                              r"the directory was written.*pass key=.*new output directory"):
        cu.run(index_pipeline(), form([{"id": 0}, {"id": 1}, {"id": 2}]), executor="local", output_dir=out,
               resume=True)
    assert sorted(r["root_key"] for r in rows(out, "docs")) == committed  # nothing mixed in
    # the same inputs plus one at the end: only the new one runs
    cu.run(index_pipeline(), form([{"id": 1}, {"id": 2}, {"id": 3}]), executor="local", output_dir=out,
           resume=True)
    assert sorted((r["root_key"], r["value"]) for r in rows(out, "docs")) == [
        ("0", 10), ("1", 20), ("2", 30)]


def test_an_input_digest_ignores_set_order_and_unstable_reprs():
    from curate.keys import value_digest

    assert value_digest({"b", "a", "c"}) == value_digest({"c", "a", "b"}) != 0
    assert value_digest([1, {"a": (2, 3)}]) != value_digest([1, {"a": (2, 4)}])
    assert value_digest(x for x in [1]) == 0  # no pickle, and its repr names its address: not stable


# ---- point 10: directories, missing paths, the count line -------------------------------------
def test_an_input_directory_expands_to_the_recipes_files_recursively_and_sorted(tmp_path, capsys):
    d = tmp_path / "lib"
    books_in(d / "sub")
    shutil.move(str(d / "sub" / "moby_dick.txt"), str(d / "MOBY.TXT"))
    (d / "notes.md").write_text("not a book")
    (d / ".hidden").mkdir()
    (d / ".hidden" / "secret.txt").write_text("hidden")
    out = tmp_path / "out"
    assert main(["run", str(BOOKS), "--input", str(d), "--output", str(out), "--executor", "local",
                 "--no-progress"]) == EXIT_PARTIAL
    err = capsys.readouterr().err
    assert f"--input {d}: 4 file(s), keyed relative to {d}" in err
    got = sorted((r["lineage"][0], r["root_key"].split("@")[0]) for r in rows(out))
    assert got == [(0, "MOBY.TXT"), (1, "sub/alice_in_wonderland.txt"), (2, "sub/missing_chapters.txt"),
                   (3, "sub/pride_and_prejudice.txt")]
    from curate.io import files

    assert files.dir_files(str(d)) == sorted(str(p) for p in (d / "MOBY.TXT", d / "notes.md",
                                                              *(d / "sub").iterdir()))  # no extensions: all


@pytest.mark.parametrize("case", ["missing", "empty_dir", "no_match_dir"])
def test_nothing_to_read_is_refused_before_anything_starts(tmp_path, capsys, case):
    target = tmp_path / "given"
    if case != "missing":
        target.mkdir()
    if case == "no_match_dir":
        (target / "a.pdf").write_text("not a book")
    out = tmp_path / "out"
    assert main(["run", str(BOOKS), "--input", str(target), "--input", str(BOOK_FILES[0]), "--output", str(out),
                 "--executor", "local", "--no-progress"]) == EXIT_ERROR
    err = capsys.readouterr().err
    want = "does not exist" if case == "missing" else "holds no file named *.txt"
    assert str(target) in err and want in err and "Traceback" not in err
    assert not out.exists()


def test_a_glob_input_is_counted(tmp_path, capsys):
    out = tmp_path / "out"
    pattern = str(EXAMPLES / "data" / "books" / "*.txt")
    assert main(["run", str(BOOKS), "--input", pattern, "--input", str(BOOK_FILES[0].parent / "README.md"),
                 "--output", str(out), "--executor", "local", "--no-progress"]) == EXIT_PARTIAL
    err = capsys.readouterr().err
    assert f"--input {pattern}: 4 file(s), keyed relative to {BOOK_FILES[0].parent}" in err
    assert "README.md: 1 file(s)" in err


def test_recipe_extensions_are_checked(capsys):
    assert main(["validate", str(BOOKS), "--set", "extensions=[txt]"]) == EXIT_ERROR
    assert "extensions is ['txt'], not a list of file name endings, each starting with '.'" in capsys.readouterr().err
    assert main(["validate", str(BOOKS), "--set", "extensions=[.txt, .md]"]) == 0
