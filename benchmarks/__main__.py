"""The benchmark suite, one command: every system measured side by side in one run, each
measurement in a fresh process; a table of ratios per suite, results as JSON and plots as PNG.

    python -m benchmarks run [SUITE ...] [--quick] [--out DIR]
    python -m benchmarks list

Suites (default: all, in this order):
  longtail     long-tailed documents: curate, rayorch, Ray Data, Daft, coarse per-document Ray
               tasks and a plain loop on Pareto(0.8/1.1/1.5) shapes (benchmarks/longtail.py)
  ablation     parent-bound vs cross-parent vs cross-parent + FIFO batching and admission
               settings, on real Ray (longtail workload, alpha 1.1) and on the simulated
               64-GPU cluster (benchmarks/simulate.py)
  suppression  GroupFailure on page 0 of the largest documents: doomed siblings kept out of the
               stage, wall, and unaffected documents complete (benchmarks/suppression.py)
  overhead     near-free stages end to end (curate vs rayorch on Ray), grains/s and driver bytes
               per live entity (local executor), cost vs hierarchy depth and fan-out, the
               driver's CPU share of a Ray run, and driver / Parquet writer peak RSS for one root
               of 200,000 children and 20,000 streamed roots (benchmarks/local_overhead.py,
               longtail.py, bounded_memory.py)
  realwork     PDF -> Markdown on ../shared/data/pdfs and video captioning on
               ../shared/data/videos vs plain sequential loops (pdf_compare.py, video_compare.py)
  simulation   the scheduler alone against a discrete-event 64-GPU cluster with the paper's
               corpus shape (benchmarks/simulate.py)
  pdfquality   PDF -> Markdown quality (pass rate per kind of `curate eval`'s unit tests) and
               pages/s on a generated born-digital corpus: curate vs pymupdf4llm (layout on),
               MinerU 4 flash and a loop of curate's stages (benchmarks/pdfquality.py)

  dedup        MinHash/LSH document dedup vs planted near-duplicates and datatrove's MinHash
               dedup on the same corpus and parameters; signature docs/s; peak RSS at 100,000
               short documents (benchmarks/dedup.py)
  objectstore  the shared PDF corpus read from a local S3 server (moto) through s3fs,
               pyarrow.fs and curate's node-local cache vs local disk, and pdf_to_markdown's
               pages/s from S3 vs from disk (benchmarks/objectstore.py)
  rerun        `curate rerun` vs the whole job: re-captioning the bundled videos, OCR again on the
               shared PDF corpus's low-confidence pages (benchmarks/rerun.py)
  workerfiles  payload files written by the workers that made them vs through the Parquet
               writer, on Ray and the local executor, to a local directory and to s3:// on
               moto: wall and the writer's peak RSS, on/off (benchmarks/worker_files.py)
  view         `curate view` on one output of 100,000 PDF-page rows: opening it (the first table
               page), a filter, a sort, page 100, a row, over HTTP, vs read_table and pandas
               reading it whole; seconds and peak RSS (benchmarks/view.py)

`--quick` shrinks every suite (the longtail one to one shape of 1,200 pages). Results go to
DIR (default benchmarks/results/<UTC time>): <suite>.json, <suite>.png, <suite>.md, and
summary.md with every suite's tables in DIR and the targets met or missed (running one suite
again into the same DIR replaces its section). Needs `pip install -e .[test,bench]`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from plots import plot  # noqa: E402
from suites_data import (suite_dedup, suite_objectstore, suite_pdfquality, suite_rerun,  # noqa: E402
                         suite_view, suite_workerfiles)
from suites_engine import (suite_ablation, suite_longtail, suite_overhead, suite_realwork,  # noqa: E402
                           suite_simulation, suite_suppression)

SUITES = {"longtail": suite_longtail, "ablation": suite_ablation, "suppression": suite_suppression,
          "overhead": suite_overhead, "realwork": suite_realwork, "simulation": suite_simulation,
          "pdfquality": suite_pdfquality, "dedup": suite_dedup, "objectstore": suite_objectstore,
          "rerun": suite_rerun, "workerfiles": suite_workerfiles, "view": suite_view}


def machine() -> str:
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} CPUs ({cpu}), {mem:.0f} GiB, Python {platform.python_version()}, {platform.system()}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run suites")
    r.add_argument("suites", nargs="*", help=f"default: all of {', '.join(SUITES)}")
    r.add_argument("--quick", action="store_true")
    r.add_argument("--out", help="results folder (default benchmarks/results/<UTC time>)")
    sub.add_parser("list", help="list the suites")
    a = ap.parse_args(argv)
    if a.cmd == "list":
        for name, fn in SUITES.items():
            print(f"{name:<12} {fn.__doc__}")
        return 0
    unknown = [s for s in a.suites if s not in SUITES]
    if unknown:
        ap.error(f"unknown suite(s) {', '.join(unknown)}; choose from {', '.join(SUITES)}")
    out = Path(a.out or HERE / "results" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    out.mkdir(parents=True, exist_ok=True)
    cmd = "python -m benchmarks run " + " ".join(a.suites) + (" --quick" if a.quick else "")
    md = [f"# Benchmark results\n\nMachine: {machine()}\n"]
    print(f"{machine()}; results in {out}")
    for name in a.suites or list(SUITES):
        t0 = time.perf_counter()
        data, tables = SUITES[name](a.quick)
        secs = time.perf_counter() - t0
        (out / f"{name}.json").write_text(json.dumps({"suite": name, "quick": a.quick, "seconds": secs,
                                                      "machine": machine(), "results": data}, indent=1, default=str))
        drawn = plot(name, data, out / f"{name}.png")
        part = [f"## {name} ({secs:.0f} s; `{cmd.strip()}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n"]
        part += [t.markdown() for t in tables]
        if drawn:
            part.append(f"![{name}]({name}.png)\n")
        (out / f"{name}.md").write_text("\n".join(part))
        print(f"{name}: {secs:.0f} s -> {out / (name + '.json')}" + (f", {name}.png" if drawn else ""), flush=True)
    # summary.md: every suite whose section is in DIR (a later run of one suite replaces its own)
    md += [(out / f"{n}.md").read_text() for n in SUITES if (out / f"{n}.md").exists()]
    (out / "summary.md").write_text("\n".join(md))
    print(f"summary: {out / 'summary.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
