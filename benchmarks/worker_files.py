"""Payload files written by the workers that made them (issue 25 point 3) against the old path,
every file through the Parquet writer (`sink_options={"worker_files": False}`), side by side in
one run. A map stage returns one payload file of 1,000,000 random bytes per input
(`batch_size=4`, `replicas=2`, `num_cpus=0.5`), its output `files={"blob": ".bin"}`, on:

- Ray with a local output directory, Ray with an `s3://` output on a moto server (tests/s3server.py,
  127.0.0.1, a fresh server for each run), the local executor with a local directory and with
  the `s3://` output;

each with worker files on and off, each run a fresh process (`--one CONFIG`) with its own
private Ray (started before the clock), on and off alternating and their order swapped every
round, so that load on the shared machine hits both alike. Per run: the wall seconds of
`cu.run`, the writer's peak RSS (`writer_peak_rss`: the Parquet writer actor; on the local
executor the writer is the driver, so its `driver_peak_rss`) and the payload-file counts of the
run's `_curate/<run>/metrics.json` (found through the manifest).

moto is a Python server on the same cores as the run: the S3 figures show what the client side
and the request count cost, not a real store's latency or parallelism.

    python benchmarks/worker_files.py [--rounds 3] [--json PATH] [--quick]
    python -m benchmarks run workerfiles
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the S3 server the tests use
sys.path.insert(0, str(HERE))

SIZE = 1_000_000  # bytes of each input's payload file (random: nothing compresses it)
# config -> (executor, output, inputs): 100 on S3, where each file costs three requests to moto
CONFIGS = {"ray-local": ("ray", "local", 200), "ray-s3": ("ray", "s3", 100),
           "local-local": ("local", "local", 200), "local-s3": ("local", "s3", 100)}
QUICK_SHARE = 5  # --quick: a fifth of the inputs, one round
LABELS = {"ray": "Ray", "local": "local", "s3": "`s3://` on moto"}
METRICS = ("files_written_by_workers", "file_bytes_by_workers", "files_through_writer",
           "file_bytes_through_writer", "writer_peak_rss", "driver_peak_rss", "startup_s")
MODES = {"on": True, "off": False}  # worker files on: the default; off: every file through the writer


def make(xs):
    """The stage: one payload file of SIZE random bytes per input."""
    return [{"n": x, "blob": os.urandom(SIZE)} for x in xs]


def pipeline():
    import curate as cu

    pipe = cu.Pipeline(cu.Domain("doc"))
    made = pipe.source.map(cu.stage(make, batch_size=4, replicas=2, num_cpus=0.5))
    pipe.output("blobs", made, files={"blob": ".bin"})  # a map's own value: its workers may write the files
    return pipe


def one(config: str, mode: str, inputs: int, out: str) -> dict:
    """One run in this fresh process: its wall seconds and the payload-file metrics it recorded."""
    import curate as cu
    from curate.io.location import location

    executor = CONFIGS[config][0]
    if executor == "ray":  # a private Ray, started before the clock: the same for on and off
        import ray

        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    t0 = time.perf_counter()
    cu.run(pipeline(), list(range(inputs)), executor=executor, output_dir=out, progress=False,
           sink_options={"worker_files": MODES[mode]})
    wall = time.perf_counter() - t0
    loc = location(out)
    run = json.loads(loc.read_text("_curate/manifest.json"))["runs"][-1]
    m = json.loads(loc.read_text(run["metrics"]))
    if executor == "ray":
        import ray

        ray.shutdown()
    files = m["files_written_by_workers"] + m["files_through_writer"]
    if files != inputs:
        raise SystemExit(f"{config} {mode}: {files} payload files committed of {inputs} inputs")
    return {"config": config, "mode": mode, "inputs": inputs, "wall_s": wall, **{k: m[k] for k in METRICS}}


def fresh(config: str, mode: str, inputs: int, tmp: Path, k: int) -> dict:
    """`one` in a fresh process; an `s3://` output gets a fresh moto server and bucket."""
    import subprocess

    from common import RESULT
    from s3server import CREDENTIALS, MotoServer, make_bucket

    server, env = None, dict(os.environ)
    out = str(tmp / f"{config}-{mode}-{k}")
    try:
        if CONFIGS[config][1] == "s3":
            server = MotoServer()
            os.environ.update(CREDENTIALS)  # the test keys, for make_bucket here and the run's clients there
            env.update(CREDENTIALS, AWS_ENDPOINT_URL=server.url)
            out = f"s3://{make_bucket(server.url, 'worker-files-bench')}/out"
        proc = subprocess.run([sys.executable, __file__, "--one", config, "--mode", mode, "--inputs", str(inputs),
                               "--out", out], capture_output=True, text=True, check=False, env=env)
    finally:
        if server is not None:
            server.close()
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT)), None)
    r, err = (None if line is None else json.loads(line[len(RESULT):])), proc.stderr
    if r is None:
        raise RuntimeError(f"the {config} run with worker files {mode} failed:\n{err[-3000:]}")
    print(f"  {config:<12} {mode:<4} {r['wall_s']:6.2f} s", flush=True)
    return r


def measure(rounds: int, quick: bool) -> dict:
    """Every config, on and off alternating (the order swapped every round), `rounds` times."""
    import shutil

    tmp = Path(tempfile.mkdtemp(prefix="worker-files-bench-"))
    runs = []
    try:
        for k in range(rounds):
            order = list(MODES) if k % 2 == 0 else list(reversed(MODES))
            for config, (_, _, n) in CONFIGS.items():
                for mode in order:
                    runs.append(fresh(config, mode, n // QUICK_SHARE if quick else n, tmp, k))
                    shutil.rmtree(tmp / f"{config}-{mode}-{k}", ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"rounds": rounds, "quick": quick, "size": SIZE, "runs": runs, "medians": medians(runs)}


def writer_peak(r: dict) -> int:
    """The writer's peak RSS: the writer actor's on Ray, the driver's on the local executor."""
    return r["writer_peak_rss"] or r["driver_peak_rss"]


def medians(runs: list[dict]) -> list[dict]:
    """Per config and mode: the median wall and writer peak, the file counts (the same every round)."""
    out = []
    for config in CONFIGS:
        for mode in MODES:
            mine = [r for r in runs if r["config"] == config and r["mode"] == mode]
            out.append({**{k: mine[0][k] for k in ("config", "mode", "inputs", *METRICS[:4])},
                        "wall_s": statistics.median(r["wall_s"] for r in mine), "walls": [r["wall_s"] for r in mine],
                        "startup_s": statistics.median(r["startup_s"] for r in mine),
                        "writer_peak": statistics.median(writer_peak(r) for r in mine)})
    return out


def tables(res: dict) -> list:
    """The suite's tables: each config and mode's medians, and the ratios worker files on / off."""
    from table import Table

    mib = 2**20
    t = Table(f"payload files written by the workers (on) vs through the writer (off): {res['size']:,} random "
              f"bytes a file, median of {res['rounds']} fresh runs each",
              [("executor, output", 30), ("inputs", 7), ("worker files", 13), ("wall s", 8), ("of it start-up s", 17),
               ("writer peak MiB", 16),
               ("MiB by workers", 15), ("MiB through writer", 19)])
    t.header()
    by = {(m["config"], m["mode"]): m for m in res["medians"]}
    for m in res["medians"]:
        ex, store, _ = CONFIGS[m["config"]]
        t.add(f"{LABELS[ex]}, {LABELS[store] if store == 's3' else 'local directory'}", m["inputs"], m["mode"],
              f"{m['wall_s']:.2f}", f"{m['startup_s']:.2f}",
              f"{m['writer_peak'] / mib:.0f}" + (" (driver)" if ex == "local" else ""),
              f"{m['file_bytes_by_workers'] / mib:.0f}", f"{m['file_bytes_through_writer'] / mib:.0f}")
    through = sum(m["file_bytes_through_writer"] for m in res["medians"] if m["mode"] == "on")
    t.target("bytes through the writer with worker files on", through, "== 0", through == 0)
    t.notes.append("writer peak: the Parquet writer actor's peak RSS on Ray (`writer_peak_rss`); on the local "
                   "executor the writer is the driver, so the driver's (`driver_peak_rss`). Wall: `cu.run` alone, "
                   "Ray started before the clock; start-up: until the first actor answered (metrics `startup_s`).")
    r = Table("worker files on / off (medians; under 1: on is faster or smaller)",
              [("executor, output", 30), ("wall on/off", 12), ("writer peak on/off", 19), ("walls on", 22),
               ("walls off", 22)])
    r.header()
    for config, (ex, store, _) in CONFIGS.items():
        on, off = by[(config, "on")], by[(config, "off")]
        r.add(f"{LABELS[ex]}, {LABELS[store] if store == 's3' else 'local directory'}",
              f"{on['wall_s'] / off['wall_s']:.2f}", f"{on['writer_peak'] / off['writer_peak']:.2f}",
              ", ".join(f"{w:.2f}" for w in on["walls"]), ", ".join(f"{w:.2f}" for w in off["walls"]))
    peak = by[("ray-local", "on")]["writer_peak"] / by[("ray-local", "off")]["writer_peak"]
    r.target("Ray, local directory: writer peak on / off", peak, "< 1", peak < 1)
    return [t, r]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help=f"1 round, 1/{QUICK_SHARE} of the inputs")
    ap.add_argument("--json")
    ap.add_argument("--one", choices=list(CONFIGS), help=argparse.SUPPRESS)  # internal: one run, this process
    ap.add_argument("--mode", choices=list(MODES), help=argparse.SUPPRESS)
    ap.add_argument("--inputs", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        from common import print_result

        print_result(one(a.one, a.mode, a.inputs, a.out))
        return 0
    res = measure(1 if a.quick else a.rounds, a.quick)
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))
    tables(res)  # printed as they are made
    return 0


if __name__ == "__main__":
    sys.exit(main())
