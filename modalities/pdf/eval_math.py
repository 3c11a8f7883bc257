"""`curate eval`'s math check as olmOCR-Bench runs it: the test's formula and each formula on the
page are rendered with KaTeX in a headless Chromium, and the page passes when one of its formulas
shows the reference. Two renderings are the same formula when

(a) the reference's MathML (KaTeX's <semantics> without its TeX <annotation>, whitespace removed)
    is contained in the candidate's, or else
(b) every rendered symbol of the reference can be given its own equal symbol of the candidate such
    that, in each of the four directions, the reference symbol's nearest neighbour (centres within
    NEIGHBOUR_TOL_PX of the same row or column) is matched by the candidate symbol's nearest
    neighbour there: equal text, and the same symbol where that neighbour is assigned already
    (found by backtracking over the candidates), and, this module's one addition, each symbol as
    high against the nearest symbol to its left (above, level or below, beyond the tolerance) as
    its match is: olmOCR-Bench's four neighbours alone cannot tell `x^{2}` from `x_{2}` or `x2`,
    whose script is in no row or column of the base.

So `r_{\\text{s}}` and `r_{\\rm s}`, `\\frac12` and `\\frac{1}{2}`, `{a \\over b}` and
`\\frac{a}{b}` match, and x and y swapped, a missing exponent or a subscript for a superscript do
not. A formula that is the test's TeX verbatim passes without rendering, as in olmOCR-Bench.

Rendering is batched: one browser, one page, hundreds of formulas an evaluate call, each
rendering cached by a hash of its TeX and the KaTeX version (in memory, and on disk in
CACHE_DB), so an eval of a few thousand formulas takes seconds and a second one less. KaTeX
comes from scripts/setup-katex (the npm package, pinned to KATEX_VERSION, with its mhchem extension
for \\ce and MACROS for LaTeX commands it lacks); Chromium is Debian's,
driven by Playwright as tests/browser.py does. Without either, `math_check("auto")` gives the
TeX-key comparison of eval_checks.check_math and says why.

Unlike olmOCR-Bench, the KaTeX fonts are loaded (the page is a file next to katex.min.css), so
positions do not depend on which system fonts the machine has.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import sqlite3
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from curate.errors import InputError

KATEX_VERSION = "0.16.22"  # scripts/setup-katex installs this one
FONT_PX = 24  # the size formulas are rendered at (olmOCR-Bench's); NEIGHBOUR_TOL_PX is relative to it
NEIGHBOUR_TOL_PX = 5.0  # a neighbour's centre this close to a symbol's row (column) is in that row
BEFORE_MIN_PX = 1.0  # a glyph is "before" another when its centre is this far to the left: stacked ones are not
MAX_STEPS = 200_000  # backtracking steps before a pair is called different: bounds a pathological formula
# LaTeX commands KaTeX lacks, defined as what they show (olmOCR-Bench drops a test whose reference
# KaTeX refuses; here the reference renders): \mbox is LaTeX's text box
MACROS = {"\\mbox": "\\text{#1}"}
RENDER_BATCH = 400  # formulas in one evaluate call: a few MB of DOM at most
ZERO_WIDTH = "\u200b"  # KaTeX's strut text, not a symbol
DEBIAN_BINARY = "/usr/lib/chromium/chromium"  # what /usr/bin/chromium (a launcher script) runs
MODES = ("auto", "katex", "tex")


@dataclass(frozen=True, slots=True)
class Glyph:
    """One rendered symbol: its text and the centre of its box, in px."""

    text: str
    x: float
    y: float


@dataclass(frozen=True, slots=True)
class Rendered:
    """A formula as KaTeX draws it: the MathML core and the symbols, or why it could not."""

    mathml: str = ""
    glyphs: tuple[Glyph, ...] = ()
    error: str = ""

    def __post_init__(self):
        if self.error and (self.mathml or self.glyphs):
            raise ValueError("a Rendered with an error holds no rendering")


# ---- comparison: pure functions of two renderings --------------------------------------------
def same_formula(reference: Rendered, candidate: Rendered) -> bool:
    """Whether `candidate` shows `reference` (olmOCR-Bench's rule, see the module docstring)."""
    if reference.error or candidate.error:
        return False
    if reference.mathml and reference.mathml in candidate.mathml:
        return True
    return symbols_match(reference.glyphs, candidate.glyphs)


@functools.lru_cache(maxsize=4096)  # a page's formula is compared with each reference on the page
def neighbours(glyphs: tuple[Glyph, ...], tol: float = NEIGHBOUR_TOL_PX) -> tuple[tuple, ...]:
    """For each glyph, the indexes of its nearest glyphs (up, down, left, right, before), None where
    there is none. The first four are olmOCR-Bench's: nearest along the direction among glyphs whose
    centre is within `tol` of the glyph's column (up/down) or row (left/right). `before` is this
    module's one addition: the nearest glyph to the left in any row (ties: the nearest vertically),
    so that a script's height against its base can be compared (`rise`)."""
    out = []
    for i, g in enumerate(glyphs):
        best = [None] * 5
        dist = [(0.0, 0.0)] * 5
        for j, o in enumerate(glyphs):
            if i == j:
                continue
            dx, dy = o.x - g.x, o.y - g.y
            for d, (along, across) in enumerate(((-dy, dx), (dy, dx), (-dx, dy), (dx, dy))):
                if along > 0 and abs(across) <= tol and (best[d] is None or along < dist[d][0]):
                    best[d], dist[d] = j, (along, 0.0)
            if -dx > BEFORE_MIN_PX and (best[4] is None or (-dx, abs(dy)) < dist[4]):
                best[4], dist[4] = j, (-dx, abs(dy))
        out.append(tuple(best))
    return tuple(out)


def rise(g: Glyph, base: Glyph, tol: float = NEIGHBOUR_TOL_PX) -> int:
    """Whether `g` sits above (1), level with (0) or below (-1) `base`, beyond `tol`."""
    return 1 if g.y < base.y - tol else (-1 if g.y > base.y + tol else 0)


def symbols_match(ref: tuple[Glyph, ...], cand: tuple[Glyph, ...]) -> bool:
    """Every reference glyph assigned its own equal candidate glyph, each direction's neighbour
    kept and each script as high against the glyph before it (module docstring, rule b); False
    also when the search passes MAX_STEPS."""
    if not ref or Counter(g.text for g in ref) - Counter(g.text for g in cand):
        return False  # a symbol of the reference that the candidate lacks: no assignment exists
    ref_nb, cand_nb = neighbours(ref), neighbours(cand)

    def fits(i: int, c: int) -> bool:  # what holds whatever else is assigned
        for d in range(5):
            r, h = ref_nb[i][d], cand_nb[c][d]
            if r is not None and (h is None or cand[h].text != ref[r].text):
                return False
        r, h = ref_nb[i][4], cand_nb[c][4]
        return r is None or rise(ref[i], ref[r]) == rise(cand[c], cand[h])

    options = []
    for i, g in enumerate(ref):
        fit = [c for c, h in enumerate(cand) if h.text == g.text and fits(i, c)]
        if not fit:
            return False
        options.append(fit)
    assigned: dict[int, int] = {}
    used: set[int] = set()
    steps = 0

    def consistent(i: int, c: int) -> bool:
        for d in range(5):
            r = ref_nb[i][d]
            if r is not None and r in assigned and assigned[r] != cand_nb[c][d]:
                return False
        return True

    def place(i: int) -> bool:
        nonlocal steps
        if i == len(ref):
            return True
        for c in options[i]:
            steps += 1
            if steps > MAX_STEPS:
                return False
            if c in used or not consistent(i, c):
                continue
            assigned[i] = c
            used.add(c)
            if place(i + 1):
                return True
            used.discard(c)
            del assigned[i]
        return False

    return place(0)


def mathml_core(mathml: str) -> str:
    """KaTeX's <math> element reduced to what it shows: the <semantics> children but the TeX
    <annotation>, namespaces dropped, all whitespace removed."""
    import re
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(mathml)
    except ET.ParseError:
        return re.sub(r"\s+", "", mathml)
    for el in root.iter():
        el.tag = el.tag.split("}", 1)[-1]
        el.attrib = {k.split("}", 1)[-1]: v for k, v in el.attrib.items()}
    sem = root.find("semantics")
    parts = [ET.tostring(c, encoding="unicode") for c in sem if c.tag != "annotation"] if sem is not None \
        else [ET.tostring(root, encoding="unicode")]
    return re.sub(r"\s+", "", "".join(parts))


# ---- where KaTeX and Chromium are ------------------------------------------------------------
def katex_dir() -> Path:
    """Where scripts/setup-katex puts KaTeX: $CURATE_KATEX, else ~/.cache/curate/katex-VERSION."""
    if os.environ.get("CURATE_KATEX"):
        return Path(os.environ["CURATE_KATEX"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "curate" / f"katex-{KATEX_VERSION}"


def chromium_executable() -> str | None:
    """The Chromium to drive: $CURATE_CHROMIUM, else `chromium` on PATH (Debian's binary behind its launcher)."""
    if os.environ.get("CURATE_CHROMIUM"):
        chosen = os.environ["CURATE_CHROMIUM"]
        return chosen if os.access(chosen, os.X_OK) else None
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found and Path(found).resolve() == Path("/usr/bin/chromium") and os.access(DEBIAN_BINARY, os.X_OK):
        return DEBIAN_BINARY
    return found


def missing() -> str:
    """What the KaTeX check lacks here, and how to get it ("" when it can run)."""
    why = []
    try:
        import playwright  # noqa: F401
    except ImportError:
        why.append("playwright is not installed (pip install playwright)")
    if chromium_executable() is None:
        why.append("chromium is not installed (scripts/setup-browser, or set CURATE_CHROMIUM to a Chromium binary)")
    if not (katex_dir() / "katex.min.js").is_file():
        why.append(f"KaTeX is not in {katex_dir()} (scripts/setup-katex)")
    return "; ".join(why)


# ---- rendering -------------------------------------------------------------------------------
_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><base href="{base}">
<link rel="stylesheet" href="katex.min.css"><script src="katex.min.js"></script><script src="mhchem.min.js"></script>
<style>body{{margin:0}} .f{{font-size:{px}px;padding:0;margin:8px 0;display:inline-block}}</style>
</head><body></body></html>"""

# Renders a list of TeX strings, waits for the KaTeX fonts, then measures every leaf span that
# shows something (multi-character spans split into equal-width characters, as a symbol each).
_RENDER_JS = """async (texs) => {
  const out = [], boxes = [];
  for (const tex of texs) {
    const div = document.createElement('div');
    div.className = 'f';
    document.body.appendChild(div);
    boxes.push(div);
    try { katex.render(tex, div, {displayMode: true, throwOnError: true, macros: {...MACROS}}); out.push(null); }
    catch (e) { out.push({error: String(e && e.message || e)}); }
  }
  await document.fonts.ready;
  for (let k = 0; k < texs.length; k++) {
    const div = boxes[k];
    if (out[k] === null) {
      const m = div.querySelector('.katex-mathml math');
      const glyphs = [];
      for (const s of div.querySelectorAll('.katex-html span')) {
        if (s.children.length || !/\\S/.test(s.textContent)) continue;
        const t = s.textContent.trim(), r = s.getBoundingClientRect(), n = [...t].length;
        [...t].forEach((c, i) => glyphs.push([c, r.x + r.width * (i + 0.5) / n, r.y + r.height / 2]));
      }
      out[k] = {mathml: m ? m.outerHTML : '', glyphs};
    }
    div.remove();
  }
  return out;
}"""


def _key(tex: str) -> str:
    setup = f"katex {KATEX_VERSION} {FONT_PX}px display mhchem {json.dumps(MACROS, sort_keys=True)}"
    return hashlib.sha1(f"{setup}\n{tex}".encode()).hexdigest()


def _decode(raw: dict) -> Rendered:
    if raw.get("error"):
        return Rendered(error=raw["error"])
    glyphs = tuple(Glyph(t, round(x, 2), round(y, 2)) for t, x, y in raw["glyphs"] if t != ZERO_WIDTH)
    return Rendered(mathml_core(raw["mathml"]), glyphs)


def cache_db() -> Path:
    """The on-disk cache of renderings (one row per TeX hash), beside KaTeX's own cache folder."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "curate" / "katex-renders.sqlite"


class _SharedBrowser:
    """One headless Chromium for the process, shared by every renderer: Playwright's sync API
    drives one at a time per thread. Started by the first page asked for, ended with the last."""

    def __init__(self):
        self._pw = self._browser = None
        self._pages = 0

    def new_page(self):
        """A fresh page of the shared browser (started now if it is not running)."""
        if self._browser is None:
            from playwright.sync_api import sync_playwright

            executable = chromium_executable()
            if executable is None:
                raise InputError("chromium is not installed: scripts/setup-browser, or set CURATE_CHROMIUM")
            self._pw = sync_playwright().start()
            try:
                self._browser = self._pw.chromium.launch(executable_path=executable, headless=True,
                                                         chromium_sandbox=False)
            except BaseException:
                self._pw.stop()
                self._pw = None
                raise
        page = self._browser.new_page(viewport={"width": 1600, "height": 900})
        self._pages += 1
        return page

    def release(self) -> None:
        """One page closed; the browser ends when none is left."""
        self._pages -= 1
        if self._pages == 0 and self._browser is not None:
            self._browser.close()
            self._pw.stop()
            self._pw = self._browser = None


_BROWSER = _SharedBrowser()


class KatexRenderer:
    """KaTeX in one headless Chromium page, rendering TeX strings in batches, cached by hash.
    The browser starts on the first render that misses the cache; close() ends it."""

    def __init__(self, katex: Path | None = None, db: str | Path | None | bool = True):
        """`db`: the on-disk cache's file, True for cache_db(), False/None for none."""
        self.katex = Path(katex or katex_dir())
        db = cache_db() if db is True else (Path(db) if db else None)
        if not (self.katex / "katex.min.js").is_file():
            raise InputError(f"KaTeX is not in {self.katex}: run scripts/setup-katex (or set CURATE_KATEX)")
        self._memo: dict[str, Rendered] = {}
        self._db = None
        if db is not None:
            db.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(db)
            self._db.execute("CREATE TABLE IF NOT EXISTS renders (key TEXT PRIMARY KEY, value TEXT)")
        self._page = None
        self.rendered = 0  # formulas this renderer drew (cache misses)

    def render(self, texs) -> list[Rendered]:
        """Each TeX string's rendering, in order; those not cached drawn in batches of RENDER_BATCH."""
        texs = list(texs)
        keys = [_key(t) for t in texs]
        todo = {k: t for k, t in zip(keys, texs) if k not in self._memo}
        if todo and self._db is not None:
            for k in list(todo):
                row = self._db.execute("SELECT value FROM renders WHERE key = ?", (k,)).fetchone()
                if row:
                    self._memo[k] = _decode(json.loads(row[0]))
                    del todo[k]
        items = list(todo.items())
        for start in range(0, len(items), RENDER_BATCH):
            chunk = items[start:start + RENDER_BATCH]
            raws = self._page_handle().evaluate(_RENDER_JS.replace("MACROS", json.dumps(MACROS)),
                                                [t for _, t in chunk])
            self.rendered += len(chunk)
            for (k, _), raw in zip(chunk, raws):
                self._memo[k] = _decode(raw)
                if self._db is not None:
                    self._db.execute("INSERT OR REPLACE INTO renders VALUES (?, ?)", (k, json.dumps(raw)))
            if self._db is not None:
                self._db.commit()
        return [self._memo[k] for k in keys]

    def _page_handle(self):
        if self._page is None:
            import tempfile

            # the page is written apart (KaTeX's folder may be read-only); <base> points its links
            # (and the CSS's fonts) at KaTeX's folder, a file:// origin like the page's own
            html = _PAGE.format(px=FONT_PX, base=self.katex.resolve().as_uri() + "/")
            with tempfile.TemporaryDirectory(prefix="curate-katex-") as tmp:
                page_file = Path(tmp) / "render.html"
                page_file.write_text(html, encoding="utf-8")
                self._page = _BROWSER.new_page()
                self._page.goto(page_file.as_uri(), wait_until="load")
            if not self._page.evaluate("typeof katex !== 'undefined'"):
                raise InputError(f"{self.katex / 'katex.min.js'} did not load: run scripts/setup-katex again")
        return self._page

    def close(self) -> None:
        """Close this renderer's page (the browser ends with the last one) and the cache's connection."""
        if self._page is not None:
            self._page.close()
            self._page = None
            _BROWSER.release()
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> KatexRenderer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# ---- the check `curate eval` runs ------------------------------------------------------------
class KatexMath:
    """The math check with KaTeX: `prepare` renders every formula an eval will compare in one
    batch; `check` then answers from the cache (rendering any it was not told of)."""

    name = "katex"

    def __init__(self, renderer: KatexRenderer):
        self.renderer = renderer
        self.unrenderable: set[str] = set()  # references KaTeX refuses: compared as TeX instead

    @property
    def description(self) -> str:
        refused = (f"; {len(self.unrenderable)} reference(s) KaTeX cannot render compared as TeX"
                   if self.unrenderable else "")
        return (f"math: rendered with KaTeX {KATEX_VERSION} in chromium and compared as olmOCR-Bench does "
                f"(MathML, else symbols and their neighbours){refused}")

    def close(self) -> None:
        """End the renderer's browser."""
        self.renderer.close()

    def prepare(self, pairs) -> None:
        """Render at once every reference and every formula of its page: `pairs` of (test, markdown)."""
        from curate.modalities.pdf.eval_checks import equations

        texs = set()
        for test, md in pairs:
            texs.add(test["math"])
            if md:
                texs.update(equations(md, not test.get("ignore_dollar_delimited", False)))
        self.renderer.render(sorted(texs))

    def check(self, test: dict, md: str) -> tuple[bool, str]:
        """math: one of the page's formulas shows the test's `math` when both are rendered."""
        from curate.modalities.pdf.eval_checks import check_math, equations

        want = test["math"]
        found = equations(md, not test.get("ignore_dollar_delimited", False))
        if any(eq == want for eq in found):
            return True, ""
        ref = self.renderer.render([want])[0]
        if ref.error:  # olmOCR-Bench refuses such a test; here it is kept, compared as TeX
            self.unrenderable.add(want)
            ok, why = check_math(test, md)
            return ok, why and f"{why} (KaTeX cannot render the reference: compared as TeX)"
        for cand in self.renderer.render(found):
            if same_formula(ref, cand):
                return True, ""
        return False, f"no formula on the page renders as {want[:50]!r} ({len(found)} formulas compared)"


class TexMath:
    """The math check without a renderer: eval_checks.check_math's TeX comparison."""

    name = "tex"

    def __init__(self, why: str = ""):
        self.why = why

    @property
    def description(self) -> str:
        because = f" because {self.why}" if self.why else ""
        return (f"math: TeX compared after normalisation, not rendered{because}; it refuses some "
                f"equivalent spellings that olmOCR-Bench's KaTeX check accepts")

    def prepare(self, pairs) -> None:
        """Nothing to prepare."""

    def close(self) -> None:
        """Nothing to end."""

    def check(self, test: dict, md: str) -> tuple[bool, str]:
        """eval_checks.check_math."""
        from curate.modalities.pdf.eval_checks import check_math

        return check_math(test, md)


def math_check(mode: str = "auto"):
    """The math check for `mode`: "katex" (an InputError naming what is missing when it cannot
    run), "tex", or "auto" (KaTeX where Chromium, Playwright and KaTeX are here, else TeX, saying why)."""
    if mode not in MODES:
        raise InputError(f"--math {mode!r} is not one of {', '.join(MODES)}")
    if mode == "tex":
        return TexMath("--math tex was asked for")
    lacking = missing()
    if lacking:
        if mode == "katex":
            raise InputError(f"--math katex cannot run: {lacking}")
        return TexMath(lacking)
    return KatexMath(KatexRenderer())
