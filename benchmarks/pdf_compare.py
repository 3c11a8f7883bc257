"""PDF -> Markdown pages/s on the real PDFs of ../shared/data/pdfs, side by side in one run:

- curate: the bundled `pdf_to_markdown` recipe on curate's Ray executor (2 RapidOCR actors with
  one onnxruntime thread each, the other stages on light workers), after an untimed warm-up run:
  - one-shot `cu.run`, end to end (its actors start and load their models inside the timing) and
    its execution phase (from the first worker);
  - a warm `cu.Session`'s second run (`curate warm session`): its actors started and loaded their
    models in the session's untimed first run, as the loop builds its models before its timing;
  plus the OCR recognition pool's batch fill;
- a plain sequential loop in a fresh process over the same backends with the same settings
  (PdfPages -> PdfText.check -> PdfText.regions | scan_regions -> Render.crops -> RapidOcr.detect_lines ->
  RapidOcr.read_lines (a region's lines in one call) -> join_lines -> read_regions -> page_markdown ->
  document_markdown), models built once, after the same warm-up (benchmarks/ceiling.py runs it);
- the machine's ceiling (`2 loops at once`, benchmarks/ceiling.py): that loop in two processes at
  once, each over the whole input: what two cores give for this work with no engine at all;
- pymupdf4llm's whole-document conversion (`pymupdf4llm.to_markdown(path)`; no OCR);
- native MinerU 4 flash (`mineru.parser.parse(path, tier="flash")`; text layer, no OCR models).

Two workloads: `corpus` (every readable PDF of the folder as it is: mostly text layer; the
scanned fax letter needs OCR) and `scans` (force_ocr: the pages of the scanned files and two
short born-digital files all go through RapidOCR: OCR-bound, what a scanned corpus costs).
pymupdf4llm and MinerU flash skip OCR, so they run the corpus workload only; their rows are a
reference for the text-layer cost, not a like-for-like comparison for the scans.

    python benchmarks/pdf_compare.py [--workloads corpus,scans] [--repeats 1] [--no-ceiling]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
ROOT = HERE.parent
DATA = ROOT.parent / "shared" / "data" / "pdfs"
BAD = {"pdfjs_bug1020226_broken.pdf", "docling_not_a_pdf.pdf", "pypdf_encrypted_pw_openpassword.pdf"}
SCANS = ["docling_scanned_fax_letter.pdf", "pypdf_vicksburg_scan_ocr.pdf", "docling_2305.03393v1-pg9.pdf",
         "docling_code_and_formula.pdf"]


def corpus_files() -> list[str]:
    return [str(p) for p in sorted(DATA.glob("*.pdf")) if p.name not in BAD]


def sequential(paths: list[str], force_ocr: bool, keep: dict | None = None) -> tuple[int, float]:
    """The recipe's work in a plain loop, one page and region at a time: (pages, seconds).
    `keep`, when given, receives each page's Markdown as {(file name, 1-based page): markdown}."""
    from curate.modalities.pdf.assemble import document_markdown, page_markdown
    from curate.modalities.pdf.documents import PdfPages
    from curate.modalities.pdf.layout import Layout
    from curate.modalities.pdf.regions import scan_regions
    from curate.modalities.pdf.render import Render
    from curate.modalities.pdf.pdf_text import PdfText
    from curate.modalities.pdf.ocr import RapidOcr, join_lines, read_regions

    expand, text, render, ocr = PdfPages(), PdfText(force_ocr=force_ocr), Render(), RapidOcr(threads=1)
    layout = Layout(threads=1)  # the recipe's layout pool, one actor's worth
    start, pages_done = time.perf_counter(), 0
    for path in paths:
        (pages,) = expand([path])
        rows = []
        for page in pages:
            (checked,) = text.check([page])
            (regions,) = layout.regions([checked])
            (todo,) = scan_regions([checked])
            read = []
            for region in todo:
                (crop,) = render.crops([(checked, region)])
                (lines,) = ocr.detect_lines([crop])
                read += read_regions([(checked, region, join_lines([ocr.read_lines(lines)])[0])])[0]
            rows.append(page_markdown([(checked, regions, read)])[0])
            if keep is not None:
                keep[(Path(path).name, page.index + 1)] = rows[-1].markdown
        document_markdown([rows])
        pages_done += len(pages)
    return pages_done, time.perf_counter() - start


SETS: list[str] = []  # --set overrides of the recipe, for curate's rows


def recipe_pipeline(force_ocr: bool):
    from curate.recipe import load_recipe

    recipe = load_recipe(ROOT / "recipes" / "pdf_to_markdown.yaml",
                         [f"pools.pdf_text.init.force_ocr={'true' if force_ocr else 'false'}", *SETS], input_given=True)
    return recipe.pipeline


def curate_run(paths: list[str], force_ocr: bool):
    import curate as cu

    return cu.run(recipe_pipeline(force_ocr), paths, executor="ray")


def _curate_row(label: str, res, pages: int) -> tuple:
    ocr = res.metrics.calls.get("RapidOcr.read_lines")
    fill = f"OCR line batches: fill {ocr.batch_fill:.2f}, {ocr.batches} batches" if ocr and ocr.batches else ""
    return label, pages, res.metrics.wall_s, fill


def pymupdf4llm_run(paths: list[str]) -> tuple[int, float]:
    import pymupdf
    import pymupdf4llm

    start, pages = time.perf_counter(), 0
    for p in paths:
        pymupdf4llm.to_markdown(p)
        with pymupdf.open(p) as d:
            pages += d.page_count
    return pages, time.perf_counter() - start


def mineru_run(paths: list[str]) -> tuple[int, float]:
    import logging

    import mineru.parser as mp

    try:
        from loguru import logger

        logger.remove()
        logger.add(sys.stderr, level="ERROR")
    except ImportError:
        logging.getLogger().setLevel(logging.ERROR)
    start, pages = time.perf_counter(), 0
    for p in paths:
        try:
            res = mp.parse(p, tier="flash")
            res.markdown()
            pages += len(res.pages)
        except Exception as exc:  # noqa: BLE001 - a file flash cannot read without OCR models
            print(f"  mineru flash skipped {Path(p).name}: {type(exc).__name__}", file=sys.stderr)
    return pages, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", default="corpus,scans")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--set", action="append", default=[], help="a recipe override for curate, as `curate run --set`")
    ap.add_argument("--curate-only", action="store_true", help="skip pymupdf4llm and MinerU flash")
    ap.add_argument("--no-ceiling", action="store_true", help="skip the two-loops-at-once ceiling")
    args = ap.parse_args()
    SETS.extend(args.set)
    results: dict = {}
    import ray
    from ceiling import loops_at_once

    import curate as cu

    ray.init(address="local", include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}})
    for workload in args.workloads.split(","):
        force = workload == "scans"
        paths = [str(DATA / n) for n in SCANS] if force else corpus_files()
        # untimed warm-ups, each with a page that needs OCR (ONNX's first inference is 2-3x slower)
        warm = [*paths[:2], *(p for p in paths[2:] if Path(p).name == SCANS[0])]
        curate_run(warm, force)
        rows = []
        for _ in range(args.repeats):
            loop = ("pdf_compare", "sequential", (warm, force), (paths, force))
            rows.append(("sequential loop", *loops_at_once(*loop), None))
            if not args.no_ceiling:
                rows.append(("2 loops at once", *loops_at_once(*loop, copies=2), "the machine's ceiling"))
            res = curate_run(paths, force)
            pages_c = sum(1 for _ in res.items("pages"))
            rows.append(_curate_row("curate end to end", res, pages_c))
            rows.append(("curate execution", pages_c, res.metrics.execution_s, None))
            with cu.Session(executor="ray") as session:
                session.run(recipe_pipeline(force), warm)  # untimed: actors up, models loaded and run once
                warm_res = session.run(recipe_pipeline(force), paths)
                rows.append(_curate_row("curate warm session", warm_res, sum(1 for _ in warm_res.items("pages"))))
            if not force and not args.curate_only:
                rows.append(("pymupdf4llm", *pymupdf4llm_run(paths), "no OCR"))
                rows.append(("mineru 4 flash", *mineru_run(paths), "no OCR models"))
        base = {r[0]: r for r in rows}["sequential loop"]
        base_rate = base[1] / base[2]
        print(f"\n{workload}: {len(paths)} files" + (" (force_ocr: every page through RapidOCR)" if force else ""))
        print(f"{'system':<20}{'pages':>7}{'seconds':>9}{'pages/s':>9}{'vs loop':>9}  note")
        results[workload] = []
        for name, pages, secs, note in rows:
            rate = pages / secs if secs else 0.0
            print(f"{name:<20}{pages:>7}{secs:>9.2f}{rate:>9.2f}{rate / base_rate:>8.2f}x  {note or ''}")
            results[workload].append({"system": name, "pages": pages, "seconds": secs, "pages_per_s": rate,
                                      "vs_loop": rate / base_rate, "note": note or ""})
    ray.shutdown()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
