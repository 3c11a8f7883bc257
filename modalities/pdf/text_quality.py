"""How trustworthy a text is, as a score from 0 (garbage) to 1 (reads like words): the check that
sends a page (`textlayer.judge`) or a region (the layout stage) whose text layer cannot be
trusted to OCR. Pure functions over strings: no PyMuPDF here.

`score(text)` looks at the text's non-space characters, once there are at least `min_chars` of
them (fewer cannot be judged: a title page with one word scores 1.0):

- **unmapped glyphs**: U+FFFD (a glyph without a Unicode mapping), private-use code points (a
  font's own encoding), controls, surrogates and unassigned code points;
- **shifted-cipher tokens**: a font whose encoding is shifted maps letters onto other code
  points of Latin-1, so words come out as runs of accented letters and symbols
  (`]üìÆüéê •ìê °ê£ë†£ûÜüéê`, redbook p3). A token is one when, past its edge punctuation,
  more than half of its letters are Latin-1 accented letters (`ACCENT_SHARE`) and it has at
  least `ACCENT_MIN_LETTERS` letters or only accented ones ("été", "Größe", "ação" stay words),
  or when it has one and a non-ASCII symbol sits between its letters (`ë†£û`; "AT&T", "f(x)", "x86_64"
  and "well–known" are words);
- **symbol soup**: fewer than `MIN_ALNUM_FRACTION` of the characters are letters or digits (a
  broken encoding that maps glyphs onto punctuation).

The score is one minus the share of characters in the first two kinds, capped by the share of
letters and digits when that is under `MIN_ALNUM_FRACTION`; under `MIN_QUALITY` the text is
garbage and the reason says which kind dominates.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

MIN_SAMPLE_CHARS = 12  # non-space characters needed before a text can be judged (a short region or title page)
MIN_QUALITY = 0.9  # under it: a tenth of its characters unreadable, OCR reads it better (docs/benchmarks.md)
MIN_ALNUM_FRACTION = 0.25  # letters and digits: below every real born-digital page tried (docs/benchmarks.md)
ACCENT_SHARE = 0.5  # more than this share of a token's letters accented Latin-1: a shifted cipher...
ACCENT_MIN_LETTERS = 4  # ...when it has this many letters ("été": 3) or no plain letter at all ("ìê")
BAD_CATEGORIES = frozenset({"Co", "Cc", "Cs", "Cn"})  # private use, control, surrogate, unassigned
NON_ASCII = re.compile(r"[^\x00-\x7f]")
ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1b\x7f]")  # \x1c-\x1f count as spaces in Python
NOT_ALNUM = re.compile(r"[\W_]+")  # what is not a letter or a digit, any script (as str.isalnum)


def score(text: str, min_chars: int = MIN_SAMPLE_CHARS, symbol_floor: bool = True) -> tuple[float, str]:
    """(0..1, "" or why the text is garbage) for `text` (see the module docstring).
    `symbol_floor=False` leaves out the letters-and-digits floor: a block of dot leaders or of a
    figure's glyphs is mostly symbols without being unreadable (the floor is a page rule)."""
    n = len("".join(text.split()))  # the counts run in C: this is on every page's path
    if n == 0 or n < min_chars:
        return 1.0, ""
    others = Counter(NON_ASCII.findall(text))
    bad = len(ASCII_CONTROL.findall(text)) + sum(k for c, k in others.items() if is_unmapped(c))
    cipher = sum(len(t) for t in text.split() if not t.isascii() and is_cipher_token(t)) if others else 0
    alnum = len(NOT_ALNUM.sub("", text))
    value = max(0.0, 1.0 - (bad + cipher) / n)
    if symbol_floor and alnum / n < MIN_ALNUM_FRACTION:
        value = min(value, alnum / n)
    if value >= MIN_QUALITY:
        return round(value, 4), ""
    if (bad + cipher) / n > 1.0 - MIN_QUALITY and bad >= cipher:
        why = (f"{bad / n:.0%} of its characters are U+FFFD, private-use or control characters: "
               "a font without a usable Unicode mapping")
    elif (bad + cipher) / n > 1.0 - MIN_QUALITY:
        why = (f"{cipher / n:.0%} of its characters are in tokens that are not words (runs of accented "
               "Latin-1 letters and symbols): a font whose encoding is shifted")
    else:
        why = (f"only {alnum / n:.0%} of its characters are letters or digits "
               f"(< {MIN_ALNUM_FRACTION:.0%}): a broken font encoding")
    return round(value, 4), why


def is_unmapped(char: str) -> bool:
    """U+FFFD, private use, control, surrogate or unassigned: a glyph with no usable meaning."""
    return char == "\ufffd" or unicodedata.category(char) in BAD_CATEGORIES


def is_cipher_token(token: str) -> bool:
    """Whether a whitespace-free token is a shifted-cipher word (see the module docstring)."""
    core = _strip_edges(token)
    letters = [c for c in core if c.isalpha()]
    if not letters:
        return False
    accented = sum(1 for c in letters if _latin1_accented(c))
    if accented / len(letters) > ACCENT_SHARE and (len(letters) >= ACCENT_MIN_LETTERS or accented == len(letters)):
        return True
    if not accented:
        return False  # a symbol between CJK or Greek letters is their own punctuation: "表，数据"
    first = next(i for i, c in enumerate(core) if c.isalpha())
    last = max(i for i, c in enumerate(core) if c.isalpha())
    return any(_symbol(c) for c in core[first:last])


def _strip_edges(token: str) -> str:
    start, end = 0, len(token)
    while start < end and not token[start].isalnum():
        start += 1
    while end > start and not token[end - 1].isalnum():
        end -= 1
    return token[start:end]


def _latin1_accented(c: str) -> bool:
    return "\u00c0" <= c <= "\u00ff" and c not in "\u00d7\u00f7"


def _symbol(c: str) -> bool:
    """A symbol or odd punctuation that a word never carries between its letters."""
    if c.isascii() or c.isalnum() or is_unmapped(c):
        return False  # ASCII punctuation inside a token is code or maths: "f(x)", "a[i]", "x=y"
    return unicodedata.category(c)[0] in "SP" and unicodedata.category(c) not in ("Pd", "Pc")
