"""Token F1 between two texts, for checking extracted text against a reference (pdftotext).

Tokens are NFKC-normalised, lowercased words of letters and digits in any script (runs of
`str.isalnum` characters; punctuation, Markdown syntax and underscores separate them), except
that each Han ideograph and each kana is a token of its own: Chinese and Japanese are written
without spaces, so their "words" would depend on where a tool breaks lines. F1 is over
multisets (a word twice in the reference must appear twice), so it ignores order: page order
is checked separately. HTML tags (a table with spanning cells) are markup, not words: they are
left out.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # kana, CJK ideographs (+ ext. A, compat.)
TOKEN = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
TAG = re.compile(r"</?(?:table|thead|tbody|tr|td|th)\b[^>]*>", re.IGNORECASE)


def tokens(text: str) -> list[str]:
    """The tokens of `text` (see the module docstring)."""
    return TOKEN.findall(unicodedata.normalize("NFKC", TAG.sub(" ", text)).lower())


def f1(candidate: str, reference: str) -> float:
    """Token F1 of `candidate` against `reference` over multisets (1.0 when both are empty)."""
    return counts_f1(Counter(tokens(candidate)), Counter(tokens(reference)))


def counts_f1(got: Counter, want: Counter) -> float:
    """F1 of a multiset of tokens against a reference multiset (1.0 when both are empty)."""
    if not got and not want:
        return 1.0
    common = sum((got & want).values())
    if not common:
        return 0.0
    precision, recall = common / sum(got.values()), common / sum(want.values())
    return 2 * precision * recall / (precision + recall)
