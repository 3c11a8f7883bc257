"""Reading the rows a dedup considers: the PRESENT rows of one output, a batch at a time,
each kept as its entity id, root key, text length and exact hash; the texts themselves are
dropped after their batch (their signatures, when the index lacks them, computed first), so
the driver's memory grows with the number of rows, not with their text."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from curate.core.outcome import Status
from curate.dedup import index as idx
from curate.dedup.minhash import MinHashParams, signatures
from curate.dedup.normalize import DIGEST_BYTES, exact_hash, normalise
from curate.errors import InputError
from curate.names import LINEAGE_COLUMNS

SCAN_ROWS = 2048  # rows read and normalised at a time: their texts are the scan's only large memory
PRESENT = str(Status.PRESENT)


@dataclass
class Corpus:
    """The rows considered, a chunk per batch read: entity ids and root keys as Arrow string
    arrays, lengths and exact hashes as numpy arrays (bytes a row, not Python objects), and the
    signatures computed while reading, with their texts' hashes."""

    ids: list = field(default_factory=list)
    roots: list = field(default_factory=list)
    lengths: list[np.ndarray] = field(default_factory=list)
    hashes: list[np.ndarray] = field(default_factory=list)
    new_hashes: list[np.ndarray] = field(default_factory=list)
    new_sigs: list[np.ndarray] = field(default_factory=list)

    def add(self, entity_id, root_key, length: np.ndarray, hashes: np.ndarray) -> None:
        self.ids.append(entity_id)
        self.roots.append(root_key)
        self.lengths.append(np.asarray(length, np.int64))
        self.hashes.append(np.asarray(hashes, f"S{DIGEST_BYTES}"))

    @property
    def entity_id(self):
        return _strings(self.ids)

    @property
    def root_key(self):
        return _strings(self.roots)

    @property
    def length(self) -> np.ndarray:
        return np.concatenate(self.lengths) if self.lengths else np.zeros(0, np.int64)

    @property
    def signed(self) -> int:
        return sum(h.size for h in self.new_hashes)

    def hash_array(self) -> np.ndarray:
        return np.concatenate(self.hashes) if self.hashes else np.zeros(0, f"S{DIGEST_BYTES}")


def _strings(chunks):
    import pyarrow as pa

    return pa.concat_arrays([c.cast(pa.string()) for c in chunks]) if chunks else pa.array([], pa.string())


class SeenHashes:
    """A set of exact hashes as sorted numpy runs, merged two by two as they grow (a binary
    counter): 16 bytes a hash, where a Python set of bytes costs about 100."""

    def __init__(self):
        self.runs: list[np.ndarray] = []

    def absent(self, h: np.ndarray) -> np.ndarray:
        """Which of the distinct hashes `h` are not in the set."""
        out = np.ones(h.size, bool)
        for r in self.runs:
            out &= idx.lookup(r, h) < 0
        return out

    def add(self, h: np.ndarray) -> None:
        self.runs.append(np.sort(h))
        while len(self.runs) > 1 and self.runs[-1].size >= self.runs[-2].size:
            b, a = self.runs.pop(), self.runs.pop()
            self.runs.append(np.sort(np.concatenate([a, b])))


def output_files(out: str | Path, output: str) -> list[str]:
    """The committed part files of `output`; InputError naming the outputs there if none."""
    import pyarrow.dataset as ds

    from curate.io.read import output_path

    d = output_path(out, output)
    files = ds.dataset(d, format="parquet").files if d.is_dir() else []
    if not files:
        raise InputError(f"{out} has no rows in an output {output!r}; give --output one of {_outputs(out)}")
    return files


def _outputs(out) -> list[str] | str:
    """The outputs of `out` by its manifest (else its plain subdirectories), for an error."""
    from curate.io import manifest

    man = manifest.load(Path(out)) if Path(out).is_dir() else None
    if man is not None:
        return sorted(man["pipeline"]["outputs"])
    if not Path(out).is_dir():
        return "the outputs of a `curate run` directory"
    return sorted(p.name for p in Path(out).iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


def text_schema(files: list[str], output: str, column: str):
    """The unified schema of the parts, checked: lineage columns there, `column` a text column."""
    import pyarrow as pa

    from curate.io.read import unified_schema

    schema = unified_schema(files)
    if schema is None or not {"entity_id", "root_key", "status"} <= set(schema.names):
        raise InputError(f"output {output!r} is not a curate output (no entity_id, root_key and status columns)")
    texts = [f.name for f in schema if (pa.types.is_string(f.type) or pa.types.is_large_string(f.type))
             and f.name not in LINEAGE_COLUMNS]
    if column not in schema.names:
        raise InputError(f"output {output!r} has no column {column!r}; its text columns are {texts}")
    if column not in texts:
        raise InputError(f"column {column!r} of output {output!r} holds {schema.field(column).type}, not text; "
                         f"give one of its text columns: {texts}")
    return schema


def scan(out: str | Path, output: str, column: str, *, params: MinHashParams | None,
         known: np.ndarray | None = None, batch_rows: int = SCAN_ROWS) -> Corpus:
    """The PRESENT rows of `output`; with `params`, the signatures of texts whose hash is not
    in the sorted `known` hashes (the index), each distinct text once."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    pool = pa.default_memory_pool()
    files = output_files(out, output)
    schema = text_schema(files, output, column)
    data = ds.dataset(files, format="parquet", schema=schema)
    corpus, seen = Corpus(), SeenHashes()
    for batch in data.to_batches(columns=["entity_id", "root_key", column], filter=pc.field("status") == PRESENT,
                                 batch_size=batch_rows):
        texts = batch.column(column).to_pylist()
        norms = [normalise(t) for t in texts]
        hashes = np.array([exact_hash(n) for n in norms], dtype=f"S{DIGEST_BYTES}")
        corpus.add(batch.column("entity_id"), batch.column("root_key"), [len(t) if t else 0 for t in texts], hashes)
        if params is not None and hashes.size:
            _, first = np.unique(hashes, return_index=True)  # each distinct text of the batch once
            first = np.sort(first)
            first = first[seen.absent(hashes[first])]
            if first.size:
                seen.add(hashes[first])
                _sign(corpus, hashes[first], [norms[k] for k in first], known, params)
        del texts, norms, batch
        pool.release_unused()  # Arrow's allocator would keep every batch's freed pages (about 0.8 KB a row)
    return corpus


def _sign(corpus: Corpus, hs: np.ndarray, norms: list[str], known: np.ndarray | None, params: MinHashParams) -> None:
    """Signatures of the texts (of hashes `hs`) the index does not hold."""
    if known is not None and known.size:
        absent = idx.lookup(known, hs) < 0
        hs, norms = hs[absent], [n for n, a in zip(norms, absent) if a]
    if hs.size:
        corpus.new_hashes.append(hs)
        corpus.new_sigs.append(signatures(norms, params))
