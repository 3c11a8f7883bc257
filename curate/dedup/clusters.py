"""From band hashes to clusters, without Ray: candidate pairs (documents sharing a band's
bucket), their estimated Jaccard against the threshold, connected components, and the
representative of each cluster. The Ray Data path (`curate.dedup.distributed`) runs the
same steps with the same functions on groups, so both give the same clusters.

Nodes are the distinct normalised texts, numbered in the order of their exact hash (content,
not input order): exact copies are one node, and the numbering, hence every tie, is the same
however the rows were read or split into runs."""

from __future__ import annotations

import numpy as np

from curate.dedup.minhash import jaccard

BUCKET_CAP = 256  # a bucket's node is compared with the next BUCKET_CAP - 1 in node order, not
#                   all: a bucket of n near-copies costs n x 255 pairs, not n^2 / 2, and its
#                   members still connect through their neighbours


def bucket_pairs(keys: np.ndarray, nodes: np.ndarray, cap: int = BUCKET_CAP) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (i < j) of nodes with equal `keys` (one band's hashes), each node paired with the
    next cap - 1 nodes of its bucket in node order."""
    order = np.lexsort((nodes, keys))
    k, nd = keys[order], nodes[order]
    same = k[1:] == k[:-1]
    pos = np.flatnonzero(same)  # p: nd[p] and nd[p + 1] share a bucket
    ii, jj = [], []
    d = 1
    while pos.size and d < cap:
        ii.append(nd[pos])
        jj.append(nd[pos + d])
        d += 1
        nxt = pos + d
        ok = nxt < k.size
        pos = pos[ok]
        pos = pos[k[pos + d] == k[pos]]
    if not ii:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(ii), np.concatenate(jj)


def candidate_pairs(bands: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct pairs (i < j) of `nodes` that share a bucket in some band ((n, B) hashes)."""
    found = [bucket_pairs(bands[:, b], nodes) for b in range(bands.shape[1])]
    return unique_pairs(np.concatenate([f[0] for f in found]), np.concatenate([f[1] for f in found]))


def unique_pairs(i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct pairs of (i, j), each as (min, max), sorted."""
    lo, hi = np.minimum(i, j).astype(np.int64), np.maximum(i, j).astype(np.int64)
    if lo.size == 0:
        return lo, hi
    pairs = np.unique(np.stack([lo, hi], axis=1), axis=0)
    return pairs[:, 0], pairs[:, 1]


def similar_pairs(sig: np.ndarray, i: np.ndarray, j: np.ndarray, threshold: float):
    """The pairs whose estimated Jaccard is >= threshold, with it."""
    sim = jaccard(sig, i, j)
    keep = sim >= threshold
    return i[keep], j[keep], sim[keep]


def components(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Each of n nodes' component label, the lowest node of its component: roots hooked to the
    lower label of each edge, then pointer jumping, until no edge joins two labels."""
    labels = np.arange(n, dtype=np.int64)
    if i.size == 0:
        return labels
    while True:
        li, lj = labels[i], labels[j]
        if np.array_equal(li, lj):
            return labels
        low = np.minimum(li, lj)
        np.minimum.at(labels, li, low)
        np.minimum.at(labels, lj, low)
        while True:
            jumped = labels[labels]
            if np.array_equal(jumped, labels):
                break
            labels = jumped


def representatives(cluster: np.ndarray, length: np.ndarray, entity_id) -> np.ndarray:
    """For each row, the row index of its cluster's representative: the longest (text
    characters, or a clip's seconds), then the lowest entity id (`entity_id`: a list or an
    Arrow string array)."""
    import pyarrow as pa

    n = cluster.size
    if n == 0:
        return np.zeros(0, np.int64)
    ids = entity_id if isinstance(entity_id, pa.Array) else pa.array(entity_id, pa.string())
    t = pa.table({"c": cluster, "l": -np.asarray(length, np.float64), "e": ids,
                  "r": np.arange(n)})
    order = t.sort_by([("c", "ascending"), ("l", "ascending"), ("e", "ascending")]).column("r").to_numpy()
    c = cluster[order]
    first = np.concatenate([[True], c[1:] != c[:-1]])
    head = order[np.flatnonzero(first)[np.cumsum(first) - 1]]  # each sorted row's group head
    rep = np.empty(n, np.int64)
    rep[order] = head
    return rep
