"""Engine overhead of the local executor, and driver memory per live entity.

Workload: 300 documents, 3,216 pages (Pareto-shaped, three of 400 pages); near-free stages:
render (expand, per document) -> ocr (map, batch 32, 2 replicas) -> assemble (ordered reduce)
-> upload (map, per document). Prints grains/s through the local executor (median of runs),
then driver bytes per live entity with 1,000,000 entities admitted and expanded, then how the
cost per grain grows with hierarchy depth (2 to 5 levels, about 20,000 leaves, each level
expanded and reduced back in order) and with fan-out (1 to 10,000 children per parent, 20,000
leaves), on the local executor with near-free stages.

    python benchmarks/local_overhead.py [--runs 5] [--entities 10000,100000,1000000] [--no-shapes]
"""

from __future__ import annotations

import argparse
import gc
import json
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


def throughput(runs: int) -> dict:
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
    return {"grains": m.grains, "grains_per_s": statistics.median(rates), "wall_s": statistics.median(walls),
            "runs": runs}


def memory(n_entities: int) -> dict:
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
    return {"live_entities": live, "bytes": used, "bytes_per_entity": used / live}


def deep_pipeline(fanouts: list[int]):
    """len(fanouts) expansions (each parent gets that many children), a map at the leaves, and
    an ordered reduce back up every level to the root."""
    dom = cu.Domain("l0")
    doms = [dom]
    for i in range(len(fanouts)):
        doms.append(doms[-1].child(f"l{i + 1}"))
    pipe = cu.Pipeline(dom)
    x = pipe.source
    for i, f in enumerate(fanouts):
        x = x.expand(cu.stage(_fan(f), name=f"expand{i + 1}", batch_size=64), into=doms[i + 1])
    x = x.map(cu.stage(_leaf, name="leaf", batch_size=64))
    for i in range(len(fanouts)):
        x = x.reduce(cu.stage(_count, name=f"reduce{i + 1}", batch_size=64))
    pipe.output("total", x)
    return pipe


def _fan(f: int):
    def fan(items):
        return [[0] * f for _ in items]
    return fan


def _leaf(items):
    return [1 for _ in items]


def _count(groups):
    return [sum(g) for g in groups]


def shape(levels: int, fanout: int | None = None, leaves: int = 20_000) -> dict:
    """Grains/s and microseconds per grain through the local executor for a hierarchy of
    `levels` levels (roots included); fan-out per level `fanout`, or chosen so that there are
    about `leaves` leaves under 20 roots."""
    depth = levels - 1
    if fanout is None:
        roots = 20
        fanout = max(1, round((leaves / roots) ** (1 / depth)))
    else:
        roots = max(1, leaves // fanout ** depth)
    pipe = deep_pipeline([fanout] * depth)
    res = cu.run(pipe, list(range(roots)), executor="local", progress=False)
    assert res.values("total") == [fanout ** depth] * roots
    m = res.metrics
    return {"levels": levels, "fanout": fanout, "roots": roots, "leaves": roots * fanout ** depth,
            "grains": m.grains, "wall_s": m.wall_s, "grains_per_s": m.grains / m.wall_s,
            "us_per_grain": m.wall_s / m.grains * 1e6}


def shapes() -> dict:
    depth = [shape(levels) for levels in (2, 3, 4, 5)]
    fan = [shape(2, f) for f in (1, 10, 100, 1000, 10000)]
    print(f"{'levels':>7}{'fan-out':>8}{'roots':>7}{'leaves':>8}{'grains':>8}{'grains/s':>10}{'us/grain':>9}")
    for r in depth + fan:
        print(f"{r['levels']:>7}{r['fanout']:>8}{r['roots']:>7}{r['leaves']:>8}{r['grains']:>8}"
              f"{r['grains_per_s']:>10,.0f}{r['us_per_grain']:>9.1f}")
    return {"depth": depth, "fanout": fan}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--entities", default="1000000", help="live entities; a comma list sweeps (10000,100000,1000000)")
    ap.add_argument("--no-shapes", action="store_true", help="skip the depth and fan-out sweep")
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    thr = throughput(a.runs)
    mem = [memory(int(n)) for n in a.entities.split(",")]
    out = {"throughput": thr, "memory": mem[-1], "memory_sweep": mem}
    if not a.no_shapes:
        out["shapes"] = shapes()
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
