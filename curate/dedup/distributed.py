"""The dedup steps on Ray Data, for a corpus larger than one machine's patience: the scan
(read, normalise, hash, sign) as `map_batches` over the output's Parquet parts, the band-bucket
shuffle as a `groupby(["band", "bucket"])`, the Jaccard check as `map_batches`, and the
connected components as alternating large-star / small-star rounds (Kiveris et al., 2014),
each a `groupby("u")`. Ray Data streams blocks and spills what does not fit, so a worker holds
a batch or a group at a time; the signatures travel once, by `ray.put`, to the steps that
read them. Each step calls the function the local path calls (`curate.dedup.clusters`,
`curate.dedup.minhash`) on its group or batch, on the same node numbering, so the clusters
are the local path's."""

from __future__ import annotations

import contextlib

import numpy as np

from curate.dedup import clusters, index
from curate.dedup.minhash import MinHashParams, band_hashes, signatures
from curate.dedup.normalize import DIGEST_BYTES, exact_hash, normalise
from curate.dedup.scan import PRESENT, Corpus, SeenHashes, output_files, text_schema
from curate.deps import require

SCAN_BATCH = 1024  # rows a scan task reads, normalises and signs at once
NODE_BATCH = 4096  # nodes whose band hashes a task computes at once
GROUP_ROWS = 1 << 20  # shuffled rows per groupby partition: a partition's group rows fit a worker
MAX_ROUNDS = 64  # star rounds: each at least halves the longest path, so 2 x log2(n) suffice


@contextlib.contextmanager
def session(address: str | None):
    """A Ray to run on: the one this process is connected to, else one started (or joined at
    `address`) for the dedup and shut down after it."""
    ray = require("ray", "curate dedup on Ray Data (--address, executor='ray')")
    require("ray.data", "curate dedup on Ray Data (--address, executor='ray')")
    from ray.data import DataContext

    DataContext.get_current().enable_progress_bars = False
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def _sign_batch(batch, column: str, params: dict | None, known_ref):
    """A scan task: the PRESENT rows of a batch as (entity id, root key, length, hash) and,
    for texts the index lacks, their signature (an empty list otherwise)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import ray

    batch = batch.filter(pc.equal(batch.column("status"), PRESENT))
    texts = batch.column(column).to_pylist()
    norms = [normalise(t) for t in texts]
    hashes = np.array([exact_hash(n) for n in norms], dtype=f"S{DIGEST_BYTES}")
    p = params and MinHashParams(**params)
    sig = np.zeros((len(texts), p.permutations if p else 0), p.dtype if p else np.uint32)
    fresh = np.zeros(len(texts), bool)
    if p is not None and len(texts):
        known = ray.get(known_ref)
        _, first = np.unique(hashes, return_index=True)
        todo = first[index.lookup(known, hashes[first]) < 0]
        fresh[todo] = True
        if todo.size:
            sig[todo] = signatures([norms[k] for k in todo], p)
    return pa.table({"entity_id": batch.column("entity_id"), "root_key": batch.column("root_key"),
                     "length": pa.array([len(t) if t else 0 for t in texts], pa.int64()),
                     "hash": index.hashes_to_arrow(hashes), "fresh": pa.array(fresh),
                     "signature": pa.FixedSizeListArray.from_arrays(pa.array(sig.reshape(-1)), max(sig.shape[1], 1))
                     if p else pa.nulls(len(texts), pa.null())})


def scan(out, output: str, column: str, *, params: MinHashParams | None, known: np.ndarray | None) -> Corpus:
    """`curate.dedup.scan.scan` on Ray Data: the parts are read and signed by Ray tasks; the
    driver gathers each row's id, length and hash, and the new texts' signatures once each."""
    import ray

    files = output_files(out, output)
    schema = text_schema(files, output, column)
    cols = ["entity_id", "root_key", "status", column]
    ds = ray.data.read_parquet(files, schema=schema).select_columns(cols)
    known_ref = ray.put(known if known is not None else np.zeros(0, f"S{DIGEST_BYTES}"))
    signed = ds.map_batches(_sign_batch, batch_format="pyarrow", batch_size=SCAN_BATCH, zero_copy_batch=True,
                            fn_kwargs={"column": column, "params": params and params.to_dict(), "known_ref": known_ref})
    corpus, seen = Corpus(), SeenHashes()
    for b in signed.iter_batches(batch_format="pyarrow", batch_size=SCAN_BATCH):
        hashes = index.hashes_from_arrow(b.column("hash"))
        corpus.add(b.column("entity_id").combine_chunks(), b.column("root_key").combine_chunks(),
                   b.column("length").to_numpy(), hashes)
        if params is None:
            continue
        fresh = np.flatnonzero(b.column("fresh").to_numpy(zero_copy_only=False))
        new = fresh[seen.absent(hashes[fresh])] if fresh.size else fresh
        new = new[np.sort(np.unique(hashes[new], return_index=True)[1])]  # once, if two tasks had it
        if new.size:
            sig = index.sigs_from_arrow(b.column("signature"), params.permutations, params.dtype)
            seen.add(hashes[new])
            corpus.new_hashes.append(hashes[new])
            corpus.new_sigs.append(sig[new])
    return corpus


def _bands_batch(batch, sig_ref, nodes_ref, params: dict):
    """Positions in the nodes to band -> one row per (band, bucket, node)."""
    import ray

    sig = ray.get(sig_ref)
    nodes = ray.get(nodes_ref)[batch["id"].astype(np.int64)]
    bands = band_hashes(sig[nodes], MinHashParams(**params))
    nb = bands.shape[1]
    return {"band": np.tile(np.arange(nb, dtype=np.int64), nodes.size), "bucket": bands.reshape(-1),
            "node": np.repeat(nodes, nb)}


def _bucket_group(group):
    """One band bucket's pairs, as the local path pairs them (`clusters.bucket_pairs`)."""
    nodes = group["node"].astype(np.int64)
    i, j = clusters.bucket_pairs(np.zeros(nodes.size, np.uint64), nodes)
    return {"i": i, "j": j}


def _check_batch(batch, sig_ref, threshold: float):
    import ray

    i, j, _ = clusters.similar_pairs(ray.get(sig_ref), batch["i"].astype(np.int64), batch["j"].astype(np.int64),
                                       threshold)
    return {"i": i, "j": j}


def similar_pairs(sig: np.ndarray, nodes: np.ndarray, params: MinHashParams, threshold: float):
    """`clusters.candidate_pairs` then `clusters.similar_pairs` on Ray Data: the distinct pairs
    of `nodes` sharing a band bucket whose estimated Jaccard reaches `threshold`."""
    import ray

    if nodes.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    sig_ref, nodes_ref = ray.put(sig), ray.put(nodes.astype(np.int64))
    exploded = ray.data.range(nodes.size).map_batches(
        _bands_batch, batch_format="numpy", batch_size=NODE_BATCH,
        fn_kwargs={"sig_ref": sig_ref, "nodes_ref": nodes_ref, "params": params.to_dict()})
    pairs = exploded.groupby(["band", "bucket"], num_partitions=_partitions(nodes.size * params.bands)).map_groups(_bucket_group, batch_format="numpy")
    kept = pairs.map_batches(_check_batch, batch_format="numpy", fn_kwargs={"sig_ref": sig_ref, "threshold": threshold})
    return _gather(kept)


def _gather(ds) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (i, j) pairs of a dataset of edges, to the driver."""
    ii, jj = [], []
    for b in ds.iter_batches(batch_format="numpy"):
        ii.append(b["i"].astype(np.int64))
        jj.append(b["j"].astype(np.int64))
    if not ii:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return clusters.unique_pairs(np.concatenate(ii), np.concatenate(jj))


def _large_star(group):
    """Node u and its neighbours: each larger neighbour points to the smallest of them and u."""
    u, v = group["u"].astype(np.int64), group["v"].astype(np.int64)
    m = min(int(u[0]), int(v.min()))
    big = np.unique(v[v > u[0]])
    return {"i": big, "j": np.full(big.size, m, np.int64)}


def _small_star(group):
    """Node u and its smaller neighbours: they and u point to the smallest of them."""
    u, v = group["u"].astype(np.int64), group["v"].astype(np.int64)
    m = int(v.min())
    members = np.unique(np.concatenate([v, u[:1]]))
    members = members[members != m]
    return {"i": members, "j": np.full(members.size, m, np.int64)}


def _both_ways(i: np.ndarray, j: np.ndarray) -> dict:
    return {"u": np.concatenate([i, j]), "v": np.concatenate([j, i])}


def _star(ray, fn, edges: dict) -> tuple[np.ndarray, np.ndarray]:
    import pyarrow as pa

    ds = ray.data.from_arrow(pa.table(edges))
    return _gather(ds.groupby("u", num_partitions=_partitions(edges["u"].size)).map_groups(fn, batch_format="numpy"))


def _partitions(rows: int) -> int:
    """Partitions of a groupby over `rows` rows: one per GROUP_ROWS (a shuffle's partitions
    each cost a task or an aggregator, which small inputs should not pay 200 of)."""
    return max(1, -(-rows // GROUP_ROWS))


def components(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """`clusters.components` on Ray Data: large-star and small-star rounds over the edges until
    they stop changing; every edge is then (node, its component's lowest node)."""
    import ray

    labels = np.arange(n, dtype=np.int64)
    if i.size == 0:
        return labels
    for _ in range(MAX_ROUNDS):
        li, lj = _star(ray, _large_star, _both_ways(i, j))
        hi, lo = np.maximum(li, lj), np.minimum(li, lj)  # small-star: keyed by the larger end
        si, sj = _star(ray, _small_star, {"u": hi, "v": lo})
        if np.array_equal(si, i) and np.array_equal(sj, j):
            break
        i, j = si, sj
    labels[np.maximum(i, j)] = np.minimum(i, j)
    return labels
