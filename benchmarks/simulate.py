"""Simulated scale: curate's own driver and scheduler (no Ray, no threads) driven by a
discrete-event model of a GPU cluster, to see where a single driver stops keeping the GPUs busy.

What is real and what is modelled:
- real: `curate.run` with its compiler, Driver, Scheduler (admission, FIFO ready queues,
  cross-parent batching, prefetch cap, completion-driven reduce) and in-memory sink; the stage
  functions really run (they build page lists and texts, near-free), so every document's text
  is checked at the end;
- modelled: time. `SimCluster` is an executor object (`cu.run(..., executor=SimCluster(...))`)
  with a virtual clock: a batch dispatched to a pool's free worker "finishes" at now + its cost
  from the pool's batch-time curve, and reports are applied in virtual-time order. Nothing
  sleeps.

The corpus has the paper's shape: 3,689 PDFs, 174,744 pages, 1 to 427 pages each (`paper_counts`:
log-normal page counts within 1..427, scaled to the total). Pipeline:
document -> pages (a CPU expand, 5 ms + 2 ms/page, 64 CPU workers) -> OCR/VLM on the GPU pool
(one worker per GPU, batches of up to 32 pages from any documents) -> ordered per-document
assembly (CPU reduce, 1 ms + 0.1 ms/page, 16 workers). The GPU batch-time curve is an assumption
stated here, not a measurement: 1.0 s + 0.40 s per page (32 pages in 13.8 s, 2.3 pages/s per
GPU, the order of MinerU 2.5's reported 2.12 pages/s on one A100 with vLLM); `--gpu-curve A,B`
changes it.

Reported per cluster size: predicted wall vs the ideal (GPU work at full batches / GPUs), GPU
utilisation (busy GPU-seconds / (GPUs x wall)) and its share of the ideal utilisation, first
document and p50/p95 document latency (virtual), and the driver's rate: batches per virtual
second the cluster needs vs batches per second of real driver CPU time achieved (the driver's
own work: admission, reservation, commits, reduce, sink; the near-free stage bodies are
subtracted). Their ratio is the headroom: the cluster size at which it falls to 1 is where the
single driver stops scaling.

`--ablation` runs the paper's ablation on the simulated cluster (the scheduler alone decides,
so the comparison is exact and repeatable):
  parent-bound   every batch holds pages of one document only (document streaming)
  cross-random   batches mix documents, taken from a random position of the ready queue
  cross-fifo     batches mix documents, FIFO across documents
  defaults       curate's defaults (cross-parent, FIFO, prefetch cap, demand-driven admission)
The first three run with the prefetch cap off, so only batching and order differ.

    python benchmarks/simulate.py [--gpus 8,16,32,64,128,256] [--ablation] [--quick] [--json F]
"""

from __future__ import annotations

import argparse
import heapq
import json
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

PAPER = {"docs": 3689, "pages": 174744, "longest": 427}
BATCH = 32
GPU_CURVE = (1.0, 0.40)  # seconds: fixed + per page of a GPU batch (an assumption, see above)
CPU_WORKERS, REDUCE_WORKERS = 64, 16


def paper_counts(quick: bool = False, seed: int = 11) -> list[int]:
    """The paper's corpus shape: 3,689 documents, 174,744 pages (mean 47.4), 1 to 427 pages
    each: log-normal (sigma 1.0) page counts scaled to the total and clamped to 1..427 (about 13
    documents reach 400 or more); shuffled, deterministic. `quick`: a tenth, same shape."""
    docs, total, longest = PAPER["docs"], PAPER["pages"], PAPER["longest"]
    if quick:
        docs, total = docs // 10, total // 10
    rng = random.Random(seed)
    longs: list[int] = []
    raw = [rng.lognormvariate(0.0, 1.0) for _ in range(docs)]
    budget = total

    def counts(scale: float) -> list[int]:
        return [min(longest, max(1, round(r * scale))) for r in raw]

    lo, hi = 0.0, float(budget)
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sum(counts(mid)) < budget else (lo, mid)
    out = counts(hi)
    i = 0
    while sum(out) != budget:  # fix rounding one page at a time, deterministically
        step = 1 if sum(out) < budget else -1
        if 1 <= out[i % len(out)] + step <= longest:
            out[i % len(out)] += step
        i += 1
    out += longs
    rng.shuffle(out)
    return out


# ---- the stages (near-free: time is modelled by the cluster) ---------------------------------
def split(docs):
    return [[(d, p) for p in range(n)] for d, n in docs]


def recognise(pages):
    return [f"d{d}p{p}" for d, p in pages]


def join(texts):
    return ["\n".join(t) for t in texts]


def expected(d: int, n: int) -> str:
    return "\n".join(f"d{d}p{p}" for p in range(n))


def pipeline(gpus: int):
    import curate as cu

    Doc = cu.Domain("doc")
    Page = Doc.child("page")
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(cu.stage(split, name="Split", replicas=CPU_WORKERS), into=Page)
    text = pages.map(cu.stage(recognise, name="Vlm", batch_size=BATCH, replicas=gpus))
    pipe.output("markdown", text.reduce(cu.stage(join, name="Join", replicas=REDUCE_WORKERS)))
    return pipe


def costs(gpu_curve=GPU_CURVE) -> dict:
    """Pool name -> batch-time curve (virtual seconds for a batch's inputs)."""
    a, b = gpu_curve
    return {
        "Split": lambda inputs: sum(0.005 + 0.002 * n for _, n in inputs),
        "Vlm": lambda inputs: a + b * len(inputs),
        "Join": lambda inputs: sum(0.001 + 0.0001 * len(t) for t in inputs),
    }


class SimCluster:
    """An executor object with a virtual clock: each pool has `replicas` workers; a dispatched
    batch runs its stage at once (for its real outputs) and reports at now + its modelled cost.
    After a run: `now` (virtual wall), `busy` (virtual busy seconds per pool), `done_at`
    (virtual completion time per root key), `driver_s` (real seconds of the driver's own
    work), `batches`."""

    def __init__(self, curves: dict):
        self.curves = curves

    def execute(self, driver):
        from curate.executors.stage_call import run_batch
        from curate.errors import Cause, build_stage
        from curate.executors.stats import PoolReport, WorkerStats

        plan, sched = driver.plan, driver.sched
        objs = [build_stage(p.target, p.init, p.name) if p.is_class else None for p in plan.pools]
        free = [p.replicas or 1 for p in plan.pools]
        stats = [[WorkerStats() for _ in range(n)] for n in free]
        self.busy = {p.name: 0.0 for p in plan.pools}
        self.done_at: dict[str, float] = {}
        self.now, self.batches = 0.0, 0
        write = driver.sink.write_roots

        def stamped(roots):
            for _, key, _ in roots:
                self.done_at[key] = self.now
            write(roots)

        driver.sink.write_roots = stamped
        heap: list = []
        seq = 0
        stage_s = 0.0
        t_start = time.perf_counter()
        driver.started_workers()
        while True:
            driver.step()
            for pool, p in enumerate(plan.pools):
                while free[pool]:
                    call = driver.next_call(pool, idle=True)
                    if call is None:
                        break
                    b = sched.reserve(call, idle=True)
                    if b is None:
                        continue
                    spec = plan.calls[call]
                    fn = getattr(objs[pool], spec.method) if p.is_class else p.target
                    t0 = time.perf_counter()
                    try:
                        rep = run_batch(fn, spec.kind, b.inputs, spec.name)
                    except Exception as exc:  # noqa: BLE001 - reported like any executor would
                        rep = Cause.from_exception(exc, spec.name)
                    stage_s += time.perf_counter() - t0
                    dur = self.curves[p.name](b.inputs)
                    self.busy[p.name] += dur
                    stats[pool][free[pool] - 1].add(call, dur)
                    heapq.heappush(heap, (self.now + dur, seq, pool, b.id, rep))
                    seq += 1
                    free[pool] -= 1
            if not heap:
                if driver.idle_done():
                    break
                continue
            t, _, pool, bid, rep = heapq.heappop(heap)
            self.now = t
            while True:  # every report due at this instant, then one step
                free[pool] += 1
                self.batches += 1
                if isinstance(rep, Cause):
                    sched.fail(bid, rep)
                else:
                    sched.complete(bid, rep)
                if not heap or heap[0][0] > t:
                    break
                _, _, pool, bid, rep = heapq.heappop(heap)
        self.driver_s = time.perf_counter() - t_start - stage_s
        return [PoolReport(p.name, list(p.calls), s) for p, s in zip(plan.pools, stats)]


# ---- ablation schedulers (benchmark-only subclasses; curate has no such switches) ------------
def ablation_scheduler(variant: str):
    from curate.core.lineage import KEY_BITS, KEY_MASK
    from curate.core.scheduler import Scheduler

    class ParentBound(Scheduler):
        """A batch holds grains of one parent: the run of grains at the queue head that share
        its parent; the rest go back to the head, in order."""

        def reserve(self, call, limit=None, idle=False):
            b = super().reserve(call, limit, idle)
            node = self._call_node[call]
            if b is None or node.grain_space == 0:
                return b

            def parent(k):
                w = self.windows[k >> KEY_BITS]
                return w.wid, w.parent[node.grain_space][k & KEY_MASK]

            p0 = parent(b.keys[0])
            n = next((i for i, k in enumerate(b.keys) if parent(k) != p0), len(b.keys))
            if n < len(b.keys):
                rest = b.keys[n:]
                del b.keys[n:], b.gens[n:], b.inputs[n:]
                self.queues[call].extendleft(reversed(rest))
                self._front[call] += len(rest)
                self.counters[call].items -= len(rest)
            return b

    class CrossRandom(Scheduler):
        """A batch is the run of ready grains at a random position of the queue (mixed parents,
        no FIFO order across them)."""

        rng = random.Random(5)

        def reserve(self, call, limit=None, idle=False):
            q = self.queues[call]
            r = self.rng.randrange(len(q)) if q else 0
            q.rotate(-r)
            self._front[call] = 0
            b = super().reserve(call, limit, idle)
            q.rotate(r)
            return b

    return {"parent-bound": ParentBound, "cross-random": CrossRandom, "cross-fifo": Scheduler,
            "defaults": Scheduler}[variant]


def simulate(gpus: int, counts: list[int], gpu_curve=GPU_CURVE, variant: str = "defaults",
             inflight: int | None = None) -> dict:
    """One simulated run: the figures of the module docstring, as a dict."""
    import curate as cu

    cu_run = sys.modules["curate.run"]
    base = ablation_scheduler(variant)
    cap = variant == "defaults"

    class Configured(base):
        def __init__(self, plan, **kw):
            super().__init__(plan, **kw, **({} if cap else {"probe_grains": 0}))

    saved = cu_run.Scheduler
    cu_run.Scheduler = Configured
    try:
        cluster = SimCluster(costs(gpu_curve))
        opts = {} if inflight is None else {"inflight": inflight}
        res = cu.run(pipeline(gpus), list(enumerate(counts)), executor=cluster, progress=False, **opts)
    finally:
        cu_run.Scheduler = saved
    md = res.values("markdown")
    ok = all(m == expected(d, n) for d, (m, n) in enumerate(zip(md, counts)))
    a, b = gpu_curve
    pages = sum(counts)
    ideal = ((pages + BATCH - 1) // BATCH * a + pages * b) / gpus
    wall = cluster.now
    lat = sorted(cluster.done_at.values())
    vlm = res.metrics.calls["Vlm"]
    return {
        "gpus": gpus, "variant": variant, "inflight": inflight, "docs": len(counts), "pages": pages,
        "wall_s": wall, "ideal_s": ideal, "wall_over_ideal": wall / ideal,
        "gpu_util": cluster.busy["Vlm"] / (gpus * wall), "util_of_ideal": ideal / wall,
        "first_doc_s": lat[0], "p50_doc_s": lat[len(lat) // 2], "p95_doc_s": lat[int(len(lat) * 0.95)],
        "vlm_batches": vlm.batches, "vlm_fill": vlm.batch_fill,
        "batches": cluster.batches, "needed_batches_per_s": cluster.batches / wall,
        "driver_s": cluster.driver_s, "achieved_batches_per_s": cluster.batches / cluster.driver_s,
        "headroom": (cluster.batches / cluster.driver_s) / (cluster.batches / wall),
        "ok": ok,
    }


def print_scale(rows: list[dict]) -> None:
    print(f"{'GPUs':>5}{'wall':>10}{'ideal':>10}{'wall/ideal':>11}{'GPU util':>9}{'of ideal':>9}{'fill':>6}"
          f"{'first doc':>10}{'p95 doc':>9}{'needed b/s':>11}{'driver b/s':>11}{'headroom':>9}  ok")
    for r in rows:
        print(f"{r['gpus']:>5}{r['wall_s']:>9.0f}s{r['ideal_s']:>9.0f}s{r['wall_over_ideal']:>11.3f}"
              f"{r['gpu_util']:>9.1%}{r['util_of_ideal']:>9.1%}{r['vlm_fill']:>6.2f}{r['first_doc_s']:>9.0f}s"
              f"{r['p95_doc_s']:>8.0f}s{r['needed_batches_per_s']:>11.1f}{r['achieved_batches_per_s']:>11.0f}"
              f"{r['headroom']:>8.0f}x  {r['ok']}")


def print_ablation(rows: list[dict]) -> None:
    base = next((r["wall_s"] for r in rows if r["variant"] == "parent-bound"), None)
    print(f"{'variant':<14}{'inflight':>9}{'wall':>9}{'vs parent-bound':>16}{'wall/ideal':>11}{'fill':>6}"
          f"{'batches':>8}{'p50 doc':>9}{'p95 doc':>9}  ok")
    for r in rows:
        vs = f"{r['wall_s'] / base - 1:+.1%}" if base else "-"
        inf = "demand" if r["inflight"] is None else str(r["inflight"])
        print(f"{r['variant']:<14}{inf:>9}{r['wall_s']:>8.0f}s{vs:>16}{r['wall_over_ideal']:>11.3f}"
              f"{r['vlm_fill']:>6.2f}{r['vlm_batches']:>8}{r['p50_doc_s']:>8.0f}s{r['p95_doc_s']:>8.0f}s  {r['ok']}")


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", default="8,16,32,64,128,256")
    ap.add_argument("--ablation", action="store_true", help="also the batching/order ablation at 64 GPUs")
    ap.add_argument("--quick", action="store_true", help="a tenth of the corpus (17,474 pages), same shape")
    ap.add_argument("--gpu-curve", default=",".join(map(str, GPU_CURVE)), help="fixed,per-page seconds")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--one-scale", action="store_true", help=argparse.SUPPRESS)  # python -m benchmarks
    ap.add_argument("--one-ablation", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    curve = tuple(float(x) for x in a.gpu_curve.split(","))
    counts = paper_counts(a.quick)
    print(f"simulated corpus: {len(counts)} documents, {sum(counts)} pages ({min(counts)}-{max(counts)} each); "
          f"GPU batch {curve[0]:g} s + {curve[1]:g} s/page, batch {BATCH}")
    out: dict = {"corpus": {"docs": len(counts), "pages": sum(counts)}, "gpu_curve": curve, "scale": [],
                 "ablation": []}
    if not a.one_ablation:
        for g in (int(x) for x in a.gpus.split(",")):
            out["scale"].append(simulate(g, counts, curve))
        print_scale(out["scale"])
    if a.ablation or a.one_ablation:
        for variant in ("parent-bound", "cross-random", "cross-fifo", "defaults"):
            out["ablation"].append(simulate(64, counts, curve, variant))
        for inflight in (1, 4, 16):
            out["ablation"].append(simulate(64, counts, curve, "defaults", inflight=inflight))
        print("\nablation at 64 GPUs:")
        print_ablation(out["ablation"])
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    if a.one_scale or a.one_ablation:
        from common import print_result

        print_result(out)
    return out


if __name__ == "__main__":
    main()
