"""Semantic dedup on Ray Data: `curate.dedup.semantic`'s method, its steps on a cluster.

The vectors (already unit length) become a Ray Data dataset of (row, id, length, vector) blocks.
k-means is seeded on the driver (k-means++ over at most `SEED_ROWS` rows drawn with `seed`), then
each Lloyd pass maps every block to its per-cluster sums and counts (`map_batches`; a block's
result is k rows, whatever its size) and the driver adds them up into the new centres. The last
centres label every row (`map_batches` again), and each cluster goes to a Ray task of its own,
where `cluster_rows` (the local path's own) decides its duplicates. A worker holds one block or
one cluster: its memory is bounded by the largest cluster, which `n_clusters` sets. (The rows
come from the driver, which holds them all already, so a Ray Data shuffle to group them,
`groupby(label).map_groups`, would only add a slower copy of what the tasks get.)

A Ray this process is connected to is used; else one is joined at `address` (e.g. "auto") for
the dedup and left after it.
"""

from __future__ import annotations

import contextlib

import numpy as np

from curate.dedup.semantic import MAX_ITER, TOL, assign, cluster_rows, cluster_sums, kmeans_pp, members_by_label
from curate.deps import require

SEED_ROWS = 20_000  # rows k-means++ seeds from: a sample, so seeding stays O(sample x k) on the driver
BLOCK_ROWS = 4096  # rows per block a Lloyd pass maps at once (4096 x 768 float32: 12 MB)
DECIDE_CPUS = 0.25  # a cluster's cosine matrix is one matmul: fractional, as curate's pools are


@contextlib.contextmanager
def session(address: str | None):
    """The Ray this process is connected to, else one joined at `address` for the block."""
    ray = require("ray", "semantic dedup on Ray Data (--address)")
    require("ray.data", "semantic dedup on Ray Data (--address)")
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        from ray.data import DataContext

        DataContext.get_current().enable_progress_bars = False
        yield ray
    finally:
        if started:
            ray.shutdown()


def semantic_dedup_ray(ids: list[str], x: np.ndarray, lengths: list[float], *, eps: float, k: int, seed: int,
                       address: str | None) -> list[dict]:
    """`curate.dedup.semantic.semantic_dedup`'s rows, computed on Ray (see the module docstring)."""
    import pyarrow as pa

    with session(address) as ray:
        n, d = x.shape
        table = pa.table({"row": np.arange(n), "entity_id": pa.array(ids, pa.string()),
                          "length": np.asarray(lengths, np.float64),
                          "vector": pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), d)})
        ds = ray.data.from_arrow([table.slice(start, BLOCK_ROWS) for start in range(0, n, BLOCK_ROWS)])
        centres = _lloyd(ds, _seed_centres(x, k, seed), k) if k > 1 else np.zeros((1, d), np.float32)
        labelled = ds.map_batches(_label, fn_kwargs={"centres": centres}, batch_format="numpy").select_columns(
            ["row", "label"]).to_pandas()
        labels = np.empty(n, np.int64)
        labels[labelled["row"].to_numpy()] = labelled["label"].to_numpy()
        decide = ray.remote(num_cpus=DECIDE_CPUS)(cluster_rows)
        clusters = members_by_label(labels)
        pending = [decide.remote([ids[i] for i in m], x[m], [lengths[i] for i in m], eps) for m in clusters]
        rows: list[dict | None] = [None] * n
        for members, decided in zip(clusters, ray.get(pending), strict=True):
            for i, row in zip(members, decided, strict=True):
                rows[i] = row
    return rows


def _seed_centres(x: np.ndarray, k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    sample = x if len(x) <= SEED_ROWS else x[np.sort(rng.choice(len(x), SEED_ROWS, replace=False))]
    return kmeans_pp(sample, k, rng)


def _lloyd(ds, centres: np.ndarray, k: int) -> np.ndarray:
    """Lloyd passes over the dataset until no centre moves more than TOL (at most MAX_ITER)."""
    for _ in range(MAX_ITER):
        parts = ds.map_batches(_partial_sums, fn_kwargs={"centres": centres}, batch_format="numpy").take_all()
        sums = np.zeros(centres.shape, np.float64)
        counts = np.zeros(k, np.int64)
        for p in parts:
            sums[p["label"]] += p["sum"]
            counts[p["label"]] += p["count"]
        moved = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], centres).astype(np.float32)
        shift = float(np.abs(moved - centres).max())
        centres = moved
        if shift <= TOL:
            break
    return centres


def _matrix(column) -> np.ndarray:
    """A batch's vector column as an (n, d) float32 array (Ray Data gives a fixed-size list column
    as an array of arrays)."""
    column = np.asarray(column)
    return (np.stack(column) if column.dtype == object else column).astype(np.float32, copy=False)


def _partial_sums(batch: dict, centres: np.ndarray) -> dict:
    """One block's per-cluster sums and counts: k rows."""
    vectors = _matrix(batch["vector"])
    sums, counts = cluster_sums(vectors, assign(vectors, centres), len(centres))
    return {"label": np.arange(len(centres)), "sum": sums, "count": counts}


def _label(batch: dict, centres: np.ndarray) -> dict:
    batch["label"] = assign(_matrix(batch["vector"]), centres)
    return batch
