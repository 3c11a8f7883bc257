"""Group-failure suppression side by side: how many doomed siblings curate, rayorch 0.1.1, Ray Data
and Daft 0.7 keep out of the stage, and at what wall time.

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

Ray Data and Daft have no group-failure semantics, so the failure is expressed the way a user of
those would: the same `Scan` returns an error marker (`error_marker`) instead of a text for page 0
of a failing document, every page still goes through the stage, and a document with any failed
page is dropped when its pages are brought back together (`join_or_drop`, after the group-by).
"kept out" is measured from the same per-process log, so it is 0 by construction unless the
framework happens to skip work. Their pipelines mirror benchmarks/baselines.py: Ray Data
`from_items -> flat_map(render) -> map_batches(Scan, batch_size=32, ActorPoolStrategy(size=2))
-> groupby("doc", num_partitions=4).map_groups(join_or_drop)` with the same two tuning knobs;
Daft on its Ray runner (attached to the already-initialised Ray) `from_pydict -> render ->
explode -> Scan as @daft.cls(max_concurrency=2) batch method (batch_size=32) -> groupby("doc")
list_agg -> join_or_drop -> drop nulls`. Every stage that is a Ray task or actor asks for 0.25
CPU in every framework. Neither exposes when its actors are up, so "execution" shows "-".

Every framework is checked the same way (`_completeness`): exactly the unaffected documents must
come out, each with its exact text; the table shows how many did ("others complete").

    python benchmarks/suppression.py [--quick] [--page-ms 10]
        [--frameworks curate,curate-nocap,rayorch,raydata,daft]
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

from common import expected, print_result, render, run_fresh

BATCH, REPLICAS, N_FAILING = 32, 2, 8
_STAGE_CPUS = 0.25  # every Ray task's / actor's CPU request, in every framework (as baselines.py)

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
    got = {d: v for d, v in enumerate(res.values("docs")) if not isinstance(v, cu.Issue)}  # failed: an Issue
    m = res.metrics
    return {"wall_s": wall, "execution_s": m.execution_s, "suppressed": m.calls["Scan"].suppressed,
            "fill": m.calls["Scan"].batch_fill, **_completeness(got, counts, failing)}


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
    return {"wall_s": end - t0, "execution_s": end - ready, "suppressed": None, "fill": None,
            **_completeness(got, counts, failing)}


# ---- what every framework is checked on --------------------------------------------------
def _completeness(got: dict, counts, failing) -> dict:
    """`got`: document -> assembled text for the documents a framework delivered. `ok`: exactly the
    unaffected documents came out, each with its exact text; `complete` of `unaffected` did."""
    unaffected = [d for d in range(len(counts)) if d not in failing]
    complete = sum(1 for d in unaffected if got.get(d) == expected(d, counts[d]))
    return {"ok": set(got) == set(unaffected) and complete == len(unaffected),
            "complete": complete, "unaffected": len(unaffected)}


# ---- frameworks without group-failure semantics: an error marker per failed page ----------
ERROR = "!error: "  # what the page stage returns instead of a text for a failed page


def error_marker(message: str) -> str:
    """Stands in for GroupFailure where the framework has none: the page's value is an error."""
    return ERROR + message


def join_or_drop(pages, texts):
    """One document's (page, text) rows in any order -> its text in page order, or None (the
    document is dropped) if any of its pages failed."""
    if any(t.startswith(ERROR) for t in texts):
        return None
    return "\n".join(t for _, t in sorted(zip(pages, texts)))


# ---- Ray Data ------------------------------------------------------------------------------
class _RdScan:
    """Ray Data callable class around the shared `Scan`: column-dict batches in and out."""

    def __init__(self, per_page_s, failing, log_dir):
        self.scan = Scan(per_page_s, failing, log_dir, error_marker)

    def __call__(self, batch):
        pages = list(zip(batch["doc"].tolist(), batch["page"].tolist()))
        return {"doc": batch["doc"], "page": batch["page"], "text": self.scan(pages)}


def _rd_render(row):
    return [{"doc": d, "page": p} for d, p in render([(int(row["doc"]), int(row["pages"]))])[0]]


def _rd_join(group):
    text = join_or_drop(group["page"].tolist(), [str(t) for t in group["text"]])
    if text is None:  # a failed document: no output row
        return {"doc": [], "text": []}
    return {"doc": [int(group["doc"][0])], "text": [text]}


def run_raydata(counts, failing, per_page_s, log_dir) -> dict:
    import ray.data
    from baselines import _RD_GROUP_PARTITIONS, _RD_INPUT_BLOCKS

    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.enable_operator_progress_bars = False
    t0 = time.time()
    ds = (
        ray.data.from_items([{"doc": d, "pages": n} for d, n in enumerate(counts)],
                            override_num_blocks=min(_RD_INPUT_BLOCKS, len(counts)))
        .flat_map(_rd_render, num_cpus=_STAGE_CPUS)
        .map_batches(_RdScan, fn_constructor_args=(per_page_s, sorted(failing), log_dir), batch_size=BATCH,
                     compute=ray.data.ActorPoolStrategy(size=REPLICAS), num_cpus=_STAGE_CPUS)
        .groupby("doc", num_partitions=_RD_GROUP_PARTITIONS)
        .map_groups(_rd_join, num_cpus=_STAGE_CPUS)
    )
    rows = ds.take_all()
    wall = time.time() - t0
    got = {int(r["doc"]): str(r["text"]) for r in rows}
    return {"wall_s": wall, "execution_s": None, "suppressed": None, "fill": None,
            **_completeness(got, counts, failing)}


# ---- Daft 0.7 (Ray runner) -----------------------------------------------------------------
def run_daft(counts, failing, per_page_s, log_dir) -> dict:
    import daft
    import daft.pickle.cloudpickle
    from daft import DataType, col

    if __name__ != "__main__":  # Daft pickles with its own cloudpickle (see benchmarks/baselines.py)
        daft.pickle.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    daft.set_runner_ray(noop_if_initialized=True)  # attach to the already-initialised Ray

    @daft.func(return_dtype=DataType.list(DataType.int64()))
    def render_pages(doc: int, n: int) -> list[int]:
        return [p for _, p in render([(doc, n)])[0]]

    @daft.cls(cpus=_STAGE_CPUS, max_concurrency=REPLICAS)
    class DaftScan:
        def __init__(self, per_page_s, failing, log_dir):
            self.scan = Scan(per_page_s, failing, log_dir, error_marker)

        @daft.method.batch(return_dtype=DataType.string(), batch_size=BATCH)
        def __call__(self, doc: daft.Series, page: daft.Series) -> list[str]:
            return self.scan(list(zip(doc.to_pylist(), page.to_pylist())))

    @daft.func(return_dtype=DataType.string())
    def join_pages(pages: list[int], texts: list[str]):
        return join_or_drop(pages, texts)

    scan = DaftScan(per_page_s, sorted(failing), log_dir)
    t0 = time.time()
    df = (
        daft.from_pydict({"doc": list(range(len(counts))), "n": list(counts)})
        .with_column("page", render_pages(col("doc"), col("n")))
        .explode("page")
        .with_column("text", scan(col("doc"), col("page")))
        .groupby("doc")
        .agg(col("page").list_agg().alias("pages"), col("text").list_agg().alias("texts"))
        .with_column("text", join_pages(col("pages"), col("texts")))
        .where(col("text").not_null())  # failed documents are dropped here
        .select("doc", "text")
    )
    out = df.to_pydict()
    wall = time.time() - t0
    got = {int(d): str(t) for d, t in zip(out["doc"], out["text"])}
    return {"wall_s": wall, "execution_s": None, "suppressed": None, "fill": None,
            **_completeness(got, counts, failing)}


RUNNERS = {"curate": run_curate, "curate-nocap": run_curate, "rayorch": run_rayorch, "raydata": run_raydata,
           "daft": run_daft}


def one(framework: str, quick: bool, per_page_s: float) -> dict:
    import ray

    counts, failing = workload(quick)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    runner = RUNNERS[framework]
    extra = {"cap": framework != "curate-nocap"} if runner is run_curate else {}
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
    ap.add_argument("--frameworks", default="curate,curate-nocap,rayorch,raydata,daft")
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
          f"{'execution':>10}{'fill':>6}  others complete (exact text)")
    for fw in a.frameworks.split(","):
        r, stderr = run_fresh([__file__, "--one", fw, "--page-ms", str(a.page_ms)] + (["--quick"] if a.quick else []))
        if r is None:
            print(f"{fw:<14}FAILED\n{stderr[-3000:]}")
            continue
        sup = "-" if r["suppressed"] is None else str(r["suppressed"])
        fill = "-" if r["fill"] is None else f"{r['fill']:.2f}"
        exe = "-" if r["execution_s"] is None else f"{r['execution_s']:.2f}s"
        print(f"{fw:<14}{r['kept_out']:>9}{r['kept_out'] / r['doomed']:>8.1%}{r['ran']:>6}{sup:>11}"
              f"{r['pages_run']:>10}{r['wall_s']:>7.2f}s{exe:>10}{fill:>6}  "
              f"{r['complete']}/{r['unaffected']} {r['ok']}", flush=True)


if __name__ == "__main__":
    main()
