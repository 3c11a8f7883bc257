"""YAML recipes: a whole job (levels, steps, outputs, input, run options) in one file.

`load_recipe(path, overrides)` reads a recipe, applies `--set` overrides, imports its stages,
builds the Pipeline with the public API and compiles it. Every problem, in the recipe or found
by the compiler, comes back at once in one `RecipeError`, each as `FILE:LINE: what; how to fix`.

    name: books                                 # optional; default: the file's stem
    description: Books into chapters and paragraphs, with word statistics   # optional, one line
    domains: {book: null, chapter: book, paragraph: chapter}   # child: parent (null = the root)
    pools:                                      # optional: worker pools that several steps share
      stats: {class: "books:WordStats", init: {stopwords: [a, the]}, replicas: 2,
              num_cpus: 0.25, num_gpus: 0, resources: {}, runtime_env: null}
    steps:                                      # any order: each step names the steps it reads
      - {id: titles, map: {from: source, stage: "books:read_titles"}}
      - {id: chapters, expand: {from: source, stage: "books:split_chapters", into: chapter,
                                batch_size: 2}}
      - {id: titles_b, broadcast: {from: titles, onto: chapters}}
      - {id: located, zip: [titles_b, chapters]}
      - {id: paragraphs, expand: {from: located, stage: "books:split_paragraphs", into: paragraph}}
      - {id: kept, filter: {from: paragraphs, stage: "books:long_enough", batch_size: 16}}
      - {id: stats, map: {from: kept, pool: stats, method: __call__, batch_size: 8}}
      - {id: digests, reduce: {from: stats, stage: "books:join_chapter", on_child_failure: suppress}}
      - {id: chapter_digests, zip: [chapters, digests]}
      - {id: tocs, reduce: {from: chapter_digests, stage: "books:table_of_contents"}}
      - {id: titled, zip: [titles, tocs]}
      - {id: books, map: {from: titled, stage: "books:make_book"}}
    outputs: {books: books, paragraphs: stats}  # output name: step id, or a mapping with options:
    #   paragraphs: {step: stats, schema: {words: int64}, files: {text: {ext: .md, name: "{key}/{ordinal}"}}}
    input: {glob: "data/books/*.txt"}           # or paths: [...], list_file: FILE,
                                                #    parquet: {path: FILE, column: NAME, paths: true}
    extensions: [.txt]                          # optional: what `--input DIR` expands to
    run: {executor: ray, input_batch_size: 2, inflight: 2}
    dedup: [{output: books, column: text, threshold: 0.8}]   # optional: after the job (curate.dedup)

Steps: `id` names a step (`source` is the input); `expand`, `map`, `filter` and `reduce` read
`from:` a step and run a stage (`expand` also goes `into:` a child domain; `reduce` may set
`on_child_failure: suppress | drop`); `zip: [ids]` combines steps of one domain; `broadcast:
{from: PARENT, onto: CHILD}` copies a parent's value onto its children. A stage is `stage:
"module:attribute"` with init, batch_size, replicas, num_cpus, num_gpus, retries, resources,
runtime_env, name, timeout_s; or `pool: NAME` with method, batch_size, retries, name, timeout_s. Import paths resolve
at load time, with the recipe's directory and the working directory first on sys.path.

`input:` may be left out when the input is given on the command line (`curate run RECIPE
--input 'docs/*.pdf'`), which replaces the recipe's input (`load_recipe(..., input_given=True)`:
the recipe's own input is then neither required nor checked; `input_optional=True`, what
`curate validate` uses: checked if present). `description:` is the one line `curate recipes`
lists. `extensions:` lists the file name endings the recipe reads (`[.pdf]`; matched in any
case): an `--input DIR` expands to the files under DIR, recursively and sorted, that end so;
without `extensions:`, to every regular file (hidden names skipped, as `**` skips them).

Input paths are relative to the recipe's directory (list-file entries: to the list file's).
`Recipe.inputs()` yields absolute path strings; `Recipe.key` keys each by its path relative to
its input root plus a content hash (`curate.io.sources.path_key`): the root of a glob is the
directory before its first wildcard part (`data/books/*.txt`: `moby_dick.txt@...`), of a
`paths:` entry its parent (`name@hash`), of list-file and Parquet entries that file's
directory. Parquet values that are not paths (no `paths: true`) are yielded as they are and
keyed by input index.

Run options go to `curate.run`: executor, input_batch_size, inflight, max_live_entities,
max_live_bytes, address, ray_init, pipeline_depth, output_dir (as written: relative to where the run starts), resume, progress,
sink_options.

`dedup:` lists corpus-level dedups that `curate run` runs after the job, each the options of
`curate.dedup.dedup` (output, column, threshold, method, shingle, bands, rows, seed, embedding,
eps); they write `<output_dir>/<output>_dedup/` (`Recipe.run_dedup` from Python).

Overrides: `--set run.inflight=8`, `--set pools.stats.replicas=4`, `--set steps.6.map.batch_size=16`
(or by step id: `steps.stats.map.batch_size=16`) set a YAML value at a dotted path. The path
must exist, or end in a key the format allows there (`run.output_dir=out`); else it is an error.

Recipes by name (`curate.recipe.bundled`): `curate run NAME` with a NAME that is not an existing
file, has no path separator and no `.yaml` suffix runs `NAME.yaml` from the first directory on
`CURATE_RECIPES_PATH` that has it, else the one shipped in the package `curate.recipes`. Such a
recipe's stages import from installed packages (`curate.models.dummy:DummyOcr`,
`curate.modalities...`), and it needs `--input` unless its own input is an absolute path.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from curate.errors import CurateError, PlanError
from curate.io import files, sources


class RecipeError(PlanError):
    """The recipe cannot run; `problems` lists every reason as `FILE:LINE: what; how to fix`."""

    def __init__(self, problems: list[str], recipe: str = "the recipe"):
        super().__init__(problems)
        listed = "\n".join(f"  {i}. {p}" for i, p in enumerate(self.problems, 1))
        self.args = (f"{recipe} has {len(self.problems)} problem(s):\n{listed}",)


class Lines:
    """FILE:LINE of any path into a recipe's data (("steps", 1, "map", "batch_size")): the
    line of that value (or of its key), else of the nearest enclosing value."""

    def __init__(self, file: str):
        self.file = file
        self.values: dict[tuple, int] = {}
        self.keys: dict[tuple, int] = {}

    def line(self, path: tuple, key: bool = False) -> int:
        path = tuple(path)
        if key and path in self.keys:
            return self.keys[path]
        while path and path not in self.values:
            path = path[:-1]
        return self.values.get(path, 1)

    def at(self, path: tuple, key: bool = False) -> str:
        return f"{self.file}:{self.line(path, key)}"


@dataclass(frozen=True)
class Recipe:
    """A loaded recipe: its compiled-clean pipeline, input, run options and effective text."""

    name: str
    path: Path
    pipeline: Any  # curate.Pipeline
    run_options: dict  # only the keys the recipe gives, for curate.run(**run_options)
    text: str  # the recipe source after overrides (what the manifest records)
    data: dict  # the parsed recipe, after overrides
    input_spec: dict | None  # None: the recipe has no input: (it comes from the command line)
    base_dir: str  # the recipe's directory, absolute: relative paths start here
    description: str = ""  # the recipe's one-line `description:`
    extensions: tuple[str, ...] = ()  # `extensions:`: the files a directory input expands to (none: all)
    dedup: tuple[dict, ...] = ()  # `dedup:`: corpus-level dedups run after the job (`run_dedup`)

    def run_dedup(self, out, address: str | None = None) -> list:
        """Run the recipe's `dedup:` entries over output directory `out` (after its job), on
        Ray Data when the job ran on a cluster (`address`), else locally; their results."""
        from curate.dedup import dedup

        return [dedup(out, **entry, executor="ray" if address else "local", address=address)
                for entry in self.dedup]

    def inputs(self) -> Iterable[Any]:
        """The input values, read afresh on every call (file inputs: absolute path strings; a
        glob's files are listed now, as a `curate.io.files.FileInputs`)."""
        if self.input_spec is None:
            raise CurateError(f"recipe {self.name!r} has no input: give it on the command line, "
                              "--input PATH|GLOB|DIR (repeatable, e.g. --input 'data/*.pdf'), or add "
                              f"input: {sources.SPEC_EXAMPLE} to {self.path}")
        if "glob" in self.input_spec:
            return files.expand([self.input_spec["glob"]], self.base_dir)
        return sources.open_spec(self.input_spec, self.base_dir)

    @property
    def key(self) -> Callable[[Any], str] | None:
        """Input -> stable root key (the path relative to its input root + a content hash), or
        None when the inputs are not paths (then runs key roots by input index). The root: a
        glob's directory before its first wildcard, a `paths:` entry's parent, the list file's
        or Parquet file's directory."""
        spec = self.input_spec
        if spec is None or not sources.spec_yields_paths(spec):
            return None
        if "glob" in spec:
            return functools.partial(sources.path_key, base_dir=files.glob_root(spec["glob"], self.base_dir))
        if "paths" in spec:
            return _parent_key
        listed = spec["list_file"] if "list_file" in spec else spec["parquet"]["path"]
        return functools.partial(sources.path_key, base_dir=os.path.dirname(os.path.join(self.base_dir, listed)))


def _parent_key(path: str) -> str:
    """`name@hash`: a file's key relative to its own directory."""
    return sources.path_key(path, sources.parent_dir(path))


def load_recipe(path: str | os.PathLike, overrides: list[str] | tuple[str, ...] = (), *,
                input_optional: bool = False, input_given: bool = False) -> Recipe:
    """Read, override, check and build a recipe; raise RecipeError listing every problem.
    `input_optional`: a recipe without `input:` is fine (its `input_spec` is None; the inputs
    will come from elsewhere). `input_given`: the caller supplies the inputs (`--input`), so
    `input:` is optional and, being replaced, not checked."""
    import yaml

    from curate.recipe.check import (
        check,  # imports curate's public API; loaded on first use
    )
    from curate.recipe.overrides import _patched, override

    path = Path(path)
    file = path.name
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RecipeError([f"{file}:1: cannot read the recipe ({exc.strerror or exc}); check the path"],
                          str(path)) from None
    root = _compose(text, file)
    problems, edits = [], []
    for spec in overrides:
        problems += override(root, text, spec, file, edits)
    lines = Lines(file)
    problems += _index(root, lines)
    try:
        data = yaml.SafeLoader("").construct_document(root)
    except yaml.YAMLError as exc:  # a tag such as !!python/object: a recipe holds plain data
        mark = getattr(exc, "problem_mark", None)
        raise RecipeError([f"{file}:{mark.line + 1 if mark else 1}: {getattr(exc, 'problem', exc)}; "
                           "a recipe holds plain YAML data: remove the tag"], str(path)) from None
    base_dir = os.path.dirname(os.path.abspath(path))
    _put_on_sys_path(base_dir, os.getcwd())
    checked = check(data, lines)
    problems += checked.problems
    if "input" not in data and not (input_optional or input_given):
        problems.append(f"{lines.at(())}: no input; say what to read, e.g. input: {sources.SPEC_EXAMPLE}, "
                        f"or give it when running: curate run {file} --input 'data/*.pdf'")
    elif "input" in data and not input_given:
        problems += [f"{lines.at(('input', *p))}: {m}" for p, m in sources.check_spec(data["input"], base_dir)]
    if problems:
        raise RecipeError(sorted(problems, key=lambda p: _line_of(p, file)), str(path))
    return Recipe(str(data.get("name") or path.stem), path, checked.pipeline, checked.run_options,
                  _patched(text, edits, data), data, data.get("input"), base_dir,
                  str(data.get("description") or "").strip(), tuple(data.get("extensions") or ()), checked.dedup)


def _put_on_sys_path(*dirs: str) -> None:
    """Stage import paths resolve against these first (Ray workers inherit the driver's path)."""
    for d in reversed(dirs):
        if d not in sys.path:
            sys.path.insert(0, d)


def _line_of(problem: str, file: str) -> int:
    head = problem[len(file) + 1:].split(":", 1)[0] if problem.startswith(file + ":") else ""
    return int(head) if head.isdigit() else 0


# ---- YAML with line numbers ----------------------------------------------------------------
def _compose(text: str, file: str):
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        what = getattr(exc, "problem", None) or str(exc)
        raise RecipeError([f"{file}:{mark.line + 1 if mark else 1}: not valid YAML: {what}; fix the syntax "
                           "there (indentation, a missing ':' or an unclosed bracket or quote)"], file) from None
    if not isinstance(root, yaml.MappingNode):
        line = root.start_mark.line + 1 if root is not None else 1
        raise RecipeError([f"{file}:{line}: a recipe is a mapping of sections; start with "
                           "name:, domains:, steps:, outputs:, input: (see curate.recipe)"], file)
    return root


def _index(node, lines: Lines, path: tuple = (), above: frozenset = frozenset()) -> list[str]:
    """Record the line of every value and key; report keys given twice in one mapping."""
    import yaml

    if id(node) in above:  # an alias that contains itself
        return []
    lines.values[path] = node.start_mark.line + 1
    problems, first, above = [], {}, above | {id(node)}
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key, line = getattr(k, "value", None), k.start_mark.line + 1
            if key in first:
                problems.append(f"{lines.file}:{line}: key {key!r} is given twice (first on line "
                                f"{first[key]}); keep one")
            first.setdefault(key, line)
            lines.keys[path + (key,)] = line
            problems += _index(v, lines, path + (key,), above)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            problems += _index(v, lines, path + (i,), above)
    return problems


# ---- --set overrides ---------------------------------------------------------------------------
