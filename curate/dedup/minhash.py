"""MinHash signatures and LSH band hashes, vectorised over a batch of documents with numpy.

A batch of normalised texts (`curate.dedup.normalize`) becomes one UTF-8 byte array; word
tokens are the runs between spaces, each hashed by a polynomial over a random byte table
(prefix sums, so every token of the batch is hashed in a few array passes, with no Python
call per token); a shingle is `shingle` consecutive tokens of one document, its hash a
mix of theirs; a document with fewer tokens than that has one shingle of all of them, and
an empty one none. The P = bands x rows permutations are multiply-shift hashes
`(a * x + b) mod 2^64 >> 32` (a 2-universal family; `a` odd), evaluated on blocks of
shingles at once and reduced to each document's minimum with `np.minimum.reduceat`: the
signature is P uint32 values (`hash="curate"`, the default; `hash="datatrove"` is datatrove's
math instead, `curate.dedup.minhash_datatrove`). Band b's hash is a 64-bit mix of the signature's rows
b*R .. b*R+R-1; two documents are candidates when a band hash is equal.

Everything is a pure function of the texts and `MinHashParams` (no process-dependent hash
seed), so signatures computed in another process, on a Ray worker or in an earlier run match."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from curate.dedup.options import DEFAULT_BANDS, DEFAULT_HASH, DEFAULT_ROWS, DEFAULT_SEED, DEFAULT_SHINGLE, HASHES
from curate.errors import InputError

SHINGLE_BLOCK = 8192  # shingles whose P hashes are computed at once: 8192 x 112 x 8 B = 7 MiB
BATCH_BYTES = 1 << 20  # UTF-8 bytes of text hashed in one array pass (its arrays: ~40 MiB)
BAND_ROWS = 16384  # signatures banded at a time: their uint64 copy is 16384 x 112 x 8 B = 14 MiB
EMPTY = np.uint32(0xFFFFFFFF)  # a signature value no shingle reached (an empty document)

_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)
_BYTE_SEED = 0x5EED  # of the byte table and mixing constants: fixed, part of the hash's definition
_BASE = 0x100000001B3  # odd multiplier of the token polynomial (FNV's 64-bit prime)


@dataclass(frozen=True)
class MinHashParams:
    """Shingle size (words), bands x rows (= permutations), the permutations' seed, and the
    signature scheme: curate's own (32-bit values) or datatrove's (`curate.dedup.minhash_datatrove`)."""

    shingle: int = DEFAULT_SHINGLE
    bands: int = DEFAULT_BANDS
    rows: int = DEFAULT_ROWS
    seed: int = DEFAULT_SEED
    hash: str = DEFAULT_HASH

    def __post_init__(self):
        for name in ("shingle", "bands", "rows"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise InputError(f"MinHash {name}={v!r}: give a whole number >= 1 (defaults: shingle "
                                 f"{DEFAULT_SHINGLE}, bands {DEFAULT_BANDS}, rows {DEFAULT_ROWS})")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise InputError(f"MinHash seed={self.seed!r}: give a whole number >= 0")
        if self.hash not in HASHES:
            raise InputError(f"MinHash hash={self.hash!r}: give one of {', '.join(HASHES)} (curate's own "
                             f"signatures, or datatrove's MinHash math for the same pairs as datatrove)")

    @property
    def permutations(self) -> int:
        return self.bands * self.rows

    @property
    def dtype(self):
        """The signatures' values: uint32 (curate), uint64 (datatrove's, under 2^61)."""
        return np.uint64 if self.hash == "datatrove" else np.uint32

    @property
    def empty(self):
        """The value of a signature no shingle reached (a text without shingles)."""
        return np.iinfo(self.dtype).max

    def to_dict(self) -> dict:
        return asdict(self)


def _fmix64(x: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser: every input bit reaches every output bit."""
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint64(33))
        x = x * np.uint64(0xFF51AFD7ED558CCD)
        x = x ^ (x >> np.uint64(33))
        x = x * np.uint64(0xC4CEB9FE1A85EC53)
        return x ^ (x >> np.uint64(33))


_rng = np.random.default_rng(_BYTE_SEED)
_BYTES = _rng.integers(0, 2**64, size=256, dtype=np.uint64, endpoint=False)
_MIX = _rng.integers(0, 2**64, size=64, dtype=np.uint64) | np.uint64(1)  # per-position odd multipliers
_INV_BASE = pow(_BASE, -1, 2**64)


def _powers(base: int, n: int) -> np.ndarray:
    """base^0 .. base^(n-1) mod 2^64, by doubling (numpy's cumprod is a slow scalar loop);
    kept for the next batch, which is at most as long unless one document is longer."""
    cached = _POWERS.get(base)
    if cached is not None and cached.size >= n:
        return cached[:n]
    p = np.ones(max(n, 1), dtype=np.uint64)
    k, step = 1, base
    with np.errstate(over="ignore"):
        while k < n:
            m = min(k, n - k)
            p[k:k + m] = p[:m] * np.uint64(step)
            k += m
            step = step * step % 2**64
    _POWERS[base] = p
    return p[:n]


_POWERS: dict[int, np.ndarray] = {}


def token_hashes(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Every word token of the normalised `texts`: its 64-bit hash and its text's index."""
    enc = [t.encode("utf-8") for t in texts]
    buf = np.frombuffer(b" ".join(enc) + b" ", dtype=np.uint8)
    lens = np.fromiter((len(e) + 1 for e in enc), dtype=np.int64, count=len(enc))
    doc_start = np.concatenate([[0], np.cumsum(lens)[:-1]])
    word = (buf != 32).astype(np.int8)
    edge = np.diff(np.concatenate([[0], word, [0]]).astype(np.int8))
    start, end = np.flatnonzero(edge == 1), np.flatnonzero(edge == -1)
    if start.size == 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    with np.errstate(over="ignore"):
        prefix = np.concatenate([[np.uint64(0)], np.cumsum(_BYTES[buf] * _powers(_BASE, buf.size), dtype=np.uint64)])
        h = (prefix[end] - prefix[start]) * _powers(_INV_BASE, buf.size)[start]
    return _fmix64(h ^ (end - start).astype(np.uint64)), np.searchsorted(doc_start, start, "right") - 1


def shingle_hashes(tok: np.ndarray, doc: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Hashes of the k-token shingles of each document (tokens of one document are contiguous
    in `tok`, documents in order), with each shingle's document; a document with fewer than
    k tokens has one shingle of all of them."""
    n = tok.size
    if n == 0:
        return tok, doc
    pad_t = np.concatenate([tok, np.zeros(k - 1, np.uint64)])
    pad_d = np.concatenate([doc, np.full(k - 1, -1, np.int64)])
    acc = np.zeros(n, np.uint64)
    with np.errstate(over="ignore"):
        for i in range(k):
            same = pad_d[i:i + n] == doc
            acc += np.where(same, pad_t[i:i + n] * _MIX[i % _MIX.size], np.uint64(0))
    full = pad_d[k - 1:k - 1 + n] == doc
    first = np.concatenate([[True], doc[1:] != doc[:-1]])
    keep = full
    if k > 1:  # a short document's one shingle starts at its first token and holds them all
        counts = np.bincount(doc, minlength=doc.max() + 1)
        keep = full | (first & (counts[doc] < k))
    return _fmix64(acc[keep]), doc[keep]


def permutations(params: MinHashParams) -> tuple[np.ndarray, np.ndarray]:
    """The multiply-shift coefficients (a odd, b) of the P permutations, from the seed."""
    rng = np.random.default_rng(params.seed)
    a = rng.integers(0, 2**64, size=params.permutations, dtype=np.uint64, endpoint=False) | np.uint64(1)
    b = rng.integers(0, 2**64, size=params.permutations, dtype=np.uint64, endpoint=False)
    return a, b


def signatures(texts: list[str], params: MinHashParams) -> np.ndarray:
    """(len(texts), P) MinHash signatures of normalised texts (`params.dtype`); a text without
    shingles has a row of `params.empty`. Texts are hashed BATCH_BYTES at a time."""
    if params.hash == "datatrove":
        from curate.dedup import minhash_datatrove

        return minhash_datatrove.signatures(texts, params.shingle, params.seed, params.permutations)
    out = np.full((len(texts), params.permutations), EMPTY, dtype=np.uint32)
    a, b = permutations(params)
    for i, j in text_batches(texts, BATCH_BYTES):
        tok, doc = token_hashes(texts[i:j])
        sh, sdoc = shingle_hashes(tok, doc, params.shingle)
        _min_into(out[i:j], sh, sdoc, a, b)
    return out


def text_batches(texts: list[str], limit: int):
    """(start, end) of consecutive runs of `texts` of at most about `limit` characters each
    (a longer text alone in its run)."""
    i = 0
    while i < len(texts):
        j, size = i, 0
        while j < len(texts) and (j == i or size + len(texts[j]) <= limit):
            size += len(texts[j]) + 1
            j += 1
        yield i, j
        i = j


def _min_into(out: np.ndarray, sh: np.ndarray, sdoc: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """out[d] = min over the shingles of document d of each permutation's hash, SHINGLE_BLOCK
    shingles at a time (a document's shingles may span blocks: minimum with what is there)."""
    for s in range(0, sh.size, SHINGLE_BLOCK):
        x, d = sh[s:s + SHINGLE_BLOCK], sdoc[s:s + SHINGLE_BLOCK]
        with np.errstate(over="ignore"):
            hv = x[:, None] * a
            hv += b
        cuts = np.flatnonzero(np.concatenate([[True], d[1:] != d[:-1]]))
        docs = d[cuts]
        # the top 32 bits are monotone in the value: the minimum's top bits are the top bits' minimum
        low = (np.minimum.reduceat(hv, cuts, axis=0) >> np.uint64(32)).astype(np.uint32)
        out[docs] = np.minimum(out[docs], low)


def band_hashes(sig: np.ndarray, params: MinHashParams, rows: np.ndarray | None = None) -> np.ndarray:
    """(n, bands) uint64: band b's hash mixes rows b*R .. b*R+R-1 of each signature (of
    sig[rows], when given) and b; BAND_ROWS signatures at a time (the uint64 copy of a block
    is 8x its signatures), so sig[rows] is never copied whole."""
    n = sig.shape[0] if rows is None else rows.size
    out = np.empty((n, params.bands), np.uint64)
    for s in range(0, n, BAND_ROWS):
        block = sig[s:s + BAND_ROWS] if rows is None else sig[rows[s:s + BAND_ROWS]]
        out[s:s + BAND_ROWS] = _band_block(block, params)
    return out


def _band_block(sig: np.ndarray, params: MinHashParams) -> np.ndarray:
    n = sig.shape[0]
    s = sig.reshape(n, params.bands, params.rows).astype(np.uint64)
    acc = np.broadcast_to(np.arange(params.bands, dtype=np.uint64) * _MIX[-1], (n, params.bands)).copy()
    with np.errstate(over="ignore"):
        for r in range(params.rows):
            acc += s[:, :, r] * _MIX[r % (_MIX.size - 1)]
            acc = _fmix64(acc)
    return acc


def jaccard(sig: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Estimated Jaccard of the signature pairs (sig[i], sig[j]): the share of equal values."""
    out = np.empty(i.size, np.float64)
    for s in range(0, i.size, SHINGLE_BLOCK):
        out[s:s + SHINGLE_BLOCK] = (sig[i[s:s + SHINGLE_BLOCK]] == sig[j[s:s + SHINGLE_BLOCK]]).mean(axis=1)
    return out
