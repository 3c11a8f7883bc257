"""How trustworthy a text is, as a score from 0 (garbage) to 1 (reads like words): the check that
sends a page (`textlayer.judge`) or a region (the layout stage) whose text layer cannot be
trusted to OCR. Pure functions over strings: no PyMuPDF here.

`score(text)` looks at the text's non-space characters, once there are at least `min_chars` of
them (fewer cannot be judged: a title page with one word scores 1.0):

- **unmapped glyphs**: U+FFFD (a glyph without a Unicode mapping), private-use code points (a
  font's own encoding), controls, surrogates, unassigned code points, and pdfminer's `(cid:12)`
  placeholders (a text layer written from another extractor's output);
- **mojibake tokens**: UTF-8 read as Latin-1 or Windows-1252 (`Ã©` for é, `Ð¿` for п, `â€™` for
  ’), a broken ToUnicode map: a token holding a UTF-8 lead byte read as a Latin-1 letter
  followed by a continuation byte read likewise (`MOJIBAKE`), a pair no language writes;
- **shifted-cipher tokens**: a font whose encoding is shifted maps letters onto other code
  points of Latin-1, so words come out as runs of accented letters and symbols
  (`]üìÆüéê •ìê °ê£ë†£ûÜüéê`, redbook p3; `Ñòàðûé ìåëüíèê`, Windows-1251 Cyrillic read as
  Latin-1). A token is *accent-heavy* when, past its edge punctuation, more than half of its
  letters are Latin-1 accented letters (`ACCENT_SHARE`) and it has at least `ACCENT_MIN_LETTERS`
  letters or only accented ones. Languages write such words too (Icelandic "þú", "á", "þjóð",
  Turkish "üç", "küçük", Portuguese "é"), so an accent-heavy token is a cipher word only with
  evidence: a symbol in it (`•ìê`; not the apostrophes, quotes and dots words carry: "l’été",
  "col·lecció"), a capital after two small letters ("üìÆ"), or a line on which accented letters
  outnumber plain ones (a whole line in the cipher; no language's prose is like that: in
  tests/prose_samples.py Icelandic has 20-25% of its Latin letters accented, at most 38% on a
  60-character line). A token with one accented letter is one
  too when a symbol sits between its letters (`ë†£û`; "AT&T", "f(x)", "x86_64" and
  "well–known" are words);
- **symbol soup**: fewer than `MIN_ALNUM_FRACTION` of the characters are letters or digits (a
  broken encoding that maps glyphs onto punctuation).

The score is one minus the share of characters in the first three kinds, capped by the share of
letters and digits when that is under `MIN_ALNUM_FRACTION`; under `MIN_QUALITY` the text is
garbage and the reason says which kind dominates. Scripts other than Latin (Greek, Cyrillic,
Arabic, Hebrew, CJK, Devanagari, Thai...) have no Latin-1 accented letters and score 1.0 when
their code points are assigned (tests/prose_samples.py: prose in 27 languages).
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
CID_CODE = re.compile(r"\(cid:\d+\)")  # pdfminer's placeholder for a glyph it could not map
# a UTF-8 lead byte read as Latin-1 (Â-ô) and a continuation byte read as Latin-1 or Windows-1252;
# left out of the second: C1 controls (unmapped already), NBSP, « and » (French "été\xa0»"), and
# the quotes, dashes, ellipsis and bullet that follow a word in real text ("café—", "acción”")
MOJIBAKE = re.compile("[\u00c2-\u00f4][\u00a1-\u00aa\u00ac-\u00ba\u00bc-\u00bf"
                      "\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6\u02dc"
                      "\u201a\u201e\u2020\u2021\u2030\u2039\u203a\u20ac\u2122]")
LATIN1_ACCENTED = re.compile("[\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u00ff]")
ASCII_LETTER = re.compile("[A-Za-z]")
# non-ASCII punctuation that words carry inside or at their edges: middle dot (Catalan "l·l"),
# spacing acute and grave as apostrophes ("l´été"), ellipsis, Spanish ¡ ¿, Hebrew geresh
WORD_PUNCTUATION = frozenset("\u00b7\u00b4`\u2026\u00a1\u00bf\u05f3\u05f4\u2027")


def score(text: str, min_chars: int = MIN_SAMPLE_CHARS, symbol_floor: bool = True) -> tuple[float, str]:
    """(0..1, "" or why the text is garbage) for `text` (see the module docstring).
    `symbol_floor=False` leaves out the letters-and-digits floor: a block of dot leaders or of a
    figure's glyphs is mostly symbols without being unreadable (the floor is a page rule)."""
    n = len("".join(text.split()))  # the counts run in C: this is on every page's path
    if n == 0 or n < min_chars:
        return 1.0, ""
    others = Counter(NON_ASCII.findall(text))
    cids = sum(map(len, CID_CODE.findall(text))) if "(cid:" in text else 0
    bad = cids + len(ASCII_CONTROL.findall(text)) + sum(k for c, k in others.items() if is_unmapped(c))
    moji = cipher = 0
    if others:
        for line in text.splitlines():
            m, c = _broken_chars(line)
            moji, cipher = moji + m, cipher + c
    alnum = len(NOT_ALNUM.sub("", CID_CODE.sub("", text) if cids else text))
    value = max(0.0, 1.0 - (bad + moji + cipher) / n)
    if symbol_floor and alnum / n < MIN_ALNUM_FRACTION:
        value = min(value, alnum / n)
    if value >= MIN_QUALITY:
        return round(value, 4), ""
    if (bad + moji + cipher) / n > 1.0 - MIN_QUALITY and bad >= max(cipher, moji):
        why = (f"{bad / n:.0%} of its characters are U+FFFD, private-use or control characters "
               "(or (cid:N) codes): a font without a usable Unicode mapping")
    elif (bad + moji + cipher) / n > 1.0 - MIN_QUALITY and moji > cipher:
        why = (f"{moji / n:.0%} of its characters are UTF-8 read as Latin-1 (mojibake: Ã© for é): "
               "a font whose Unicode mapping is broken")
    elif (bad + moji + cipher) / n > 1.0 - MIN_QUALITY:
        why = (f"{cipher / n:.0%} of its characters are in tokens that are not words (runs of accented "
               "Latin-1 letters and symbols): a font whose encoding is shifted")
    else:
        why = (f"only {alnum / n:.0%} of its characters are letters or digits "
               f"(< {MIN_ALNUM_FRACTION:.0%}): a broken font encoding")
    return round(value, 4), why


def _broken_chars(line: str) -> tuple[int, int]:
    """(characters in mojibake tokens, characters in shifted-cipher tokens) of one line (see
    the module docstring)."""
    if line.isascii() or not LATIN1_ACCENTED.search(line):
        return 0, 0  # both need a Latin-1 letter: a CJK, Greek or Cyrillic line has none
    accented = len(LATIN1_ACCENTED.findall(line))
    cipher_line = accented > ACCENT_SHARE * (accented + len(ASCII_LETTER.findall(line)))
    moji = cipher = 0
    for token in line.split():
        if token.isascii():
            continue
        if is_cipher_token(token, cipher_line):
            cipher += len(token)
        elif MOJIBAKE.search(token):
            moji += len(token)
    return moji, cipher


def is_unmapped(char: str) -> bool:
    """U+FFFD, private use, control, surrogate or unassigned: a glyph with no usable meaning."""
    return char == "\ufffd" or unicodedata.category(char) in BAD_CATEGORIES


def is_cipher_token(token: str, cipher_line: bool = False) -> bool:
    """Whether a whitespace-free token is a shifted-cipher word (see the module docstring);
    `cipher_line`: its line's accented letters outnumber its plain ones."""
    core = _strip_edges(token)
    letters = [c for c in core if c.isalpha()]
    if not letters:
        return False
    accented = sum(1 for c in letters if _latin1_accented(c))
    if not accented:
        return False  # a symbol between CJK or Greek letters is their own punctuation: "表，数据"
    if accented / len(letters) > ACCENT_SHARE and (len(letters) >= ACCENT_MIN_LETTERS or accented == len(letters)):
        return cipher_line or any(_symbol(c) for c in token) or _capital_after_small(core)
    first = next(i for i, c in enumerate(core) if c.isalpha())
    last = max(i for i, c in enumerate(core) if c.isalpha())
    return any(_symbol(c) for c in core[first:last])


def _capital_after_small(core: str) -> bool:
    """A non-ASCII capital right after two small letters ("üìÆ"): a cipher's case, no word's
    (Irish "hÉireann" has one small letter before its capital)."""
    return any(c.isupper() and not c.isascii() and core[i - 1].islower() and core[i - 2].islower()
               for i, c in enumerate(core) if i >= 2)


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
    """A symbol or odd punctuation that a word never carries: not ASCII (ASCII punctuation
    inside a token is code or maths: "f(x)", "a[i]", "x=y"), not a quote, bracket or dash
    ("l’été", "„Þjóð“"), not `WORD_PUNCTUATION`."""
    if c.isascii() or c.isalnum() or is_unmapped(c) or c in WORD_PUNCTUATION:
        return False
    category = unicodedata.category(c)
    return category[0] == "S" or category == "Po"
