"""Recipes run by name: the lookup (CURATE_RECIPES_PATH, then the package curate.recipes),
`curate recipes`, `curate run NAME --input ...` on a recipe of model stand-ins, the optional
`input:` and the errors that say how to give one."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from curate.models.dummy import DummyLayout

import curate as cu
from curate.cli import EXIT_ERROR, EXIT_OK, main
from curate.recipe import RecipeError, bundled, load_recipe

ROOT = Path(__file__).resolve().parent.parent
LOCAL = ["--executor", "local", "--no-progress"]
JOIN = "bundled_test_join"  # a helper module next to the recipe: its directory is on sys.path
MAX_REGIONS = 4
RECIPE = f"""\
name: regions_ocr
description: Pages to regions (stand-in layout), their text (stand-in OCR), joined per page
domains: {{page: null, region: page}}
pools:
  stack: {{class: "curate.models.dummy:DummyStack", init: {{model: none, device: cpu, max_regions: {MAX_REGIONS}}},
          replicas: 2}}
steps:
  - {{id: regions, expand: {{from: source, pool: stack, method: layout, into: region, batch_size: 3}}}}
  - {{id: text, map: {{from: regions, pool: stack, method: ocr, batch_size: 4}}}}
  - {{id: pages, reduce: {{from: text, stage: "{JOIN}:join"}}}}
outputs: {{pages: pages, regions: text, boxes: regions}}
run: {{input_batch_size: 2, inflight: 2}}
"""  # no input: the user gives it with --input


def _recipe(directory: Path, name: str, text: str = RECIPE) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.yaml").write_text(text)
    (directory / f"{JOIN}.py").write_text("def join(groups):\n    return ['\\n'.join(g) for g in groups]\n")
    return directory / f"{name}.yaml"


def _fresh_package(monkeypatch, where: Path, package: str) -> None:
    """Make `package`, found at `where` (a directory or a zip), the bundled recipes package; a
    copy imported by an earlier test is forgotten."""
    monkeypatch.syspath_prepend(str(where))
    monkeypatch.delitem(sys.modules, package, raising=False)
    monkeypatch.setattr(bundled, "PACKAGE", package)


@pytest.fixture
def search(tmp_path, monkeypatch):
    """Two recipe directories on CURATE_RECIPES_PATH (searched in this order), and a stand-in for
    the bundled package, so the tests do not depend on which recipes curate ships."""
    first, second = tmp_path / "first", tmp_path / "second"
    _recipe(first, "regions_ocr")
    _recipe(second, "regions_ocr", RECIPE.replace("description: Pages", "description: SHADOWED Pages"))
    _recipe(second, "plain", RECIPE.replace("description: Pages to regions (stand-in layout), their text "
                                            "(stand-in OCR), joined per page\n", ""))
    pkg = tmp_path / "site" / "fake_bundled_recipes"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "shipped.yaml").write_text(RECIPE.replace("regions_ocr", "shipped").replace("Pages to", "Shipped, pages to"))
    (pkg / "plain.yaml").write_text(RECIPE)  # shadowed by second/plain.yaml
    (pkg / "_draft.yaml").write_text(RECIPE)  # not a recipe name: starts with _
    (pkg / "notes.txt").write_text("not a recipe")
    _fresh_package(monkeypatch, tmp_path / "site", "fake_bundled_recipes")
    monkeypatch.setenv(bundled.ENV_VAR, f"{first}{os.pathsep}{second}")
    monkeypatch.chdir(tmp_path)
    return first, second, pkg


# ---- the lookup ------------------------------------------------------------------------------------
def test_a_name_is_found_on_the_search_path_first_then_in_the_package(search):
    first, second, pkg = search
    found = bundled.find("regions_ocr")
    assert found.path == first / "regions_ocr.yaml" and found.origin == str(first) and not found.bundled
    assert bundled.find("plain").path == second / "plain.yaml"  # the path replaces the bundled one
    shipped = bundled.find("shipped")
    assert shipped.bundled and shipped.path == pkg / "shipped.yaml"
    assert bundled.find("_draft") is None and bundled.find("notes") is None and bundled.find("nope") is None
    assert [f.name for f in bundled.available()] == ["plain", "regions_ocr", "shipped"]
    assert bundled.resolve("shipped") == (pkg / "shipped.yaml", shipped)


def test_an_existing_file_or_a_path_is_never_a_name(search):
    first, _, _ = search
    Path("regions_ocr").write_text(RECIPE)  # a file in the working directory wins over the name
    assert bundled.resolve("regions_ocr") == (Path("regions_ocr"), None)
    for arg in ("sub/regions_ocr", "regions_ocr.yaml", "x.yml", str(first / "regions_ocr.yaml")):
        assert bundled.resolve(arg) == (Path(arg), None)
        assert not bundled.looks_like_name(arg)


def test_an_unknown_name_lists_what_there_is(search, monkeypatch):
    with pytest.raises(cu.CurateError, match=r"'region_ocr' is neither a recipe file nor the name of a recipe; "
                                             r"did you mean 'regions_ocr'\?"):
        bundled.resolve("region_ocr")
    with pytest.raises(cu.CurateError, match="the recipes runnable by name are: plain, regions_ocr, shipped"):
        bundled.resolve("zzz")
    monkeypatch.delenv(bundled.ENV_VAR)
    monkeypatch.setattr(bundled, "PACKAGE", "curate.recipes")
    if not bundled.available():  # nothing shipped yet
        with pytest.raises(cu.CurateError, match=r"no recipe is bundled yet; .* CURATE_RECIPES_PATH"):
            bundled.resolve("zzz")


def test_the_real_package_is_searched_with_importlib_resources():
    shipped = sorted(p.stem for p in (ROOT / "recipes").glob("*.yaml") if not p.name.startswith(("_", ".")))
    assert [f.name for f in bundled._bundled()] == shipped
    assert all(f.bundled and f.path.is_file() for f in bundled._bundled())
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"curate.recipes" = ["*.yaml"]' in pyproject  # shipped in the wheel as package data


def test_recipes_in_a_zipped_package_are_extracted_to_a_real_file(tmp_path, monkeypatch):
    archive = tmp_path / "site.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zipped_recipes/__init__.py", "")
        z.writestr("zipped_recipes/inzip.yaml", RECIPE.replace("Pages to", "Zipped, pages to"))
    _fresh_package(monkeypatch, archive, "zipped_recipes")
    monkeypatch.delenv(bundled.ENV_VAR, raising=False)
    (found,) = bundled.available()
    assert found.name == "inzip" and found.bundled and found.path.is_file()
    assert bundled.description(found.path).startswith("Zipped, pages to")


# ---- curate recipes ---------------------------------------------------------------------------------
def test_curate_recipes_lists_one_line_per_name_with_its_description(search, capsys):
    first, second, _ = search
    assert main(["recipes"]) == EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    plain, regions, shipped = lines
    assert plain.startswith("plain ") and "(no description: add description: to the recipe)" in plain
    assert f"[{second / 'plain.yaml'}; replaces the bundled one]" in plain
    assert regions.startswith("regions_ocr  Pages to regions (stand-in layout)") and f"[{first}" in regions
    assert "SHADOWED" not in regions
    assert shipped.startswith("shipped      Shipped, pages to regions") and "[" not in shipped  # bundled


def test_curate_recipes_with_none_says_so(tmp_path, monkeypatch, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setattr(bundled, "_bundled", list)
    monkeypatch.setenv(bundled.ENV_VAR, f"{empty}{os.pathsep}{tmp_path / 'missing'}")
    assert main(["recipes"]) == EXIT_OK
    out, err = capsys.readouterr()
    assert out.startswith("no recipes: none is bundled yet and none on CURATE_RECIPES_PATH")
    assert "curate run NAME --input" in out
    assert f"{tmp_path / 'missing'} (on CURATE_RECIPES_PATH) is not a directory" in err


# ---- curate run / validate NAME -------------------------------------------------------------------
def _pages(tmp_path: Path, n: int = 5) -> list[Path]:
    data = tmp_path / "docs"
    data.mkdir(exist_ok=True)
    for i in range(n):
        (data / f"doc{i}.txt").write_text(f"page {i}")
    return sorted(data.glob("*.txt"))


def test_run_by_name_with_input_writes_every_region_in_order(search, tmp_path, capsys):
    docs = _pages(tmp_path)
    out = tmp_path / "out"
    assert main(["run", "regions_ocr", "--input", str(tmp_path / "docs" / "*.txt"), "--output", str(out),
                 *LOCAL]) == EXIT_OK
    assert f"wrote {out}" in capsys.readouterr().out
    regions = sorted(pq.read_table(out / "regions").to_pylist(), key=lambda r: r["lineage"])
    pages = sorted(pq.read_table(out / "pages").to_pylist(), key=lambda r: r["lineage"])
    boxes = sorted(pq.read_table(out / "boxes").to_pylist(), key=lambda r: r["lineage"])
    expected = DummyLayout(max_regions=MAX_REGIONS).layout([str(p) for p in docs])
    assert [r["lineage"] for r in regions] == [[i, k] for i, rs in enumerate(expected) for k in range(len(rs))]
    assert len({len(rs) for rs in expected}) > 1  # pages expand into different numbers of regions
    for r in regions:  # each text is the OCR of its own region: "ocr:<page path>/<region>:<digest>"
        i, k = r["lineage"]
        assert r["status"] == "present" and r["value"].startswith(f"ocr:{docs[i]}/{k}:")
    assert [p["value"] for p in pages] == ["\n".join(r["value"] for r in regions if r["lineage"][0] == i)
                                           for i in range(len(docs))]
    assert [(b["kind"], b["order"], b["id"]) for b in boxes] == [
        (r["kind"], r["order"], r["id"]) for rs in expected for r in rs]
    # a glob's files are keyed relative to its root (docs/), wherever the run starts
    assert all(p["root_key"].startswith(docs[p["lineage"][0]].name + "@") for p in pages)


def test_a_recipe_without_input_needs_input_and_says_how_to_give_it(search, tmp_path, capsys):
    assert main(["run", "regions_ocr", "--output", str(tmp_path / "out"), *LOCAL]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert "curate run: recipe 'regions_ocr' has no input" in err
    assert "curate run regions_ocr --input 'docs/*.pdf' --output out/" in err
    assert not (tmp_path / "out").exists()
    recipe = load_recipe(search[0] / "regions_ocr.yaml", input_optional=True)
    assert recipe.input_spec is None and recipe.key is None
    with pytest.raises(cu.CurateError, match="has no input: give it on the command line, --input PATH"):
        recipe.inputs()
    with pytest.raises(RecipeError, match=r"regions_ocr.yaml:1: no input; .* or give it when running: "
                                          r"curate run regions_ocr.yaml --input"):
        load_recipe(search[0] / "regions_ocr.yaml")


def test_a_recipe_found_by_name_needs_input_unless_its_own_is_absolute(search, tmp_path, capsys):
    first, _, _ = search
    docs = _pages(tmp_path, 3)
    _recipe(first, "relative", RECIPE + 'input: {glob: "docs/*.txt"}\n')
    assert main(["run", "relative", "--output", str(tmp_path / "o1"), *LOCAL]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert f"recipe 'relative' was found by name ({first / 'relative.yaml'}) and its input (glob) is a relative " \
           f"path, which would be read relative to {first}" in err
    assert "curate run relative --input 'docs/*.pdf' --output out/" in err and "absolute path" in err
    _recipe(first, "absolute", RECIPE + f'input: {{glob: "{tmp_path}/docs/*.txt"}}\n')
    assert main(["run", "absolute", "--output", str(tmp_path / "o2"), *LOCAL]) == EXIT_OK
    assert pq.read_table(tmp_path / "o2" / "pages").num_rows == len(docs)
    # the same relative recipe given by its path reads its input relative to its directory
    (first / "docs").mkdir()
    (first / "docs" / "x.txt").write_text("x")
    assert main(["run", str(first / "relative.yaml"), "--output", str(tmp_path / "o3"), *LOCAL]) == EXIT_OK
    assert pq.read_table(tmp_path / "o3" / "pages").num_rows == 1


def test_input_given_replaces_an_input_that_would_not_check(search, tmp_path, capsys):
    first, _, _ = search
    docs = _pages(tmp_path, 2)
    _recipe(first, "listed", RECIPE + "input: {list_file: missing.txt}\n")
    assert main(["validate", str(first / "listed.yaml")]) == EXIT_ERROR  # checked when it is the input
    assert "missing.txt does not exist" in capsys.readouterr().err
    assert main(["run", "listed", "--input", str(docs[0]), "--input", str(docs[1]),
                 "--output", str(tmp_path / "o"), *LOCAL]) == EXIT_OK
    assert pq.read_table(tmp_path / "o" / "pages").num_rows == 2


def test_validate_by_name(search, capsys):
    first, _, _ = search
    assert main(["validate", "regions_ocr"]) == EXIT_OK
    out, err = capsys.readouterr()
    assert out.startswith(f"regions_ocr ({first / 'regions_ocr.yaml'}): ok (3 calls on 2 pools")
    assert "note: recipe 'regions_ocr' has no input" in err
    assert main(["validate", "nope_recipe"]) == EXIT_ERROR
    assert "'nope_recipe' is neither a recipe file nor the name of a recipe" in capsys.readouterr().err


# ---- description: ----------------------------------------------------------------------------------
def test_description_is_one_line_of_text(tmp_path):
    path = _recipe(tmp_path, "d")
    assert load_recipe(path, input_optional=True).description.startswith("Pages to regions")
    for bad in ("description: 12", 'description: "two\\nlines"', "description: ''"):
        path.write_text(RECIPE.replace(RECIPE.splitlines()[1], bad))
        with pytest.raises(RecipeError, match=r"d.yaml:2: the recipe: description is .*, not one line of text; "
                                              "write e.g. description: "):
            load_recipe(path, input_optional=True)
    path.write_text(RECIPE.replace("description:", "descripton:"))
    with pytest.raises(RecipeError, match="unknown top-level key 'descripton'; did you mean 'description'"):
        load_recipe(path, input_optional=True)


def test_the_listing_imports_no_stage_and_set_overrides_the_description(tmp_path, monkeypatch, capsys):
    d = tmp_path / "r"
    _recipe(d, "broken", RECIPE.replace("curate.models.dummy:DummyStack", "no_such_module:X"))
    monkeypatch.setenv(bundled.ENV_VAR, str(d))
    monkeypatch.setattr(bundled, "_bundled", list)
    assert main(["recipes"]) == EXIT_OK  # a recipe whose stages do not import is still listed
    assert capsys.readouterr().out.startswith("broken  Pages to regions")
    good = _recipe(tmp_path / "g", "good")
    assert load_recipe(good, ["description=Another line"], input_optional=True).description == "Another line"


def test_importing_the_lookup_loads_no_yaml():
    code = "import sys, curate.recipe.bundled; print('yaml' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert out.stdout.strip() == "False", out.stderr


def test_every_bundled_recipe_validates_by_name(capsys, monkeypatch):
    """What ships must check clean: each bundled recipe's stages import, its pipeline compiles."""
    from curate.recipe import bundled

    monkeypatch.delenv(bundled.ENV_VAR, raising=False)
    names = [f.name for f in bundled.available() if f.bundled]
    assert {"pdf_to_markdown", "pdf_to_markdown_mineru25", "pdf_to_markdown_mineru4", "pdf_to_markdown_routed",
            "video_captions", "video_captions_vllm"} <= set(names)
    for name in names:
        assert main(["validate", name]) == EXIT_OK, capsys.readouterr().err
