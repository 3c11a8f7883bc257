"""The benchmark suite's simulated cluster (benchmarks/simulate.py) is an executor object with a
virtual clock driving curate's real driver and scheduler: its predictions are only worth
something if every document comes back whole and in order, the clock is deterministic, and
the reported utilisation is consistent with the ideal."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import simulate  # noqa: E402


def test_the_simulated_cluster_runs_the_real_engine_deterministically():
    counts = [1, 40, 3, 120, 7, 64, 2, 33, 90, 5] * 3
    a = simulate.simulate(4, counts)
    b = simulate.simulate(4, counts)
    assert a["ok"] and a["docs"] == 30 and a["pages"] == sum(counts)  # every document whole, in order
    assert a["wall_s"] == b["wall_s"] and a["vlm_batches"] == b["vlm_batches"]  # virtual time: repeatable
    assert a["wall_s"] >= a["ideal_s"] * 0.999  # no run beats full batches on every GPU
    assert abs(a["util_of_ideal"] - a["ideal_s"] / a["wall_s"]) < 1e-9 and 0 < a["gpu_util"] <= 1
    assert a["first_doc_s"] <= a["p50_doc_s"] <= a["p95_doc_s"] <= a["wall_s"]


def test_parent_bound_batching_never_mixes_documents_and_costs_batches(monkeypatch):
    counts = [5, 3, 9, 2, 7, 1, 4] * 4
    docs_per_batch = []

    def recognise(pages):
        docs_per_batch.append(len({d for d, _ in pages}))
        return [f"d{d}p{p}" for d, p in pages]

    monkeypatch.setattr(simulate, "recognise", recognise)
    bound = simulate.simulate(2, counts, variant="parent-bound")
    assert max(docs_per_batch) == 1
    docs_per_batch.clear()
    mixed = simulate.simulate(2, counts, variant="cross-fifo")
    assert max(docs_per_batch) > 1
    assert bound["ok"] and mixed["ok"]
    # one document per batch: at least one batch per document, and never fewer than mixing
    assert bound["vlm_batches"] >= len(counts) > mixed["vlm_batches"]
    assert bound["wall_s"] > mixed["wall_s"]


def test_paper_corpus_has_the_papers_shape():
    c = simulate.paper_counts()
    assert (len(c), sum(c), min(c), max(c)) == (3689, 174744, 1, 427)
