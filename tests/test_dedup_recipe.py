"""A recipe's `dedup:` key: checked with the rest of the recipe (every bad entry named, with its
line and fix), and run by `curate run` after the job, writing OUT/<output>_dedup/."""

from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow", reason="curate dedup reads and writes Parquet (pyarrow)")

from dedup_corpus import corpus  # noqa: E402

from curate.cli import main  # noqa: E402
from curate.io.read import read_table  # noqa: E402
from curate.recipe import RecipeError, load_recipe  # noqa: E402

RECIPE = """\
name: dedup_docs
domains: {{doc: null}}
steps:
  - {{id: docs, map: {{from: source, stage: "dedup_corpus:text_document"}}}}
outputs: {{documents: docs}}
input: {{parquet: {{path: texts.parquet, column: text}}}}
run: {{executor: local}}
dedup:
{dedup}
"""


def write_recipe(tmp_path, dedup: str, docs: list[str]):
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"text": docs}), tmp_path / "texts.parquet")
    path = tmp_path / "dedup_docs.yaml"
    path.write_text(RECIPE.format(dedup=dedup))
    return path


def test_curate_run_runs_the_recipe_dedup(tmp_path, capsys):
    docs, pairs, _ = corpus(12, seed=7)
    path = write_recipe(tmp_path, "  - {output: documents, column: markdown, threshold: 0.8}", docs)
    out = tmp_path / "out"
    assert main(["run", str(path), "--output", str(out), "--no-progress"]) == 0
    assert f"{len(pairs)} duplicates" in capsys.readouterr().out
    rows = read_table(out, "documents_dedup").to_pylist()
    assert len(rows) == len(docs) and sum(not r["keep"] for r in rows) == len(pairs)


def test_bad_dedup_entries_are_all_named(tmp_path):
    path = write_recipe(tmp_path, "  - {output: pages, column: markdown}\n"
                                  "  - {output: documents, column: markdown, threshold: 3, treshold: 0.8}\n"
                                  "  - just text", ["a"])
    with pytest.raises(RecipeError) as err:
        load_recipe(path)
    text = str(err.value)
    assert "dedup_docs.yaml:9: dedup: output 'pages' is not one of the recipe's outputs (documents)" in text
    assert "dedup_docs.yaml:10: dedup: unknown key 'treshold'; did you mean 'threshold'?" in text
    assert "dedup: threshold 3: give an estimated Jaccard in (0, 1]" in text
    assert "dedup_docs.yaml:11: a dedup entry is a mapping, not str" in text
    assert "4 problem(s)" in text
