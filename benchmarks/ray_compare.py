"""curate's Ray executor against rayorch 0.1.1 and Ray Data on the long-tailed 1 -> M -> 1
document workload, side by side in one invocation, each framework in a fresh local Ray.

    render (per document) -> ocr (batched model: sleep base + per-page, 2 replicas, batch 32)
    -> ordered per-document assembly -> upload (sleep per document)

Profiles: heavy (40 ms + 2 ms/page, 10 ms upload: ideal = OCR work / replicas = 5.25 s) and
light (1 ms + 0.1 ms/page, 0.5 ms upload: engine overhead). Reports end to end (start-up
included) and the execution phase (once every actor is up), the first document's completion,
grains/s, and ratios to the ideal and to rayorch. Needs `pip install -e .[bench]`.

    python benchmarks/ray_compare.py [--frameworks curate,rayorch,raydata] [--profiles heavy,light]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import Ocr, Upload, assemble, expected, print_result, render, run_fresh  # noqa: E402

PROFILES = {"heavy": (0.040, 0.002, 0.010), "light": (0.001, 0.0001, 0.0005)}



def run_curate(page_counts, costs, output_dir=None):
    from baselines import Timing

    import curate as cu

    Doc = cu.Domain("doc")
    Page = Doc.child("page")
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(cu.stage(render), into=Page)
    text = pages.map(cu.stage(Ocr, init={"base_s": costs.ocr_base_s, "per_page_s": costs.ocr_per_page_s},
                              batch_size=costs.ocr_batch, replicas=costs.ocr_replicas))
    docs = text.reduce(cu.stage(assemble))
    pipe.output("uploaded", docs.map(cu.stage(Upload, init={"upload_s": costs.upload_s})))
    pipe.output("markdown", docs)
    t0 = time.time()
    res = cu.run(pipe, list(enumerate(page_counts)), executor="ray", output_dir=output_dir)
    end = time.time()
    md = res.values("markdown")
    ok = all(m == expected(d, n) for d, (m, n) in enumerate(zip(md, page_counts)))
    m = res.metrics
    first = min(stamp for _, stamp in res.values("uploaded")) - t0
    t = Timing("curate", end - t0, m.execution_s, first, len(md), ok)
    extra = {"grains": m.grains, "ocr_batches": m.calls["Ocr"].batches, "ocr_fill": m.calls["Ocr"].batch_fill}
    return t, extra


def one(framework: str, profile: str) -> dict:
    """Run one framework on one profile in this (fresh) process, with its own local Ray."""
    import ray
    from baselines import Costs, run_raydata, run_rayorch
    from workload import long_tail_page_counts

    counts = long_tail_page_counts()
    costs = Costs(*PROFILES[profile])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    runner = {"curate": run_curate, "rayorch": run_rayorch, "raydata": run_raydata}[framework]
    runner(counts[:20], Costs(*PROFILES["light"]))  # untimed warm-up: one-off imports, for every framework
    t = runner(counts, costs)
    extra = {}
    if isinstance(t, tuple):
        t, extra = t
    ray.shutdown()
    return dict(asdict(t), **extra)


def ideal(profile: str, counts: list[int]) -> float:
    base, per, _ = PROFILES[profile]
    return (math.ceil(sum(counts) / 32) * base + sum(counts) * per) / 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frameworks", default="curate,rayorch,raydata")
    ap.add_argument("--profiles", default="heavy,light")
    ap.add_argument("--one", nargs=2, metavar=("FRAMEWORK", "PROFILE"), help=argparse.SUPPRESS)
    ap.add_argument("--output", help="also run curate once more (heavy) into this directory, for `curate report`")
    a = ap.parse_args()
    if a.one:
        print_result(one(*a.one))
        return
    if a.output:
        import ray
        from baselines import Costs
        from workload import long_tail_page_counts

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
        t, _ = run_curate(long_tail_page_counts(), Costs(*PROFILES["heavy"]), output_dir=a.output)
        print(f"curate into {a.output}: {t}")
        return
    from workload import long_tail_page_counts

    counts = long_tail_page_counts()
    grains = len(counts) * 3 + sum(counts)  # render, ocr, assemble, upload
    print(f"workload: {len(counts)} documents, {sum(counts)} pages (longest {max(counts)}), "
          f"{grains} grains; {os.cpu_count()} CPUs")
    for profile in a.profiles.split(","):
        rows = {}
        for fw in a.frameworks.split(","):
            r, stderr = run_fresh([__file__, "--one", fw, profile])
            if r is None:
                print(f"{profile} {fw}: FAILED\n{stderr[-2000:]}")
                continue
            rows[fw] = r
        ide = ideal(profile, counts)
        print(f"\n{profile}: ideal {ide:.2f} s (OCR work / 2 replicas, full batches of 32)")
        print(f"{'framework':<10}{'end-to-end':>11}{'execution':>11}{'first doc':>11}{'1st/e2e':>9}{'1st/exec':>9}"
              f"{'e2e/ideal':>10}{'exec/ideal':>11}{'grains/s exec':>15}{'e2e/rayorch':>12}  ok")
        ref = rows.get("rayorch", {}).get("end_to_end_s")
        for fw, r in rows.items():
            ex, e2e, first = r["execution_s"], r["end_to_end_s"], r["first_doc_s"]
            exs = f"{ex:.2f}s" if ex else "-"
            exi = f"{ex / ide:.2f}" if ex else "-"
            gps = f"{grains / ex:,.0f}" if ex else "-"
            vs = f"{e2e / ref:.2f}" if ref else "-"
            fex = f"{(first - (e2e - ex)) / ex:.1%}" if ex else "-"  # first doc within the execution phase
            print(f"{fw:<10}{e2e:>10.2f}s{exs:>11}{first:>10.2f}s{first / e2e:>9.1%}{fex:>9}{e2e / ide:>10.2f}"
                  f"{exi:>11}{gps:>15}{vs:>12}  {r['ok']}")
            if "ocr_batches" in r:
                print(f"{'':<10}curate OCR: {r['ocr_batches']} batches, fill {r['ocr_fill']:.2f}")


if __name__ == "__main__":
    main()
