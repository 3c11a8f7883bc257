"""YAML recipes: the books recipe runs like examples/books.py; every mistake is reported at its
recipe line, all at once; --set overrides; and the input sources behind `input:`."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import curate as cu
from curate.io import sources
from curate.recipe import Recipe, RecipeError, load_recipe

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
RECIPE = EXAMPLES / "books.yaml"
BAD = "books_bad.yaml"
MINI = """\
name: mini
domains: {book: null, chapter: book}
steps:
  - {id: titles, map: {from: source, stage: "books:read_titles"}}
  - {id: chapters, expand: {from: source, stage: "books:split_chapters", into: chapter, batch_size: 2}}
outputs: {titles: titles, chapters: chapters}
input: {glob: "*.txt"}
run: {executor: local}
"""  # line 4: titles, line 5: chapters, line 6: outputs, line 7: input, line 8: run


@pytest.fixture(autouse=True)
def _books_importable(monkeypatch):
    """Recipes written to tmp_path name stages `books:...`: books.py lives in examples/."""
    monkeypatch.syspath_prepend(str(EXAMPLES))


def _load_example():
    spec = importlib.util.spec_from_file_location("books_example", EXAMPLES / "books.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is built
    spec.loader.exec_module(mod)
    return mod


def _write(tmp_path: Path, text: str, name: str = BAD) -> Path:
    (tmp_path / name).write_text(text)
    return tmp_path / name


def _problems(tmp_path: Path, text: str, overrides=()) -> list[str]:
    with pytest.raises(RecipeError) as info:
        load_recipe(_write(tmp_path, text), overrides)
    problems = info.value.problems
    assert isinstance(info.value, cu.PlanError)
    assert all(re.match(rf"{re.escape(BAD)}:\d+: ", p) for p in problems), problems
    assert f"has {len(problems)} problem(s)" in str(info.value)
    return problems


def _has(problems: list[str], line: int, *fragments: str) -> bool:
    return any(p.startswith(f"{BAD}:{line}: ") and all(f in p for f in fragments) for p in problems)


def _comparable(items: list[cu.Item]) -> list[tuple]:
    """Items of two runs whose values are instances of two imports of books.py."""
    return [(it.lineage, it.status, repr(it.value),
             None if not isinstance(it.cause, cu.Cause) else (it.cause.kind, it.cause.message, it.cause.call))
            for it in items]


# ---- the books recipe ----------------------------------------------------------------------------
def test_books_recipe_gives_the_python_examples_values():
    recipe = load_recipe(RECIPE)
    books = _load_example()
    opts = {k: v for k, v in recipe.run_options.items() if k in ("input_batch_size", "inflight")}
    # books.py's stages call Path methods on their input; recipe inputs are path strings.
    got = cu.run(recipe.pipeline, recipe.inputs(), key=recipe.key, executor="local", **opts)
    ref = cu.run(books.build_pipeline(), books.book_paths(), executor="local", input_batch_size=2, inflight=2)
    for name in ("books", "paragraphs"):
        assert _comparable(got.items(name)) == _comparable(ref.items(name))
    assert [v.title for v in got.values("books") if not isinstance(v, cu.Issue)] == [
        "Alice's Adventures in Wonderland", "Moby-Dick; or, The Whale", "Pride and Prejudice"]
    assert got.root_keys()[0].startswith("alice_in_wonderland.txt@")  # relative to the glob's root
    assert list(got.metrics.calls) == list(ref.metrics.calls)  # the same Calls, in the same order


def test_books_recipe_fields():
    recipe = load_recipe(RECIPE)
    assert isinstance(recipe, Recipe) and recipe.name == "books" and recipe.path == RECIPE
    assert recipe.run_options == {"executor": "ray", "input_batch_size": 2, "inflight": 2}
    assert recipe.text == RECIPE.read_text() and recipe.data == yaml.safe_load(recipe.text)
    assert "on" in recipe.data["steps"][6]["map"]["init"]["stopwords"]  # quoted: not YAML's true
    paths = list(recipe.inputs())
    assert paths == sorted(str(p) for p in (EXAMPLES / "data" / "books").glob("*.txt"))
    assert list(recipe.inputs()) == paths  # a fresh iterator on every call
    assert re.fullmatch(r"moby_dick\.txt@[0-9a-f]{16}", recipe.key(paths[2]))  # from data/books/
    assert set(recipe.pipeline.outputs) == {"books", "paragraphs"}
    where = {d.where for d in recipe.pipeline.nodes}
    assert all(re.fullmatch(r"books\.yaml:\d+", w) for w in where)  # every node at its recipe line


def test_stage_imports_resolve_next_to_the_recipe(tmp_path, monkeypatch):
    (tmp_path / "mystages_recipe_test.py").write_text(
        "import os\n\ndef upper(batch):\n    return [os.path.basename(s).upper() for s in batch]\n")
    monkeypatch.chdir(tmp_path / "..")  # neither the cwd nor sys.path holds the module
    text = MINI.replace("books:read_titles", "mystages_recipe_test:upper").replace(
        "input: {glob: \"*.txt\"}", "input: {paths: [a, b]}")
    text = text.replace("\n  - {id: chapters", "\n#").replace(", chapters: chapters", "")
    recipe = load_recipe(_write(tmp_path, text))
    got = cu.run(recipe.pipeline, recipe.inputs(), executor="local").values("titles")
    assert got == ["A", "B"]


def test_the_documented_example_is_a_working_recipe(tmp_path):
    import curate.recipe

    doc = curate.recipe.__doc__
    example = "\n".join(ln[4:] for ln in doc[doc.index("    name: books"):doc.index("\nSteps:")].splitlines())
    books_glob = str(EXAMPLES / "data" / "books" / "*.txt")
    recipe = load_recipe(_write(tmp_path, example.replace('"data/books/*.txt"', f'"{books_glob}"')))
    assert recipe.run_options == {"executor": "ray", "input_batch_size": 2, "inflight": 2}
    got = cu.run(recipe.pipeline, recipe.inputs(), executor="local").items("books")
    books = _load_example()
    ref = cu.run(books.build_pipeline(), books.book_paths(), executor="local").items("books")
    assert _comparable(got) == _comparable(ref)  # chapter word counts do not depend on stopwords


def test_a_missing_input_file_fails_its_input_only(tmp_path):
    alice = EXAMPLES / "data" / "books" / "alice_in_wonderland.txt"
    text = MINI.replace('input: {glob: "*.txt"}', f'input: {{paths: ["{alice}", nope.txt]}}')
    recipe = load_recipe(_write(tmp_path, text.replace(", chapters: chapters}", "}").replace(
        "\n  - {id: chapters", "\n#")))
    inputs = list(recipe.inputs())
    assert [recipe.key(p) for p in inputs][1] == "nope.txt@missing"
    result = cu.run(recipe.pipeline, inputs, key=recipe.key, executor="local")
    ok, missing = result.items("titles")
    assert ok.value == "Alice's Adventures in Wonderland"
    assert missing.status is cu.Status.FAILED and missing.cause.error_type == "FileNotFoundError"
    assert result.root_keys()[1] == "nope.txt@missing"


# ---- all problems at once, at their lines --------------------------------------------------------
def test_three_mistakes_give_one_error_naming_all_three(tmp_path):
    text = """\
name: books
domains: {book: null, chapter: book, paragraph: chapter}
steps:
  - {id: chapters, expand: {from: source, stage: "books:split_chapter", into: chapter}}
  - {id: paragraphs, expand: {from: source, stage: "books:split_paragraphs", into: paragraph}}
  - {id: kept, filter: {from: paragraphs, stage: "books:long_enough", batch_size: eight}}
outputs: {chapters: chapters, kept: kept}
input: {glob: "*.txt"}
"""
    problems = _problems(tmp_path, text)
    assert len(problems) == 3, problems
    assert _has(problems, 4, "'books:split_chapter'", "module 'books'", "'split_chapter'",
                "did you mean 'split_chapters'?")
    assert _has(problems, 5, "into: 'paragraph' is not a child of 'book'", "expand into chapter")
    assert _has(problems, 6, "batch_size is 'eight', not a whole number >= 1", "write e.g. batch_size: 8")


POOL = """\
pools:
  stats: {class: "books:WordStats", init: {stopwords: [the]}, replicas: -1}
"""

RULES = {  # case: ((old, new) edits of MINI, line, fragments of the message at that line)
    "unknown top-level key": ([("run:", "colour: blue\nrun:")], 8, "unknown top-level key 'colour'", "use one of"),
    "module not found": ([("books:read_titles", "nosuch_mod:read_titles")], 4,
                         "module 'nosuch_mod'", "'read_titles'", "is not found", "next to the recipe"),
    "attribute missing": ([("books:read_titles", "books:read_title")], 4, "module 'books' has no attribute "
                          "'read_title'", "did you mean 'read_titles'?"),
    "not an import path": ([("books:read_titles", "read_titles")], 4, "is not an import path",
                           "write module:attribute"),
    "into undeclared": ([("into: chapter", "into: chaptr")], 5, "into: 'chaptr' is not a declared domain",
                        "did you mean 'chapter'?"),
    "into not a child": ([("chapter: book}", "chapter: book, page: chapter}"), ("into: chapter", "into: page")],
                         5, "into: 'page' is not a child of 'book'", "expand into chapter"),
    "unknown from": ([("from: source, stage: \"books:read", "from: sauce, stage: \"books:read")], 4,
                     "unknown step id 'sauce'", "did you mean 'source'?"),
    "unknown output step": ([("titles: titles", "titles: title")], 6, "unknown step id 'title'",
                            "did you mean 'titles'?"),
    "unknown pool": ([("stage: \"books:read_titles\"", "pool: shared")], 4, "unknown pool name 'shared'",
                     "declare it under pools:"),
    "missing into": ([(", into: chapter", "")], 5, "missing into:", "e.g. into: chapter"),
    "missing stage": ([(", stage: \"books:read_titles\"", "")], 4, "missing stage:", "pool: NAME"),
    "missing from": ([("from: source, stage: \"books:read", "stage: \"books:read")], 4, "missing from:",
                     "e.g. from: source"),
    "bad batch_size": ([("batch_size: 2", "batch_size: \"eight\"")], 5, "batch_size is 'eight'",
                       "write e.g. batch_size: 8"),
    "bad replicas in a pool": ([("steps:", POOL + "steps:"),
                                ("stage: \"books:read_titles\"", "pool: stats, batch_size: 4")], 4,
                               "pool 'stats': replicas is -1, not a whole number >= 1", "e.g. replicas: 2"),
    "stage setting on a pool step": ([("steps:", POOL.replace("-1", "2") + "steps:"),
                                      ("stage: \"books:read_titles\"", "pool: stats, replicas: 3")], 6,
                                     "replicas is a setting of the pool 'stats'", "set it under pools:"),
    "pool class is a function": ([("steps:", POOL.replace("WordStats", "read_titles").replace("-1", "1")
                                   + "steps:"), ("stage: \"books:read_titles\"", "pool: stats")], 4,
                                 "is not a class", "use stage: for a function"),
    "unknown step param": ([("batch_size: 2", "batchsize: 2")], 5, "unknown key 'batchsize'",
                           "did you mean 'batch_size'?"),
    "duplicate step ids": ([("id: chapters", "id: titles")], 5, "step id 'titles' is used twice (first on line 4)",
                           "give each step its own id"),
    "no outputs": ([("outputs: {titles: titles, chapters: chapters}\n", "")], 1, "no outputs",
                   "e.g. outputs: {books: final_step_id}"),
    "two input kinds": ([("{glob: \"*.txt\"}", "{glob: \"*.txt\", paths: [a.txt]}")], 7,
                        "input must name exactly one of glob, paths, list_file, parquet"),
    "missing list file": ([("{glob: \"*.txt\"}", "{list_file: nope.txt}")], 7, "nope.txt does not exist",
                          "check the path"),
    "no input": ([("input: {glob: \"*.txt\"}\n", "")], 1, "no input", "e.g. input: {glob:"),
    "bad run option": ([("executor: local", "executor: spark")], 8, "executor is 'spark', not 'ray' or 'local'",
                       "write e.g. executor: ray"),
    "unknown run option": ([("executor: local", "executer: local")], 8, "unknown key 'executer'",
                           "did you mean 'executor'?"),
    "step cycle": ([("from: source, stage: \"books:read", "from: back, stage: \"books:read"),
                    ("outputs:", "  - {id: back, map: {from: titles, stage: \"books:read_titles\"}}\noutputs:")],
                   4, "steps 'titles' -> 'back' -> 'titles' read each other in a cycle".replace("'", ""),
                   "a step can only read steps that do not read it back"),
    "domain cycle": ([("book: null, chapter: book", "book: null, chapter: page, page: chapter")], 2,
                     "are each other's parents", "must end at the root"),
    "two roots": ([("chapter: book}", "chapter: book, shelf: null}")], 2, "several root domains (book, shelf)",
                  "give the others a parent"),
    "compiler: reaches no output": ([("outputs:", "  - {id: extra, map: {from: titles, stage: "
                                      "\"books:read_titles\"}}\noutputs:")], 6, "map read_titles reaches no output",
                                    "an entry under outputs:"),
    "compiler: zip of domains": ([("outputs: {titles: titles", "  - {id: both, zip: [titles, chapters]}\n"
                                   "outputs: {titles: both")], 6, "zip of a 'book' port with a 'book/chapter' port",
                                 "use broadcast"),
    "compiler: init on a function": ([("stage: \"books:read_titles\"", "stage: \"books:read_titles\", "
                                       "init: {x: 1}")], 4, "init= is only for classes"),
    "yaml syntax": ([("outputs: {titles: titles,", "outputs: {titles: [titles,")], 6, "not valid YAML",
                    "fix the syntax there"),
    "output name escapes": ([("outputs: {titles: titles", "outputs: {../titles: titles")], 6,
                            "output name '../titles' has '/', a path separator", "use a name such as 'titles'"),
    "timeout_s not positive": ([("batch_size: 2", "batch_size: 2, timeout_s: 0")], 5,
                               "timeout_s is 0, not a number of seconds > 0 or null", "timeout_s: 600"),
}


@pytest.mark.parametrize("case", list(RULES))
def test_each_rule_is_reported_at_its_line_with_a_fix(tmp_path, case):
    edits, line, *fragments = RULES[case]
    text = MINI
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    problems = _problems(tmp_path, text)
    assert _has(problems, line, *fragments), problems


def test_a_stage_that_does_not_import_hides_no_other_problem(tmp_path):
    text = MINI.replace("books:read_titles", "books:nope").replace("batch_size: 2", "batch_size: 0")
    text = text.replace("outputs:", "  - {id: extra, map: {from: chapters, stage: \"books:long_enough\"}}\noutputs:")
    problems = _problems(tmp_path, text)
    assert _has(problems, 4, "no attribute 'nope'") and _has(problems, 5, "batch_size is 0")
    assert _has(problems, 6, "reaches no output")  # compiled though a stage did not import
    assert len(problems) == 3, problems


def test_steps_may_come_in_any_order(tmp_path):
    lines = MINI.splitlines(keepends=True)
    text = "".join(lines[:3] + [lines[4], lines[3]] + lines[5:])
    text = text.replace("from: source, stage: \"books:read_titles\"", "from: chapters, stage: \"books:read_titles\"")
    with pytest.raises(RecipeError) as info:  # a map of chapters is fine; only the read is wrong
        load_recipe(_write(tmp_path, text.replace("titles: titles", "titles: nothing")))
    assert len(info.value.problems) == 1
    recipe = load_recipe(_write(tmp_path, text))
    assert [d.kind for d in recipe.pipeline.nodes] == ["source", "expand", "map"]


# ---- --set overrides -------------------------------------------------------------------------
def test_set_overrides_values_and_list_items():
    recipe = load_recipe(RECIPE, ["run.inflight=8", "steps.6.map.batch_size=16", "steps.stats.map.replicas=3",
                                  "run.output_dir=out/books", "steps.chapters.expand.retries=5"])
    assert recipe.run_options == {"executor": "ray", "input_batch_size": 2, "inflight": 8, "output_dir": "out/books"}
    stats = recipe.data["steps"][6]["map"]
    assert (stats["batch_size"], stats["replicas"]) == (16, 3)
    plan = cu.compile_plan(recipe.pipeline)
    call = next(c for c in plan.calls if c.name == "WordStats")
    assert (call.batch_size, plan.pools[call.pool].replicas) == (16, 3)
    assert next(c for c in plan.calls if c.name == "split_chapters").retries == 5
    assert yaml.safe_load(recipe.text) == recipe.data  # the text says what runs, comments kept
    assert "inflight: 8" in recipe.text and "# back to chapter" in recipe.text


def test_a_bad_override_value_is_checked_like_the_file(tmp_path):
    problems = _problems(tmp_path, MINI, ["steps.1.expand.batch_size=eight", "run.inflight=0"])
    assert _has(problems, 5, "batch_size is 'eight'") and _has(problems, 8, "inflight is 0")


@pytest.mark.parametrize("override, line, fragment", [
    ("run.inflght=8", 8, "unknown path: run has no key 'inflght'; did you mean 'inflight'?"),
    ("steps.7.map.batch_size=4", 4, "steps has no item '7'; use an index from 0 to 1 or a step id"),
    ("steps.0.map.batchsize=4", 4, "unknown path: steps.0.map has no key 'batchsize'"),
    ("name.first=x", 1, "name is a single value, so it has no 'first'"),
    ("run.inflight", 1, "expected KEY.PATH=VALUE"),
    ("pools.stats.replicas=2", 1, "unknown path: pools has no key 'stats'"),
])
def test_a_broken_set_path_is_reported(tmp_path, override, line, fragment):
    problems = _problems(tmp_path, MINI, [override])
    assert _has(problems, line, f"--set {override}", fragment), problems


# ---- sources ------------------------------------------------------------------------------------
def test_glob_is_sorted_relative_to_its_base_and_skips_directories(tmp_path):
    for name in ("b.txt", "a.txt", "sub/c.txt", "sub/a.txt"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(name)
    (tmp_path / "dir.txt").mkdir()
    assert list(sources.glob("*.txt", tmp_path)) == [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    assert [os.path.relpath(p, tmp_path) for p in sources.glob("**/*.txt", tmp_path)] == [
        "a.txt", "b.txt", "sub/a.txt", "sub/c.txt"]


def test_list_file_skips_comments_and_resolves_relative_to_itself(tmp_path):
    (tmp_path / "lists").mkdir()
    listing = tmp_path / "lists" / "inputs.txt"
    listing.write_text("# the corpus\n\n  one.pdf  \n../two.pdf\n   # indented comment\n/abs/three.pdf\n")
    assert list(sources.list_file(listing)) == [str(tmp_path / "lists" / "one.pdf"), str(tmp_path / "two.pdf"),
                                                "/abs/three.pdf"]


def test_paths_join_relative_ones_to_the_base():
    assert list(sources.paths(["a.txt", "/x/b.txt", Path("c/d.txt")], "/base")) == [
        "/base/a.txt", "/x/b.txt", "/base/c/d.txt"]


def _parquet(file: Path, **columns):
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'curate[parquet]')")
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), file, row_group_size=4)


def test_parquet_column_streams_values_in_row_order(tmp_path):
    _parquet(tmp_path / "t.parquet", path=[f"f{i}.txt" for i in range(10)], n=list(range(10)))
    assert list(sources.parquet_column(tmp_path / "t.parquet", "n", batch_rows=3)) == list(range(10))
    with pytest.raises(cu.InputError, match="no column 'missing'"):
        list(sources.parquet_column(tmp_path / "t.parquet", "missing"))


def test_parquet_input_in_a_recipe(tmp_path):
    (tmp_path / "data").mkdir()
    _parquet(tmp_path / "data" / "files.parquet", path=["x.txt", "/abs/y.txt"], n=[1, 2])
    (tmp_path / "data" / "x.txt").write_text("x")
    spec = 'input: {parquet: {path: data/files.parquet, column: path, paths: true}}'
    recipe = load_recipe(_write(tmp_path, MINI.replace('input: {glob: "*.txt"}', spec)))
    assert list(recipe.inputs()) == [str(tmp_path / "data" / "x.txt"), "/abs/y.txt"]
    assert recipe.key(str(tmp_path / "data" / "x.txt")).startswith("x.txt@")  # from the Parquet file's dir
    values = load_recipe(_write(tmp_path, MINI.replace('input: {glob: "*.txt"}', spec.replace(
        "column: path, paths: true", "column: n"))))
    assert list(values.inputs()) == [1, 2] and values.key is None
    problems = _problems(tmp_path, MINI.replace('input: {glob: "*.txt"}', spec.replace("column: path", "column: p")))
    assert _has(problems, 7, "has no column 'p'", "use one of ['path', 'n']")


def test_path_key_is_stable_and_follows_the_content(tmp_path):
    f = tmp_path / "doc.pdf"
    f.write_bytes(b"x" * (3 << 20))  # several hash chunks
    key = sources.path_key(f, base_dir=tmp_path)
    assert re.fullmatch(r"doc\.pdf@[0-9a-f]{16}", key)
    assert sources.path_key(str(f), base_dir=tmp_path) == key == sources.path_key(f, tmp_path)
    assert sources.path_key(f) == f"{f}@{key.split('@')[1]}"  # without a base: the path as given
    f.write_bytes(b"x" * (3 << 20) + b"y")
    assert sources.path_key(f, base_dir=tmp_path) != key
    assert sources.path_key(tmp_path / "gone.pdf", tmp_path) == "gone.pdf@missing"
    assert sources.path_key(tmp_path, tmp_path) == ".@missing"  # a directory cannot be hashed


def test_importing_the_recipe_module_loads_neither_yaml_nor_arrow():
    code = "import sys, curate.recipe; print(sorted(m for m in ('yaml', 'pyarrow') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr
