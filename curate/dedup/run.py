"""`curate.dedup.dedup`: one corpus-level dedup of an output directory's output, written to
`OUT/<output>_dedup/` (rows: `curate.dedup.decide`; signature index: `curate.dedup.index`).

Steps: read the output's PRESENT rows (`scan`: exact hashes, and signatures for texts the
index lacks), number the distinct texts by hash, find candidate pairs by LSH banding, keep the
pairs whose estimated Jaccard reaches the threshold, take connected components, pick each
cluster's representative. Locally with numpy, or (`executor="ray"`, `address=`) with the
scan, the band-bucket shuffle and the components on Ray Data (`curate.dedup.distributed`):
the same functions on the same numbering, so the same rows.

The job's own output is never changed: the dedup output is written beside it, as a new
directory swapped in by rename, so a reader sees the old dedup rows or the new ones."""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from curate.dedup import clusters, decide, index
from curate.dedup.minhash import MinHashParams, band_hashes
from curate.dedup.normalize import DIGEST_BYTES, exact_hash
from curate.dedup.options import (DEFAULT_BANDS, DEFAULT_EPS, DEFAULT_HASH, DEFAULT_METHOD, DEFAULT_ROWS,
                                   DEFAULT_SEED, DEFAULT_SHINGLE, DEFAULT_THRESHOLD, HASHES, check_args)
from curate.errors import InputError
from curate.io.remote import is_url

SUFFIX = "_dedup"
PART = "part-00000.parquet"
EMPTY_HASH = np.array([exact_hash("")], dtype=f"S{DIGEST_BYTES}")[0]  # no word: no MinHash pair


@dataclass(frozen=True)
class DedupResult:
    """What one dedup run wrote, in figures."""

    path: Path
    method: str
    rows: int  # rows considered (the output's PRESENT rows)
    clusters: int  # distinct cluster ids, singletons included
    duplicate_clusters: int  # clusters of more than one row
    duplicates: int  # rows not kept
    exact: int  # of them, exact copies of their representative
    signed: int = 0  # texts whose signature this run computed (the rest came from the index)
    changed: int = 0  # rows of an earlier dedup whose representative changed
    rebuilt: bool = False  # the index had other MinHash settings: every signature was computed again

    def summary(self) -> str:
        near = self.duplicates - self.exact
        text = (f"{self.path}: {self.rows} rows, {self.clusters} clusters ({self.duplicate_clusters} with duplicates), "
                f"{self.duplicates} duplicates ({self.exact} exact, {near} near), {self.rows - self.duplicates} kept")
        if self.method != "exact" and self.method != "semantic":
            text += f"; {self.signed} new signatures"
        if self.rebuilt:
            text += " (the index had other MinHash settings: all computed again)"
        if self.changed:
            text += f"; {self.changed} earlier rows changed representative (a longer member joined their cluster)"
        return text


NOT_ON_STORAGE = ("{out} is on object storage, and curate dedup reads and writes local directories only "
                  "for now; copy the output to a local directory (e.g. `aws s3 sync {out} out/`) and run "
                  "curate dedup there")


def dedup(out: str | Path, *, output: str, column: str | None = None, threshold: float = DEFAULT_THRESHOLD,
          method: str = DEFAULT_METHOD, shingle: int = DEFAULT_SHINGLE, bands: int = DEFAULT_BANDS,
          rows: int = DEFAULT_ROWS, seed: int = DEFAULT_SEED, hash: str = DEFAULT_HASH,
          executor: str = "local", address: str | None = None, embedding: str | None = None,
          eps: float = DEFAULT_EPS, n_clusters: int | None = None) -> DedupResult:
    """Deduplicate output `output` of `out` by its text `column` (exact, minhash or both), or
    by its vector column `embedding` (semantic); writes `out/<output>_dedup/`. `hash`: the
    signature scheme, curate's own or "datatrove" (`curate.dedup.minhash_datatrove`)."""
    problems = check_args(output, column, threshold, method, embedding, eps)
    if hash not in HASHES:
        problems.append(f"hash {hash!r} is not one of {', '.join(HASHES)} (curate's own MinHash signatures, "
                        "or datatrove's math for the same pairs as datatrove)")
    if executor not in ("local", "ray"):
        problems.append(f"executor {executor!r}: give local or ray")
    if is_url(out):
        problems.append(NOT_ON_STORAGE.format(out=out))
    if problems:
        raise InputError("; ".join(problems))
    if not Path(out).is_dir():
        raise InputError(f"{out} is not a directory: give the output directory of a `curate run`")
    target = Path(out) / f"{output}{SUFFIX}"
    _clean_stale(target)
    distributed = executor == "ray" or address is not None
    if embedding is not None:
        from curate.dedup.semantic_step import semantic

        table = semantic(out, output, embedding, column, eps=eps, n_clusters=n_clusters, seed=seed, address=address)
        return _finish(target, "semantic", table, None, 0)
    params = None if method == "exact" else MinHashParams(shingle=shingle, bands=bands, rows=rows, seed=seed,
                                                            hash=hash)
    known_h, known_sig, stale = index.load(target, params) if params else (None, None, False)
    if distributed:
        from curate.dedup import distributed as dist

        with dist.session(address):
            corpus = dist.scan(out, output, column, params=params, known=known_h)
            signed = corpus.signed
            table, idx_table = _cluster(corpus, params, known_h, known_sig, method, threshold, dist)
    else:
        from curate.dedup.scan import scan

        corpus = scan(out, output, column, params=params, known=known_h)
        signed = corpus.signed  # before the nodes' signatures take the scan's
        table, idx_table = _cluster(corpus, params, known_h, known_sig, method, threshold, None)
    return _finish(target, method, table, idx_table, signed, rebuilt=stale)


def _cluster(corpus, params, known_h, known_sig, method: str, threshold: float, dist):
    """The dedup rows and the new index of a scanned corpus (`dist`: the Ray Data steps)."""
    node_h, node = np.unique(corpus.hash_array(), return_inverse=True)
    node = node.reshape(-1).astype(np.int64)
    sig, idx_table = None, None
    labels = np.arange(node_h.size, dtype=np.int64)
    if params is not None and node_h.size:
        sig = _node_signatures(node_h, corpus, known_h, known_sig, params)
        idx_table = (node_h, sig, params)  # written by publish
        # texts without shingles (none, or fewer words than a datatrove shingle) pair with nothing
        ids = np.flatnonzero((node_h != EMPTY_HASH) & (sig[:, :2] != params.empty).any(axis=1))
        if dist is None:
            i, j = clusters.candidate_pairs(band_hashes(sig, params, ids), ids)
            i, j, _ = clusters.similar_pairs(sig, i, j, threshold)
            labels = clusters.components(node_h.size, i, j)
        else:
            i, j = dist.similar_pairs(sig, ids, params, threshold)
            labels = dist.components(node_h.size, i, j)
    table = decide.decide(corpus.entity_id, corpus.root_key, corpus.length, node, labels, sig, method, threshold)
    return table, idx_table


def _node_signatures(node_h, corpus, known_h, known_sig, params) -> np.ndarray:
    """Each node's signature: from this run's scan, else from the index."""
    sig = np.empty((node_h.size, params.permutations), params.dtype)
    have = np.zeros(node_h.size, bool)
    while corpus.new_hashes:  # a batch's signatures at a time, each freed once in place
        new_h, new_sig = corpus.new_hashes.pop(), corpus.new_sigs.pop()
        pos = index.lookup(node_h, new_h)
        sig[pos] = new_sig
        have[pos] = True
        del new_sig
    if known_h is not None and (~have).any():
        pos = index.lookup(known_h, node_h[~have])
        if (pos < 0).any():  # the scan signs every text the index lacks
            from curate.errors import EngineError

            raise EngineError("a text has no signature after the scan: a bug in curate dedup, please report it")
        sig[~have] = known_sig[pos]
    return sig


def _finish(target: Path, method: str, table, idx_table, signed: int, rebuilt: bool = False) -> DedupResult:
    changed = _changed(target, table)
    publish(target, table, idx_table)
    import pyarrow.compute as pc

    keep = table.column("keep")
    dup = table.num_rows - pc.sum(keep).as_py() if table.num_rows else 0
    exact = pc.sum(pc.and_(pc.invert(keep), pc.equal(table.column("method"), "exact"))).as_py() or 0
    cl = pc.value_counts(table.column("cluster_id")) if table.num_rows else None
    n_clusters = len(cl) if cl is not None else 0
    multi = int(np.sum(cl.field("counts").to_numpy() > 1)) if cl is not None else 0
    return DedupResult(target, method, table.num_rows, n_clusters, multi, dup, exact, signed, changed, rebuilt)


def _changed(target: Path, table) -> int:
    """Rows of the dedup output already there whose representative this run changes."""
    import pyarrow.parquet as pq

    old = target / PART
    if not old.exists():
        return 0
    import pyarrow.compute as pc

    before = pq.read_table(old, columns=["entity_id", "cluster_id"]).rename_columns(["entity_id", "before"])
    both = table.select(["entity_id", "cluster_id"]).join(before, "entity_id", join_type="inner")
    return int(pc.sum(pc.not_equal(both.column("cluster_id"), both.column("before"))).as_py() or 0)


def publish(target: Path, table, idx_table) -> None:
    """Write the rows (and the index) into a new hidden directory beside `target`, then swap it
    in by rename; the old directory is deleted after."""
    import pyarrow.parquet as pq

    tag = uuid.uuid4().hex[:8]
    tmp = target.with_name(f".{target.name}.tmp-{tag}")
    tmp.mkdir(parents=True)
    pq.write_table(table, tmp / PART)
    if idx_table is not None:  # (sorted hashes, signatures, params)
        (tmp / index.INDEX_DIR).mkdir()
        index.write(tmp / index.INDEX_DIR / index.INDEX_FILE, *idx_table)
    elif (target / index.INDEX_DIR).is_dir():  # an exact-only run keeps the signatures of a MinHash one
        shutil.copytree(target / index.INDEX_DIR, tmp / index.INDEX_DIR)
    old = target.with_name(f".{target.name}.old-{tag}")
    if target.exists():
        os.replace(target, old)
    os.replace(tmp, target)
    shutil.rmtree(old, ignore_errors=True)


def _clean_stale(target: Path) -> None:
    """Directories a killed dedup left beside `target` (never the live one)."""
    for p in target.parent.glob(f".{target.name}.*-*"):
        if p.is_dir() and (p.name.startswith(f".{target.name}.tmp-") or p.name.startswith(f".{target.name}.old-")):
            shutil.rmtree(p, ignore_errors=True)
