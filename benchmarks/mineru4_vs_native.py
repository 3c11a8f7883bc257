"""MinerU 4 flash, native vs through curate: pages/s of a plain loop over the files in one
process (as a user runs `mineru.parser.parse(path, tier="flash").markdown()`) against curate's
Ray executor running the bundled recipe's pipeline (pdf_to_markdown_mineru4: split into page
windows, 2 MinerU actors, join), on the same files, side by side in one run.

Both sides are warm before the clock starts: native parses two files first (MinerU's lazy
imports, its page-render worker processes); curate runs in a `cu.Session` whose first, untimed
runs start Ray and the actors and build MinerU in each of them, render processes included
(the actors' start-up is reported apart).
The timed curate run then reports end to end (its `cu.run` wall time) and its execution phase
(`RunMetrics.execution_s`). Each round runs native then curate; the ratios are curate pages/s
over native pages/s. Curate's Markdown is checked against native's (token F1, identical files).

    python benchmarks/mineru4_vs_native.py [--rounds 1] [--no-book] [--window-pages 64]

One run on this project's shared 2-core machine (--rounds 3, about 5 minutes; other jobs were
running, so each round moves by 10-20%):

    round 1: native 31.72s, curate end to end 27.13s (execution 26.00s, start-up 1.13s): ratio 1.17 ...
    round 2: native 37.75s, curate end to end 27.09s (execution 27.06s, start-up 0.02s): ratio 1.39 ...
    round 3: native 30.97s, curate end to end 23.90s (execution 23.88s, start-up 0.02s): ratio 1.30 ...
    320 pages, median of 3 round(s); ratio = curate pages/s / native pages/s
                                  seconds  pages/s  ratio
    native (plain loop)             31.72    10.09   1.00
    curate end to end (warm)        27.09    11.81   1.17
    curate execution phase          26.00    12.31   1.22
    curate + actor start-up         43.75     7.31   0.73

(round 1's start-up is the split stage's pool, rebuilt after the warm-up's smaller windows.)

The files: the born-digital PDFs of ../shared/data/pdfs that MinerU's flash tier parses without
weights (a file with no usable text layer needs its OCR models, which this machine cannot
download), the 285-page MuPDF book included unless --no-book.
"""

from __future__ import annotations

import argparse
import collections
import re
import statistics
import sys
import time
from pathlib import Path

import curate as cu
from curate.recipe import load_recipe

ROOT = Path(__file__).resolve().parents[1]
PDFS = ROOT.parent / "shared" / "data" / "pdfs"
RECIPE = ROOT / "recipes" / "pdf_to_markdown_mineru4.yaml"
BOOK = "pymupdf_mupdf_explored.pdf"  # 285 pages
FILES = ["docling_2305.03393v1-pg9.pdf", "docling_code_and_formula.pdf", "docling_redp5110_sampled.pdf",
         "mineru_demo3_tableformer.pdf", "pymupdf_chinese_tables.pdf", "docling_right_to_left_arabic.pdf",
         "pdfjs_prefilled_f1040.pdf", BOOK]
WARM_FILES = FILES[:2] + FILES[4:6]  # small: enough windows for both actors to build MinerU
IMAGES = "docling_redp5110_sampled.pdf"  # image-heavy: MinerU starts its page-render processes on it
DATA_URI = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+")


def token_f1(reference: str, candidate: str) -> float:
    """Multiset F1 of lowercase Unicode word tokens (an embedded image is one token)."""
    ref, got = (collections.Counter(re.findall(r"\w+", DATA_URI.sub(" image ", s).lower()))
                for s in (reference, candidate))
    common = sum((ref & got).values())
    if not common:
        return float(not ref and not got)
    p, r = common / sum(got.values()), common / sum(ref.values())
    return 2 * p * r / (p + r)


def page_count(path: Path) -> int:
    import pypdfium2

    doc = pypdfium2.PdfDocument(str(path))
    try:
        return len(doc)
    finally:
        doc.close()


def run_native(paths: list[Path]) -> tuple[float, list[str]]:
    import mineru.parser

    t0 = time.perf_counter()
    out = [mineru.parser.parse(p, tier="flash").markdown() for p in paths]
    return time.perf_counter() - t0, out


def run_curate(session: cu.Session, recipe, paths: list[Path]) -> cu.RunResult:
    return session.run(recipe.pipeline, [str(p) for p in paths], **recipe.run_options)


def warm_curate(session: cu.Session, recipe) -> tuple[float, float]:
    """Untimed runs until every MinerU actor has built its parser, then one that cuts the
    image-heavy file into small windows so that each actor also starts MinerU's page-render
    processes (native starts its own on its warm-up file): (start-up s, warm-up wall s)."""
    t0, startup = time.perf_counter(), None
    for _ in range(5):
        res = run_curate(session, recipe, [PDFS / f for f in WARM_FILES])
        startup = res.metrics.startup_s if startup is None else startup
        pool = next(p for p in res.metrics.pools.values() if any("MinerU4" in c for c in p.calls))
        if all(b > 0 for b in pool.worker_batches):
            break
    small = load_recipe(RECIPE, ["steps.windows.expand.init.window_pages=3"], input_given=True)
    run_curate(session, small, [PDFS / IMAGES])  # same MinerU pool: the session keeps its actors
    return startup, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--no-book", action="store_true", help="leave out the 285-page MuPDF book")
    ap.add_argument("--window-pages", type=int, default=None, help="override the recipe's window size")
    args = ap.parse_args()

    import mineru.parser
    from mineru.utils.logger import configure_global_log_level

    configure_global_log_level("error")  # the same quiet MinerU the workers run
    names = [f for f in FILES if not (args.no_book and f == BOOK)]
    paths = [PDFS / f for f in names]
    pages = {f: page_count(p) for f, p in zip(names, paths)}
    total = sum(pages.values())
    print(f"files: {len(names)} born-digital PDFs, {total} pages ({', '.join(f'{f} {n}' for f, n in pages.items())})")
    overrides = [] if args.window_pages is None else [f"steps.windows.expand.init.window_pages={args.window_pages}"]
    recipe = load_recipe(RECIPE, overrides, input_given=True)
    for f in (WARM_FILES[0], IMAGES):  # native warm-up: imports, page-render processes
        mineru.parser.parse(PDFS / f, tier="flash").markdown()

    rows = []
    with cu.Session(executor="ray") as session:
        startup, warm = warm_curate(session, recipe)
        print(f"curate start-up: {startup:.2f}s (Ray actors up); warm-up runs until both MinerU actors "
              f"built their parser: {warm:.2f}s in all (untimed)")
        for rnd in range(args.rounds):
            native_s, native_md = run_native(paths)
            t0 = time.perf_counter()
            res = run_curate(session, recipe, paths)
            e2e = time.perf_counter() - t0
            rows.append((native_s, e2e, res.metrics.execution_s, res.metrics.startup_s))
            print(f"round {rnd + 1}: native {native_s:.2f}s, curate end to end {e2e:.2f}s "
                  f"(execution {res.metrics.execution_s:.2f}s, start-up {res.metrics.startup_s:.2f}s): "
                  f"ratio {native_s / e2e:.2f} end to end, {native_s / res.metrics.execution_s:.2f} execution")
        docs = res.values("documents")
        print("\n" + res.metrics.summary())

    print(f"\n{'file':<36}{'pages':>6}{'token F1':>10}  identical")
    for f, md, doc in zip(names, native_md, docs):
        got = getattr(doc, "markdown", None)  # a cu.Issue (failed document) has none
        f1 = token_f1(md, got) if got is not None else float("nan")
        print(f"{f:<36}{pages[f]:>6}{f1:>10.5f}  {got == md}")

    native_s, e2e, exec_s = (statistics.median(c) for c in list(zip(*rows))[:3])
    print(f"\n{total} pages, median of {len(rows)} round(s); ratio = curate pages/s / native pages/s")
    print(f"{'':<28}{'seconds':>9}{'pages/s':>9}{'ratio':>7}")
    print(f"{'native (plain loop)':<28}{native_s:>9.2f}{total / native_s:>9.2f}{1.0:>7.2f}")
    print(f"{'curate end to end (warm)':<28}{e2e:>9.2f}{total / e2e:>9.2f}{native_s / e2e:>7.2f}")
    print(f"{'curate execution phase':<28}{exec_s:>9.2f}{total / exec_s:>9.2f}{native_s / exec_s:>7.2f}")
    cold = e2e + startup
    print(f"{'curate + actor start-up':<28}{cold:>9.2f}{total / cold:>9.2f}{native_s / cold:>7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
