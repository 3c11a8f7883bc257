"""The signature index kept in a dedup output, `OUT/<output>_dedup/_index/signatures.parquet`:
one row per distinct normalised text (its exact hash, its MinHash signature), with the
MinHash parameters and the normalisation in the file's metadata. A later run computes
signatures only for texts the index lacks; a run with other parameters computes them all
again (old signatures do not compare with new ones) and replaces the index.

The index is keyed by content, not by entity id: a row whose text changed (an input replaced
by `--retry-failed`) is a new text, and an old text no longer in the output is left out of the
next index, so every run clusters exactly the rows the output holds now."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from curate.dedup.minhash import MinHashParams
from curate.dedup.normalize import DIGEST_BYTES, NORMALISATION
from curate.errors import InputError

INDEX_DIR = "_index"  # inside OUT/<output>_dedup/: a leading '_' keeps it out of the output's rows
INDEX_FILE = "signatures.parquet"
_META_KEY = b"curate.dedup"
CHUNK_ROWS = 16384  # index rows read or written at a time (a row group: 7 MiB of uint32 signatures)


def hashes_to_arrow(hashes: np.ndarray):
    """An S16 numpy array of digests as an Arrow fixed_size_binary(16) array."""
    import pyarrow as pa

    data = np.ascontiguousarray(hashes, dtype=f"S{DIGEST_BYTES}")
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(DIGEST_BYTES), len(data), [None, pa.py_buffer(data.tobytes())])


def hashes_from_arrow(col) -> np.ndarray:
    """An Arrow fixed_size_binary(16) column as an S16 numpy array."""
    import pyarrow as pa

    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    buf = arr.buffers()[1]
    start = arr.offset * DIGEST_BYTES
    return np.frombuffer(buf, dtype=f"S{DIGEST_BYTES}", count=len(arr), offset=start).copy()


def sigs_to_arrow(sig: np.ndarray):
    """(n, P) uint32 (or uint64) signatures as an Arrow fixed_size_list<uint32>[P] array."""
    import pyarrow as pa

    flat = pa.array(np.ascontiguousarray(sig).reshape(-1))
    return pa.FixedSizeListArray.from_arrays(flat, sig.shape[1])


def sigs_from_arrow(col, p: int, dtype=np.uint32) -> np.ndarray:
    import pyarrow as pa

    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return arr.flatten().to_numpy(zero_copy_only=False).astype(dtype).reshape(-1, p)


def load(dedup_dir: Path, params: MinHashParams) -> tuple[np.ndarray, np.ndarray, bool]:
    """The index's (sorted hashes, signatures, False); empty when there is none, and empty with
    True when it was built with other settings (its signatures are of no use then). An index of
    the other signature scheme (`hash`) is refused: InputError naming both ways out. Read
    CHUNK_ROWS rows at a time into numpy arrays (one copy of the signatures in memory)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    empty = np.zeros(0, f"S{DIGEST_BYTES}"), np.zeros((0, params.permutations), params.dtype)
    path = dedup_dir / INDEX_DIR / INDEX_FILE
    if not path.exists():
        return (*empty, False)
    pf = pq.ParquetFile(path)
    meta = json.loads((pf.schema_arrow.metadata or {}).get(_META_KEY, b"{}"))
    if "minhash" in meta:
        meta["minhash"].setdefault("hash", "curate")  # an index written before schemes were named
        built = meta["minhash"]["hash"]
        if built != params.hash:
            raise InputError(f"the signature index {path.parent} was built with --hash {built}, and this run asks "
                             f"for --hash {params.hash}: the two schemes' clusters differ, so one index cannot hold "
                             f"both. Run with --hash {built} to extend it, or delete {path.parent} to compute "
                             f"every signature again with --hash {params.hash}")
    if meta != settings(params):
        return (*empty, True)
    n = pf.metadata.num_rows
    hashes, sig, at = np.empty(n, f"S{DIGEST_BYTES}"), np.empty((n, params.permutations), params.dtype), 0
    for batch in pf.iter_batches(batch_size=CHUNK_ROWS):
        k = batch.num_rows
        hashes[at:at + k] = hashes_from_arrow(batch.column("hash"))
        sig[at:at + k] = sigs_from_arrow(batch.column("signature"), params.permutations, params.dtype)
        at += k
        del batch
        pa.default_memory_pool().release_unused()
    return hashes, sig, False


def settings(params: MinHashParams) -> dict:
    """What must match for an index's signatures to be reused."""
    return {"minhash": params.to_dict(), "normalisation": NORMALISATION}


def write(path: Path, hashes: np.ndarray, sig: np.ndarray, params: MinHashParams) -> None:
    """Write the index (hashes sorted) to `path`, CHUNK_ROWS rows at a time, its settings in
    the schema's metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("hash", pa.binary(DIGEST_BYTES)), ("signature", pa.list_(pa.from_numpy_dtype(sig.dtype),
                                                                                   sig.shape[1]))],
                       metadata={_META_KEY: json.dumps(settings(params), sort_keys=True).encode()})
    with pq.ParquetWriter(path, schema, use_dictionary=False) as w:  # random values: a dictionary only costs
        for at in range(0, len(hashes), CHUNK_ROWS):
            w.write_table(pa.table({"hash": hashes_to_arrow(hashes[at:at + CHUNK_ROWS]),
                                    "signature": sigs_to_arrow(sig[at:at + CHUNK_ROWS])}, schema=schema))
    pa.default_memory_pool().release_unused()


def lookup(index_hashes: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Position of each `wanted` hash in the sorted `index_hashes`, -1 where absent."""
    if index_hashes.size == 0:
        return np.full(wanted.size, -1, np.int64)
    pos = np.searchsorted(index_hashes, wanted)
    found = (pos < index_hashes.size) & (index_hashes[np.minimum(pos, index_hashes.size - 1)] == wanted)
    return np.where(found, pos, -1)
