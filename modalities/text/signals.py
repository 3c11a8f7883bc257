"""Quality signals of a text, Gopher and FineWeb style: pure functions over strings, each the
measure of one published heuristic, so a filter can put a documented threshold on it.

Sources: Gopher's quality and repetition filters (Rae et al. 2021, "Scaling Language Models",
appendix A.1.1, as datatrove's `GopherQualityFilter` and `GopherRepetitionFilter` implement them)
and FineWeb's own filters (Penedo et al. 2024, datatrove's `FineWebQualityFilter`). Each
function's docstring names its source and the threshold that source uses; the defaults of
`curate.modalities.text.filters.TextFilter` are those thresholds.

What is counted:
- a **word** is a whitespace-separated token with its leading and trailing punctuation cut off
  ("(see" -> "see", "don't" stays); a token of punctuation alone ("—", "|") is no word. A text
  written without spaces (Chinese, Japanese, Thai) has few, long "words": the word-based
  measures are meant for space-separated scripts (the filter skips them for those languages);
- a **line** is a line with something on it, stripped; a **paragraph** a block between blank
  lines, stripped;
- a **character fraction** over words counts the characters of the words (spaces left out), so
  a repeated n-gram's share does not depend on how the text is spaced;
- `markdown_text` turns Markdown (a PDF page's) into the text these measures read: a heading's
  `#` marks, a table's pipes and rules, HTML tags and figure placeholders are syntax, not text
  (a `#` there would count as a hashtag); list bullets stay (they are what `bullet_lines` counts).

`text_signals(text)` gives every signal as the plain columns the rows carry (`SIGNALS`); a
ratio over nothing (no words, no lines) is None.
"""

from __future__ import annotations

import re

TOP_NGRAMS = (2, 3, 4)  # Gopher: the most frequent 2-, 3- and 4-gram's character share
DUP_NGRAMS = (5, 6, 7, 8, 9, 10)  # Gopher: the character share of repeated 5- to 10-grams
SHORT_LINE_CHARS = 30  # FineWeb: a line of at most this many characters is short
BULLETS = ("•", "●", "◦", "▪", "‣", "-", "*", "–")  # Gopher's bullet points, and Markdown's list marks
ELLIPSES = ("...", "…")
# a line that ends a sentence or a quotation, in the scripts of the corpus (Latin, CJK, Arabic, Devanagari)
TERMINAL = tuple(".!?…\"'”’»)。！？؟۔।")
SIGNALS = ("words", "mean_word_length", "symbol_word_ratio", "alpha_words", "bullet_lines", "ellipsis_lines",
           "lines_end_punct", "short_lines", "dup_line_frac", "dup_line_char_frac", "dup_para_frac",
           "dup_para_char_frac", *(f"top_ngram_frac_{n}" for n in TOP_NGRAMS),
           *(f"dup_ngram_frac_{n}" for n in DUP_NGRAMS))
HASH_MULT = 0x9E3779B97F4A7C15  # odd 64-bit constant (the golden ratio's): spreads the bits of each round
DIGITS = 4  # decimals kept in a row: finer says nothing a threshold can use

EDGE_PUNCT = re.compile(r"^[\W_]+|[\W_]+$")
PARAGRAPH = re.compile(r"\n\s*\n")
MD_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+", re.M)
MD_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$", re.M)
MD_IMAGE = re.compile(r"!\[[^\]\n]*\]\([^)\n]*\)")
MD_FENCE = re.compile(r"^\s*(```+|\$\$)\s*$", re.M)
HTML_TAG = re.compile(r"<[^<>\n]{1,200}>")


def markdown_text(markdown: str) -> str:
    """The text of a Markdown document as the signals read it (see the module docstring)."""
    text = MD_IMAGE.sub(" ", markdown)
    text = MD_TABLE_RULE.sub("", text)
    text = MD_FENCE.sub("", text)
    text = MD_HEADING.sub("", text)
    text = HTML_TAG.sub(" ", text)
    return text.replace("|", " ")


def words_of(text: str) -> list[str]:
    """The words of `text`: whitespace tokens without their edge punctuation (none left empty)."""
    return [w for w in (t if t[0].isalnum() and t[-1].isalnum() else EDGE_PUNCT.sub("", t) for t in text.split())
            if w]


def lines_of(text: str) -> list[str]:
    """The lines of `text` that have something on them, stripped."""
    return [s for s in (ln.strip() for ln in text.splitlines()) if s]


def paragraphs_of(text: str) -> list[str]:
    """The paragraphs of `text`: blocks between blank lines, stripped."""
    return [s for s in (p.strip() for p in PARAGRAPH.split(text)) if s]


def mean_word_length(words: list[str]) -> float | None:
    """Mean characters per word. Gopher keeps 3 to 10: shorter is symbol soup or a list of
    numbers, longer is URLs, hashes or a script without spaces."""
    return sum(map(len, words)) / len(words) if words else None


def symbol_word_ratio(text: str, words: int) -> float | None:
    """Hash symbols and ellipses ("#", "...", "…") per word. Gopher drops a text over 0.1:
    hashtag lists and truncated snippets."""
    if not words:
        return None
    return (text.count("#") + sum(text.count(e) for e in ELLIPSES)) / words


def alpha_words(words: list[str]) -> float | None:
    """Share of words with at least one letter. Gopher wants at least 0.8: a table of numbers or
    code is not prose."""
    return sum(any(c.isalpha() for c in w) for w in words) / len(words) if words else None


def bullet_lines(lines: list[str]) -> float | None:
    """Share of lines that start with a bullet point. Gopher drops a text over 0.9: a list of
    links or of product names."""
    return sum(ln.startswith(BULLETS) for ln in lines) / len(lines) if lines else None


def ellipsis_lines(lines: list[str]) -> float | None:
    """Share of lines ending in an ellipsis. Gopher drops a text over 0.3: teasers cut short."""
    return sum(ln.endswith(ELLIPSES) for ln in lines) / len(lines) if lines else None


def lines_end_punct(lines: list[str]) -> float | None:
    """Share of lines ending in terminal punctuation (`TERMINAL`). FineWeb drops a text under
    0.12: menus, tables, lists of names (C4 drops each such line; FineWeb the whole text)."""
    return sum(ln.endswith(TERMINAL) for ln in lines) / len(lines) if lines else None


def short_lines(lines: list[str], chars: int = SHORT_LINE_CHARS) -> float | None:
    """Share of lines of at most `chars` characters. FineWeb drops a text over 0.67 (at 30)."""
    return sum(len(ln) <= chars for ln in lines) / len(lines) if lines else None


def duplicates(parts: list[str]) -> tuple[float | None, float | None]:
    """(share of `parts` that repeat an earlier part, share of the parts' characters in those
    repeats). Gopher, over lines: at most 0.3 and 0.2; over paragraphs: at most 0.3 and 0.2 (a
    page of boilerplate, a text printed twice)."""
    if not parts:
        return None, None
    seen: set[str] = set()
    repeats = repeat_chars = 0
    for part in parts:
        if part in seen:
            repeats += 1
            repeat_chars += len(part)
        else:
            seen.add(part)
    total = sum(map(len, parts))
    return repeats / len(parts), (repeat_chars / total if total else 0.0)


def _ids(words: list[str]) -> list[int]:
    index: dict[str, int] = {}
    return [index.setdefault(w, len(index)) for w in words]


def _hashes(ids, n: int):
    """A 64-bit hash of each n-gram of the word ids (numpy): multiply-xorshift rounds, so equal
    n-grams hash equal and different ones collide with odds of about one in 2**64 per pair."""
    import numpy as np

    h = np.zeros(len(ids) - n + 1, dtype=np.uint64)
    for k in range(n):
        h = (h ^ ids[k:len(ids) - n + 1 + k]) * np.uint64(HASH_MULT)
        h ^= h >> np.uint64(29)
    return h


def _covered(starts, n: int, lengths) -> int:
    """Characters of the words that the n-grams at `starts` cover, each word counted once."""
    import numpy as np

    marks = np.bincount(starts, minlength=len(lengths) + 1)[:len(lengths) + 1] \
        - np.bincount(starts + n, minlength=len(lengths) + 1)[:len(lengths) + 1]
    return int(lengths[np.cumsum(marks)[:-1] > 0].sum())


def _arrays(words: list[str], ids: list[int] | None):
    import numpy as np

    return (np.asarray(_ids(words) if ids is None else ids, dtype=np.uint64),
            np.fromiter(map(len, words), dtype=np.int64, count=len(words)))


def top_ngram_frac(words: list[str], n: int, ids: list[int] | None = None) -> float | None:
    """Share of the words' characters inside the occurrences of the most frequent n-gram (of
    those tied, the one covering the most), 0.0 when no n-gram occurs twice. Gopher drops a
    text over 0.20 (n=2), 0.18 (3), 0.16 (4): one phrase said over and over."""
    import numpy as np

    if not words:
        return None
    if len(words) < n:
        return 0.0
    arr, lengths = _arrays(words, ids)
    _, inverse, counts = np.unique(_hashes(arr, n), return_inverse=True, return_counts=True)
    best = counts.max()
    if best < 2:
        return 0.0
    tied = np.flatnonzero(counts[inverse] == best)  # positions of the tied n-grams, in order
    group = inverse[tied]
    order = np.lexsort((tied, group))
    starts, group = tied[order], group[order]
    # an occurrence covers its n words, up to the next occurrence of the same n-gram
    nxt = np.append(starts[1:], np.iinfo(np.int64).max)
    nxt[np.append(group[1:] != group[:-1], True)] = np.iinfo(np.int64).max
    prefix = np.concatenate(([0], np.cumsum(lengths)))
    ends = np.minimum(starts + n, nxt)
    per = np.bincount(group, weights=prefix[ends] - prefix[starts])
    total = prefix[-1]
    return float(per.max() / total) if total else 0.0


def dup_ngram_frac(words: list[str], n: int, ids: list[int] | None = None) -> float | None:
    """Share of the words' characters inside an n-gram that occurred before (each word counted
    once, the first occurrence never). Gopher drops a text over 0.15 (n=5) down to 0.10 (n=10),
    one hundredth less per word: the same passage repeated."""
    import numpy as np

    if not words:
        return None
    if len(words) < n:
        return 0.0
    arr, lengths = _arrays(words, ids)
    _, first, inverse = np.unique(_hashes(arr, n), return_index=True, return_inverse=True)
    starts = np.flatnonzero(first[inverse] != np.arange(len(inverse)))
    total = int(lengths.sum())
    return _covered(starts, n, lengths) / total if total else 0.0


def text_signals(text: str, markdown: bool = False, ngrams: bool = True) -> dict[str, float | int | None]:
    """Every signal of `text` by its column name (`SIGNALS`), rounded to `DIGITS` decimals.
    `markdown`: read it as Markdown first (`markdown_text`); `ngrams=False` leaves the n-gram
    columns None (they are most of the cost on a long document)."""
    if markdown:
        text = markdown_text(text)
    words, lines, paras = words_of(text), lines_of(text), paragraphs_of(text)
    dup_lines, dup_line_chars = duplicates(lines)
    dup_paras, dup_para_chars = duplicates(paras)
    out = {"words": len(words), "mean_word_length": mean_word_length(words),
           "symbol_word_ratio": symbol_word_ratio(text, len(words)), "alpha_words": alpha_words(words),
           "bullet_lines": bullet_lines(lines), "ellipsis_lines": ellipsis_lines(lines),
           "lines_end_punct": lines_end_punct(lines), "short_lines": short_lines(lines),
           "dup_line_frac": dup_lines, "dup_line_char_frac": dup_line_chars, "dup_para_frac": dup_paras,
           "dup_para_char_frac": dup_para_chars}
    ids = _ids(words) if ngrams else None
    for n in TOP_NGRAMS:
        out[f"top_ngram_frac_{n}"] = top_ngram_frac(words, n, ids) if ngrams else None
    for n in DUP_NGRAMS:
        out[f"dup_ngram_frac_{n}"] = dup_ngram_frac(words, n, ids) if ngrams else None
    return {k: (round(v, DIGITS) if isinstance(v, float) else v) for k, v in out.items()}
