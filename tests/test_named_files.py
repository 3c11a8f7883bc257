"""Payload files named by a template (`files={"markdown": {"ext": ".md", "name": "{key}/{route}/{key}"}}`):
MinerU-style layouts under `<output>/_files/<column>/`, filled values that can never leave it,
the same names on resume, and the same option from a recipe's outputs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import curate as cu

Doc = cu.Domain("doc")


def markdown(paths):
    return [{"markdown": f"# {p}\n", "route": "../../evil" if "evil" in p else "text_layer"} for p in paths]


def pipeline(name="{key}/{route}/{key}"):
    pipe = cu.Pipeline(Doc)
    pipe.output("docs", pipe.source.map(markdown), files={"markdown": {"ext": "md", "name": name}})
    return pipe


def key(p):
    return f"{p}@0123456789abcdef"


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "_curate" not in p.parts)


def test_files_follow_the_template_and_stay_inside(tmp_path):
    out = tmp_path / "out"
    res = cu.run(pipeline(), ["a/report.pdf", "b/report.pdf", "c/evil.pdf"], executor="local", key=key,
                 output_dir=out)
    md = sorted(p for p in listing(out) if p.endswith(".md"))
    assert len(md) == 3 and all(p.startswith("docs/_files/markdown/") for p in md)
    a, b = (v["markdown"] for v in res.values("docs")[:2])
    assert a != b and Path(a).parts[2:] == (Path(a).parts[2], "text_layer", Path(a).parts[2] + ".md")
    assert Path(a).parts[2].startswith("report-")  # the stem plus 8 hex of the input's key: unique
    evil = res.values("docs")[2]["markdown"]
    assert ".." not in Path(evil).parts and (out / "docs" / evil).read_text() == "# c/evil.pdf\n"
    assert listing(tmp_path) == [f"out/{p}" for p in listing(out)]  # nothing outside the output


def test_resume_rewrites_the_same_names(tmp_path):
    out = tmp_path / "out"
    cu.run(pipeline(), ["a/x.pdf"], executor="local", key=key, output_dir=out)
    before = listing(out)
    cu.run(pipeline(), ["a/x.pdf", "b/y.pdf"], executor="local", key=key, output_dir=out, resume=True)
    after = listing(out)
    assert set(before) <= set(after) and len([p for p in after if p.endswith(".md")]) == 2


@pytest.mark.parametrize("template", ["../{key}", "/abs/{key}", "_x/{key}", "{key}/.hidden", ""])
def test_an_unsafe_template_is_a_plan_problem(template):
    with pytest.raises(cu.PlanError, match="files name template|not a plain file extension|must be"):
        cu.compile_plan(pipeline(template))


def test_a_recipe_declares_output_options(tmp_path):
    (tmp_path / "md_stages.py").write_text(
        "def markdown(paths):\n    return [{'markdown': '# ' + p, 'route': 'text_layer'} for p in paths]\n")
    (tmp_path / "r.yaml").write_text("""
domains: {doc: null}
steps:
  - {id: md, map: {from: source, stage: "md_stages:markdown"}}
outputs:
  docs: {step: md, schema: {route: string}, files: {markdown: {ext: .md, name: "{key}/{route}/{key}"}}}
input: {paths: [a.pdf, b.pdf]}
""")
    from curate.recipe import load_recipe

    recipe = load_recipe(tmp_path / "r.yaml")
    out = tmp_path / "out"
    cu.run(recipe.pipeline, recipe.inputs(), key=recipe.key, executor="local", output_dir=out)
    assert len([p for p in listing(out) if p.endswith(".md")]) == 2
    (tmp_path / "bad.yaml").write_text((tmp_path / "r.yaml").read_text().replace('"{key}/{route}/{key}"', '"../x"'))
    with pytest.raises(cu.PlanError, match=r"bad.yaml:6: output 'docs': files name template '../x'"):
        load_recipe(tmp_path / "bad.yaml")


def test_long_names_that_share_their_first_100_characters_get_their_own_files(tmp_path):
    """Bug: {key} was the whole stem (up to 100 characters) + '-' + 8 hex, and filling a template
    cuts every value to 100 characters: from a 92-character stem on, the digest was cut off and
    two such inputs wrote one file. The stem is now cut to make room for it."""
    from curate.names import MAX_NAME

    stems = ["L" * 150 + "-first", "L" * 150 + "-second", "L" * 90 + "._third"]  # the cut ends in '.'
    kept = ["L" * 91, "L" * 91, "L" * 90]
    res = cu.run(pipeline(), [f"d/{s}.pdf" for s in stems], executor="local", key=key, output_dir=tmp_path / "out")
    files = [v["markdown"] for v in res.values("docs")]
    assert len(set(files)) == 3
    for stem, start, rel in zip(stems, kept, files):
        assert (tmp_path / "out" / "docs" / rel).read_text() == f"# d/{stem}.pdf\n"
        folder, route, name = Path(rel).parts[2:]
        assert name == folder + ".md" and route == "text_layer"
        assert re.fullmatch(f"{start}-[0-9a-f]{{8}}", folder) and len(folder) <= MAX_NAME, folder  # the digest whole


def test_names_keep_unicode_letters_and_fit_the_file_system(tmp_path):
    """`{name}` and `{key}` keep Unicode letters and digits (in NFC) and drop only what is
    unsafe in a path; a name stays within 255 bytes of UTF-8 (cut on a character boundary),
    with room for its extension and the `.tmp` it is written under first."""
    stems = ["Résumé — 論文 (v2) #1", "論文", "Re\u0301sume\u0301", "a\x00b\u202ec:d|e", "\U0001F600" * 100]
    res = cu.run(pipeline("{name}/{key}"), [f"d/{s}.pdf" for s in stems], executor="local", key=key,
                 output_dir=tmp_path / "out")
    files = [v["markdown"] for v in res.values("docs")]
    names = [Path(f).parts[2] for f in files]
    assert names[:4] == ["Résumé_—_論文_(v2)_#1", "論文", "Résumé", "a_b_c_d_e"]
    assert names[4] == "\U0001F600" * 30  # 120 bytes: one filled value's share of a name
    for stem, rel in zip(stems, files):
        assert (tmp_path / "out" / "docs" / rel).read_text() == f"# d/{stem}.pdf\n"
        folder, file = Path(rel).parts[2:]
        stem_part, digest = file[:-len("-01234567.md")], file[-len("-01234567.md"):]
        assert folder.startswith(stem_part) and re.fullmatch(r"-[0-9a-f]{8}\.md", digest), file  # the digest whole
        assert all(len(p.encode()) <= 255 for p in (folder, file + ".tmp"))


def test_filled_names_are_cut_on_a_character_boundary_within_255_bytes():
    from curate.names import MAX_FILE_NAME_BYTES, fill_template

    path = fill_template("{a}_{b}_{c}/{a}_{b}_{c}", {k: "論" * 200 for k in "abc"}, ".tar.gz")
    folder, file = path.split("/")
    assert len(folder.encode()) <= MAX_FILE_NAME_BYTES and len((file + ".tmp").encode()) <= MAX_FILE_NAME_BYTES
    assert file.endswith(".tar.gz") and set(file[:-len(".tar.gz")]) == {"論", "_"}
    assert fill_template("{a}", {"a": "../../etc"}, ".md") == "etc.md"
