"""Group-failure suppression side by side: how many doomed siblings curate and rayorch 0.1.1 keep
out of the stage, and at what wall time.

    render (per document) -> scan (a model class sleeping a fixed time per page, batch 32,
    2 replicas; returns GroupFailure for page 0 of the 8 largest documents) -> ordered join

Workload: 320 documents with Pareto page counts, 3,504 pages, half of them in the 8 largest
(219 pages each), so 8 x 218 = 1,744 doomed siblings (the failing documents' pages other than
page 0). Scale: 10 ms per page (`--page-ms`, the paper's experiment used 50 ms), so the three
runs take about a minute here; the share of siblings kept out depends on how many batches are
dispatched before page 0 reports, not on the absolute time. `--quick` halves the workload
(160 documents, 1,752 pages, 4 failing documents of 219 pages).

Each stage call appends the pages it received to a per-process log, so "kept out" is measured
the same way for every framework: doomed siblings minus those the stage ever received. For
curate the scheduler's `suppressed` count (which also counts siblings that ran while page 0
was in flight and were not committed) is shown too. Every framework runs in a fresh process
with its own local Ray (2 CPUs) after an untimed warm-up; curate with default settings, and
again without the prefetch cap (`probe_grains=0`, what the previous release did). Needs
`pip install -e .[bench]`.

    python benchmarks/suppression.py [--quick] [--page-ms 10] [--frameworks curate,curate-nocap,rayorch]
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import expected, print_result, render, run_fresh  # noqa: E402

BATCH, REPLICAS, N_FAILING = 32, 2, 8
_STAGE_CPUS = 0.25  # every stage's CPU request in both frameworks (as benchmarks/baselines.py)

if __name__ != "__main__":  # imported (not run as a script): ship the stages to Ray workers by value
    import ray

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def workload(quick: bool) -> tuple[list[int], set[int]]:
    """Page counts and the documents whose page 0 group-fails (the largest ones)."""
    from workload import long_tail_page_counts

    if quick:
        counts = long_tail_page_counts(n_docs=160, total=1752, longest=219, n_longest=N_FAILING // 2)
    else:
        counts = long_tail_page_counts(n_docs=320, total=3504, longest=219, n_longest=N_FAILING)
    order = sorted(range(len(counts)), key=lambda d: -counts[d])
    return counts, set(order[:N_FAILING // 2 if quick else N_FAILING])


class Scan:
    """The page stage: logs what it receives, sleeps per page, fails page 0 of failing documents."""

    def __init__(self, per_page_s: float, failing: list[int], log_dir: str, group_failure):
        self.per_page_s, self.failing, self.log_dir = per_page_s, set(failing), log_dir
        self.group_failure = group_failure

    def __call__(self, pages):
        with open(os.path.join(self.log_dir, f"{os.getpid()}.log"), "a") as f:
            f.write("".join(f"{d} {p}\n" for d, p in pages))
        time.sleep(self.per_page_s * len(pages))
        return [self.group_failure(f"doc {d} is unreadable") if p == 0 and d in self.failing else f"d{d}p{p}"
                for d, p in pages]

    run = __call__  # rayorch calls `run`


def join(texts):
    return ["\n".join(t) for t in texts]


# ---- curate ------------------------------------------------------------------------------
def run_curate(counts, failing, per_page_s, log_dir, cap=True) -> dict:
    import curate as cu
    from curate.core.scheduler import Scheduler

    run_mod = sys.modules["curate.run"]
    if not cap:  # a benchmark-only switch: the scheduler as the previous release ran it
        run_mod.Scheduler = lambda plan, **kw: Scheduler(plan, probe_grains=0, **kw)
    Doc = cu.Domain("doc")
    Page = Doc.child("page")
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(cu.stage(render), into=Page)
    text = pages.map(cu.stage(Scan, init={"per_page_s": per_page_s, "failing": sorted(failing), "log_dir": log_dir,
                                          "group_failure": cu.GroupFailure}, batch_size=BATCH, replicas=REPLICAS))
    pipe.output("docs", text.reduce(cu.stage(join)))
    t0 = time.time()
    res = cu.run(pipe, list(enumerate(counts)), executor="ray")
    wall = time.time() - t0
    vals = res.values("docs")
    ok = all(isinstance(v, cu.Issue) if d in failing else v == expected(d, counts[d]) for d, v in enumerate(vals))
    m = res.metrics
    return {"wall_s": wall, "execution_s": m.execution_s, "ok": ok, "suppressed": m.calls["Scan"].suppressed,
            "fill": m.calls["Scan"].batch_fill}


# ---- rayorch 0.1.1 -------------------------------------------------------------------------
class _RoRender:
    def run(self, docs):
        return render(docs)


class _RoJoin:
    def run(self, text_groups, docs):
        return [(d, "\n".join(texts)) for texts, (d, _) in zip(text_groups, docs)]


def run_rayorch(counts, failing, per_page_s, log_dir) -> dict:
    import rayorch as ro

    small = {"num_cpus": _STAGE_CPUS}

    class DocPipeline(ro.Pipeline):
        def __init__(self) -> None:
            self.render = ro.RayModule(_RoRender).ray_options(replicas=1, batch_size=8, **small)
            self.scan = (ro.RayModule(Scan).pre_init(per_page_s, sorted(failing), log_dir, ro.GroupFailure)
                         .ray_options(replicas=REPLICAS, batch_size=BATCH, **small))
            self.join = ro.RayModule(_RoJoin).ray_options(replicas=1, batch_size=8, **small)

        def forward(self, docs):
            pages = ro.F.expand(self.render(docs))
            return self.join(ro.F.reduce(self.scan(pages)), docs)

    docs = list(enumerate(counts))
    t0 = time.time()
    with ro.Executor(DocPipeline()) as executor:
        ready = time.time()
        result = executor.run(docs, input_batch_size=None, max_active_input_batches=1)
        end = time.time()
    got = {}
    for out in result.outputs:
        if not isinstance(out, ro.OutputIssue):
            got[out[0]] = out[1]
    ok = (set(got) == set(range(len(counts))) - failing
          and all(got[d] == expected(d, counts[d]) for d in got))
    return {"wall_s": end - t0, "execution_s": end - ready, "ok": ok, "suppressed": None, "fill": None}


def one(framework: str, quick: bool, per_page_s: float) -> dict:
    import ray

    counts, failing = workload(quick)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    runner = run_rayorch if framework == "rayorch" else run_curate
    extra = {"cap": framework != "curate-nocap"} if framework != "rayorch" else {}
    with tempfile.TemporaryDirectory() as warm:  # untimed warm-up: one-off imports and worker start-ups
        runner([3] * 10, {0}, 0.0, warm, **extra)
    with tempfile.TemporaryDirectory() as log_dir:
        r = runner(counts, failing, per_page_s, log_dir, **extra)
        seen = []
        for path in glob.glob(os.path.join(log_dir, "*.log")):
            with open(path) as f:
                seen += [tuple(map(int, line.split())) for line in f]
    ray.shutdown()
    doomed = sum(counts[d] - 1 for d in failing)
    ran = sum(1 for d, p in seen if d in failing and p > 0)
    r.update(doomed=doomed, ran=ran, kept_out=doomed - ran, pages_run=len(seen))
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frameworks", default="curate,curate-nocap,rayorch")
    ap.add_argument("--page-ms", type=float, default=10.0, help="sleep per page in the scan stage (default 10)")
    ap.add_argument("--quick", action="store_true", help="160 documents, 1,752 pages, 4 failing documents")
    ap.add_argument("--one", metavar="FRAMEWORK", help=argparse.SUPPRESS)
    a = ap.parse_args()
    per_page_s = a.page_ms / 1000
    if a.one:
        print_result(one(a.one, a.quick, per_page_s))
        return
    counts, failing = workload(a.quick)
    doomed = sum(counts[d] - 1 for d in failing)
    print(f"{os.cpu_count()} CPUs; {len(counts)} documents, {sum(counts)} pages; GroupFailure on page 0 of the "
          f"{len(failing)} largest ({sum(counts[d] for d in failing)} pages): {doomed} doomed siblings; scan "
          f"{a.page_ms:g} ms/page, batch {BATCH}, {REPLICAS} replicas")
    print(f"{'framework':<14}{'kept out':>9}{'share':>8}{'ran':>6}{'suppressed':>11}{'pages run':>10}{'wall':>8}"
          f"{'execution':>10}{'fill':>6}  others complete")
    for fw in a.frameworks.split(","):
        r, stderr = run_fresh([__file__, "--one", fw, "--page-ms", str(a.page_ms)] + (["--quick"] if a.quick else []))
        if r is None:
            print(f"{fw:<14}FAILED\n{stderr[-3000:]}")
            continue
        sup = "-" if r["suppressed"] is None else str(r["suppressed"])
        fill = "-" if r["fill"] is None else f"{r['fill']:.2f}"
        print(f"{fw:<14}{r['kept_out']:>9}{r['kept_out'] / r['doomed']:>8.1%}{r['ran']:>6}{sup:>11}"
              f"{r['pages_run']:>10}{r['wall_s']:>7.2f}s{r['execution_s']:>9.2f}s{fill:>6}  {r['ok']}", flush=True)


if __name__ == "__main__":
    main()
