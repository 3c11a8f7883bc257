"""Long-tailed documents, every system on the same workload and stage costs, each run in a fresh
process with its own local Ray (2 CPUs) after an untimed warm-up of 20 documents:

    render (per document, near-free) -> OCR (a model sleeping 40 ms + 2 ms per page, batches of
    up to 32 pages, 2 replicas) -> ordered per-document assembly -> upload (10 ms per document,
    2 workers)

Page counts: Pareto(alpha) shapes (benchmarks/admission.py `pareto_page_counts`): 320 documents
and 3,000 pages with 4 documents of 400-420 pages per shape; `--quick`: 120 documents, 1,200
pages, 2 of 400-420. The ideal is the OCR work at full batches over 2 replicas.

Systems: curate (Ray executor, defaults), rayorch 0.1.1, Ray Data, Daft, coarse per-document Ray
tasks and a plain single-process loop; their adapters and fairness choices are in
benchmarks/baselines.py. Ablation variants of curate (same workload; benchmark-only scheduler
subclasses from benchmarks/simulate.py, no engine switches): `curate:parent-bound` (a batch
holds one document's pages), `curate:cross-random` (mixed documents, taken from a random queue
position), `curate:cross-fifo` (mixed, FIFO; the prefetch cap off in these three) and
`curate:inflight=N` (N input windows of 16 documents at once instead of demand-driven admission).
`curate:session` is a second run in a `cu.Session` whose warm-up run left its pools up: what a
service or a batch driver looping over shards sees after its first run.

Timed: `end_to_end_s` from the call (before any actor exists) to the last upload; `execution_s`
from the moment work begins: for rayorch once every actor is up, for curate once its first actor
answered (its other actors start while the first work, in the order the pipeline needs them;
`workers_ready_s` says when the last one answered), None where a system cannot tell;
`first_doc_s` and p50/p95 document latency from each document's upload stamp. Not timed: Ray's
own start, the warm-up, the correctness check.

    python benchmarks/longtail.py --one SYSTEM ALPHA [--quick]   (prints one RESULT line)
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import Ocr, Upload, assemble, expected, print_result, render  # noqa: E402

if __name__ != "__main__":
    import ray

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

HEAVY = (0.040, 0.002, 0.010)  # OCR base s, OCR s per page, upload s per document
LIGHT = (0.001, 0.0001, 0.0005)  # the warm-up's (and the near-free profile's) costs
BATCH, REPLICAS = 32, 2
SYSTEMS = ["curate", "curate:session", "rayorch", "raydata", "daft", "coarse", "loop"]
ALPHAS = [0.8, 1.1, 1.5]


def counts_for(alpha: float, quick: bool) -> list[int]:
    from admission import pareto_page_counts

    if quick:
        return pareto_page_counts(alpha, n_docs=120, total=1200, n_long=2)
    return pareto_page_counts(alpha)


def ideal_s(counts: list[int], costs=HEAVY) -> float:
    pages = sum(counts)
    return (math.ceil(pages / BATCH) * costs[0] + pages * costs[1]) / REPLICAS


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else math.nan



SESSION = None  # the cu.Session of the `curate:session` variant


def run_curate(counts: list[int], costs, variant: str = "defaults") -> dict:
    import curate as cu

    opts: dict = {}
    run = cu.run
    if variant == "session":  # a warm session: the pools of the (untimed) first run serve this one
        global SESSION
        if SESSION is None:
            SESSION = cu.Session()
        run = SESSION.run
    elif variant.startswith("inflight="):
        opts = {"input_batch_size": 16, "inflight": int(variant.split("=")[1])}
    elif variant != "defaults":
        from simulate import ablation_scheduler

        cu_run = sys.modules["curate.run"]
        base = ablation_scheduler(variant)

        class NoCap(base):
            def __init__(self, plan, **kw):
                super().__init__(plan, **kw, probe_grains=0)

        cu_run.Scheduler = NoCap
    Doc = cu.Domain("doc")
    Page = Doc.child("page")
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(cu.stage(render), into=Page)
    text = pages.map(cu.stage(Ocr, init={"base_s": costs[0], "per_page_s": costs[1]}, batch_size=BATCH,
                              replicas=REPLICAS))
    docs = text.reduce(cu.stage(assemble))
    # two upload workers, as rayorch's upload module has (Ray Data runs up to 8 upload tasks)
    pipe.output("uploaded", docs.map(cu.stage(Upload, init={"upload_s": costs[2]}, replicas=2)))
    pipe.output("markdown", docs)
    t0 = time.time()
    c0 = time.process_time()
    res = run(pipe, list(enumerate(counts)), **({} if variant == "session" else {"executor": "ray"}), **opts)
    end = time.time()
    driver_cpu = time.process_time() - c0
    md = res.values("markdown")
    m = res.metrics
    lat = [stamp - t0 for _, stamp in res.values("uploaded")]
    return {"end_to_end_s": end - t0, "execution_s": m.execution_s, "startup_s": m.startup_s,
            "workers_ready_s": m.workers_ready_s,
            "first_doc_s": min(lat), "p50_doc_s": quantile(lat, 0.5), "p95_doc_s": quantile(lat, 0.95),
            "docs": len(md), "ok": all(x == expected(d, n) for d, (x, n) in enumerate(zip(md, counts))),
            "ocr_batches": m.calls["Ocr"].batches, "ocr_fill": m.calls["Ocr"].batch_fill,
            "grains": m.grains, "driver_cpu_share": driver_cpu / (end - t0)}


def run_other(system: str, counts: list[int], costs) -> dict:
    import baselines

    t = baselines.RUNNERS[system](counts, baselines.Costs(*costs))
    extra: dict = {}
    if isinstance(t, tuple):
        t, extra = t
    out = dict(asdict(t), **extra)
    out.pop("name", None)
    if out.get("execution_s") is not None:
        out["startup_s"] = out["end_to_end_s"] - out["execution_s"]
    return out


def one(system: str, alpha: float, quick: bool, costs=HEAVY) -> dict:
    """One measured run in this (fresh) process."""
    import ray

    counts = counts_for(alpha, quick)
    if system != "loop":
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    name, _, variant = system.partition(":")
    runner = (lambda c, k: run_curate(c, k, variant or "defaults")) if name == "curate" else \
        (lambda c, k: run_other(name, c, k))
    # untimed warm-up: one-off imports, Ray's first workers; a session's warm-up has the timed run's
    # costs, so that its pools (same class and init) stay up for the timed run
    runner(counts[:20], costs if variant == "session" else LIGHT)
    out = runner(counts, costs)
    if SESSION is not None:
        SESSION.close()
    if system != "loop":
        ray.shutdown()
    out.update(system=system, alpha=alpha, docs_in=len(counts), pages=sum(counts), ideal_s=ideal_s(counts, costs))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--one", nargs=2, metavar=("SYSTEM", "ALPHA"), required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--light", action="store_true", help="near-free stage costs (engine overhead)")
    a = ap.parse_args()
    print_result(one(a.one[0], float(a.one[1]), a.quick, LIGHT if a.light else HEAVY))


if __name__ == "__main__":
    main()
