"""Is a page's text layer usable? The routing rule of PDF -> Markdown: cheap first, OCR only
where the PDF's own text cannot be trusted. Pure functions over what PyMuPDF extracted (no
PyMuPDF here), so the rule is tested on plain strings and numbers.

A page goes one of three ways (`route_of`):

- **text_layer**: it has text, and the text is not garbage: its `text_quality.score` is at
  least `text_quality.MIN_QUALITY` (U+FFFD, private-use glyphs, shifted-cipher words and
  symbol soup lower it; a text too short to judge scores 1.0 and is kept as it is: a title page
  with one word, a Japanese page of 8 characters). The verdict carries the score (`quality`).
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

from dataclasses import dataclass

from curate.modalities.pdf.text_quality import MIN_QUALITY, score

SCAN_IMAGE_COVER = 0.5  # images over half the page: it is a scan (or a full-page picture)
SCAN_MIN_ALNUM = 50  # ...and so little text on it is a stamp or a page number, not its text
BLANK_MAX_DRAWINGS = 8  # vector paths a blank page may have (rules, a frame); outlined text has hundreds

OK = "ok"
FORCED = "forced OCR"
NO_TEXT = "no text layer"
BLANK = "blank page"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the text layer of one page is worth: its route (`text_layer`, `ocr`, `empty`) and why."""

    route: str
    reason: str
    quality: float | None = None  # text_quality.score of its text layer; None: no text to score

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
    if not chars:
        if image_cover <= 0 and drawings <= BLANK_MAX_DRAWINGS:
            return Verdict("empty", BLANK)
        return Verdict("ocr", FORCED if force_ocr else NO_TEXT)
    quality, why = score(text)
    if force_ocr:
        return Verdict("ocr", FORCED, quality)
    if quality < MIN_QUALITY:
        return Verdict("ocr", f"garbage: {why}", quality)
    alnum = sum(1 for c in chars if c.isalnum())
    if image_cover >= SCAN_IMAGE_COVER and alnum < SCAN_MIN_ALNUM:
        return Verdict("ocr", f"scan: images cover {image_cover:.0%} of the page and its text layer has "
                              f"{alnum} letters or digits (< {SCAN_MIN_ALNUM})", quality)
    return Verdict("text_layer", OK, quality)
