"""`curate eval`'s math check rendered with KaTeX (curate.modalities.pdf.eval_math): the symbol
matching on glyphs placed by hand, then in a real headless Chromium with KaTeX: equivalent
spellings that the TeX-key check refuses pass, real differences fail; and the fallback to the
TeX check, said aloud, where KaTeX is absent.

The browser tests skip, naming what is missing, where Chromium, Playwright or KaTeX is not
installed (scripts/setup-browser, scripts/setup-katex), and fail instead where
CURATE_REQUIRE_BROWSER=1 (CI), as tests/browser.py does."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from curate.cli import EXIT_OK, main
from curate.modalities.pdf import eval as ev
from curate.modalities.pdf import eval_math as em
from curate.modalities.pdf.eval_checks import check_math

ROOT = Path(__file__).resolve().parents[1]

# (reference, candidate): the same formula spelled two ways; the TeX-key check refuses all but
# KEY_ACCEPTS (its normalisation already takes those)
EQUIVALENT = [(r"r_{\text{s}}", r"r_{\rm s}"), (r"\frac12", r"\frac{1}{2}"), (r"{a \over b}", r"\frac{a}{b}"),
              (r"\alpha_{i}^{2}", r"\alpha^2_i"), (r"\sin {\left(\alpha \right)}", r"\sin(\alpha)"),
              (r"\mathrm{d}x", r"{\rm d}x"), (r"x\,\cdot\;y", r"x \cdot y"),
              (r"a \le b", r"a \leq b")]
KEY_ACCEPTS = {r"\frac12", r"x\,\cdot\;y"}
# (reference, candidate): a different formula
DIFFERENT = [(r"x^{2}+y", r"y^{2}+x"), (r"e^{i\pi}+1=0", r"e^{i}\pi+1=0"), (r"x^{2}", r"x"),
             (r"x^{2}", r"x_{2}"), (r"x^{2}", r"x2"), (r"\frac{a}{b}", r"\frac{b}{a}"), (r"a+b", r"a-b")]


def _t(math: str) -> dict:
    return {"pdf": "x.pdf", "page": 1, "id": "m", "type": "math", "math": math}


# ---- matching, no browser ------------------------------------------------------------------
def _g(*spec) -> tuple:
    return tuple(em.Glyph(t, x, y) for t, x, y in spec)


def test_neighbours_are_the_nearest_in_each_direction_within_the_tolerance():
    glyphs = _g(("a", 0, 0), ("b", 10, 1), ("c", 0, 20), ("d", 30, -2), ("e", 6, -12))
    up, down, left, right, before = range(5)
    nb = em.neighbours(glyphs)
    assert nb[0][right] == 1 and nb[1][right] == 3 and nb[1][left] == 0 and nb[0][down] == 2 and nb[2][up] == 0
    assert nb[4][left] is None and nb[4][before] == 0  # raised: in no row of a, yet after it
    assert em.rise(glyphs[4], glyphs[0]) == 1 and em.rise(glyphs[2], glyphs[0]) == -1


def test_symbols_match_keeps_neighbours_and_script_heights():
    frac = _g(("a", 10, 0), ("b", 10, 30))  # a over b
    assert em.symbols_match(frac, _g(("b", 50, 80), ("a", 50, 50)))  # moved: the same picture
    assert not em.symbols_match(frac, _g(("b", 10, 0), ("a", 10, 30)))  # b over a
    assert not em.symbols_match(frac, _g(("a", 10, 0), ("b", 30, 0)))  # side by side
    sup = _g(("x", 0, 10), ("2", 12, 0))
    assert not em.symbols_match(sup, _g(("x", 0, 10), ("2", 12, 20)))  # a subscript
    assert em.symbols_match(sup, _g(("y", -20, 10), ("x", 0, 10), ("2", 12, 0)))  # inside a longer one
    assert not em.symbols_match((), sup)


def test_mathml_core_drops_the_annotation_namespaces_and_spaces():
    m = ('<math xmlns="http://www.w3.org/1998/Math/MathML"><semantics><mrow><mi>x</mi> <mo>+</mo></mrow>'
         '<annotation encoding="application/x-tex">x +</annotation></semantics></math>')
    assert em.mathml_core(m) == "<mrow><mi>x</mi><mo>+</mo></mrow>"


def test_the_tex_check_is_used_and_said_when_katex_is_absent(tmp_path, monkeypatch):
    monkeypatch.setenv("CURATE_KATEX", str(tmp_path / "nowhere"))
    check = em.math_check("auto")
    assert check.name == "tex" and "scripts/setup-katex" in check.description and "not rendered" in check.description
    with pytest.raises(em.InputError, match="setup-katex"):
        em.math_check("katex")
    assert em.math_check("tex").name == "tex"
    monkeypatch.setenv("CURATE_CHROMIUM", str(tmp_path / "no-chromium"))
    assert "chromium is not installed" in em.math_check("auto").description


def test_curate_eval_says_it_fell_back_to_tex(tmp_path, monkeypatch, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    monkeypatch.setenv("CURATE_KATEX", str(tmp_path / "nowhere"))
    (tmp_path / "pages").mkdir()
    pq.write_table(pa.Table.from_pylist([{"root_key": "x.pdf@0", "ordinal": 0, "status": ev.PRESENT,
                                          "markdown": "$r_{\\rm s}$"}]), tmp_path / "pages" / "part-0.parquet")
    (tmp_path / "t.jsonl").write_text(json.dumps(_t("r_s")))
    assert main(["eval", str(tmp_path), "--tests", str(tmp_path / "t.jsonl")]) == EXIT_OK
    out = capsys.readouterr().out
    assert "not rendered because KaTeX is not in" in out and "scripts/setup-katex" in out, out


def test_setup_katex_installs_the_version_the_check_pins():
    script = (ROOT / "scripts" / "setup-katex").read_text()
    assert re.search(r"^VERSION=(\S+)", script, re.M).group(1) == em.KATEX_VERSION


# ---- rendered in Chromium ------------------------------------------------------------------
@pytest.fixture(scope="module")
def renderer():
    """A KaTeX renderer with no on-disk cache (each run renders afresh)."""
    lacking = em.missing()
    if lacking:
        if os.environ.get("CURATE_REQUIRE_BROWSER") == "1":
            pytest.fail(f"CURATE_REQUIRE_BROWSER=1 but {lacking}")
        pytest.skip(lacking)
    with em.KatexRenderer(db=None) as r:
        yield r


@pytest.mark.parametrize("ref,cand", EQUIVALENT)
def test_equivalent_spellings_render_the_same(renderer, ref, cand):
    md = f"Text with ${cand}$ inline."
    assert check_math(_t(ref), md)[0] == (ref in KEY_ACCEPTS), "what the TeX-key check makes of it"
    assert em.KatexMath(renderer).check(_t(ref), md) == (True, "")


@pytest.mark.parametrize("ref,cand", DIFFERENT)
def test_different_formulas_do_not_match(renderer, ref, cand):
    ok, why = em.KatexMath(renderer).check(_t(ref), f"$${cand}$$")
    assert not ok and "renders as" in why


def test_a_formula_inside_a_longer_display_matches(renderer):
    assert em.KatexMath(renderer).check(_t("a+b"), r"\[ c = a + b \]")[0]


def test_a_batch_renders_each_formula_once_and_the_cache_answers_after(renderer, tmp_path):
    texs = [f"x_{{{i}}}^{{{i + 1}}}" for i in range(60)] + [r"\frac{"]
    with em.KatexRenderer(db=tmp_path / "cache.sqlite") as r:
        first = r.render(texs + texs)
        assert r.rendered == len(texs)
        assert first[-1].error and not first[0].error and len(first[0].glyphs) >= 3
    with em.KatexRenderer(db=tmp_path / "cache.sqlite") as again:
        assert again.render(texs) == first[:len(texs)] and again.rendered == 0


def test_an_unrenderable_reference_is_compared_as_tex_and_counted(renderer):
    check = em.KatexMath(renderer)
    assert check.check(_t(r"\notacommand{x}"), r"$\notacommand{x}$ and more")[0]  # verbatim: no rendering
    assert check.check(_t(r"\notacommand{x}"), r"$\notacommand{ x }$")[0]  # TeX key, said in the summary
    assert "1 reference(s) KaTeX cannot render" in check.description


def test_evaluate_renders_in_one_batch_and_curate_eval_says_which_check_ran(renderer, tmp_path, capsys, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    monkeypatch.setattr(em, "cache_db", lambda: tmp_path / "renders.sqlite")  # not the user's cache

    tests = [_t(ref) | {"id": f"m{i}", "page": i + 1} for i, (ref, _) in enumerate(EQUIVALENT)]
    rows = [{"root_key": "x.pdf@0", "ordinal": i, "status": ev.PRESENT, "markdown": f"$${cand}$$"}
            for i, (_, cand) in enumerate(EQUIVALENT)]
    check = em.KatexMath(renderer)
    outcomes = ev.evaluate(tests, ev.pages_from_rows(rows), check)
    assert all(o.passed for o in outcomes), [o for o in outcomes if not o.passed]
    (tmp_path / "pages").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "pages" / "part-0.parquet")
    (tmp_path / "t.jsonl").write_text("\n".join(json.dumps(t) for t in tests))
    key_rate = f"{len(KEY_ACCEPTS) / len(EQUIVALENT):.1%}"
    for mode, said, rate in (("katex", "rendered with KaTeX", "100.0%"), ("tex", "not rendered", key_rate)):
        assert main(["eval", str(tmp_path), "--tests", str(tmp_path / "t.jsonl"), "--math", mode]) == EXIT_OK
        out = capsys.readouterr().out
        assert said in out and re.search(rf"^math .*{re.escape(rate)}", out, re.M), out
