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
    """The rows considered (one entry each), and the signatures computed while reading them."""

    entity_id: list[str] = field(default_factory=list)
    root_key: list[str] = field(default_factory=list)
    length: list[int] = field(default_factory=list)
    hashes: list[bytes] = field(default_factory=list)
    new_hashes: list[bytes] = field(default_factory=list)
    new_sigs: list[np.ndarray] = field(default_factory=list)

    def hash_array(self) -> np.ndarray:
        return np.array(self.hashes, dtype=f"S{DIGEST_BYTES}")


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
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    files = output_files(out, output)
    schema = text_schema(files, output, column)
    data = ds.dataset(files, format="parquet", schema=schema)
    corpus, seen = Corpus(), set()
    for batch in data.to_batches(columns=["entity_id", "root_key", column], filter=pc.field("status") == PRESENT,
                                 batch_size=batch_rows):
        texts = batch.column(column).to_pylist()
        corpus.entity_id += batch.column("entity_id").to_pylist()
        corpus.root_key += batch.column("root_key").to_pylist()
        corpus.length += [len(t) if t else 0 for t in texts]
        pending: dict[bytes, str] = {}
        for t in texts:
            norm = normalise(t)
            h = exact_hash(norm)
            corpus.hashes.append(h)
            if params is not None and h not in seen:
                seen.add(h)
                pending[h] = norm
        if pending:
            _sign(corpus, pending, known, params)
    return corpus


def _sign(corpus: Corpus, pending: dict[bytes, str], known: np.ndarray | None, params: MinHashParams) -> None:
    """Signatures of the pending texts the index does not hold."""
    hs = list(pending)
    if known is not None and known.size:
        absent = idx.lookup(known, np.array(hs, dtype=f"S{DIGEST_BYTES}")) < 0
        hs = [h for h, a in zip(hs, absent) if a]
    if hs:
        corpus.new_hashes += hs
        corpus.new_sigs.append(signatures([pending[h] for h in hs], params))
