"""Words across line ends: lines joined into paragraphs, ligatures normalised, and a word
hyphenated at a line end joined again only where it was a soft break, checked against the
word's other occurrences in the document.

A hyphen at a line end is either a soft break ("exam-" + "ple": the word is "example") or a
real hyphen that fell at the line end ("self-" + "attention": "self-attention"). One line
cannot tell them apart, a document can: so the decision is made twice.

- `join_lines` (per region, page-level): a line-end hyphen after a letter, before a lowercase
  letter (or between two parts in capitals: "TABLE-" + "FORMER") becomes a MARKER: U+00AD
  (SOFT HYPHEN) between the halves ("TABLE\u00adFORMER"). A line that ends with a soft hyphen
  of the PDF's own is joined at once (the PDF said so); one that ends with a hyphen before a
  capital ("well-" + "Known") or a digit is two words.
- `resolve` (the page's Markdown): each marker becomes the joined or the hyphenated form
  (`decide`) by the page's own vocabulary, and its span is kept (`(start, split, end)` in the
  resolved text: the left half is `text[start:split]`) so that
- `reresolve` (the document's Markdown) decides each again by the whole document's vocabulary.

`decide` in order: the form that occurs elsewhere (the other one not, or less often: "TABLE" +
"FORMER" -> "TABLEFORMER" when "TableFormer" occurs; "table" + "text" -> "table-text" when it
occurs more than "tabletext"); else a compound already hyphenated ("state-of-the" + "art")
or a prefix that keeps its hyphen (`HYPHEN_PREFIXES`: "self-attention") keeps it; else the
soft break is joined (what a hyphen at a line end most often is in justified text).
No U+00AD is left in the resolved text.
"""

from __future__ import annotations

import re
from collections import Counter

SOFT_HYPHEN = "\u00ad"
LINE_HYPHENS = ("-", "\u2010")  # HYPHEN-MINUS, and HYPHEN as some typesetters write it
HYPHEN_PREFIXES = frozenset({"self", "well", "quasi"})  # English prefixes that keep their hyphen
LIGATURES = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st",
             "\ufb06": "st"}
LIGATURE = re.compile("[\ufb00-\ufb06]")  # a regex scan: str.translate walks every character in Python
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u3000-\u303f\uff00-\uffef]")
_PART = r"[^\W_]+(?:-[^\W_]+)*"  # a word, possibly hyphenated ("state-of-the")
WORD = re.compile(_PART)
MARKED = re.compile(rf"(?<![\w-])({_PART}){SOFT_HYPHEN}({_PART})")


def normalize(text: str) -> str:
    """`text` with its ligatures (ﬁ ﬂ ﬀ ﬃ ﬄ ﬅ ﬆ) written as letters."""
    return LIGATURE.sub(lambda m: LIGATURES[m.group()], text)


def join_lines(lines: list[str]) -> str:
    """Lines of one paragraph as one text: a space between them, none between CJK characters,
    ligatures normalised, and a word hyphenated at a line end marked with U+00AD for `resolve`
    ("exam-" + "ple" -> "exam\u00adple"; see the module docstring)."""
    out = ""
    for line in lines:
        line = " ".join(normalize(line).split())
        if not line:
            continue
        if not out:
            out = line
        elif out.endswith(SOFT_HYPHEN):
            out = out[:-1] + line  # the PDF's own soft hyphen: a break inside a word
        elif _soft_break(out, line):
            out = out[:-1] + SOFT_HYPHEN + line
        elif CJK.match(out[-1]) and CJK.match(line[0]):
            out += line
        else:
            out += " " + line
    return out


def _soft_break(out: str, line: str) -> bool:
    """Whether `out` ends with a hyphen that may be a soft break before `line`."""
    if not (out.endswith(LINE_HYPHENS) and len(out) > 1 and out[-2].isalpha() and line[0].isalpha()):
        return False
    if line[0].islower():
        return True
    left = out[:-1].rsplit(" ", 1)[-1]
    return left.isupper() and line.split(" ", 1)[0].rstrip(".,;:!?)").isupper()  # "TABLE-" + "FORMER"


def vocabulary(text: str) -> Counter:
    """How often each word (lowercase, inner hyphens kept: "table-text") occurs in `text`."""
    return Counter(WORD.findall(text.lower()))


def decide(left: str, right: str, vocab: Counter) -> str:
    """The word a line-end hyphen between `left` and `right` stands for (see the module docstring)."""
    joined, hyphenated = left + right, f"{left}-{right}"
    n_joined, n_hyphen = vocab.get(joined.lower(), 0), vocab.get(hyphenated.lower(), 0)
    if n_joined or n_hyphen:
        return joined if n_joined > n_hyphen else hyphenated
    if "-" in left or "-" in right or left.lower() in HYPHEN_PREFIXES:
        return hyphenated
    return joined


def resolve(text: str, vocab: Counter | None = None) -> tuple[str, tuple[tuple[int, int, int], ...]]:
    """(`text` with each marker resolved by `vocab`, or by the text's own words when None; the
    resolved words' spans `(start, split, end)`). Stray soft hyphens are dropped."""
    if SOFT_HYPHEN not in text:
        return text, ()
    if vocab is None:
        vocab = vocabulary(MARKED.sub(" ", text))
    out, spans, last = [], [], 0
    for m in MARKED.finditer(text):
        out.append(text[last:m.start()].replace(SOFT_HYPHEN, ""))
        start = sum(map(len, out))
        word = decide(m.group(1), m.group(2), vocab)
        spans.append((start, start + len(m.group(1)), start + len(word)))
        out.append(word)
        last = m.end()
    out.append(text[last:].replace(SOFT_HYPHEN, ""))
    return "".join(out), tuple(spans)


def blank_spans(text: str, spans) -> str:
    """`text` with the resolved words of `spans` blanked (so they do not vote on themselves)."""
    parts, last = [], 0
    for start, _, end in spans:
        parts += [text[last:start], " " * (end - start)]
        last = end
    return "".join(parts) + text[last:]


def reresolve(text: str, spans, vocab: Counter) -> str:
    """`text` (resolved by `resolve`, spans as it gave them) with each word decided again by
    `vocab` (the document's)."""
    for start, split, end in sorted(spans, reverse=True):
        if not 0 <= start < split < end <= len(text):
            continue  # not a span of this text (a row written by another version): left as it is
        left, rest = text[start:split], text[split:end]
        right = rest[1:] if rest.startswith("-") else rest
        text = text[:start] + decide(left, right, vocab) + text[end:]
    return text
