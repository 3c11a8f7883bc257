"""`curate view` on a 100,000-row output against reading the output whole, side by side in one
run. The issue asks that a 100,000-row output open in under 2 s, reading Parquet lazily.

The output is built by a real curate run (local executor): ROWS // CHILDREN documents expand into
CHILDREN pages each, a map gives every page a row shaped like a PDF page's (NUMERIC numeric
signals, a route of 3, a language of 5, a ~MARKDOWN_CHARS-character `markdown` text, a `layout`
list of LAYOUT_BOXES small dicts), and a filter drops the pages scoring under DROP_UNDER (about
a tenth) with a reason; the pages are the one output. It is built once and kept under
benchmarks/results/.view-cache/ (the engine's seconds recorded beside it).

Each measurement is a fresh process (`--one MODE`), the modes round-robin over the rounds (their
order rotated each round); in each, pyarrow and the mode's modules (the viewer's: jinja2,
markdown-it, curate.view) are imported before the clock (`import_s`, reported apart) and its
peak RSS read (VmHWM):

- views: `Site(out)` + the first table page (`open`: what opening the output costs), then in
  the same warm process a facet + range filter page (`filter`), a sort by a numeric column,
  descending (`sort`), page 100 of that sort (`page100`) and one row's page (`row`);
- http: `curate.view.server.start(out)` and the first table page fetched with urllib (`http`);
- read_table: `curate.io.read.read_table(out, NAME)`, every column: what a viewer reading the
  Parquet eagerly would do;
- pandas: `pandas.read_parquet(OUT/NAME)`.

    python benchmarks/view.py [--rows N] [--rounds K] [--json PATH] [--quick]
    python -m benchmarks run view
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / "results" / ".view-cache"  # built outputs, reused by later runs (results/ is not committed)
BUILD_VERSION = 1  # bump when the generated rows change: a cached output of another version is rebuilt
NAME = "pages"
ROWS = 100_000  # the size: "a 100,000-row output opens in under 2 s"
QUICK_ROWS = 20_000
CHILDREN = 100  # pages a document
NUMERIC = 25  # numeric signal columns a row (floats and ints), as a PDF page's row carries
MARKDOWN_CHARS = 1_500  # about a born-digital page's Markdown
LAYOUT_BOXES = 10  # dicts in a row's `layout` list
DROP_UNDER = 0.1  # pages scoring under it are DROPPED (about a tenth)
ROUTES = ("text_layer", "ocr", "mixed")
LANGUAGES = ("en", "fr", "de", "es", "zh")
KINDS = ("text", "title", "table", "figure", "formula")
WORDS = ("the of and to in is that for it as with was on be by this are from at or an which have not "
         "page table figure result method data model value section number results used shown each where "
         "between these than both such however analysis sample using first two more also been can").split()
TARGET_OPEN_S = 2.0
FILTER = {"f.status": "present", "f.route": "ocr", "min.score": "0.5"}
SORT = {"sort": "ocr_confidence", "desc": "1"}
MODES = ("views", "http", "read_table", "pandas")
RESULT = "RESULT "


# ---- the output ----------------------------------------------------------------------------
def pages(docs: list[int]) -> list[list[tuple[int, int]]]:
    """A document's CHILDREN pages, each (document, page number)."""
    return [[(d, p) for p in range(CHILDREN)] for d in docs]


def page_rows(pages: list[tuple[int, int]]) -> list[dict]:
    """One PDF-page-like row for each page, the same every run (seeded by the page)."""
    return [_row(random.Random(d * CHILDREN + p)) for d, p in pages]


def _row(rng: random.Random) -> dict:
    text = " ".join(rng.choices(WORDS, k=MARKDOWN_CHARS // 6))[:MARKDOWN_CHARS]
    row = {"score": round(rng.random(), 4), "route": rng.choice(ROUTES), "language": rng.choice(LANGUAGES),
           "markdown": "# Page\n\n" + text, "chars": len(text), "words": text.count(" ") + 1,
           "lines": rng.randint(10, 60), "blocks": rng.randint(1, 20), "images": rng.randint(0, 4),
           "tables": rng.randint(0, 3), "formulas": rng.randint(0, 5), "width": 612.0, "height": 792.0}
    for name in ("ocr_confidence", "text_coverage", "image_coverage", "mean_font", "alpha_ratio", "digit_ratio",
                 "punct_ratio", "upper_ratio", "stopword_ratio", "mean_word_len", "line_repeat", "dup_ngram",
                 "perplexity", "quality", "layout_s")[: NUMERIC - 10]:
        row[name] = round(rng.random(), 4)
    row["layout"] = [{"kind": rng.choice(KINDS), "x0": rng.random() * 500, "y0": rng.random() * 700,
                      "x1": rng.random() * 600, "y1": rng.random() * 790} for _ in range(LAYOUT_BOXES)]
    return row


def keep(rows: list[dict]) -> list:
    return [(r["score"] >= DROP_UNDER, f"score {r['score']} < {DROP_UNDER}") for r in rows]


def pipeline():
    import curate as cu

    doc = cu.Domain("document")
    page = doc.child("page")
    pipe = cu.Pipeline(doc)
    made = pipe.source.expand(pages, into=page).map(cu.stage(page_rows, batch_size=CHILDREN))
    pipe.output(NAME, made.filter(cu.stage(keep, batch_size=CHILDREN)))
    return pipe


def build(rows: int) -> tuple[Path, dict]:
    """The output of `rows` rows, built by a curate run unless cached; (its path, how it was built)."""
    out = CACHE / f"rows{rows}-v{BUILD_VERSION}"
    marker = out / "_built.json"
    if marker.exists():
        return out, {**json.loads(marker.read_text()), "cached": True}
    import shutil

    import curate as cu

    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    cu.run(pipeline(), range(rows // CHILDREN), executor="local", output_dir=str(out), key=lambda d: f"doc{d:05d}",
           progress=False)
    info = {"rows": rows, "documents": rows // CHILDREN, "build_s": time.perf_counter() - t0,
            "parquet_bytes": sum(p.stat().st_size for p in (out / NAME).rglob("*.parquet")),
            "parts": len(list((out / NAME).glob("*.parquet")))}
    marker.write_text(json.dumps(info))
    return out, {**info, "cached": False}


# ---- one measurement in this fresh process --------------------------------------------------
def _peak_mib() -> float:
    """This process's peak RSS. VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss over
    exec, so a child of a big parent (the one that built the output) reports the parent's peak."""
    try:
        with open("/proc/self/status") as f:
            return next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _imports(mode: str) -> float:
    t0 = time.perf_counter()
    import pyarrow.compute  # noqa: F401
    import pyarrow.dataset  # noqa: F401
    import pyarrow.parquet  # noqa: F401

    if mode in ("views", "http"):
        import jinja2  # noqa: F401 (curate.view.render imports it when the first page is made)
        import markdown_it  # noqa: F401

        import curate.view.server  # noqa: F401
        import curate.view.views  # noqa: F401
    elif mode == "read_table":
        import curate.io.read  # noqa: F401
    else:
        import pandas  # noqa: F401
    return time.perf_counter() - t0


def _page(views, route: str, params: dict) -> tuple[float, object]:
    t0 = time.perf_counter()
    resp = views.get(route, params)
    secs = time.perf_counter() - t0
    if resp.status != 200:
        raise SystemExit(f"/{route} {params}: HTTP {resp.status}: {resp.body[-2000:].decode(errors='replace')}")
    return secs, resp


def one_views(out: str) -> dict:
    from curate.view.links import Links
    from curate.view.site import Site
    from curate.view.tables import Query
    from curate.view.views import Views

    t0 = time.perf_counter()
    views = Views(Site(out), Links())
    first, _ = _page(views, "table", {"o": NAME})
    r = {"open_s": time.perf_counter() - t0, "open_first_page_s": first, "peak_open_mib": _peak_mib()}
    r["filter_s"], _ = _page(views, "table", {"o": NAME, **FILTER})
    r["sort_s"], _ = _page(views, "table", {"o": NAME, **SORT})
    r["page100_s"], _ = _page(views, "table", {"o": NAME, **SORT, "page": "100"})
    table = views.site.table(NAME)
    r["row_s"], _ = _page(views, "row", {"o": NAME, "id": table.page(Query(page=100)).rows[0]["entity_id"]})
    r["matched_filter"] = table.page(Query.from_params(FILTER)).matched
    r["heavy"], r["light_columns"] = table.heavy, table.table.num_columns
    r["peak_mib"] = _peak_mib()
    return r


def one_http(out: str) -> dict:
    import urllib.request

    from curate.view.server import start

    t0 = time.perf_counter()
    server = start(out)
    try:
        with urllib.request.urlopen(f"{server.url}table?o={NAME}", timeout=120) as resp:
            body = resp.read()
        r = {"http_s": time.perf_counter() - t0, "bytes": len(body)}
        t1 = time.perf_counter()
        with urllib.request.urlopen(f"{server.url}table?o={NAME}&page=1", timeout=120) as resp:
            resp.read()
        r["http_next_s"] = time.perf_counter() - t1
    finally:
        server.shutdown()
        server.server_close()
    return {**r, "peak_mib": _peak_mib()}


def one_read(out: str, mode: str) -> dict:
    t0 = time.perf_counter()
    if mode == "read_table":
        from curate.io.read import read_table

        n = read_table(out, NAME).num_rows
    else:
        import pandas

        n = len(pandas.read_parquet(Path(out) / NAME))
    return {f"{mode}_s": time.perf_counter() - t0, "rows": n, "peak_mib": _peak_mib()}


def one(mode: str, out: str) -> dict:
    import_s = _imports(mode)
    base = _peak_mib()
    r = one_views(out) if mode == "views" else one_http(out) if mode == "http" else one_read(out, mode)
    return {"mode": mode, "import_s": import_s, "peak_after_imports_mib": base, **r}


def fresh(mode: str, out: Path) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--one", mode, "--out", str(out)], capture_output=True,
                          text=True, check=False)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT)), None)
    if line is None:
        raise RuntimeError(f"the {mode} process failed:\n{proc.stderr[-3000:]}")
    r = json.loads(line[len(RESULT):])
    secs = {k: round(v, 3) for k, v in r.items() if k.endswith("_s") and k != "import_s"}
    print(f"  {mode:<10} {secs} peak {r['peak_mib']:.0f} MiB", flush=True)
    return r


# ---- the rounds ------------------------------------------------------------------------------
STEPS = {"open": ("views", "open_s"), "filter": ("views", "filter_s"), "sort": ("views", "sort_s"),
         "page100": ("views", "page100_s"), "row": ("views", "row_s"), "http": ("http", "http_s"),
         "read_table": ("read_table", "read_table_s"), "pandas": ("pandas", "pandas_s")}


def measure(rows: int, rounds: int) -> dict:
    out, built = build(rows)
    print(f"output {out}: {built}", flush=True)
    runs = []
    for k in range(rounds):
        for mode in MODES[k % len(MODES):] + MODES[: k % len(MODES)]:
            runs.append({"round": k, **fresh(mode, out)})
    by = {m: sorted((r for r in runs if r["mode"] == m), key=lambda r: r["round"]) for m in MODES}
    steps = {}
    for step, (mode, key) in STEPS.items():
        xs = [r[key] for r in by[mode]]
        steps[step] = {"median_s": statistics.median(xs), "min_s": min(xs), "max_s": max(xs), "rounds": xs,
                       "import_s": statistics.median(r["import_s"] for r in by[mode])}
    ratio = {base: statistics.median(v["open_s"] / b[f"{base}_s"] for v, b in zip(by["views"], by[base]))
             for base in ("read_table", "pandas")}
    peak = {m: statistics.median(r["peak_open_mib" if m == "views" else "peak_mib"] for r in by[m]) for m in MODES}
    imports = {m: statistics.median(r["peak_after_imports_mib"] for r in by[m]) for m in MODES}
    return {"rows": rows, "rounds": rounds, "quick": rows < ROWS, "built": built, "steps": steps,
            "open_ratio": ratio, "peak_mib": peak, "peak_after_imports_mib": imports,
            "views": {k: by["views"][0][k] for k in ("heavy", "light_columns", "matched_filter")}, "runs": runs}


def tables(res: dict) -> list:
    from table import Table

    b = res["built"]
    t = Table(f"curate view: one output of {res['rows']:,} PDF-page rows ({b['parts']} part{'s' * (b['parts'] > 1)}, "
              f"{b['parquet_bytes'] / 2**20:.0f} MiB of Parquet), median of {res['rounds']} fresh processes",
              [("step", 34), ("median s", 9), ("range s", 14), ("/ read_table", 12), ("imports s", 10)])
    t.header()
    base = res["steps"]["read_table"]["median_s"]
    for step, s in res["steps"].items():
        t.add(step, f"{s['median_s']:.3f}", f"{s['min_s']:.3f}-{s['max_s']:.3f}", f"{s['median_s'] / base:.2f}",
              f"{s['import_s']:.2f}")
    opened = res["steps"]["open"]["median_s"]
    full = res["rows"] >= ROWS
    t.target(f"open (Site + first table page) at {res['rows']:,} rows, s", opened, f"< {TARGET_OPEN_S:g}"
             + ("" if full else " at 100,000 rows"), opened < TARGET_OPEN_S if full else None)
    p, imp = res["peak_mib"], res["peak_after_imports_mib"]
    t.notes.append(f"open / read_table {res['open_ratio']['read_table']:.2f}, open / pandas.read_parquet "
                   f"{res['open_ratio']['pandas']:.2f} (medians of the rounds' ratios); peak RSS after open "
                   f"{p['views']:.0f} MiB ({imp['views']:.0f} after imports), after read_table {p['read_table']:.0f} "
                   f"MiB ({imp['read_table']:.0f}), after pandas {p['pandas']:.0f} MiB ({imp['pandas']:.0f}): "
                   f"open / read_table {p['views'] / p['read_table']:.2f}")
    opened_cold = statistics.median(r["import_s"] + r["open_s"] for r in res["runs"] if r["mode"] == "views")
    t.notes.append(f"open with its imports (pyarrow, jinja2, markdown-it, curate.view): {opened_cold:.2f} s")
    v = res["views"]
    t.notes.append(f"the table reads {v['light_columns']} light columns and leaves out {', '.join(v['heavy'])}; "
                   f"the filter {FILTER} matches {v['matched_filter']:,} rows; sort: {SORT}; imports s: pyarrow "
                   "and the step's modules, before the clock")
    t.notes.append(f"built by a curate run (local executor) in {b['build_s']:.0f} s"
                   + (" (cached from an earlier run)" if b.get("cached") else ""))
    return [t]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=ROWS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS:,} rows, 2 rounds")
    ap.add_argument("--json")
    ap.add_argument("--one", choices=MODES, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        print(RESULT + json.dumps(one(a.one, a.out)), flush=True)
        return 0
    res = measure(QUICK_ROWS if a.quick else a.rows, 2 if a.quick else a.rounds)
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))
    sys.path.insert(0, str(HERE))
    for t in tables(res):
        print(t.markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
