"""Is a page's text layer usable? The routing rule of PDF -> Markdown: cheap first, OCR only
where the PDF's own text cannot be trusted. Pure functions over what PyMuPDF extracted (no
PyMuPDF here), so the rule is tested on plain strings and numbers.

A page goes one of three ways (`route_of`):

- **text_layer**: it has text, and the text is not garbage. Garbage is judged on the page's
  non-space characters, once there are at least `MIN_SAMPLE_CHARS` of them (fewer cannot be
  judged and are kept as they are: a title page with one word, a Japanese page of 8 characters):
    - more than `MAX_BAD_FRACTION` of them are U+FFFD (a glyph without a Unicode mapping),
      private-use code points (a font's own encoding) or control characters, or
    - fewer than `MIN_ALNUM_FRACTION` of them are letters or digits (any script). Real
      born-digital pages sit well above it (a table of contents with dot leaders is the lowest:
      docs/benchmarks.md); broken encodings that map glyphs onto symbols sit far below it.
- **ocr**: no text at all on a page that shows something (an image, or more vector paths than
  a few rules: text drawn as outlines), a garbage text layer, or a scan: images cover at least
  `SCAN_IMAGE_COVER` of the page and the text layer has fewer than `SCAN_MIN_ALNUM` letters or
  digits (a page number or a stamp on a scanned page, not its text).
- **empty**: no text, no image and at most `BLANK_MAX_DRAWINGS` vector paths (rules, a border):
  nothing to read, so nothing is rendered or OCRed.

A scan that carries an OCR text layer of its own (pypdf_vicksburg_scan_ocr.pdf) passes the
check and takes the text-layer route; `PdfText(force_ocr=True)` sends every page to OCR.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

MIN_SAMPLE_CHARS = 20  # non-space characters needed before a text layer can be called garbage
MAX_BAD_FRACTION = 0.2  # U+FFFD + private use + controls; the real pages here have at most 0.011
MIN_ALNUM_FRACTION = 0.25  # letters and digits: below every real born-digital page tried (docs/benchmarks.md)
SCAN_IMAGE_COVER = 0.5  # images over half the page: it is a scan (or a full-page picture)
SCAN_MIN_ALNUM = 50  # ...and so little text on it is a stamp or a page number, not its text
BLANK_MAX_DRAWINGS = 8  # vector paths a blank page may have (rules, a frame); outlined text has hundreds

OK = "ok"
FORCED = "forced OCR"
NO_TEXT = "no text layer"
BLANK = "blank page"
BAD_CATEGORIES = frozenset({"Co", "Cc", "Cs", "Cn"})  # private use, control, surrogate, unassigned


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the text layer of one page is worth: its route (`text_layer`, `ocr`, `empty`) and why."""

    route: str
    reason: str

    @property
    def usable(self) -> bool:
        return self.route == "text_layer"


def route_of(page) -> str:
    """The route a checked `PageRecord` takes: "text_layer", "ocr" or "empty"."""
    if page.text_usable:
        return "text_layer"
    return "empty" if page.text_reason == BLANK else "ocr"


def judge(text: str, image_cover: float = 0.0, drawings: int = 0, force_ocr: bool = False) -> Verdict:
    """The route of a page with text layer `text`, whose images cover `image_cover` (0..1) of
    it and which has `drawings` vector paths."""
    chars = [c for c in text if not c.isspace()]
    alnum = sum(1 for c in chars if c.isalnum())
    if not chars:
        if image_cover <= 0 and drawings <= BLANK_MAX_DRAWINGS:
            return Verdict("empty", BLANK)
        return Verdict("ocr", FORCED if force_ocr else NO_TEXT)
    if force_ocr:
        return Verdict("ocr", FORCED)
    garbage = garbage_reason(chars, alnum)
    if garbage:
        return Verdict("ocr", garbage)
    if image_cover >= SCAN_IMAGE_COVER and alnum < SCAN_MIN_ALNUM:
        return Verdict("ocr", f"scan: images cover {image_cover:.0%} of the page and its text layer has "
                              f"{alnum} letters or digits (< {SCAN_MIN_ALNUM})")
    return Verdict("text_layer", OK)


def garbage_reason(chars: list[str], alnum: int) -> str:
    """Why these non-space characters are garbage, or "" if they are not (or too few to say)."""
    n = len(chars)
    if n < MIN_SAMPLE_CHARS:
        return ""
    bad = sum(1 for c in chars if c == "\ufffd" or unicodedata.category(c) in BAD_CATEGORIES)
    if bad / n > MAX_BAD_FRACTION:
        return (f"garbage: {bad / n:.0%} of its characters are U+FFFD, private-use or control "
                f"characters (> {MAX_BAD_FRACTION:.0%}): a font without a usable Unicode mapping")
    if alnum / n < MIN_ALNUM_FRACTION:
        return (f"garbage: only {alnum / n:.0%} of its characters are letters or digits "
                f"(< {MIN_ALNUM_FRACTION:.0%}): a broken font encoding")
    return ""
