"""Semantic dedup of clips by their embeddings: NeMo Curator's method (SemDeDup).

`semantic_dedup(ids, vectors, lengths, eps=0.07)`:

1. the vectors are L2-normalised (a zero vector stays zero: it duplicates nothing);
2. k-means splits them into `n_clusters` clusters (default: one per `CLUSTER_ROWS` rows, so a
   corpus of up to that many is compared all against all): scikit-learn's `KMeans` where it is
   installed, else a numpy k-means (k-means++ seeding, Lloyd iterations), both seeded by `seed`;
   with `address` (a cluster's, or "auto"; a Ray this process is connected to already is used
   whatever it says), `curate.dedup.semantic_ray`: the Lloyd passes on Ray Data (each maps the
   vector blocks to per-cluster sums), then one Ray task per cluster for step 3;
3. within each cluster, the cosine of every pair; a pair at cosine >= 1 - eps is a duplicate
   pair, and the duplicate pairs connect the cluster's rows into groups (connected components:
   a chain of near-copies is one group);
4. each group of two or more keeps one representative: the longest (`lengths`, a clip's
   duration), then the lowest entity id; the others are its duplicates, with their cosine to it.

Rows come back in the input's order, one per id, with the columns of the dedup output
(`curate.dedup`) except `root_key`, which the caller adds: `entity_id`, `cluster_id` (the
representative's id; a singleton's own), `duplicate_of` (None for a kept row), `similarity`
(cosine to the representative; None for a kept row), `keep`, `method` ("semantic") and
`reason` (None for a kept row). Duplicates in different k-means clusters are not compared: more
clusters are faster and may miss a pair that straddles two of them, as in NeMo Curator.
"""

from __future__ import annotations

import math

import numpy as np

from curate.errors import CurateError

METHOD = "semantic"
DEFAULT_EPS = 0.07  # duplicates where cosine >= 0.93: NeMo Curator's default for video clips
# Rows per k-means cluster on average, when n_clusters is not given: a cluster's cosine matrix is
# then about 1000 x 1000 float32 (4 MB), and a corpus of up to 1000 clips is compared all pairs.
CLUSTER_ROWS = 1000
PAIR_ROWS = 1024  # rows compared against a whole cluster at once: 1024 x 100,000 float32 is 400 MB
MAX_ITER = 100  # Lloyd iterations at most (sklearn's default 300 is for harder, unnormalised data)
TOL = 1e-6  # sklearn's and Ray's passes stop when no centre moves more than this (unit vectors)


def semantic_dedup(ids: list[str], vectors: np.ndarray, lengths: list[float], *, eps: float = DEFAULT_EPS,
                   n_clusters: int | None = None, seed: int = 0, address: str | None = None) -> list[dict]:
    """The semantic dedup rows of `ids` (see the module docstring), in their order."""
    x = check_inputs(ids, vectors, lengths, eps, n_clusters)
    if not len(ids):
        return []
    k = clusters_for(len(ids), n_clusters)
    if address is not None:
        from curate.dedup.semantic_ray import semantic_dedup_ray

        return semantic_dedup_ray(ids, x, lengths, eps=eps, k=k, seed=seed, address=address)
    labels = kmeans(x, k, seed)
    rows: list[dict | None] = [None] * len(ids)
    for members in members_by_label(labels):
        for i, row in zip(members, cluster_rows([ids[i] for i in members], x[members], [lengths[i] for i in members],
                                                eps), strict=True):
            rows[i] = row
    return rows


def check_inputs(ids, vectors, lengths, eps, n_clusters) -> np.ndarray:
    """The unit vectors as float32; every problem with the inputs in one CurateError."""
    problems = []
    v = np.asarray(vectors)
    if not len(ids) and not v.size:
        v = v.reshape(0, 1)
    if v.ndim != 2 or v.shape[1] < 1:
        problems.append(f"vectors must be an (n, d) array; got shape {v.shape}")
    elif v.shape[0] != len(ids) or len(lengths) != len(ids):
        problems.append(f"{len(ids)} ids, {v.shape[0]} vectors and {len(lengths)} lengths: give one of each per row")
    elif not np.isfinite(v).all():
        bad = [ids[i] for i in np.flatnonzero(~np.isfinite(v).all(axis=1))[:3]]
        problems.append(f"vectors of {', '.join(bad)} hold NaN or infinity: embed those rows again")
    if len(set(ids)) != len(ids):
        problems.append("ids repeat: give each row's own entity_id once")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 <= eps < 2:
        problems.append(f"eps={eps!r}: duplicates are pairs at cosine >= 1 - eps; give 0 <= eps < 2, e.g. 0.07")
    if n_clusters is not None and (isinstance(n_clusters, bool) or not isinstance(n_clusters, int) or n_clusters < 1):
        problems.append(f"n_clusters={n_clusters!r}; give a whole number >= 1, or None for one per {CLUSTER_ROWS} rows")
    if problems:
        raise CurateError("semantic dedup: " + "; ".join(problems))
    return unit(v.astype(np.float32, copy=False))


def unit(x: np.ndarray) -> np.ndarray:
    """Each row scaled to length 1 (a zero row stays zero)."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.where(norms > 0, norms, 1)).astype(np.float32)


def clusters_for(n: int, n_clusters: int | None) -> int:
    """The k-means cluster count: `n_clusters` (at most n), else one per CLUSTER_ROWS rows."""
    k = n_clusters if n_clusters is not None else math.ceil(n / CLUSTER_ROWS)
    return max(1, min(k, n))


def members_by_label(labels: np.ndarray) -> list[np.ndarray]:
    """The row indices of each cluster, in row order, clusters in label order."""
    order = np.argsort(labels, kind="stable")
    cuts = np.flatnonzero(np.diff(labels[order])) + 1
    return [m for m in np.split(order, cuts) if len(m)]


# ---- k-means -------------------------------------------------------------------------------------
def kmeans(x: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """Cluster labels of the rows of `x`: scikit-learn's KMeans where installed, else numpy's."""
    if k <= 1 or len(x) <= 1:
        return np.zeros(len(x), np.int64)
    try:
        from sklearn.cluster import KMeans
    except ImportError:
        return numpy_kmeans(x, k, seed)
    model = KMeans(n_clusters=k, n_init=1, max_iter=MAX_ITER, tol=TOL, random_state=seed)
    return model.fit_predict(x).astype(np.int64)


def kmeans_pp(x: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding: k rows of `x`, each drawn with probability in proportion to its squared
    distance from the centres drawn before it."""
    centres = [x[rng.integers(len(x))]]
    d2 = ((x - centres[0]) ** 2).sum(axis=1)
    for _ in range(1, k):
        total = d2.sum()
        i = int(rng.choice(len(x), p=d2 / total)) if total > 0 else int(rng.integers(len(x)))
        centres.append(x[i])
        d2 = np.minimum(d2, ((x - x[i]) ** 2).sum(axis=1))
    return np.stack(centres).astype(np.float32)


def assign(x: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """The nearest centre of each row (squared Euclidean distance, less the row's own |x|^2,
    which is the same for every centre)."""
    return (-2 * x @ centres.T + (centres * centres).sum(axis=1)[None, :]).argmin(axis=1)


def cluster_sums(x: np.ndarray, labels: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per cluster, the sum of its rows (float64) and their count: one sort and one reduceat
    (np.add.at goes row by row: far slower on a corpus)."""
    counts = np.bincount(labels, minlength=k)
    sums = np.zeros((k, x.shape[1]), np.float64)
    if len(x):
        order = np.argsort(labels, kind="stable")
        present = np.flatnonzero(counts)
        starts = np.concatenate([[0], np.cumsum(counts[present])[:-1]])
        sums[present] = np.add.reduceat(x[order].astype(np.float64), starts, axis=0)
    return sums, counts


def lloyd_step(x: np.ndarray, centres: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """New centres: the mean of each cluster's rows (an empty cluster keeps its centre)."""
    sums, counts = cluster_sums(x, labels, len(centres))
    return np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], centres).astype(np.float32)


def numpy_kmeans(x: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """Lloyd's k-means with k-means++ seeding, in numpy: the labels of the rows of `x`, when no
    row changes cluster any more (or after MAX_ITER passes)."""
    centres = kmeans_pp(x, k, np.random.default_rng(seed))
    labels = assign(x, centres)
    for _ in range(MAX_ITER):
        centres = lloyd_step(x, centres, labels)
        moved = assign(x, centres)
        if np.array_equal(moved, labels):
            break
        labels = moved
    return labels.astype(np.int64)


# ---- within one cluster --------------------------------------------------------------------------
def cluster_rows(ids: list[str], x: np.ndarray, lengths: list[float], eps: float) -> list[dict]:
    """The dedup rows of one k-means cluster's members (their unit vectors `x`), in their order:
    duplicate pairs at cosine >= 1 - eps, joined into groups (`clusters.components`), one
    representative per group (`clusters.representatives`: the longest, then the lowest id)."""
    from curate.dedup.clusters import components, representatives

    threshold = 1.0 - eps
    pairs = np.array(list(duplicate_pairs(x, threshold)), np.int64).reshape(-1, 2)
    rep = representatives(components(len(ids), pairs[:, 0], pairs[:, 1]), np.asarray(lengths, np.float64), ids)
    return [_row(ids[i], ids[r], None if i == r else float(x[i] @ x[r]), threshold) for i, r in enumerate(rep.tolist())]


def duplicate_pairs(x: np.ndarray, threshold: float):
    """The pairs (i, j), i < j, of rows of `x` at cosine >= threshold, `PAIR_ROWS` rows against
    all at a time (a cluster k-means made large costs time, never a matrix of its size squared)."""
    for start in range(0, len(x) - 1, PAIR_ROWS):
        cos = x[start:start + PAIR_ROWS] @ x.T
        a, b = np.nonzero(cos >= threshold)
        later = b > a + start
        yield from zip((a[later] + start).tolist(), b[later].tolist())


def _row(entity: str, rep: str, similarity: float | None, threshold: float) -> dict:
    kept = similarity is None
    if kept:
        reason = None
    elif similarity >= threshold:
        reason = f"semantic duplicate of {rep} (cosine {similarity:.3f} >= {threshold:.3f})"
    else:  # joined through other near-copies
        reason = (f"semantic duplicate of {rep} (cosine {similarity:.3f}, linked through clips at cosine "
                  f">= {threshold:.3f})")
    return {"entity_id": entity, "cluster_id": rep, "duplicate_of": None if kept else rep,
            "similarity": None if kept else round(similarity, 6), "keep": kept, "method": METHOD, "reason": reason}
