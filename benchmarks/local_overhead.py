"""Engine overhead of the local executor, and driver memory per live entity.

Workload: 300 documents, 3,216 pages (Pareto-shaped, three of 400 pages); near-free stages:
render (expand, per document) -> ocr (map, batch 32, 2 replicas) -> assemble (ordered reduce)
-> upload (map, per document). Prints grains/s through the local executor (median of runs),
then driver bytes per live entity with 1,000,000 entities admitted and expanded.

    python benchmarks/local_overhead.py [--runs 5] [--entities 1000000]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import long_tail_page_counts  # noqa: E402

import curate as cu  # noqa: E402
from curate.core.outcome import BatchReport  # noqa: E402
from curate.core.plan import compile_plan  # noqa: E402
from curate.core.scheduler import Scheduler  # noqa: E402


def render(docs):
    return [[(d, p) for p in range(n)] for d, n in docs]


def ocr(pages):
    return [f"text {p}" for _, p in pages]


def assemble(docs):
    return ["\n".join(texts) for texts in docs]


def upload(docs):
    return [len(md) for md in docs]


def build_pipeline():
    Doc = cu.Domain("doc")
    Page = Doc.child("page")
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(cu.stage(render), into=Page)
    text = pages.map(cu.stage(ocr, batch_size=32, replicas=2))
    docs = text.reduce(cu.stage(assemble))
    pipe.output("uploaded", docs.map(cu.stage(upload)))
    return pipe


def throughput(runs: int) -> None:
    counts = long_tail_page_counts()
    inputs = list(enumerate(counts))
    pipe = build_pipeline()
    rates, walls = [], []
    for _ in range(runs):
        res = cu.run(pipe, inputs, executor="local", input_batch_size=16, inflight=4)
        m = res.metrics
        assert len(res.values("uploaded")) == len(inputs)
        rates.append(m.grains / m.wall_s)
        walls.append(m.wall_s)
    print(f"workload: {len(counts)} documents, {sum(counts)} pages, longest {max(counts)}")
    print(f"grains per run: {m.grains} (render {m.calls['render'].items}, ocr {m.calls['ocr'].items}, "
          f"assemble {m.calls['assemble'].items}, upload {m.calls['upload'].items})")
    print(f"local executor: median {statistics.median(rates):,.0f} grains/s "
          f"(min {min(rates):,.0f}, max {max(rates):,.0f}; wall median {statistics.median(walls)*1e3:.1f} ms "
          f"over {runs} runs); first document done at {m.first_root_s*1e3:.1f} ms of {m.wall_s*1e3:.1f} ms")


def memory(n_entities: int) -> None:
    """Admit roots and commit their expansions through the pure scheduler, then measure what
    the driver holds. Child payloads are one shared object: user data is not engine overhead."""
    Doc = cu.Domain("doc")
    Page = Doc.child("page")
    pipe = cu.Pipeline(Doc)
    text = pipe.source.expand(cu.stage(render), into=Page).map(cu.stage(ocr, batch_size=32))
    pipe.output("docs", text.reduce(cu.stage(assemble)))
    plan = compile_plan(pipe)
    roots, per_root = 1000, n_entities // 1000 - 1
    payload = ("page", 0)
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    sched = Scheduler(plan, inflight=1)
    sched.admit([f"doc-{i}" for i in range(roots)], list(range(roots)))
    while (b := sched.reserve(0)) is not None:
        sched.complete(b.id, BatchReport([[payload] * per_root]))
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    live = sched.live_entities()
    print(f"driver memory: {used / live:.1f} bytes per live entity "
          f"({live:,} live entities, {used / 2**20:.1f} MiB; {sched.ready(1) + sched.held[1]:,} grains queued or held)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--entities", type=int, default=1_000_000)
    a = ap.parse_args()
    throughput(a.runs)
    memory(a.entities)


if __name__ == "__main__":
    main()
