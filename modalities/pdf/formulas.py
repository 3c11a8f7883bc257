"""Formulas in a PDF's text layer, found and written as LaTeX: the CPU route's math.

A born-digital paper carries its formulas in the text layer: glyphs of math fonts (CMMI, CMSY,
CMEX, Latin Modern Math, Libertinus Math, Euler, txfonts...), super- and subscripts as smaller
glyphs on a raised or lowered baseline, fraction bars and radical overlines as drawn rules.
This module finds them on a page; `latex` reads each one's glyphs as LaTeX that KaTeX renders to
the same symbols in the same places:

- `page_blocks` is the page's "dict" extraction, except on a page that uses a math font, where it
  is the "rawdict" one (every span keeps its glyphs, and its `text` as "dict" gives it) with each
  glyph's ink box, its rows rebuilt across MuPDF's lines, plus the page's thin horizontal rules:
  what the rest needs, at no cost on pages without math.
- `line_text` writes one text line with each run of math in it as `$...$` (inline formulas):
  a run starts at a glyph of a math font and takes in the neighbours a formula holds (digits,
  operators, brackets, scripts, a function name such as `sin`), never a word of body text.
- `is_display` says whether a group of lines is a display formula (mostly math glyphs),
  `merge_display` joins a display that MuPDF cut into blocks, and `block_latex` writes one from
  all its glyphs and the rules among them (`$$...$$` is added by the page writer); an equation
  number at its right end becomes `\\tag{n}`.
"""

from __future__ import annotations

import re
import statistics
import unicodedata

from curate.modalities.pdf.latex import (
    ACCENTS,
    BASE_SIZE,
    DROP,
    FUNCTIONS,
    ITALIC_MATH_FONT,
    MATH_FONT,
    SCRIPT_SHIFT,
    SYMBOLS,
    UNKNOWN,
    Glyph,
    Rule,
    extension_font,
    formula_rows,
    to_latex,
)

SOURCE = "formulas"  # RegionRecord.source of a formula written as LaTeX from the text layer's glyphs
ACCURATE_BBOXES = 512  # pymupdf.TEXT_ACCURATE_BBOXES (not imported here: `import curate` stays light)
SUBSET = re.compile(r"^[A-Z]{6}\+")

MAX_PATHS = 20_000  # a page with more path segments is a drawing: its rules are not read for formulas
RULE_MAX_HEIGHT = 1.5  # points: a fraction bar or a radical's overline is thinner than this
RULE_REACH = 6.0  # points: a rule this near a block (above or below) may be its fraction's bar
ROW_LETTERS = 3  # letters of a text font that make a line prose (its baseline a row's)
ROW_GAP = 0.6  # of the size: prose pieces of one row lie at most this far apart (columns lie farther)
ROW_FRAGMENT_GAP = 1.0  # of the size: a formula fragment's glyph at most this far right of a row joins it
ROW_REACH = 0.6  # of the size: a formula fragment's glyph joins a row whose baseline is this near
AXIS = 0.25  # of the size: the math axis (where big operators are centred) above the baseline
ROW_SPACE = 0.2  # of the size: a gap this wide between two pieces of a row is a space
ITALIC_WORD = 2  # letters: an italic word this short next to an operator is a formula's (mathptmx's x, mc)
DISPLAY_MATH_SHARE = 0.6  # of a block's glyphs: a block this much math is a display formula
TAG_GAP = 2.0  # of the size: an "(n)" this far right of a display formula is its equation number
OPERATORS = set("=+-−×÷±∓<>≤≥≠≈≡∼≃≅∝→←↔⇒⇐⇔↦∈∉∋⊂⊃⊆⊇∪∩∧∨¬∀∃∂∇∞·⋅∘⊗⊕/|‖()[]{}⟨⟩,;:!'′″*^_.")


# ---- the page's text, with glyphs where there is math ---------------------------------------------
def base_font(name: str) -> str:
    return SUBSET.sub("", name or "")


def has_math(blocks: list) -> bool:
    """Whether any span of these "dict" blocks is in a math font."""
    return any(MATH_FONT.match(base_font(s.get("font", ""))) and s.get("text", "").strip()
               for b in blocks for ln in b.get("lines", ()) for s in ln.get("spans", ()))


def page_blocks(page, flags: int) -> list:
    """The page's "dict" blocks; on a page that uses a math font, its "rawdict" blocks instead (each
    span with its `chars` and its `text`), each text block given the page's thin rules
    (`rules`) that lie across it: what `line_text` and `block_latex` read."""
    if not any(MATH_FONT.match(base_font(f[3])) for f in page.get_fonts(full=True)):  # the page's font list: cheap
        return page.get_text("dict", flags=flags)["blocks"]
    blocks = page.get_text("rawdict", flags=flags)["blocks"]
    for b in blocks:
        for ln in b.get("lines", ()):
            for s in ln.get("spans", ()):
                s["text"] = "".join(ch["c"] for ch in s.get("chars", ()))
    if not has_math(blocks):  # a math font in the resources that no text uses: "dict" blocks, as elsewhere
        for b in blocks:
            for ln in b.get("lines", ()):
                for s in ln.get("spans", ()):
                    s.pop("chars", None)
        return blocks
    _add_ink(blocks, page.get_text("rawdict", flags=flags | ACCURATE_BBOXES)["blocks"])
    rules = page_rules(page)
    blocks = _split_math_lines(_joinformula_rows(blocks))
    for b in blocks:
        if b.get("type") == 0:
            x0, y0, x1, y1 = b["bbox"]
            b["rules"] = [r for r in rules if r[0] < x1 and r[2] > x0 and y0 - RULE_REACH <= r[1] <= y1 + RULE_REACH]
    return blocks


def _add_ink(blocks: list, inked: list) -> None:
    """Each glyph's ink box (`ink`, from the TEXT_ACCURATE_BBOXES extraction `inked`: a display
    sum's box is its glyph's, not the font's line height), where both extractions agree on the
    page's structure; the blocks' and lines' own boxes stay MuPDF's usual ones."""
    if len(blocks) != len(inked):
        return
    for b, ib in zip(blocks, inked):
        for ln, iln in zip(b.get("lines", ()), ib.get("lines", ())):
            for s, isp in zip(ln.get("spans", ()), iln.get("spans", ())):
                chars, ichars = s.get("chars", ()), isp.get("chars", ())
                if len(chars) == len(ichars):
                    for ch, ich in zip(chars, ichars):
                        if ch["c"] == ich["c"]:
                            ch["ink"] = ich["bbox"]


def _joinformula_rows(blocks: list) -> list:
    """The page's text lines rebuilt as the rows a reader sees. MuPDF cuts a row with a tall
    inline formula into several lines, often in other blocks (an integral's limits, the rest of
    the formula, the words after it): prose lines (`ROW_LETTERS` letters of a text font at
    least) on one baseline that follow each other within `ROW_GAP` sizes are one row, and the
    glyphs of the other lines (formula fragments) join the row whose baseline is nearest, within
    `ROW_REACH` sizes, when they lie over it. Each row is one line (a span per glyph, a space
    where two pieces meet with a gap), in the block of its first piece."""
    text = [b for b in blocks if b.get("type") == 0]
    anchors, fragments = [], []
    for b in text:
        for ln in b.get("lines", ()):
            if ln.get("wmode", 0) or abs(ln.get("dir", (1, 0))[0]) < 0.99:
                continue  # vertical and turned lines stay as MuPDF read them
            chars = [(s, ch) for s in ln.get("spans", ()) for ch in s.get("chars", ()) if ch["c"].strip()]
            if not chars:
                continue
            letters = [(s, ch) for s, ch in chars if ch["c"].isalpha() and not MATH_FONT.match(base_font(s["font"]))]
            if len(letters) >= ROW_LETTERS:
                size = statistics.median(s["size"] for s, _ in letters)
                body = [ch["origin"][1] for s, ch in letters if s["size"] >= size * BASE_SIZE]
                anchors.append({"block": b, "line": ln, "base": statistics.median(body), "size": size,
                                "x0": ln["bbox"][0], "x1": ln["bbox"][2]})
            else:
                fragments.append((b, ln))
    if not anchors or (not fragments and len(anchors) == len({id(a["block"]) for a in anchors}) and
                       all(len(a["block"]["lines"]) == 1 for a in anchors)):
        return blocks
    # anchors on one baseline, one after the other: one row
    anchors.sort(key=lambda a: (round(a["base"]), a["x0"]))
    rows: list[dict] = []
    for a in sorted(anchors, key=lambda a: a["x0"]):
        row = next((r for r in rows if abs(r["base"] - a["base"]) <= SCRIPT_SHIFT * 2 * r["size"]
                    and -a["size"] <= a["x0"] - r["x1"] <= ROW_GAP * r["size"]), None)
        if row is None:
            rows.append({"base": a["base"], "size": a["size"], "x0": a["x0"], "x1": a["x1"], "pieces": [a["line"]],
                         "block": a["block"]})
        else:
            row["pieces"].append(a["line"])
            row["x1"] = max(row["x1"], a["x1"])
    if not fragments and all(len(r["pieces"]) == 1 for r in rows):
        return blocks
    # fragments: their glyphs to the nearest row over which they lie
    moved: dict = {}
    loose = sorted(((s, ch, ln) for _, ln in fragments for s in ln.get("spans", ()) for ch in s.get("chars", ())),
                   key=lambda t: t[1]["bbox"][0])
    for s, ch, ln in loose:  # left to right: a row grows as a formula's glyphs join it
        x = (ch["bbox"][0] + ch["bbox"][2]) / 2
        if ch["c"] in UNKNOWN and extension_font(base_font(s["font"])):  # a big operator, centred on the math axis
            ink = ch.get("ink", ch["bbox"])
            y, reach = (ink[1] + ink[3]) / 2 + AXIS * s["size"], 2 * ROW_REACH
        else:
            y, reach = ch["origin"][1], ROW_REACH
        near = [r for r in rows if r["x0"] - r["size"] <= x <= r["x1"] + ROW_FRAGMENT_GAP * r["size"]
                and abs(y - r["base"]) <= reach * r["size"]]
        if near:
            row = min(near, key=lambda r: abs(y - r["base"]))
            moved.setdefault(id(row), []).append((s, ch))
            moved.setdefault(("gone", id(ln)), []).append(ch)
            row["x1"] = max(row["x1"], ch["bbox"][2])
    out_lines: dict[int, list] = {}
    taken = set()
    for row in rows:
        glyphs = [(s, ch) for piece in row["pieces"] for s in piece.get("spans", ()) for ch in s.get("chars", ())]
        glyphs += moved.get(id(row), [])
        if len(row["pieces"]) == 1 and not moved.get(id(row)):
            out_lines.setdefault(id(row["block"]), []).append(row["pieces"][0])
            continue
        taken.update(id(p) for p in row["pieces"])
        out_lines.setdefault(id(row["block"]), []).append(_row_line(glyphs, row["pieces"][0]))
    gone_chars = {id(ch) for key, chars in moved.items() if isinstance(key, tuple) for ch in chars}
    out = []
    for b in blocks:
        if b.get("type") != 0:
            out.append(b)
            continue
        lines = []
        for ln in b.get("lines", ()):
            if id(ln) in taken or any(ln is r["pieces"][0] for r in rows):
                continue
            spans = []
            for s in ln.get("spans", ()):
                chars = [ch for ch in s.get("chars", ()) if id(ch) not in gone_chars]
                if chars:
                    spans.append({**s, "chars": chars, "text": "".join(ch["c"] for ch in chars)})
            if any(sp["text"].strip() for sp in spans):
                lines.append(_fresh(ln, spans=spans, bbox=_union([ch["bbox"] for sp in spans for ch in sp["chars"]])))
        lines += out_lines.get(id(b), [])
        if lines:
            lines.sort(key=lambda ln: (ln["bbox"][1] + ln["bbox"][3]) / 2)
            out.append({**b, "lines": lines, "bbox": _union([ln["bbox"] for ln in lines])})
    return out


def _row_line(glyphs: list, first: dict) -> dict:
    """One line of a row's glyphs in reading order: a span per glyph (its font, size and flags),
    a space where two glyphs that touch no space lie apart (where two of MuPDF's lines met)."""
    glyphs = sorted(glyphs, key=lambda sc: sc[1]["bbox"][0])
    spans, prev = [], None
    for s, ch in glyphs:
        if prev is not None and not ch["c"].isspace() and not prev[1]["c"].isspace():
            if ch["bbox"][0] - prev[1]["bbox"][2] > ROW_SPACE * s["size"] and prev[0] is not s:
                sp = {"c": " ", "bbox": (prev[1]["bbox"][2], ch["bbox"][1], ch["bbox"][0], ch["bbox"][3]),
                      "origin": (prev[1]["bbox"][2], ch["origin"][1])}
                spans.append({**prev[0], "chars": [sp], "text": " "})
        spans.append({**s, "chars": [ch], "text": ch["c"]})
        prev = (s, ch)
    boxes = [ch["bbox"] for _, ch in glyphs]
    return _fresh(first, spans=spans, bbox=_union(boxes))


def _split_math_lines(blocks: list) -> list:
    """Blocks cut where their lines turn from prose to formula lines (no letter of body text) and
    back: a display formula that MuPDF put in one block with the paragraph before it."""
    out = []
    for b in blocks:
        lines = b.get("lines", ()) if b.get("type") == 0 else ()
        if len(lines) < 2 or not any(line_has_math(ln) for ln in lines):
            out.append(b)
            continue
        runs: list[list] = []
        last = None
        for ln in lines:
            kind = _no_prose({"lines": [ln]})
            if runs and kind == last:
                runs[-1].append(ln)
            else:
                runs.append([ln])
            last = kind
        out += [{**b, "lines": run, "bbox": _union([ln["bbox"] for ln in run])} for run in runs]
    return out


def _union(boxes: list) -> tuple:
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def page_rules(page) -> list[Rule]:
    """The page's thin horizontal rules (fraction bars, radical overlines) as (x0, y, x1); none
    on a page of more than MAX_PATHS paths (a plot or a drawing, whose formulas then read
    without their bars, at a bounded cost)."""
    out = []
    drawings = page.get_cdrawings()
    if sum(len(d.get("items", ())) for d in drawings) > MAX_PATHS:  # one path may hold a million segments
        return out
    for d in drawings:
        for item in d.get("items", ()):
            if item[0] == "l":
                (px, py), (qx, qy) = item[1], item[2]
                if abs(py - qy) <= RULE_MAX_HEIGHT and abs(qx - px) > 1:
                    out.append((min(px, qx), (py + qy) / 2, max(px, qx)))
            elif item[0] == "re":
                x0, y0, x1, y1 = item[1]
                if abs(y1 - y0) <= RULE_MAX_HEIGHT and abs(x1 - x0) > max(1, 2 * abs(y1 - y0)):
                    out.append((min(x0, x1), (y0 + y1) / 2, max(x0, x1)))
    return out


def glyphs_of(lines: list) -> list[Glyph]:
    """The glyphs of "rawdict" lines (spans without `chars` give none)."""
    return [g for ln in lines for g in _line_glyphs(ln)]


def _marks(line: dict) -> tuple[list[Glyph], list[str]]:
    """A line's glyphs left to right (spaces included) and their `_kinds`, read once a line."""
    cached = line.get("_marks")
    if cached is None:
        glyphs = sorted(_line_glyphs(line), key=lambda g: g.x0)
        cached = line["_marks"] = (glyphs, _kinds(glyphs) if glyphs else [])
    return cached


def _line_glyphs(ln: dict) -> list[Glyph]:
    """A line's glyphs in MuPDF's order, made once a line (kept in the line under `_glyphs`)."""
    cached = ln.get("_glyphs")
    if cached is not None:
        return cached
    out = ln["_glyphs"] = []
    for s in ln.get("spans", ()):
        font = base_font(s.get("font", ""))
        for ch in s.get("chars", ()):
            x0, y0, x1, y1 = ch.get("ink", ch["bbox"])
            out.append(Glyph(ch["c"], x0, min(y0, y1), max(x0, x1), max(y0, y1), ch["origin"][1], s["size"], font))
    return out


def _fresh(line: dict, **changes) -> dict:
    """A copy of a line with `changes`, without what was read from its old spans."""
    return {**{k: v for k, v in line.items() if k not in ("_glyphs", "_marks")}, **changes}


def line_has_math(line: dict) -> bool:
    return any(s.get("chars") and MATH_FONT.match(base_font(s.get("font", ""))) and s.get("text", "").strip()
               for s in line.get("spans", ()))


# ---- inline formulas -------------------------------------------------------------------------------
def line_text(line: dict, rules: list[Rule] = ()) -> str:
    """One "rawdict" line as text, each run of math in it written as `$...$`."""
    glyphs, kinds = _marks(line)
    if not glyphs:
        return "".join(s.get("text", "") for s in line.get("spans", ()))
    out, i = [], 0
    while i < len(glyphs):
        if kinds[i] != "M":
            out.append(glyphs[i].c)
            i += 1
            continue
        j = i
        while j < len(glyphs) and kinds[j] in "MS":
            j += 1
        run = [g for g in glyphs[i:j] if not g.c.isspace()]
        lead = ""
        while run and run[0].c in ".,;:":
            lead += run.pop(0).c  # a comma before a formula is the sentence's, in whatever font
        trail = ""
        while run and run[-1].c in ".,;:" and not run[-1].math:
            trail = run.pop().c + trail  # a sentence's full stop after a formula is the sentence's
        tex = to_latex(run, rules)
        out.append(f"{lead}{' ' if lead else ''}${tex}${trail}" if tex and _substantive(run)
                   else "".join(g.c for g in glyphs[i:j]))
        if j < len(glyphs) and glyphs[j - 1].c.isspace() and out[-1][-1:] != " ":
            out.append(" ")
        i = j
    return "".join(out)


def _kinds(glyphs: list[Glyph]) -> list[str]:
    """Per glyph of a line: M (in a formula), S (a space inside one) or T (body text)."""
    body = _body(glyphs)
    size = body.size if body else max(g.size for g in glyphs)
    line_base = body.base if body else statistics.median(g.base for g in glyphs)
    raw = []
    for g in glyphs:
        if g.c.isspace():
            raw.append(" ")
        elif g.math and g.c not in DROP:
            raw.append("M")
        elif g.size < size * BASE_SIZE or abs(g.base - line_base) > size * SCRIPT_SHIFT:
            raw.append("N")  # a script or a smaller glyph: a formula's, when next to one
        elif g.c in ACCENTS or (not g.c.isalpha() and (g.c in OPERATORS or g.c.isdigit()
                                                        or unicodedata.category(g.c) == "Sm")):
            raw.append("N")
        else:
            raw.append("T")
    _words_in_math(glyphs, raw)
    kinds = ["T" if k in "N " else k for k in raw]
    # a formula takes in its neutral neighbours and the spaces between its parts
    for i, k in enumerate(raw):
        if k != "M":
            continue
        for step in (-1, 1):
            j = i + step
            while 0 <= j < len(raw) and raw[j] in "N M":
                if raw[j] == "M":
                    break
                if raw[j] == " ":
                    nxt = next((raw[m] for m in range(j, len(raw) if step > 0 else -1, step) if raw[m] != " "), "T")
                    if nxt == "T":
                        break
                    kinds[j] = "S"
                else:
                    kinds[j] = "M"
                j += step
    # brackets: a run that opens "(" without closing it gives the bracket back to the text
    return kinds


def _words_in_math(glyphs: list[Glyph], raw: list[str]) -> None:
    """A short upright word between formula glyphs (sin, exp, lim, a \\text{...} label) is the
    formula's, and so is an italic letter or two of a text font next to an operator or a script
    (math set in a text font's italic, as mathptmx does). Words break where the font does."""
    i = 0
    while i < len(raw):
        if raw[i] != "T":
            i += 1
            continue
        j = i
        while j < len(raw) and raw[j] == "T" and glyphs[j].font == glyphs[i].font:
            j += 1
        word = "".join(g.c for g in glyphs[i:j])
        before = next((raw[k] for k in range(i - 1, -1, -1) if raw[k] != " "), "")
        after = next((raw[k] for k in range(j, len(raw)) if raw[k] != " "), "")
        tight = (i == 0 or raw[i - 1] != " ") and (j == len(raw) or raw[j] != " ")
        italic = len(word) <= ITALIC_WORD and all(ITALIC_MATH_FONT.search(g.font) for g in glyphs[i:j])
        near_op = any(_op_near(glyphs, raw, k, step) for k, step in ((i - 1, -1), (j, 1)))
        if word.isalpha() and ((word in FUNCTIONS and (before == "M" or after == "M"))
                               or (tight and before == "M" and after in "MN" and len(word) <= 4)
                               or (italic and (before == "M" or after == "M" or near_op))):
            raw[i:j] = ["M"] * (j - i)
        i = j


def _op_near(glyphs: list[Glyph], raw: list[str], k: int, step: int) -> bool:
    """Whether the first glyph from `k` on (skipping spaces) is a math operator or in a math font."""
    while 0 <= k < len(raw) and raw[k] == " ":
        k += step
    if not 0 <= k < len(raw):
        return False
    word = glyphs[k - step]
    return raw[k] == "M" or glyphs[k].c in "=+−<>≤≥×·/∈→" or (raw[k] == "N" and glyphs[k].size < word.size * BASE_SIZE)


def _body(glyphs: list[Glyph]) -> Glyph | None:
    """A glyph of the line's body text (the most common size and baseline of non-math letters)."""
    letters = [g for g in glyphs if g.c.isalpha() and not g.math]
    if not letters:
        return None
    size = statistics.mode(round(g.size, 1) for g in letters)
    same = [g for g in letters if round(g.size, 1) == size]
    base = statistics.median(g.base for g in same)
    return min(same, key=lambda g: abs(g.base - base))


def _substantive(run: list[Glyph]) -> bool:
    """Whether a run shows more than a bullet or a lone punctuation mark of a symbol font."""
    return any(g.c.isalnum() or (g.c in SYMBOLS and g.c not in "•◦·") or g.c in "=+<>" for g in run)


# ---- display formulas ------------------------------------------------------------------------------
def is_display(lines: list) -> bool:
    """Whether these "rawdict" lines are a display formula: most of their glyphs are math (math
    fonts, scripts, operators, digits) and no run of body text is longer than a short word."""
    total = math = 0
    for ln in lines:
        pairs = [(g, k) for g, k in zip(*_marks(ln)) if not g.c.isspace()]
        if pairs:
            total += len(pairs)
            math += sum(k == "M" for _, k in pairs) if any(g.math for g, _ in pairs) else 0
    if not math or math < DISPLAY_MATH_SHARE * total:
        return False
    text = " ".join(s.get("text", "") for ln in lines for s in ln.get("spans", ()))
    return not re.search(r"[^\W\d_]{5,}\s+[^\W\d_]{3,}\s+[^\W\d_]{3,}", text)  # three words of prose


def merge_display(blocks: list) -> list:
    """The page's "rawdict" blocks with each display formula that MuPDF cut into several blocks
    (a sum's limits, a fraction's numerator and denominator, an equation number) joined into
    one, marked `formula`. Blocks without body text are joined when they touch and one is the
    other's script or limit (smaller), a rule lies between them (a fraction), or one holds no
    math glyph (a denominator of digits, an equation number); two formulas of full size one
    under the other stay apart."""
    texts = [b for b in blocks if b.get("type") == 0 and b.get("lines")]
    if not any(line_has_math(ln) for b in texts for ln in b["lines"]):
        return blocks
    mathy = [b for b in texts if _no_prose(b)]
    facts = {id(b): _facts(b) for b in mathy}
    ink = {id(b): _union([(g.x0, g.y0, g.x1, g.y1) for g in glyphs_of(b["lines"])] or [b["bbox"]]) for b in mathy}
    parent = {id(b): id(b) for b in mathy}

    def find(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    rules = sorted({r for b in mathy for r in b.get("rules", ())})
    for a in mathy:  # a script, a limit, a numerator, a number: to its nearest formula part that it belongs to
        sa, ma = facts[id(a)]
        near = []
        for b in mathy:
            sb = facts[id(b)][0]
            box_a, box_b = ink[id(a)], ink[id(b)]
            if b is a or not _touches(box_a, box_b, 0.8 * max(sa, sb)):
                continue
            if not ma or sa < sb * BASE_SIZE or _rule_between(a, b, rules) or _same_row(box_a, box_b, sa):
                near.append((_gap(box_a, box_b), b))
        if near:
            b = min(near, key=lambda n: n[0])[1]
            parent[find(id(a))] = find(id(b))
    groups: dict[int, list] = {}
    for b in mathy:
        groups.setdefault(find(id(b)), []).append(b)
    chosen = [g for g in groups.values() if any(is_display(b["lines"]) for b in g)]
    if not chosen:
        return blocks
    first = {id(g[0]): g for g in chosen}
    placed = {id(b) for g in chosen for b in g}
    out = []
    for b in blocks:
        if id(b) in first:
            group = first[id(b)]
            lines = [ln for x in group for ln in x["lines"]]
            out.append({**b, "bbox": _union([x["bbox"] for x in group]), "lines": lines,
                        "rules": sorted({r for x in group for r in x.get("rules", ())}), "formula": True})
        elif id(b) not in placed:
            out.append(b)
    return out


def _same_row(a, b, size: float) -> bool:
    """Side by side on one row: mostly the same height, at most a size apart."""
    overlap = min(a[3], b[3]) - max(a[1], b[1])
    return overlap >= 0.5 * min(a[3] - a[1], b[3] - b[1]) and max(a[0], b[0]) - min(a[2], b[2]) <= size


def _gap(a, b) -> float:
    """The distance between two boxes (0 when they overlap)."""
    return max(0.0, max(a[0], b[0]) - min(a[2], b[2])) + max(0.0, max(a[1], b[1]) - min(a[3], b[3]))


def _facts(block: dict) -> tuple[float, bool]:
    """A block's largest glyph size (big operators aside) and whether it holds a math glyph."""
    glyphs = [g for g in glyphs_of(block["lines"]) if not g.c.isspace()]
    sizes = [g.size for g in glyphs] or [0.0]
    return max(sizes), any(g.math for g in glyphs)


def _rule_between(a: dict, b: dict, rules: list) -> bool:
    """Whether a rule lies between the two blocks' middles, over both (a fraction's bar)."""
    lo, hi = sorted(((a["bbox"][1] + a["bbox"][3]) / 2, (b["bbox"][1] + b["bbox"][3]) / 2))
    x0, x1 = max(a["bbox"][0], b["bbox"][0]), min(a["bbox"][2], b["bbox"][2])
    return any(lo <= r[1] <= hi and r[0] <= x1 and r[2] >= x0 for r in rules)


def _no_prose(block: dict) -> bool:
    """A block of formula glyphs only: no word of body text in any of its lines (a function
    name such as `lim` alone on a line is a formula's)."""
    for ln in block["lines"]:
        pairs = [(g, k) for g, k in zip(*_marks(ln)) if not g.c.isspace()]
        if not pairs:
            continue
        glyphs, kinds = [g for g, _ in pairs], [k for _, k in pairs]
        words = re.findall(r"[^\W\d_]+", "".join(g.c if k == "T" else " " for g, k in zip(glyphs, kinds)))
        if any(w not in FUNCTIONS for w in words):
            return False
    return True


def _touches(box, other, slack: float = 4.0) -> bool:
    """Whether two boxes overlap or lie within `slack` points of each other."""
    return (other[0] <= box[2] + slack and other[2] >= box[0] - slack and other[1] <= box[3] + slack
            and other[3] >= box[1] - slack)


def block_latex(lines: list, rules: list[Rule] = ()) -> str:
    """A display formula's LaTeX from its lines' glyphs and the rules among them. Formulas set
    one under another (rows that no tall delimiter spans: not a matrix or `cases`) are one
    display each: `$$...$$` blocks one after another."""
    glyphs = [g for g in glyphs_of(lines) if not g.c.isspace() and g.c not in DROP]
    rows = formula_rows(glyphs, rules)
    if len(rows) > 1 and not _spanned(rows):
        tex = [_display(r, rules) for r in rows]
        return "\n\n".join(f"$$\n{t}\n$$" for t in tex if t)
    return _display(glyphs, rules)


def _display(glyphs: list[Glyph], rules: list[Rule]) -> str:
    glyphs, tag = _tag(glyphs)
    tex = to_latex(glyphs, rules)
    return f"{tex} \\tag{{{tag}}}" if tag and tex else tex


def _spanned(rows: list[list[Glyph]]) -> bool:
    """Whether a tall glyph (a brace, a bracket) reaches across rows: a matrix or cases."""
    tops = [min(g.y0 for g in r) for r in rows]
    bottoms = [max(g.y1 for g in r) for r in rows]
    return any(g.y0 < bottoms[k] - 1 and g.y1 > tops[k + 1] + 1 for r in rows for g in r
               for k in range(len(rows) - 1) if g.y1 - g.y0 > 1.8 * g.size)


def _tag(glyphs: list[Glyph]) -> tuple[list[Glyph], str]:
    """The glyphs without an equation number "(n)" set apart at the right, and the number."""
    if len(glyphs) < 4:
        return glyphs, ""
    ordered = sorted(glyphs, key=lambda g: g.x0)
    for k in range(len(ordered) - 3, max(len(ordered) - 8, 0), -1):
        tail = ordered[k:]
        text = "".join(g.c for g in tail)
        gap = tail[0].x0 - max(g.x1 for g in ordered[:k])
        if re.fullmatch(r"\((\d{1,3}(?:\.\d{1,3})?[a-z]?)\)", text) and gap >= TAG_GAP * tail[0].size:
            return ordered[:k], text[1:-1]
    return glyphs, ""
