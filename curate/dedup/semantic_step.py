"""`curate dedup --embedding COLUMN`: the rows and vectors of an output read for semantic
dedup (`curate.dedup.semantic.semantic_dedup`, k-means then cosine within clusters), and its
rows given their root keys. A cluster's representative is the longest clip: its length is
`end_s - start_s`, else its `duration_s` or `duration` column, else the length of the text
`column`."""

from __future__ import annotations

import numpy as np

from curate.dedup.scan import PRESENT, output_files
from curate.errors import InputError

DURATIONS = ("duration_s", "duration")  # a row's own duration column, when it has no start_s/end_s


def _semantic_dedup():
    try:
        from curate.dedup.semantic import semantic_dedup
    except ImportError as exc:
        raise InputError(f"semantic dedup (--embedding) needs curate.dedup.semantic, which this install lacks "
                         f"({exc}); use --column for text dedup, or install a curate that has it") from None
    return semantic_dedup


def _lengths(t, output: str, column: str | None) -> list[float]:
    names = t.column_names
    if "start_s" in names and "end_s" in names:
        return (np.asarray(t.column("end_s").to_numpy(zero_copy_only=False), float)
                - np.asarray(t.column("start_s").to_numpy(zero_copy_only=False), float)).tolist()
    for d in DURATIONS:
        if d in names:
            return [float(x or 0) for x in t.column(d).to_pylist()]
    if column and column in names:
        return [float(len(x or "")) for x in t.column(column).to_pylist()]
    raise InputError(f"output {output!r} has no start_s/end_s, {' or '.join(DURATIONS)} column to choose the "
                     "longest clip of a cluster by; give --column TEXT to choose by text length instead")


def semantic(out, output: str, embedding: str, column: str | None, *, eps: float, n_clusters: int | None,
             seed: int, address: str | None):
    """The dedup rows of output `output` by its vector column `embedding`."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    from curate.dedup.decide import with_root_keys
    from curate.io.read import unified_schema

    semantic_dedup = _semantic_dedup()
    files = output_files(out, output)
    schema = unified_schema(files)
    if schema is None or embedding not in schema.names:
        raise InputError(f"output {output!r} has no column {embedding!r}; give --embedding the vector column "
                         "(e.g. embedding, written by the clip embedder)")
    t = ds.dataset(files, format="parquet", schema=schema).to_table(filter=pc.field("status") == PRESENT)
    vectors = t.column(embedding).combine_chunks()
    if t.num_rows and vectors.null_count:
        raise InputError(f"{vectors.null_count} PRESENT rows of {output!r} have no {embedding!r}; embed every row "
                         "first (or filter the rows without one)")
    try:
        mat = np.asarray(vectors.to_pylist() if t.num_rows else [], np.float32).reshape(t.num_rows, -1)
    except ValueError:
        raise InputError(f"column {embedding!r} of output {output!r} is not a vector of one size per row") from None
    ids = t.column("entity_id").to_pylist()
    rows = semantic_dedup(ids, mat, _lengths(t, output, column), eps=eps, n_clusters=n_clusters, seed=seed,
                          address=address)
    return with_root_keys(rows, dict(zip(ids, t.column("root_key").to_pylist())))
