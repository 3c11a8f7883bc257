"""The text checks of `curate eval`: olmOCR-Bench's unit-test kinds present, absent, order, math
and baseline, as pure functions of one test's fields and one page's Markdown (tables are in
eval_tables.py). Written from the format's documentation; no third-party matcher, so that the
eval runs wherever curate does.

Fuzzy matching: a test's `max_diffs` is an edit budget. A text is "on the page" when some
substring of the page is within `max_diffs` edits (insertions, deletions, substitutions) of it;
with `max_diffs` 0 (the default) that is plain substring search. The reference implementation
scores with rapidfuzz's partial ratio against the same 1 - max_diffs/len threshold; the two agree
on exact matches and differ only at the edge of the budget."""

from __future__ import annotations

import re
import unicodedata

# What the format treats as the same character: typographic quotes and dashes, micro vs mu.
_SAME = {"‘": "'", "’": "'", "‚": "'", "“": '"', "”": '"', "„": '"', "＿": "_", "–": "-", "—": "-", "‑": "-",
         "‒": "-", "−": "-", "\u00b5": "\u03bc"}
_SAME_RE = re.compile("|".join(map(re.escape, _SAME)))
DEFAULT_MAX_REPEATS = 30  # baseline: a page ending in more repeats of one n-gram is degenerate output
REPEAT_NGRAM = 5  # baseline: the longest n-gram (in characters) whose repetition at the end is counted
# baseline: scripts a page of the eval's languages must not contain unless the test says so (CJK, emoji):
# a model that drifts into another script has failed the page
_DISALLOWED = re.compile("[\u4e00-\u9fff\u3040-\u309f\u30a0-\u30ff\U0001F600-\U0001F64F\U0001F300-\U0001F5FF"
                         "\U0001F680-\U0001F6FF\U0001F1E0-\U0001F1FF]")


def normalize(text: str) -> str:
    """Markdown emphasis and <br> dropped, whitespace collapsed to one space, NFC, and
    typographic quotes/dashes as ASCII: what every check compares."""
    text = re.sub(r"<br\s*/?>", " ", text)
    text = re.sub(r"</?(b|i|strong|em)>", "", text)
    text = re.sub(r"(\*\*|__)(.*?)\1", r"\2", text)
    text = re.sub(r"(?<![\w*])([*_])(?![\s*_])(.*?)(?<![\s*_])\1(?![\w*])", r"\2", text)
    text = unicodedata.normalize("NFC", re.sub(r"\s+", " ", text))
    return _SAME_RE.sub(lambda m: _SAME[m.group(0)], text)


def near_ends(pattern: str, text: str, k: int) -> list[int]:
    """End offsets (exclusive) in `text` of substrings within `k` edits of `pattern`: Myers'
    bit-parallel approximate search (one pass over `text`, a Python int as the bit vector)."""
    if k == 0:
        return [i + len(pattern) for i in _find_all(pattern, text)]
    m = len(pattern)
    if m == 0:
        return list(range(len(text) + 1))
    peq: dict[str, int] = {}
    for i, c in enumerate(pattern):
        peq[c] = peq.get(c, 0) | (1 << i)
    mask, high = (1 << m) - 1, 1 << (m - 1)
    pv, mv, score, ends = mask, 0, m, []
    for j, c in enumerate(text):
        eq = peq.get(c, 0)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = (mv | ~(xh | pv)) & mask
        mh = pv & xh
        score += 1 if ph & high else (-1 if mh & high else 0)
        ph, mh = (ph << 1) & mask, (mh << 1) & mask  # no carry in: a match may start anywhere
        pv = (mh | ~(xv | ph)) & mask
        mv = ph & xv
        if score <= k:
            ends.append(j + 1)
    return ends


def _find_all(pattern: str, text: str) -> list[int]:
    """Start offsets of every (overlapping) occurrence of `pattern` in `text`."""
    out, i = [], text.find(pattern)
    while i >= 0:
        out.append(i)
        i = text.find(pattern, i + 1)
    return out


def near_starts(pattern: str, text: str, k: int) -> list[int]:
    """Start offsets of substrings of `text` within `k` edits of `pattern` (the ends of the
    reversed search)."""
    if k == 0:
        return _find_all(pattern, text)
    return sorted(len(text) - e for e in near_ends(pattern[::-1], text[::-1], k))


def ratio(a: str, b: str) -> float:
    """Similarity of two whole strings, 0..1: 2 * longest common subsequence / total length
    (the Indel ratio the format's table checks use)."""
    if not a and not b:
        return 1.0
    if a == b:
        return 1.0
    prev = [0] * (len(b) + 1)
    for ca in a:
        cur = [0]
        for j, cb in enumerate(b):
            cur.append(prev[j] + 1 if ca == cb else max(prev[j + 1], cur[j]))
        prev = cur
    return 2 * prev[-1] / (len(a) + len(b))


def check_text(test: dict, md: str) -> tuple[bool, str]:
    """present / absent: the test's `text` is (not) on the page, within `max_diffs` edits,
    optionally only in the page's first_n / last_n characters; case_sensitive by default."""
    query, page, k = normalize(test["text"]), normalize(md), int(test.get("max_diffs", 0))
    if not test.get("case_sensitive", True):
        query, page = query.lower(), page.lower()
    first, last = test.get("first_n"), test.get("last_n")
    if first and last:
        page = page[:first] + page[-last:]
    elif first:
        page = page[:first]
    elif last:
        page = page[-last:]
    found = len(page) >= len(query) - k and bool(near_ends(query, page, k))
    if test["type"] == "present":
        return found, "" if found else f"{query[:50]!r} not found (max_diffs {k})"
    return not found, "" if not found else f"{query[:50]!r} is on the page (max_diffs {k})"


def check_order(test: dict, md: str) -> tuple[bool, str]:
    """order: some occurrence of `before` starts before some occurrence of `after`."""
    page, k = normalize(md), int(test.get("max_diffs", 0))
    before, after = normalize(test["before"]), normalize(test["after"])
    starts_b, starts_a = near_starts(before, page, k), near_starts(after, page, k)
    if not starts_b:
        return False, f"before {before[:50]!r} not found"
    if not starts_a:
        return False, f"after {after[:50]!r} not found"
    if starts_b[0] < starts_a[-1]:
        return True, ""
    return False, f"{after[:40]!r} comes before {before[:40]!r}"


_MATH_DELIMS = (r"\\\((.+?)\\\)", r"\\\[(.+?)\\\]", r"\$\$(.+?)\$\$", r"\$(.+?)\$")
# TeX that changes spacing or sizing only, dropped before equations are compared
_MATH_NOISE = re.compile(r"\\(left|right|displaystyle|textstyle|big|Big|bigg|Bigg)\b|\\[,;:! ]|~|\s+")


def math_key(tex: str) -> str:
    """A formula's TeX reduced to what it shows: spacing and sizing commands and whitespace
    dropped, braces around a single character removed."""
    tex = _MATH_NOISE.sub("", tex)
    prev = None
    while prev != tex:
        prev, tex = tex, re.sub(r"\{(\\?[A-Za-z0-9])\}", r"\1", tex)
    return tex


def equations(md: str, dollars: bool = True) -> list[str]:
    """The page's formulas: \\(..\\), \\[..\\] and (unless `dollars` is off) $$..$$, $..$."""
    found = []
    for pattern in _MATH_DELIMS[: 4 if dollars else 2]:
        found += [m.strip() for m in re.findall(pattern, md, re.DOTALL)]
        md = re.sub(pattern, " ", md, flags=re.DOTALL)
    return found


def check_math(test: dict, md: str) -> tuple[bool, str]:
    """math: a formula on the page shows the test's `math`. The reference implementation
    renders both with KaTeX and compares the pictures; without a TeX renderer this compares
    their TeX after `math_key` (equal, or the reference inside a longer display), which
    refuses some equivalent spellings the renderer accepts."""
    want = math_key(test["math"])
    for eq in equations(md, not test.get("ignore_dollar_delimited", False)):
        if want and want in math_key(eq):
            return True, ""
    return False, f"no formula on the page shows {test['math'][:50]!r}"


def end_repeats(text: str, n: int) -> int:
    """How many times the last `n` characters repeat back to back at the end of `text`."""
    if len(text) < n or n == 0:
        return 0
    unit, count, i = text[-n:], 0, len(text)
    while i - n >= 0 and text[i - n:i] == unit:
        count, i = count + 1, i - n
    return count


def check_baseline(test: dict, md: str) -> tuple[bool, str]:
    """baseline: the page is not blank, does not end in one n-gram repeated past max_repeats,
    and holds no disallowed script; with max_length, the page must be (nearly) blank instead."""
    body = md
    if test.get("max_length") is not None:
        if test.get("max_length_skips_image_alt_tags"):
            body = re.sub(r"!\[.*?\]\(.*?\)", "", body)
        n = sum(c.isalnum() for c in body)
        return (n <= test["max_length"]), "" if n <= test["max_length"] else f"{n} characters on a blank page"
    if not any(c.isalnum() for c in md):
        return False, "no letters or digits on the page"
    squeezed = re.sub(r"\s+", "", md)
    limit = int(test.get("max_repeats", DEFAULT_MAX_REPEATS))
    for n in range(1, REPEAT_NGRAM + 1):
        if end_repeats(squeezed, n) > limit:
            return False, f"ends with {end_repeats(squeezed, n)} repeats of a {n}-gram"
    if test.get("check_disallowed_characters", True):
        bad = _DISALLOWED.findall(md)
        if bad:
            return False, f"disallowed characters {''.join(bad[:5])!r}"
    return True, ""
