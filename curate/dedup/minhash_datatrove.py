"""The `hash="datatrove"` signature scheme: datatrove's MinHash math (`MinhashDedupSignature`,
datatrove 0.4-0.10, its default `HashConfig`: xxhash, 64-bit), so that a corpus datatrove
deduplicated, or a user moving from it, gets the same band collisions from curate.

What is reproduced exactly, for a given list of words:
  - a shingle is `" ".join` of `shingle` consecutive words, hashed by `xxhash.xxh64_intdigest`
    of its UTF-8 bytes; a document with fewer words than that has no shingle, hence no
    signature, and is never a near-duplicate (datatrove writes no signature for it);
  - the P = bands x rows permutation parameters are `np.random.RandomState(seed)`'s
    `randint(1, 2**61 - 1, uint64, size=(1, P))`, then `randint(0, 2**61 - 1, ...)`;
  - `(shingle * a + b) % (2**61 - 1)` in numpy uint64 (the product and sum wrap around mod
    2^64 first, as datatrove's do), and each document's minimum per permutation: the
    signature is P uint64 values under 2^61 (curate's own scheme keeps 32 bits);
  - band b is signature values b*R .. b*R+R-1, as datatrove's `np.split` cuts them. curate
    compares a band by a 64-bit mix of its values (`minhash.band_hashes`), datatrove by the
    values themselves: equal bands collide alike, unequal ones collide in curate with
    probability 2^-64.

What differs is the words. This scheme takes curate's normalised text (`curate.dedup.
normalize`) split on spaces; datatrove takes `simplify_text` (lowercase, digit runs such as
`3.14` to `0`, its punctuation list to spaces, diacritics stripped) then spaCy's tokenizer.
On text of plain words and sentence punctuation they give the same words. On real text they
part where (each seen with datatrove 0.10 and spaCy 3): digits (curate keeps `2024` and cuts
`3.14` into `3` `14`, datatrove writes `0` for each); accents (`café` against `cafe`);
compatibility forms, which curate's NFKC folds and datatrove keeps (`ﬁ`, `²`, full-width
letters); symbols outside datatrove's punctuation list (`©`, `→`, `•`, `€`, emoji: a word in
datatrove, a space in curate); and spaCy's tokenizer exceptions, which split forms curate
keeps whole (`dont` to `do` `nt`, `cannot` to `can` `not`, `gonna` to `gon` `na`, `im` to `i`
`m`; with the apostrophe both give `don` `t`). A document with such words has other shingles
in the two systems, so its pairs can differ; docs/benchmarks.md measures the share of
documents whose shingle sets agree on the benchmark corpus.

Per shingle this is one Python call to xxhash (the slices of one byte buffer, found with
numpy); the permutations and minima are numpy over blocks of shingles. xxhash is imported
when signatures are computed (`pip install "curate[dedup]"`), never with `import curate`."""

from __future__ import annotations

import numpy as np

from curate.dedup.minhash import text_batches

MERSENNE = np.uint64((1 << 61) - 1)
EMPTY64 = np.uint64(0xFFFFFFFFFFFFFFFF)  # a signature value no shingle reached: above every real one
SHINGLE_BLOCK = 4096  # shingles whose P permuted hashes are computed at once (4096 x 112 x 8 B = 3.5 MiB)
BATCH_BYTES = 1 << 20  # UTF-8 bytes of text cut into shingles in one pass


def parameters(seed: int, p: int) -> tuple[np.ndarray, np.ndarray]:
    """datatrove's permutation parameters (a, b), each (P,) uint64."""
    gen = np.random.RandomState(seed)
    a = gen.randint(1, MERSENNE, dtype=np.uint64, size=(1, p))
    b = gen.randint(0, MERSENNE, dtype=np.uint64, size=(1, p))
    return a[0], b[0]


def shingle_hashes(texts: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
    """xxh64 of every k-word shingle of the normalised texts (words: runs between single spaces),
    with each shingle's text index; texts of fewer than k words have none."""
    from curate.deps import require

    xxh64 = require("xxhash", 'curate dedup --hash datatrove (datatrove\'s xxhash shingles)').xxh64_intdigest
    enc = [t.encode("utf-8") for t in texts]
    raw = b" ".join(enc) + b" "
    buf = np.frombuffer(raw, dtype=np.uint8)
    lens = np.fromiter((len(e) + 1 for e in enc), dtype=np.int64, count=len(enc))
    doc_start = np.concatenate([[0], np.cumsum(lens)[:-1]])
    word = (buf != 32).astype(np.int8)
    edge = np.diff(np.concatenate([[0], word, [0]]).astype(np.int8))
    start, end = np.flatnonzero(edge == 1), np.flatnonzero(edge == -1)
    doc = np.searchsorted(doc_start, start, "right") - 1
    m = start.size - k + 1
    if m <= 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    ok = np.flatnonzero(doc[:m] == doc[k - 1:])  # shingle i: words i .. i+k-1 of one text
    s, e = start[ok].tolist(), end[ok + k - 1].tolist()
    mv = memoryview(raw)
    hashes = np.fromiter((xxh64(mv[x:y]) for x, y in zip(s, e)), dtype=np.uint64, count=len(s))
    return hashes, doc[ok]


def signatures(texts: list[str], shingle: int, seed: int, p: int) -> np.ndarray:
    """(len(texts), P) uint64 datatrove signatures of normalised texts; a text without a
    shingle has a row of EMPTY64."""
    out = np.full((len(texts), p), EMPTY64, dtype=np.uint64)
    a, b = parameters(seed, p)
    for i, j in text_batches(texts, BATCH_BYTES):
        sh, sdoc = shingle_hashes(texts[i:j], shingle)
        _min_into(out[i:j], sh, sdoc, a, b)
    return out


def _min_into(out: np.ndarray, sh: np.ndarray, sdoc: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    for s in range(0, sh.size, SHINGLE_BLOCK):
        x, d = sh[s:s + SHINGLE_BLOCK], sdoc[s:s + SHINGLE_BLOCK]
        with np.errstate(over="ignore"):
            phv = x[:, None] * a
            phv += b
        phv %= MERSENNE
        cuts = np.flatnonzero(np.concatenate([[True], d[1:] != d[:-1]]))
        docs = d[cuts]
        out[docs] = np.minimum(out[docs], np.minimum.reduceat(phv, cuts, axis=0))
