"""Bounded memory with Parquet output: the driver's peak RSS (and, on Ray, the Parquet writer
actor's) for one root with 200,000 children and for 20,000 small roots streamed from a
generator, on the local and the Ray executor, against a 20-root baseline run.

Each run is `tests/bounded_job.py` in a fresh process (Ray: a private local Ray started by the
run), so every peak is that process's own: `driver peak` is its VmHWM at the run's end, and
`increase` the peak over its RSS just before the run (pyarrow already imported; the run's own
lazy imports, about 55 MiB, and on Ray `ray.init`'s client are included). Stages are near-free
(children are ints, payloads a two-field dict), so the figures are the engine's and the sink's,
not a model's. Nothing is timed.

    python benchmarks/bounded_memory.py [--quick] [--json OUT] [--tree DIR]

`--tree DIR` measures another checkout of curate (e.g. `git worktree add /tmp/old <commit>`)
with the same job: the before/after of a change. `--quick` leaves out the 20,000-roots runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
JOB = HERE.parent / "tests" / "bounded_job.py"
MiB = 2**20

CASES = [("baseline: 20 roots", ["--roots", "20"]),
         ("20,000 roots from a generator", ["--roots", "20000"]),
         ("one root, 200,000 children", ["--children", "200000"])]


def run_job(args: list[str], executor: str, tree: str | None) -> dict | None:
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(tree).resolve()), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([sys.executable, str(JOB), str(Path(tmp) / "out"), *args, "--executor", executor],
                              capture_output=True, text=True, env=env, check=False, cwd=str(JOB.parent))
    if proc.returncode != 0:
        print(f"  {' '.join(args)} on {executor}: FAILED\n{proc.stderr[-2500:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(quick: bool = False, tree: str | None = None) -> list[dict]:
    rows = []
    for executor in ("local", "ray"):
        for case, args in CASES:
            if quick and "20,000" in case:
                continue
            r = run_job(args, executor, tree)
            if r is None:
                continue
            rows.append({"executor": executor, "case": case, "driver_peak_rss": r["driver_peak_rss"],
                         "driver_peak_increase": r["driver_peak_increase"], "writer_peak_rss": r["writer_peak_rss"],
                         "parts": max(r["parts"], default=0),
                         "rows": sum(n for c in r["counts"].values() for n in c.values())})
            print(f"  {executor:<6} {case:<32} driver peak {r['driver_peak_rss'] / MiB:6.0f} MiB "
                  f"(+{r['driver_peak_increase'] / MiB:.0f} over the run)  writer peak "
                  f"{(r['writer_peak_rss'] / MiB) if r['writer_peak_rss'] else 0:4.0f} MiB  "
                  f"largest flush: {max(r['parts'], default=0)} part(s)", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--tree", help="a checkout of curate to measure instead of this one")
    args = ap.parse_args()
    rows = measure(args.quick, args.tree)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
