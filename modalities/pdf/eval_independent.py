"""The independent eval set: olmOCR-Bench-format unit tests built mechanically from the ground
truth of pdf-parse-bench (set 2025-q4, 100 synthetic PDFs whose blocks in reading order were
written outside this project; MIT). Nothing here reads what any reader, curate included, makes of
those PDFs: the tests come from the ground truth, and only the page each test belongs to is read
from the PDF's own text layer.

It sits beside eval_set.py (the other builder of `curate eval` data) so that the benchmarks and
the tests import it from the package, as they do eval_set.

The rules, each a named constant below:
- `present` for every text block of at least MIN_PRESENT_CHARS characters, its text exactly as
  the ground truth has it, with an edit budget of one edit per CHARS_PER_DIFF characters (olmOCR-
  Bench's own present tests also scale max_diffs with length: a character or two of OCR noise in a
  sentence is still the sentence);
- `order` between each two consecutive text blocks (formulas between them skipped) that are both
  long enough for a present test and lie on the same page, with the shorter one's budget;
- `math` for every inline and display formula, its LaTeX without the `$`/`$$` delimiters, on the
  page of the text around it;
- no `table` tests: the 2025-q4 ground truth holds no tables (only text, inline-formula and
  display-formula blocks), and a table block of a later set would need its cells' structure,
  which a mechanical reading of LaTeX tabular code cannot promise; a block of another type fails
  the build, so a new set with tables is noticed.

Pages. A text block is located in the document's text layer (PyMuPDF, every page's text joined,
whitespace and line-end hyphens taken out, compatibility forms folded), searched forward from the
end of the previous block in reading order: exactly, else within its edit budget. A block whose
match starts and ends on one page is on that page; one that runs over a page break, or is not
found, gets no present/order test (counted in the summary). A formula is on the page where the
text block before it ends when the text block after it starts on that same page (the first and
last formulas of a document take the page of their one located neighbour); otherwise it has no
test. The text layer is used only to place a test; its words never become a test.

    python -m curate.modalities.pdf.eval_independent DATA_DIR OUT.jsonl

The same ground truth and PDFs give the same file, line for line.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

MIN_PRESENT_CHARS = 20  # shorter text blocks ("Heure drôle même mener.") still pass; under 20, a
# block is a few common words that may appear anywhere on the page and prove little
CHARS_PER_DIFF = 20  # present/order edit budget: one edit per 20 characters (5%)
TEXT, INLINE, DISPLAY = "text", "inline-formula", "display-formula"
KNOWN_TYPES = (TEXT, INLINE, DISPLAY)
_DELIMS = re.compile(r"^\s*(\$\$|\$|\\\[|\\\()(.*?)(\$\$|\$|\\\]|\\\))\s*$", re.DOTALL)
# Folded away when a block is located (never in a test's text): whitespace, and a hyphen that ends
# a line in the text layer (the typesetter's, not the author's)
_LINE_HYPHEN = re.compile(r"[-\u00ad\u2010]\s*\n\s*")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Located:
    """Where a text block's match lies in the document's folded text: first and last page (1-based)."""

    first: int
    last: int


def formula_tex(data: str) -> str:
    """A formula block's LaTeX without its delimiters ($$..$$, $..$, \\[..\\], \\(..\\)) and the
    space around it, but the space of a control space (`x\\ ` ends in one) is kept."""
    m = _DELIMS.match(data)
    body = (m.group(2) if m else data).lstrip()
    tex = body.rstrip()
    escaped = (len(tex) - len(tex.rstrip("\\"))) % 2 == 1  # an odd run of backslashes escapes the space
    return tex + " " if escaped and len(tex) < len(body) else tex


def budget(text: str) -> int:
    """The edit budget of a present test on `text`."""
    return len(text) // CHARS_PER_DIFF


def _fold(text: str) -> str:
    """Text as it is compared to locate a block: compatibility forms (ligatures) folded, NFC,
    typographic quotes as ASCII, line-end hyphens and all whitespace dropped."""
    from curate.modalities.pdf.eval_checks import normalize

    text = unicodedata.normalize("NFKC", _LINE_HYPHEN.sub("", text))
    return _SPACE.sub("", normalize(text))


class TextLayer:
    """One PDF's text, every page folded and joined, with the page each character came from."""

    def __init__(self, pdf: Path):
        import pymupdf

        parts, owners = [], []
        with pymupdf.open(pdf) as doc:
            for n, page in enumerate(doc, 1):
                folded = _fold(page.get_text("text"))
                parts.append(folded)
                owners.append((sum(map(len, parts[:-1])), n))
        self.text = "".join(parts)
        self._starts = [s for s, _ in owners]
        self._pages = [n for _, n in owners]

    def page_at(self, offset: int) -> int:
        """The 1-based page that holds character `offset` of the joined text."""
        import bisect

        return self._pages[max(0, bisect.bisect_right(self._starts, offset) - 1)]

    def locate(self, block: str, cursor: int) -> tuple[Located, int] | None:
        """Where `block` lies, searched from `cursor` on (exact, then within its budget), and the
        offset after it; None when it is not there."""
        from curate.modalities.pdf.eval_checks import near_ends, near_starts

        want = _fold(block)
        if not want:
            return None
        start = self.text.find(want, cursor)
        if start >= 0:
            end = start + len(want)
        else:
            k = budget(want)
            ends = [e for e in near_ends(want, self.text[cursor:], k)] if k else []
            if not ends:
                return None
            end = cursor + ends[0]
            starts = near_starts(want, self.text[cursor:end], k)
            start = cursor + (starts[0] if starts else max(0, ends[0] - len(want)))
        return Located(self.page_at(start), self.page_at(max(start, end - 1))), end


def tests_for(stem: str, blocks: list[dict], layer: TextLayer, counts: dict) -> list[dict]:
    """The tests of one document, in block order: present and order for its text, math for its
    formulas. `counts` gathers what was left out and why."""
    pdf = f"{stem}.pdf"
    unknown = sorted({b.get("type") for b in blocks} - set(KNOWN_TYPES))
    if unknown:
        from curate.errors import InputError

        raise InputError(f"{pdf}: ground-truth block types {unknown} have no mechanical test here; "
                         f"add a rule for them to eval_independent.py (known: {', '.join(KNOWN_TYPES)})")
    where: list[Located | None] = []
    cursor = 0
    for b in blocks:
        found = layer.locate(b["data"], cursor) if b["type"] == TEXT else None
        if found:
            cursor = found[1]
        where.append(found[0] if found else None)
    tests: list[dict] = []
    previous = None  # (index, page) of the last text block with a present test
    for i, b in enumerate(blocks):
        if b["type"] == TEXT:
            text, loc = b["data"], where[i]
            if len(text) < MIN_PRESENT_CHARS:
                counts["text shorter than MIN_PRESENT_CHARS"] += 1
                continue
            if loc is None:
                counts["text not found in the text layer"] += 1
                previous = None
                continue
            if loc.first != loc.last:
                counts["text over a page break"] += 1
                previous = None
                continue
            tests.append({"pdf": pdf, "page": loc.first, "id": f"{stem}_present_{i:03d}", "type": "present",
                          "text": text, "max_diffs": budget(text)})
            if previous is not None and previous[1] == loc.first:
                before = blocks[previous[0]]["data"]
                tests.append({"pdf": pdf, "page": loc.first, "id": f"{stem}_order_{previous[0]:03d}_{i:03d}",
                              "type": "order", "before": before, "after": text,
                              "max_diffs": min(budget(before), budget(text))})
            previous = (i, loc.first)
        else:
            page = _formula_page(where, i)
            if page is None:
                counts["formula between pages"] += 1
                continue
            tests.append({"pdf": pdf, "page": page, "id": f"{stem}_math_{i:03d}", "type": "math",
                          "math": formula_tex(b["data"])})
    return tests


def _formula_page(where: list[Located | None], i: int) -> int | None:
    """The page of the formula at block `i`: where the located text before it ends, when the
    located text after it starts there too (or the one neighbour's, at a document's ends)."""
    before = next((w.last for w in reversed(where[:i]) if w is not None), None)
    after = next((w.first for w in where[i + 1:] if w is not None), None)
    if before is None or after is None:
        return before if after is None else after
    return before if before == after else None


def build(data_dir: str | Path) -> tuple[list[dict], dict]:
    """Every document's tests (documents in name order) and the counts of what was left out."""
    from collections import Counter

    data_dir = Path(data_dir)
    counts: Counter = Counter()
    tests: list[dict] = []
    for gt in sorted((data_dir / "ground_truth").glob("*.json")):
        blocks = json.loads(gt.read_text(encoding="utf-8"))
        tests += tests_for(gt.stem, blocks, TextLayer(data_dir / "pdfs" / f"{gt.stem}.pdf"), counts)
    return tests, dict(sorted(counts.items()))


def to_jsonl(tests: list[dict]) -> str:
    """The tests as the committed file writes them: one object a line, keys in a fixed order."""
    return "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in tests)


def main(argv: list[str]) -> int:
    """Write DATA_DIR's tests to OUT.jsonl and print what was made and left out."""
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-3].strip(), file=sys.stderr)
        return 2
    from collections import Counter

    tests, left_out = build(argv[0])
    Path(argv[1]).write_text(to_jsonl(tests), encoding="utf-8")
    print(f"{len(tests)} tests: " + ", ".join(f"{n} {k}" for k, n in sorted(Counter(t['type'] for t in tests).items())))
    for why, n in left_out.items():
        print(f"left out: {n} ({why})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
