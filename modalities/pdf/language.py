"""A page's main language, offline: CLD2 (`pycld2`, its model compiled into the wheel).

`detect(text)` gives (ISO 639-1 code, confidence 0..1), or ("", None) when the text is too
short or too mixed for CLD2 to be reliable. The confidence is the share of the text's bytes
CLD2 puts in that language. CLD2 names a few languages by their old codes (Hebrew "iw",
Javanese "jw") and Chinese scripts apart ("zh-Hant"): they are given as ISO 639-1 ("he", "jv",
"zh"); a language without a two-letter code keeps CLD2's (ISO 639-2/3, e.g. "haw").
"""

from __future__ import annotations

import re

CLD2_TO_ISO = {"iw": "he", "jw": "jv", "zh-Hant": "zh", "in": "id", "mo": "ro"}
UNKNOWN = "un"
UNREADABLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")  # CLD2 refuses them
MAX_CHARS = 20_000  # of a page: enough for a verdict, and a huge page costs no more


def detect(text: str) -> tuple[str, float | None]:
    """(ISO 639-1 code of `text`'s main language, CLD2's confidence 0..1), ("", None) if unknown."""
    from curate.deps import require

    cld2 = require("pycld2", "language detection of PDF pages")
    sample = UNREADABLE.sub(" ", text[:MAX_CHARS])
    if not sample.strip():
        return "", None
    try:
        reliable, _, details = cld2.detect(sample)
    except cld2.error:  # bytes CLD2 still refuses: no verdict rather than a failed page
        return "", None
    name, code, percent, _ = details[0]
    if not reliable or code == UNKNOWN:
        return "", None
    return CLD2_TO_ISO.get(code, code), round(percent / 100.0, 2)
