"""Text as dedup compares it: normalised once, then hashed whole (exact dedup) or cut into
word tokens (MinHash shingles), so that both methods see the same text.

Normalisation: Unicode NFKC (full-width and compatibility forms fold to their plain letters),
lowercase, every character that is neither a letter, a digit nor whitespace replaced by a
space (punctuation and symbols, Markdown's `#`, `*`, `|` among them: a change of formatting
does not make a document new), whitespace runs collapsed to one space, ends stripped. Digits
are kept: two reports that differ only in their figures are not the same document.

The exact hash is BLAKE2b (stdlib `hashlib`, 16-byte digest) of the normalised UTF-8 text:
collisions are out of reach (2^-64 for a billion documents), and no extra package is needed."""

from __future__ import annotations

import hashlib
import re
import unicodedata

NORMALISATION = "nfkc-lower-nopunct-ws1"  # recorded in the index: a later run must normalise alike
DIGEST_BYTES = 16  # BLAKE2b digest of the exact hash: 128 bits, collisions out of reach
_NOT_WORD = re.compile(r"[^\w\s]|_")  # punctuation and symbols (`_` is a \w character in Python)
_SPACE = re.compile(r"\s+")


def normalise(text: str | None) -> str:
    """`text` as both dedup methods compare it (see the module docstring); None reads as ''."""
    if not text:
        return ""
    text = unicodedata.normalize("NFKC", text).lower()
    return _SPACE.sub(" ", _NOT_WORD.sub(" ", text)).strip()


def exact_hash(normalised: str) -> bytes:
    """The BLAKE2b digest of normalised text: equal for texts equal after `normalise`."""
    return hashlib.blake2b(normalised.encode("utf-8"), digest_size=DIGEST_BYTES).digest()
