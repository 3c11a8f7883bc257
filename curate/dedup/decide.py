"""Clusters into the rows of `OUT/<output>_dedup/`: one per row considered, with its cluster
(the representative's entity id), the representative it duplicates, the similarity to it,
whether it is kept, the method, and a reason that says why it is not kept.

The representative of a cluster is its longest text (characters of the deduplicated column),
then its lowest entity id (`curate.dedup.clusters.representatives`). The rule is applied to the
whole cluster on every run: a later run that adds a longer member makes that member the
representative, and the earlier one a duplicate (the run's summary counts such changes), so
a corpus deduplicated in five runs gets the rows one run over it gives."""

from __future__ import annotations

import numpy as np

from curate.dedup.clusters import representatives
from curate.dedup.minhash import jaccard

COLUMNS = ("entity_id", "root_key", "cluster_id", "duplicate_of", "similarity", "keep", "method", "reason")


def schema():
    import pyarrow as pa

    return pa.schema([("entity_id", pa.string()), ("root_key", pa.string()), ("cluster_id", pa.string()),
                      ("duplicate_of", pa.string()), ("similarity", pa.float64()), ("keep", pa.bool_()),
                      ("method", pa.string()), ("reason", pa.string())])


def decide(entity_id: list[str], root_key: list[str], length, node: np.ndarray, labels: np.ndarray,
           sig: np.ndarray | None, method: str, threshold: float):
    """The dedup rows (an Arrow table sorted by root key, entity id) of rows whose text is node
    `node[r]`, given each node's component label and (minhash) signature."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = entity_id if isinstance(entity_id, pa.Array) else pa.array(entity_id, pa.string())
    roots = root_key if isinstance(root_key, pa.Array) else pa.array(root_key, pa.string())
    n = len(ids)
    cluster = labels[node]
    rep = representatives(cluster, np.asarray(length, np.int64), ids)
    kept = rep == np.arange(n)
    same = node[rep] == node  # the representative's text, up to normalisation
    sim = np.ones(n, np.float64)
    near = ~kept & ~same
    if sig is not None and near.any():
        sim[near] = jaccard(sig, node[near], node[rep[near]])
    label = "exact" if method == "exact" else "minhash"
    exact = same & ~kept & (method != "minhash")
    reps = ids.take(pa.array(rep))
    dup = np.flatnonzero(~kept)  # only these rows have a reason: Python strings for them alone
    dup_reps = reps.take(pa.array(dup)).to_pylist()
    reasons = [None] * n
    for r, rid in zip(dup.tolist(), dup_reps):
        reasons[r] = _reason(rid, float(sim[r]), "exact" if exact[r] else label, threshold)
    kept_a = pa.array(kept, pa.bool_())
    t = pa.table({
        "entity_id": ids, "root_key": roots, "cluster_id": reps,
        "duplicate_of": pc.if_else(kept_a, pa.scalar(None, pa.string()), reps),
        "similarity": pa.array(sim, pa.float64(), mask=kept), "keep": kept_a,
        "method": pc.if_else(pa.array(exact), "exact", label),
        "reason": pa.array(reasons, pa.string()),
    }, schema=schema())
    return t.sort_by([("root_key", "ascending"), ("entity_id", "ascending")])


def _reason(rep: str, sim: float, method: str, threshold: float) -> str:
    if method == "exact":
        return f"exact duplicate of {rep} (the same text after normalisation)"
    if sim >= threshold:
        return f"near-duplicate of {rep} (Jaccard {sim:.2f} >= {threshold:.2f})"
    return (f"near-duplicate of {rep} through other members of its cluster (Jaccard {sim:.2f} to it; "
            f"each link >= {threshold:.2f})")


def with_root_keys(rows: list[dict], root_key: dict[str, str]):
    """Rows of another method (semantic dedup: every key but root_key) as a dedup table."""
    import pyarrow as pa

    full = [{**r, "root_key": root_key[r["entity_id"]]} for r in rows]
    t = pa.Table.from_pylist([{c: r.get(c) for c in COLUMNS} for r in full], schema=schema())
    return t.sort_by([("root_key", "ascending"), ("entity_id", "ascending")])
