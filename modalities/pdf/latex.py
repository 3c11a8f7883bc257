"""Glyphs laid out as a formula, read back as LaTeX: the two-dimensional reader under
`formulas` (which finds the formulas of a page and hands their glyphs here).

- `Glyph` is one glyph of the text layer: character, box, baseline, size, font.
- `to_latex` reads glyphs and the thin rules among them: fraction bars first (the glyphs above
  and below a rule, read recursively), radicals (a radical sign and the rule over its
  radicand), limits over and under big operators, accents over a glyph, then the baseline (the
  median baseline of the largest glyphs) and scripts relative to it, read recursively so
  `x^{a_{b}}` nests. `formula_rows` cuts glyphs into rows where a horizontal gap runs across.

Glyphs map to LaTeX by `SYMBOLS` (Unicode operators, relations, arrows, Greek) and by their
Unicode names (the Mathematical Alphanumeric Symbols: bold, double-struck, script, fraktur) or
their font (MSBM double-struck, EUFM fraktur, CMSY capitals calligraphic). A glyph that maps to
nothing (a private-use code of a font without a Unicode map) is dropped, and the formula reads
without it: what the text layer cannot say, the page's image can (the routed recipe sends pages
with formulas it could not write to a VLM). Matrices, `cases` and aligned rows are read row by row.
"""

from __future__ import annotations

import re
import statistics
import unicodedata
from dataclasses import dataclass

# Math fonts by name (after the subset prefix "ABCDEF+"): TeX's Type1 math fonts (Computer and
# Latin Modern, AMS, Euler, txfonts/pxfonts/newtx, Kp-fonts, MathDesign) and any OpenType font
# with Math in its name (Latin Modern Math, Libertinus Math, STIX Two Math, Cambria Math).
MATH_FONT = re.compile(r"^(?:CM(?:MI|SY|EX|BSY|MIB)\d|LMMath|MSAM|MSBM|EU(?:RM|RB|FM|FB|SM|SB|EX)|RSFS|"
                       r"r?t?x(?:mi|sy|ex|sya|syb)|r?p?x(?:mi|sy|ex|sya|syb)|zx(?:mi|sy)|NewTXMI|"
                       r"Kp-+M-|.*Math|MathDesign-.*-(?:It|Sy|Ex|Ma|OT)$|Symbol|StandardSym|MT-?Extra|"
                       r"wasy|stmary|bbm|dsrom|esint)", re.IGNORECASE)
# ...of which these set ASCII letters in italic (a Unicode math font sets italic letters at
# U+1D434.., so its ASCII letters are upright)
ITALIC_MATH_FONT = re.compile(r"^(?:CMMI|CMMIB|LMMathItalic|EURM|EURB|r?t?xmi|r?p?xmi|zxmi|NewTXMI|Kp-+M-Italic|"
                              r"MathDesign-.*-It$)|Italic|Ital|Oblique", re.IGNORECASE)
FONT_STYLE = ((re.compile(r"^MSBM|bbm|dsrom", re.I), "mathbb"), (re.compile(r"^EUF", re.I), "mathfrak"),
              (re.compile(r"^(?:EUS|RSFS)|Calligraphy|Script", re.I), "mathcal"))
SYMBOL_FONT = re.compile(r"CMSY|CMBSY|MathSymbols|[a-z]xsy|-Sy(?:-|$)", re.IGNORECASE)  # capitals: calligraphic
SCRIPT_SHIFT = 0.12  # of the base size: a baseline this far above (below) the base line is a super(sub)script
SUB_SHIFT = 0.05  # ...subscripts sit closer to the base line than superscripts
BASE_SIZE = 0.85  # of the largest size: glyphs at least this large are on the base line
RULE_SLACK = 1.0  # points: a glyph's centre this far outside a rule's span still belongs to it
FUNCTIONS = frozenset("sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh coth exp log ln lg lim "
                      "liminf limsup max min sup inf det dim ker deg arg gcd hom Pr mod".split())
BIG_OPS = frozenset("∑∏∐⋃⋂⨁⨂⨀⨄⋁⋀∫∬∭∮")
LIMIT_WORDS = frozenset("lim liminf limsup max min sup inf det gcd Pr".split())
ACCENTS = {"¯": "bar", "ˉ": "bar", "ˆ": "hat", "^": "hat", "˜": "tilde", "~": "tilde", "˙": "dot", "¨": "ddot",
           "ˇ": "check", "´": "acute", "`": "grave", "˘": "breve", "\u20d7": "vec"}
UNKNOWN = "\ufffd"  # a glyph without a Unicode value (CMEX's big symbols in most TeX output)
DROP = set("\u200b\u2061\u2062\u2063")  # invisible times, function application: nothing to show

SYMBOLS = {
    "α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta", "ϵ": r"\epsilon", "ε": r"\varepsilon",
    "ζ": r"\zeta", "η": r"\eta", "θ": r"\theta", "ϑ": r"\vartheta", "ι": r"\iota", "κ": r"\kappa",
    "λ": r"\lambda", "μ": r"\mu", "µ": r"\mu", "ν": r"\nu", "ξ": r"\xi", "π": r"\pi", "ϖ": r"\varpi",
    "ρ": r"\rho", "ϱ": r"\varrho", "σ": r"\sigma", "ς": r"\varsigma", "τ": r"\tau", "υ": r"\upsilon",
    "φ": r"\varphi", "ϕ": r"\phi", "χ": r"\chi", "ψ": r"\psi", "ω": r"\omega", "Γ": r"\Gamma",
    "Δ": r"\Delta", "Θ": r"\Theta", "Λ": r"\Lambda", "Ξ": r"\Xi", "Π": r"\Pi", "Σ": r"\Sigma",
    "Υ": r"\Upsilon", "Φ": r"\Phi", "Ψ": r"\Psi", "Ω": r"\Omega", "∆": r"\Delta", "Ω": r"\Omega", "−": "-", "∗": "*", "×": r"\times",
    "÷": r"\div", "±": r"\pm", "∓": r"\mp", "·": r"\cdot", "⋅": r"\cdot", "∘": r"\circ", "•": r"\bullet",
    "≤": r"\leq", "≥": r"\geq", "≦": r"\leqq", "≧": r"\geqq", "≪": r"\ll", "≫": r"\gg", "≠": r"\neq",
    "≈": r"\approx", "≡": r"\equiv", "∼": r"\sim", "≃": r"\simeq", "≅": r"\cong", "∝": r"\propto",
    "≺": r"\prec", "≻": r"\succ", "⪯": r"\preceq", "⪰": r"\succeq", "∣": r"\mid", "∥": r"\parallel",
    "⊥": r"\perp", "→": r"\to", "←": r"\leftarrow", "↔": r"\leftrightarrow", "⇒": r"\Rightarrow",
    "⇐": r"\Leftarrow", "⇔": r"\Leftrightarrow", "↦": r"\mapsto", "⟶": r"\longrightarrow",
    "⟹": r"\Longrightarrow", "⟺": r"\Longleftrightarrow", "↑": r"\uparrow", "↓": r"\downarrow",
    "↪": r"\hookrightarrow", "⇀": r"\rightharpoonup", "∈": r"\in", "∉": r"\notin", "∋": r"\ni",
    "⊂": r"\subset", "⊃": r"\supset", "⊆": r"\subseteq", "⊇": r"\supseteq", "⊊": r"\subsetneq",
    "∪": r"\cup", "∩": r"\cap", "∖": r"\setminus", "∅": r"\emptyset", "∧": r"\wedge", "∨": r"\vee",
    "¬": r"\neg", "∀": r"\forall", "∃": r"\exists", "∄": r"\nexists", "∂": r"\partial", "∇": r"\nabla",
    "∞": r"\infty", "ℏ": r"\hbar", "ℓ": r"\ell", "℘": r"\wp", "ℜ": r"\Re", "ℑ": r"\Im", "ℵ": r"\aleph",
    "ı": r"\imath", "ȷ": r"\jmath", "⊗": r"\otimes", "⊕": r"\oplus", "⊖": r"\ominus", "⊙": r"\odot",
    "†": r"\dagger", "‡": r"\ddagger", "⋆": r"\star", "★": r"\bigstar", "△": r"\triangle", "□": r"\Box",
    "◦": r"\circ", "⟨": r"\langle", "⟩": r"\rangle", "〈": r"\langle", "〉": r"\rangle", "‖": r"\|",
    "⌊": r"\lfloor", "⌋": r"\rfloor", "⌈": r"\lceil", "⌉": r"\rceil", "{": r"\{", "}": r"\}",
    "…": r"\ldots", "⋯": r"\cdots", "⋮": r"\vdots", "⋱": r"\ddots", "′": r"\prime", "″": r"\prime\prime",
    "∑": r"\sum", "∏": r"\prod", "∐": r"\coprod", "⋃": r"\bigcup", "⋂": r"\bigcap", "⨁": r"\bigoplus",
    "⨂": r"\bigotimes", "⨀": r"\bigodot", "⋁": r"\bigvee", "⋀": r"\bigwedge", "∫": r"\int", "∬": r"\iint",
    "∭": r"\iiint", "∮": r"\oint", "√": r"\surd", "⊤": r"\top", "⊢": r"\vdash", "⊨": r"\models",
    "∠": r"\angle", "♯": r"\sharp", "♭": r"\flat", "ð": r"\eth", "%": r"\%", "#": r"\#", "&": r"\&",
    "$": r"\$", "~": r"\sim", "\\": r"\backslash", "ℕ": r"\mathbb{N}", "ℤ": r"\mathbb{Z}", "ℚ": r"\mathbb{Q}",
    "ℝ": r"\mathbb{R}", "ℂ": r"\mathbb{C}", "ℍ": r"\mathbb{H}", "ℙ": r"\mathbb{P}", "ℎ": "h",
    "ℒ": r"\mathcal{L}", "ℋ": r"\mathcal{H}", "ℱ": r"\mathcal{F}", "ℰ": r"\mathcal{E}", "ℳ": r"\mathcal{M}",
    "ℬ": r"\mathcal{B}", "ℛ": r"\mathcal{R}", "ℐ": r"\mathcal{I}", "ℭ": r"\mathfrak{C}", "ℨ": r"\mathfrak{Z}",
}
_STYLES = (("DOUBLE-STRUCK", "mathbb"), ("FRAKTUR", "mathfrak"), ("SCRIPT", "mathcal"), ("BOLD ITALIC", "boldsymbol"),
           ("SANS-SERIF", "mathsf"), ("MONOSPACE", "mathtt"), ("BOLD", "mathbf"), ("ITALIC", ""))
_GREEK_NAMES = {unicodedata.name(c).split()[-1].lower(): cmd for c, cmd in SYMBOLS.items()
                if "GREEK" in unicodedata.name(c, "")}


@dataclass(frozen=True, slots=True)
class Glyph:
    """One glyph of the text layer: its character, box, baseline (`base`), font size and font."""

    c: str
    x0: float
    y0: float
    x1: float
    y1: float
    base: float
    size: float
    font: str

    def __post_init__(self):
        if self.x1 < self.x0 or self.y1 < self.y0:
            raise ValueError(f"glyph {self.c!r}: its box {self.x0, self.y0, self.x1, self.y1} is inverted")

    @property
    def cx(self) -> float:
        return (self.x0 + self.x1) / 2

    @property
    def mid(self) -> float:
        """Its visual middle: half an x-height above the baseline (the box centre of a big
        delimiter or a radical sign, which hang from their origin)."""
        if self.y1 - self.y0 > 2 * self.size or self.c == "√" or (self.c in UNKNOWN and extension_font(self.font)):
            return (self.y0 + self.y1) / 2
        return self.base - 0.25 * self.size

    @property
    def math(self) -> bool:
        return bool(MATH_FONT.match(self.font))


Rule = tuple  # (x0, y, x1): a thin horizontal rule at height y


# ---- the two-dimensional reader --------------------------------------------------------------------
def to_latex(glyphs: list[Glyph], rules: list[Rule] = ()) -> str:
    """LaTeX for glyphs laid out as a formula (and the thin rules among them)."""
    glyphs = [g for g in glyphs if not g.c.isspace() and g.c not in DROP]
    if not glyphs:
        return ""
    rows = formula_rows(glyphs, rules)
    if len(rows) > 1:
        return r"\begin{aligned}" + r" \\ ".join(_seq(r, rules) for r in rows) + r"\end{aligned}"
    return _seq(glyphs, rules)


def formula_rows(glyphs: list[Glyph], rules: list[Rule]) -> list[list[Glyph]]:
    """Glyphs cut into rows where a horizontal gap runs across all of them (and no rule)."""
    spans = sorted([(g.y0, g.y1) for g in glyphs if g.y1 - g.y0 < 3 * g.size])
    if not spans:
        return [glyphs]
    cuts, bottom, gap = [], spans[0][1], 0.3 * max(g.size for g in glyphs)
    for y0, y1 in spans[1:]:
        if y0 > bottom + gap and not any(bottom <= r[1] <= y0 for r in rules):
            cuts.append((bottom + y0) / 2)
        bottom = max(bottom, y1)
    if not cuts:
        return [glyphs]
    rows: list[list[Glyph]] = [[] for _ in range(len(cuts) + 1)]
    for g in glyphs:
        rows[sum(g.mid > c for c in cuts)].append(g)
    return [r for r in rows if r]


@dataclass
class _Atom:
    """A piece of a formula on its base line: a glyph, a word, a fraction or a radical."""

    x0: float
    x1: float
    tex: str
    glyph: Glyph | None = None
    sub: str = ""
    sup: str = ""


def _seq(glyphs: list[Glyph], rules: list[Rule]) -> str:
    if not glyphs:
        return ""
    glyphs = list(glyphs)
    atoms: list[_Atom] = []
    lo = min(g.y0 for g in glyphs) - 1
    hi = max(g.y1 for g in glyphs) + 1
    left, right = min(g.x0 for g in glyphs) - RULE_SLACK, max(g.x1 for g in glyphs) + RULE_SLACK
    mine = sorted((r for r in rules if lo <= r[1] <= hi and r[0] >= left - 2 and r[2] <= right + 2),
                  key=lambda r: r[0] - r[2])  # the widest first
    used: set = set()
    for r in mine:
        if r in used:
            continue
        over = [g for g in glyphs if r[0] - RULE_SLACK <= g.cx <= r[2] + RULE_SLACK]
        above = [g for g in over if g.mid < r[1]]
        below = [g for g in over if g.mid > r[1]]
        radical = _radical_of(glyphs, r)
        if radical is not None:
            inside = [g for g in below if g is not radical and g.x0 >= radical.x1 - RULE_SLACK]
            index = [g for g in glyphs if g is not radical and g.x1 <= radical.x1 and g.cx < radical.cx
                     and g.base < radical.base - 0.3 * radical.size and g.size < radical.size * BASE_SIZE]
            inner = [x for x in mine if x is not r and x not in used and x[0] >= r[0] - 1 and x[2] <= r[2] + 1]
            used.update(inner + [r])
            tex = r"\sqrt" + (f"[{_seq(index, rules)}]" if index else "") + "{" + _seq(inside, inner) + "}"
            atoms.append(_Atom(radical.x0, r[2], tex))
            taken = set(map(id, inside + index + [radical]))
            glyphs = [g for g in glyphs if id(g) not in taken]
            continue
        if not above or not below:
            continue
        inner = [x for x in mine if x is not r and x not in used and x[0] >= r[0] - 1 and x[2] <= r[2] + 1]
        used.update(inner + [r])
        num_rules = [x for x in inner if x[1] < r[1]]
        den_rules = [x for x in inner if x[1] > r[1]]
        atoms.append(_Atom(r[0], r[2], r"\frac{" + _seq(above, num_rules) + "}{" + _seq(below, den_rules) + "}"))
        taken = set(map(id, over))
        glyphs = [g for g in glyphs if id(g) not in taken]
    glyphs = [g for g in glyphs if g.c != "√" or not atoms]  # a radical sign whose rule was not found stays
    return _line(glyphs, atoms, rules)


def _radical_of(glyphs: list[Glyph], r: Rule) -> Glyph | None:
    """The radical sign whose overline `r` is: a √ (or a tall glyph of an extension font) ending where
    the rule starts, its top at the rule."""
    for g in glyphs:
        if (g.c == "√" or (g.c in UNKNOWN and extension_font(g.font))) and abs(g.x1 - r[0]) <= 2 + RULE_SLACK:
            if g.y0 - 2.5 <= r[1] <= g.y0 + 0.5 * (g.y1 - g.y0):
                return g
    return None


def _line(glyphs: list[Glyph], atoms: list[_Atom], rules: list[Rule]) -> str:
    """Glyphs and finished atoms on one base line, with scripts and limits, as LaTeX."""
    if not glyphs:
        return "".join(a.tex for a in sorted(atoms, key=lambda a: a.x0))
    top = max(g.size for g in glyphs if not _big(g)) if any(not _big(g) for g in glyphs) else glyphs[0].size
    base_glyphs = [g for g in glyphs if g.size >= top * BASE_SIZE and not _big(g)]
    baseline = statistics.median(g.base for g in base_glyphs) if base_glyphs else glyphs[0].base
    glyphs = sorted(glyphs, key=lambda g: (g.x0, g.base))
    # limits over and under big operators and lim/max/min
    taken: set = set()
    on_line = [g for g in glyphs if _big(g) or (g.size >= top * BASE_SIZE and abs(g.base - baseline) <= top * SCRIPT_SHIFT)]
    for g in on_line:
        if not _big(g):
            continue
        slack = 0.2 * g.size
        lo = [h for h in glyphs if h is not g and id(h) not in taken and g.x0 - slack <= h.cx <= g.x1 + slack
              and h.y0 >= g.y1 - 0.3 * h.size and h.size < top * BASE_SIZE + 0.01]
        up = [h for h in glyphs if h is not g and id(h) not in taken and g.x0 - slack <= h.cx <= g.x1 + slack
              and h.y1 <= g.y0 + 0.3 * h.size and h.size < top * BASE_SIZE + 0.01]
        taken.update(map(id, lo + up))
        atoms.append(_Atom(g.x0, g.x1, _token(g), g, _seq(lo, rules), _seq(up, rules)))
        taken.add(id(g))
    rest = [g for g in glyphs if id(g) not in taken]
    accents = _accents(rest)  # id of a glyph -> the accent over it (\\bar, \\hat...)
    rest = [g for g in rest if not (g.c in ACCENTS and any(a is g for a, _ in accents.values()))]
    # scripts apart; base-line glyphs become atoms (upright letters joined into words)
    scripts: list[tuple[Glyph, str]] = []
    on_base: list[Glyph] = []
    for g in rest:
        shift = baseline - g.base
        small = g.size < top * BASE_SIZE
        if small and shift > top * SCRIPT_SHIFT:
            scripts.append((g, "sup"))
        elif small and shift < -top * SUB_SHIFT:
            scripts.append((g, "sub"))
        else:
            on_base.append(g)
    word: list[Glyph] = []
    for g in on_base + [None]:
        if (g is not None and _upright_letter(g) and id(g) not in accents
                and (not word or g.x0 - word[-1].x1 <= 0.25 * g.size)):
            word.append(g)
            continue
        if word:
            atoms.append(_Atom(word[0].x0, word[-1].x1, _word("".join(w.c for w in word), word[0]), word[0]))
            word = []
        if g is None:
            break
        if _upright_letter(g) and id(g) not in accents:
            word.append(g)
        elif id(g) in accents:
            tex = _word(g.c, g) if _upright_letter(g) else _token(g)
            atoms.append(_Atom(g.x0, g.x1, f"\\{accents[id(g)][1]}{{{tex}}}", g))
        else:
            atoms.append(_Atom(g.x0, g.x1, _token(g), g))
    atoms.sort(key=lambda a: a.x0)
    # a lim/max's limit below it
    for a in atoms:
        if a.tex.lstrip("\\") in LIMIT_WORDS:
            width = a.x1 - a.x0
            below = [g for g, _ in scripts if a.x0 - width <= g.cx <= a.x1 + width and g.y0 >= baseline - 0.1 * top]
            if below:
                a.sub = _seq(below, rules)
                scripts = [(g, k) for g, k in scripts if g not in below]
    # scripts: each run of script glyphs goes to the atom it follows
    groups: list[tuple[str, list[Glyph]]] = []
    for g, kind in sorted(scripts, key=lambda s: s[0].x0):
        if groups and groups[-1][0] == kind and g.x0 - max(h.x1 for h in groups[-1][1]) < 0.6 * g.size:
            groups[-1][1].append(g)
        else:
            groups.append((kind, [g]))
    for kind, members in groups:
        x = min(g.x0 for g in members)
        owner = [a for a in atoms if a.x0 <= x + 0.5]
        if not owner:
            atoms.append(_Atom(x, x, "{}", None, **{kind: _seq(members, rules)}))
            atoms.sort(key=lambda a: a.x0)
            continue
        a = max(owner, key=lambda a: a.x0)
        tex = _seq(members, rules)
        setattr(a, kind, (getattr(a, kind) + tex) if getattr(a, kind) else tex)
    for a in atoms:
        if a.glyph is not None and a.glyph.c in UNKNOWN and _big(a.glyph):
            a.tex = _unnamed(a)
    return _join(atoms)


def _accents(glyphs: list[Glyph]) -> dict:
    """Accent glyphs (¯ ˆ ˜ ˙ ¨ ˇ ´ ` ˘) set over another glyph: {id of that glyph: (accent, command)}."""
    out = {}
    for a in glyphs:
        if a.c not in ACCENTS:
            continue
        under = [g for g in glyphs if g.c not in ACCENTS and id(g) not in out and g.x0 - 1 <= a.cx <= g.x1 + 1
                 and (a.y0 + a.y1) / 2 < g.mid]
        if under:
            g = min(under, key=lambda g: abs(g.cx - a.cx))
            out[id(g)] = (a, ACCENTS[a.c])
    return out


def _unnamed(a: _Atom) -> str:
    """An extension font's glyph without a Unicode value, by its width and what it carries: a wide
    one is a sum, a narrow one with limits or scripts an integral; a bare one (a big delimiter)
    is dropped."""
    g = a.glyph
    if g.x1 - g.x0 >= 0.9 * g.size:
        return r"\sum"
    return r"\int" if a.sub or a.sup else ""


def _join(atoms: list[_Atom]) -> str:
    out = ""
    for a in atoms:
        piece = a.tex
        if a.sub:
            piece += "_{" + a.sub + "}"
        if a.sup and not a.sup.replace(r"\prime", "").strip():
            piece += "'" * a.sup.count(r"\prime")
        elif a.sup:
            piece += "^{" + a.sup + "}"
        if out and re.search(r"\\[A-Za-z]+$", out) and re.match(r"[A-Za-z0-9]", piece):
            out += " "
        out += piece
    return out


def _big(g: Glyph) -> bool:
    return g.c in BIG_OPS or (g.c in UNKNOWN and extension_font(g.font))


def extension_font(font: str) -> bool:
    """A math extension font (big operators, delimiters and radicals): CMEX, LMMathExtension, txex..."""
    return bool(re.search(r"EX\d|Extension|[a-z]xex|-Ex(?:-|$)|EUEX", font, re.IGNORECASE))


def _upright_letter(g: Glyph) -> bool:
    """An ASCII letter set upright: in a text font, or in a Unicode math font (which has its italics apart)."""
    if not ("a" <= g.c.lower() <= "z"):
        return False
    if _font_style(g.font) or SYMBOL_FONT.search(g.font):
        return False
    if MATH_FONT.match(g.font):  # a Unicode math font has its italics apart: its ASCII letters are upright
        return "MATH" in g.font.upper() and not ITALIC_MATH_FONT.search(g.font)
    return not ITALIC_MATH_FONT.search(g.font)


def _font_style(font: str) -> str:
    for pattern, style in FONT_STYLE:
        if pattern.search(font):
            return style
    return ""


def _word(text: str, first: Glyph) -> str:
    if text in FUNCTIONS:
        return "\\" + ("operatorname{" + text + "}" if text in ("Pr", "mod") else text)
    if len(text) == 1:
        return r"\mathrm{" + text + "}"
    return r"\mathrm{" + text + "}"


def _token(g: Glyph) -> str:
    """One glyph as LaTeX."""
    c = g.c
    style = _font_style(g.font)
    if style and c.isascii() and c.isalpha():
        return f"\\{style}{{{c}}}"
    if c in SYMBOLS:
        return SYMBOLS[c]
    if c.isascii():
        if SYMBOL_FONT.search(g.font) and c.isupper():
            return rf"\mathcal{{{c}}}"
        return c
    name = unicodedata.name(c, "")
    if name.startswith("MATHEMATICAL ") and "DIGIT" in name:
        return str(unicodedata.digit(c, "")) if unicodedata.digit(c, None) is not None else ""
    if name.startswith("MATHEMATICAL "):
        letter = name.split()[-1]
        base = letter if len(letter) == 1 else _GREEK_NAMES.get(letter.lower(), "")
        if len(letter) == 1 and "SMALL" in name:
            base = letter.lower()
        if not base:
            return ""
        for key, style in _STYLES:
            if key in name:
                return f"\\{style}{{{base}}}" if style else base
        return base
    if unicodedata.category(c) == "Co" or c == "\ufffd":
        return ""  # a private-use code: the font says nothing of what it shows
    return c
