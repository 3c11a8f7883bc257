"""A job for the bounded-memory tests and benchmark, run in a fresh process (so its peak RSS
is its own) or imported (`build`, `measure`):

    python bounded_job.py OUT (--roots N | --children N | --mixed N) [--executor local|ray]
                          [--resume] [--shard-rows K] [--chunk-rows K] [--hold-after-ship K]

`--roots N`: N roots from a generator, root i with i % 4 children. `--children N`: one root with
N children. `--mixed N`: small roots around one root of N children. It prints one JSON line:
the driver's peak RSS increase over the run (`/proc/self/clear_refs` resets the peak first;
pyarrow is imported before), the Parquet writer's peak (Ray), rows per output and status, and
how many parts each commit named. `--hold-after-ship K` prints `shipped k` after each chunk the
sink hands its writer and blocks after the K-th, with its staged parts uncommitted, until the
test kills it."""

from __future__ import annotations

import json
import sys
import threading

import curate as cu

Root = cu.Domain("root")
Child = Root.child("child")


def fan(ns):
    return [list(range(n)) for n in ns]


def label(xs):
    return [{"i": x, "text": f"child {x}"} for x in xs]


def count(ns):
    return [{"children": n} for n in ns]


def build():
    pipe = cu.Pipeline(Root)
    children = pipe.source.expand(cu.stage(fan, batch_size=16), into=Child)
    pipe.output("children", children.map(cu.stage(label, batch_size=1000)))
    pipe.output("roots", pipe.source.map(cu.stage(count, batch_size=16)))
    return pipe


def inputs(shape: str, n: int):
    """The inputs of a shape, as a generator (never a list: the corpus is streamed)."""
    if shape == "roots":
        return (i % 4 for i in range(n))
    if shape == "children":
        return (x for x in [n])
    if shape == "mixed":
        return (x for x in [2, 3, 1, n, 4, 0, 2])
    raise ValueError(shape)


def rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def reset_peak() -> None:
    """Reset this process's peak RSS (VmHWM) to its current RSS (Linux 4.0+)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def measure(out, shape: str, n: int, **options) -> dict:
    """Run the job into `out` and report the driver's peak RSS increase during the run."""
    import pyarrow.parquet  # noqa: F401 - loaded before the measurement: a fixed cost, not the run's

    from curate.io.commits import CommitLog

    try:
        from curate.io.commits import shard_parts
    except ImportError:  # a curate from before parts (benchmarks/bounded_memory.py --tree OLD)
        def shard_parts(s):
            return [s]

    reset_peak()
    before = rss()
    res = cu.run(build(), inputs(shape, n), output_dir=out, progress=False, **options)
    m = res.metrics
    parts = [len(shard_parts(s)) for rec in CommitLog(res.output_dir).records() for s in rec["shards"].values()]
    return {"driver_peak_increase": m.driver_peak_rss - before, "driver_peak_rss": m.driver_peak_rss,
            "writer_peak_rss": getattr(m, "writer_peak_rss", 0), "counts": res.counts, "parts": parts}


def hold_after_ship(k: int) -> None:
    """Print `shipped n` after each chunk handed to the writer; block after the k-th."""
    from curate.io import parquet

    ship, seen = parquet.ParquetSink._ship, [0]

    def holding(self, last):
        out = ship(self, last)
        if not last:
            seen[0] += 1
            print("shipped", seen[0], flush=True)
            if seen[0] >= k:
                threading.Event().wait()  # until the test's SIGKILL
        return out

    parquet.ParquetSink._ship = holding


def main(argv: list[str]) -> None:
    out = argv[0]

    def opt(name, default=None):
        return argv[argv.index(name) + 1] if name in argv else default

    shape = next(s for s in ("roots", "children", "mixed") if f"--{s}" in argv)
    sink = {k: int(opt(f"--{k.replace('_', '-')}")) for k in ("shard_rows", "chunk_rows")
            if f"--{k.replace('_', '-')}" in argv}
    if "--hold-after-ship" in argv:
        hold_after_ship(int(opt("--hold-after-ship")))
    ray_init = {}
    if opt("--executor", "local") == "ray":
        ray_init = {"ray_init": {"num_cpus": 4, "include_dashboard": False, "log_to_driver": False}}
    report = measure(out, shape, int(opt(f"--{shape}")), executor=opt("--executor", "local"),
                     resume="--resume" in argv, sink_options=sink, **ray_init)
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
