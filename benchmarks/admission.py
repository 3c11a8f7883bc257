"""Demand-driven admission against fixed window counts, on heavy-tailed document workloads,
on curate's Ray executor.

    render (per document) -> OCR (a model class sleeping 40 ms + 2 ms per page, batch 32,
    2 replicas) -> ordered per-document assembly [-> upload, with --upload-ms]

This is the issue's workload (no upload stage; the ideal counts OCR alone). `--upload-ms 10`
adds benchmarks/ray_compare.py's upload stage (10 ms per document, one replica): with heavy
tails it becomes a second bottleneck wherever short documents follow each other (OCR then
finishes up to ~150 of them per second, the upload 100), so its backlog at the end of the
run depends on where the long documents sit in the input, whatever the admission.

Page counts: 320 documents, about 3,000 pages, Pareto(alpha) for alpha in 0.8, 1.1 and 1.5,
with 4 documents of 400-420 pages in every shape (the rest capped at 420 pages).
The quick run: 120 documents, 1,200 pages, 2 of 400-420 pages per shape.

Configurations (all with the scheduler's default prefetch cap unless named "nocap"):
  demand       the defaults: `inflight=None` (demand-driven), 16 roots per window
  window4      demand-driven with 4 roots per window
  16x4         the old defaults: input_batch_size=16, inflight=4
  16x16        input_batch_size=16, inflight=16
  16x4-nocap   the old defaults without the prefetch cap (what the previous release ran)

Each configuration of each shape runs in a fresh process with its own local Ray (2 CPUs),
after an untimed warm-up run of 20 documents, so one run's actor teardown cannot slow the
next. Printed per shape: the execution phase (`result.metrics.execution_s`, once every actor
is up), the ideal (OCR work / 2 replicas with full batches), their ratio, OCR batch fill, and
the peak of live entities and windows (a scheduler subclass records them after every
admission and commit). Needs `pip install -e .[bench]`.

    python benchmarks/admission.py [--quick] [--upload-ms 10] [--alphas 0.8,1.1,1.5]
                                   [--configs demand,window4,16x4,16x16,16x4-nocap]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Ocr, assemble, expected, print_result, render, run_fresh  # noqa: E402

if __name__ != "__main__":  # imported (not run as a script): ship the stages to Ray workers by value
    import ray

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

CONFIGS = {  # name -> (cu.run options, prefetch cap on)
    "demand": ({}, True),
    "window4": ({"input_batch_size": 4}, True),
    "16x4": ({"input_batch_size": 16, "inflight": 4}, True),
    "16x16": ({"input_batch_size": 16, "inflight": 16}, True),
    "16x4-nocap": ({"input_batch_size": 16, "inflight": 4}, False),
}
HEAVY = (0.040, 0.002)  # OCR base and per-page seconds
BATCH, REPLICAS = 32, 2


def pareto_page_counts(alpha: float, n_docs: int = 320, total: int = 3000, longest: int = 420,
                       n_long: int = 4, seed: int = 11) -> list[int]:
    """`n_long` documents of 400..`longest` pages, the rest Pareto(alpha)-shaped within
    1..`longest` and scaled so all add up to `total`; shuffled. Deterministic for a seed."""
    rng = random.Random(seed)
    longs = [rng.randint(min(400, longest), longest) for _ in range(n_long)]
    rest = n_docs - n_long
    budget = total - sum(longs)
    raw = [rng.paretovariate(alpha) for _ in range(rest)]

    def counts(scale: float) -> list[int]:
        return [min(longest, max(1, round(r * scale))) for r in raw]

    lo, hi = 0.0, float(budget)
    for _ in range(100):  # the scale whose rounded, clamped counts come closest to the budget
        mid = (lo + hi) / 2
        if sum(counts(mid)) < budget:
            lo = mid
        else:
            hi = mid
    out = counts(hi)
    i = 0
    while sum(out) != budget:  # fix rounding one page at a time, deterministically
        step = 1 if sum(out) < budget else -1
        if 1 <= out[i % rest] + step <= longest:
            out[i % rest] += step
        i += 1
    out += longs
    rng.shuffle(out)
    return out


def ideal_s(counts: list[int]) -> float:
    base, per = HEAVY
    pages = sum(counts)
    return (math.ceil(pages / BATCH) * base + pages * per) / REPLICAS


# ---- stages (pickled by value: this file runs as __main__ in each measuring process; Ocr, render
# and assemble are common.py's) ----------------------------------------------------------------
class Upload:
    def __init__(self, upload_s: float):
        self.upload_s = upload_s

    def __call__(self, docs):
        time.sleep(self.upload_s * len(docs))
        return [len(t) for t in docs]


def pipeline(costs, upload_s: float):
    import curate as cu

    Doc = cu.Domain("doc")
    Page = Doc.child("page")
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(cu.stage(render), into=Page)
    text = pages.map(cu.stage(Ocr, init={"base_s": costs[0], "per_page_s": costs[1]},
                              batch_size=BATCH, replicas=REPLICAS))
    docs = text.reduce(cu.stage(assemble))
    pipe.output("markdown", docs)
    if upload_s:
        pipe.output("uploaded", docs.map(cu.stage(Upload, init={"upload_s": upload_s})))
    return pipe


def one(alpha: float, config: str, quick: bool, upload_s: float) -> dict:
    """One measured run in this (fresh) process, with its own local Ray."""
    import ray

    import curate as cu
    from curate.core.scheduler import Scheduler

    cu_run = sys.modules["curate.run"]  # the module (`curate.run` is also the function's name)

    opts, cap = CONFIGS[config]
    peak = {"live": 0, "windows": 0}

    class Measured(Scheduler):
        """Records the peak of live entities and windows after every admission."""

        def __init__(self, plan, **kw):
            super().__init__(plan, **kw, **({} if cap else {"probe_grains": 0}))

        def admit(self, *a, **kw):
            wid = super().admit(*a, **kw)
            peak["live"] = max(peak["live"], self.live_entities())
            peak["windows"] = max(peak["windows"], len(self.windows))
            return wid

        def complete(self, batch_id, report):
            ok = super().complete(batch_id, report)
            peak["live"] = max(peak["live"], self.live_entities())
            return ok

    cu_run.Scheduler = Measured
    counts = workload(alpha, quick)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    warm = cu.run(pipeline((0.001, 0.0001), upload_s / 20), list(enumerate(counts[:20])), executor="ray", **opts)
    assert len(warm.values("markdown")) == 20  # untimed warm-up: one-off imports, Ray's first workers
    peak.update(live=0, windows=0)
    res = cu.run(pipeline(HEAVY, upload_s), list(enumerate(counts)), executor="ray", **opts)
    ray.shutdown()
    md = res.values("markdown")
    ok = all(m == expected(d, n) for d, (m, n) in enumerate(zip(md, counts)))
    m = res.metrics
    return {"execution_s": m.execution_s, "startup_s": m.startup_s, "fill": m.calls["Ocr"].batch_fill,
            "batches": m.calls["Ocr"].batches, "peak_live": peak["live"], "peak_windows": peak["windows"],
            "ok": ok}


def workload(alpha: float, quick: bool) -> list[int]:
    if quick:
        return pareto_page_counts(alpha, n_docs=120, total=1200, n_long=2)
    return pareto_page_counts(alpha)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alphas", default="0.8,1.1,1.5")
    ap.add_argument("--configs", default="demand,16x4,16x16,16x4-nocap")
    ap.add_argument("--quick", action="store_true", help="120 documents, 1,200 pages (2 of 400+) per shape")
    ap.add_argument("--upload-ms", type=float, default=0.0, help="add an upload stage (ms per document, 1 replica)")
    ap.add_argument("--one", nargs=2, metavar=("ALPHA", "CONFIG"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print_result(one(float(a.one[0]), a.one[1], a.quick, a.upload_ms / 1000))
        return
    print(f"{os.cpu_count()} CPUs; OCR {HEAVY[0] * 1000:.0f} ms + {HEAVY[1] * 1000:.0f} ms/page, batch {BATCH}, "
          f"{REPLICAS} replicas; " + (f"upload {a.upload_ms:g} ms/document" if a.upload_ms else "no upload stage"))
    for alpha in (float(x) for x in a.alphas.split(",")):
        counts = workload(alpha, a.quick)
        ide = ideal_s(counts)
        big = sorted(counts, reverse=True)
        print(f"\nPareto alpha={alpha}: {len(counts)} documents, {sum(counts)} pages, longest {big[:6]}, "
              f"{sum(1 for c in counts if c >= 400)} of >= 400 pages; ideal {ide:.2f} s")
        print(f"{'config':<12}{'execution':>10}{'exec/ideal':>11}{'start-up':>9}{'OCR fill':>9}{'batches':>8}"
              f"{'peak live':>10}{'windows':>8}  ok")
        for config in a.configs.split(","):
            argv = [__file__, "--one", str(alpha), config, "--upload-ms", str(a.upload_ms)]
            r, stderr = run_fresh(argv + (["--quick"] if a.quick else []))
            if r is None:
                print(f"{config:<12}FAILED\n{stderr[-3000:]}")
                continue
            ex = r["execution_s"]
            print(f"{config:<12}{ex:>9.2f}s{ex / ide:>11.3f}{r['startup_s']:>8.2f}s{r['fill']:>9.2f}"
                  f"{r['batches']:>8}{r['peak_live']:>10,}{r['peak_windows']:>8}  {r['ok']}", flush=True)


if __name__ == "__main__":
    main()
