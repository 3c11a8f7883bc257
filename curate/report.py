"""The run report: `report.png` (timeline, batch fill, throughput) and `summary.md`.

Both are drawn from `RunMetrics.to_dict()` alone, or from its JSON (`metrics.json`), so a report
can be written long after the run. matplotlib and numpy load only when a report is written."""

from __future__ import annotations

import re
from pathlib import Path

from curate.errors import CurateError
from curate.metrics import payload_files_line

INSTALL_HINT = 'pip install "curate[report]"'
FIGSIZE = (14, 10)  # inches; at DPI below, 1400x1000 px: readable on a laptop screen
DPI = 100
MERGE_ABOVE = 20_000  # up to this many batches each gets its own bar; above, bars in a lane merge
MERGE_GAP = 1 / 3000  # of the time axis: bars closer than about a pixel merge into one
MIN_BAR = 1 / 1200  # of the time axis: about a pixel, so a 5 µs batch in a long run still shows
THROUGHPUT_BINS = 50  # time bins: smooth enough to read, fine enough to show a stall
FILL_BINS = 10  # right-closed bins over (0, 1]: a full batch falls in (0.9, 1.0]
LANE_HEIGHT = 0.8  # of one Call's lane; the rest is the gap between lanes
MAX_WORKERS_LISTED = 16  # a pool with more workers is summarised (min / mean / max)
MAX_CAUSE_CHARS = 200  # a longer cause is cut in the table: the full text is in the outputs
STATUSES = ("present", "dropped", "failed", "suppressed")  # column order of the counts table
NUMBER = re.compile(r"-|-?[\d,]*\.?\d+")  # a cell that right-aligns: "1,234.5", or "-" for none


def write_report(metrics: dict, out_dir: str | Path, *, title: str = "",
                 counts: dict[str, dict[str, int]] | None = None,
                 causes: list[tuple[str, int, str]] | None = None) -> dict[str, Path]:
    """Write `report.png` and `summary.md` into `out_dir` (created if missing) and return their
    paths as {"png": ..., "summary": ...}. `metrics` is `RunMetrics.to_dict()`; `counts` gives
    rows per status for each output; `causes` the top failure causes as (cause, count, example
    input key). Raises CurateError, with the install line, when matplotlib is missing."""
    _matplotlib()  # first: without it, nothing is written
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"png": out / "report.png", "summary": out / "summary.md"}
    _draw(metrics, paths["png"], title)
    paths["summary"].write_text(summary_markdown(metrics, title=title, counts=counts, causes=causes),
                                encoding="utf-8")
    return paths


# ---- report.png ------------------------------------------------------------------------------
def _matplotlib():
    """The Agg canvas and Figure classes: no pyplot, so no global backend is switched."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise CurateError(f"the run report needs matplotlib, which is not installed; "
                          f"run: {INSTALL_HINT}") from exc
    return Figure, FigureCanvasAgg


def _draw(metrics: dict, path: Path, title: str) -> None:
    """Timeline on top; batch fill and throughput below, one colour per Call throughout."""
    Figure, FigureCanvasAgg = _matplotlib()
    from matplotlib import colormaps

    names = _call_names(metrics)
    cmap = colormaps["tab10" if len(names) <= 10 else "tab20"]
    colors = {n: cmap(i % cmap.N) for i, n in enumerate(names)}
    batches = _batches(metrics["timeline"])
    span = _span(metrics, batches)
    fig = Figure(figsize=FIGSIZE, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(2, 2, height_ratios=[1.25, 1])
    gantt, fill, rate = fig.add_subplot(grid[0, :]), fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 1])
    _draw_gantt(gantt, metrics, names, batches, colors, span)
    _draw_fill(fill, metrics, names, batches, colors)
    _draw_throughput(rate, metrics, names, batches, colors, span)
    fig.suptitle(f"{title or 'curate run'}: {metrics['roots']:,} roots, {metrics['grains']:,} grains "
                 f"in {metrics['wall_s']:.3f} s", fontsize=15, fontweight="bold")
    fig.savefig(path, dpi=DPI)


def _call_names(metrics: dict) -> list[str]:
    """Calls in `calls` order, then any that only the timeline names."""
    in_timeline = dict.fromkeys(entry[0] for entry in metrics["timeline"])
    return list(metrics["calls"]) + [n for n in in_timeline if n not in metrics["calls"]]


def _batches(timeline: list) -> dict[str, dict[str, tuple]]:
    """Call -> worker -> (starts, seconds, items) as arrays, from the timeline rows."""
    import numpy as np

    rows: dict[str, dict[str, list]] = {}
    for call, start, secs, items, worker in timeline:
        rows.setdefault(call, {}).setdefault(str(worker), []).append((start, secs, items))
    return {call: {w: tuple(np.asarray(col, dtype=float) for col in zip(*rs)) for w, rs in by_w.items()}
            for call, by_w in rows.items()}


def _span(metrics: dict, batches: dict) -> float:
    """Length of the time axis: the wall time, or the last batch's end if that is later."""
    ends = [float((s + d).max()) for by_w in batches.values() for s, d, _ in by_w.values()]
    return max([metrics["wall_s"] or 0.0, *ends]) or 1.0


def _worker_order(worker: str) -> tuple:
    """"pool/10" after "pool/9"."""
    head, _, tail = worker.rpartition("/")
    return (head, int(tail)) if tail.isdigit() else (worker, -1)


def _merge(starts, secs, gap: float):
    """Merge bars of one lane that overlap or lie within `gap` of each other."""
    import numpy as np

    order = np.argsort(starts, kind="stable")
    s, e = starts[order], (starts + secs)[order]
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > reach[:-1] + gap
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], reach[last] - s[first]


def _draw_gantt(ax, metrics, names, batches, colors, span) -> None:
    """One lane per Call, split into one row per worker; one bar per batch (merged when many)."""
    total = sum(len(s) for by_w in batches.values() for s, _, _ in by_w.values())
    merge = total > MERGE_ABOVE
    for lane, name in enumerate(names):
        by_worker = batches.get(name, {})
        height = LANE_HEIGHT / max(len(by_worker), 1)
        for k, worker in enumerate(sorted(by_worker, key=_worker_order)):
            starts, secs, _ = by_worker[worker]
            if merge:
                starts, secs = _merge(starts, secs, span * MERGE_GAP)
            y = lane - LANE_HEIGHT / 2 + k * height
            secs = secs.clip(min=span * MIN_BAR)
            ax.broken_barh(list(zip(starts.tolist(), secs.tolist())), (y, height * 0.85),
                           facecolors=colors[name], linewidth=0)
    ax.set_yticks(range(len(names)), [_lane_label(metrics, n) for n in names], fontsize=10)
    ax.set_ylim(len(names) - 0.5, -0.5)  # first Call on top
    ax.set_xlim(0, span * 1.01)
    ax.set_xlabel("seconds since run start")
    note = f", bars within {span * MERGE_GAP:.2g} s merged" if merge else ""
    ax.set_title(f"Timeline: {total:,} batches, one row per worker{note}", fontsize=12, loc="left")
    ax.grid(axis="x", alpha=0.3)
    _note_if_empty(ax, batches)
    _mark_times(ax, metrics)
    ax.legend(loc="lower right", bbox_to_anchor=(1, 1), ncol=2, fontsize=9, frameon=False)


def _lane_label(metrics: dict, name: str) -> str:
    """The Call's name, and its pool's replica count when it has more than one worker."""
    call = metrics["calls"].get(name, {})
    replicas = metrics["pools"].get(call.get("pool"), {}).get("replicas", 1)
    return f"{name} ×{replicas}" if replicas > 1 else name


def _note_if_empty(ax, batches: dict) -> bool:
    """Say "no batches ran" across an empty plot; True if it was empty."""
    if not batches:
        ax.text(0.5, 0.5, "no batches ran", transform=ax.transAxes, ha="center", va="center",
                fontsize=13, color="grey")
    return not batches


def _mark_times(ax, metrics: dict, labels: bool = True) -> None:
    """Vertical lines where start-up ended and where the first root was done."""
    startup, first = metrics["startup_s"] or 0.0, metrics["first_root_s"]
    ax.axvline(startup, color="dimgrey", linestyle="--", linewidth=1.2,
               label=f"start-up done ({startup:.3f} s)" if labels else "_")
    if first is not None:
        ax.axvline(first, color="black", linestyle=":", linewidth=1.5,
                   label=f"first root done ({first:.3f} s)" if labels else "_")


def _draw_fill(ax, metrics, names, batches, colors) -> None:
    """Share of each Call's batches per fill bin (items / batch_size), bars side by side."""
    import numpy as np

    width = 0.9 / FILL_BINS / max(len(names), 1)
    for i, name in enumerate(names):
        items = [it for _, _, it in batches.get(name, {}).values()]
        if not items:
            continue
        size = metrics["calls"].get(name, {}).get("batch_size") or 1
        fill = np.concatenate(items) / size
        idx = np.clip(np.ceil(fill * FILL_BINS - 1e-9).astype(int) - 1, 0, FILL_BINS - 1)
        share = np.bincount(idx, minlength=FILL_BINS) / len(fill)
        left = np.arange(FILL_BINS) / FILL_BINS + 0.05 / FILL_BINS + i * width
        ax.bar(left, share, width, align="edge", color=colors[name], label=name)
    ax.set_xlim(0, 1)
    ax.set_xticks(np.linspace(0, 1, FILL_BINS + 1))
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("batch fill (items / batch_size), bins (a, b]")
    ax.set_ylabel("share of the Call's batches")
    ax.set_title("Batch fill per Call", fontsize=12)
    ax.grid(axis="y", alpha=0.3)
    _note_if_empty(ax, batches)


def _draw_throughput(ax, metrics, names, batches, colors, span) -> None:
    """Items per second per Call over time; a batch's items spread evenly over its run."""
    import numpy as np

    edges = np.linspace(0, span, THROUGHPUT_BINS + 1)
    mids = (edges[:-1] + edges[1:]) / 2
    for name in names:
        cols = list(batches.get(name, {}).values())
        if not cols:
            continue
        starts, secs, items = (np.concatenate(c) for c in zip(*cols))
        per_bin = _items_per_bin(starts, secs, items, edges)
        ax.plot(mids, per_bin / (edges[1] - edges[0]), color=colors[name], linewidth=1.6, label=name)
    _mark_times(ax, metrics, labels=False)
    ax.set_xlim(0, span * 1.01)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("seconds since run start")
    ax.set_ylabel("items / s")
    ax.set_title(f"Throughput per Call ({THROUGHPUT_BINS} bins of {span / THROUGHPUT_BINS:.3g} s)",
                 fontsize=12)
    ax.grid(alpha=0.3)
    if not _note_if_empty(ax, batches):
        ax.legend(loc="best", fontsize=9, ncol=2 if len(names) > 6 else 1, framealpha=0.9)


def _items_per_bin(starts, secs, items, edges, chunk: int = 8192):
    """Items per time bin, each batch's items shared by the bins its run overlaps (chunked, so
    the batch-by-bin overlap matrix stays small); a zero-length batch counts where it starts."""
    import numpy as np

    lo, hi = edges[:-1], edges[1:]
    point = secs <= 0
    out, _ = np.histogram(starts[point], bins=edges, weights=items[point])
    s, d, n = starts[~point], secs[~point], items[~point]
    for i in range(0, len(s), chunk):
        cs, cd, cn = s[i:i + chunk, None], d[i:i + chunk, None], n[i:i + chunk, None]
        overlap = np.clip(np.minimum(cs + cd, hi) - np.maximum(cs, lo), 0, None)
        out += (overlap * (cn / cd)).sum(axis=0)
    return out


# ---- summary.md ------------------------------------------------------------------------------
def summary_markdown(metrics: dict, *, title: str = "", counts: dict[str, dict[str, int]] | None = None,
                     causes: list[tuple[str, int, str]] | None = None) -> str:
    """The markdown text of `summary.md` (see `write_report`)."""
    parts = [f"# {title or 'curate run report'}", _overview(metrics), "## Calls", _calls_table(metrics),
             "## Pools", _pools_table(metrics)]
    if counts is not None:
        parts += ["## Rows per output and status", _counts_table(counts)]
    if causes is not None:
        parts += ["## Top failure causes", _causes_table(causes)]
    parts += ["## Timeline", "![timeline](report.png)"]
    return "\n\n".join(parts) + "\n"


def _overview(m: dict) -> str:
    """Wall, start-up and execution seconds, roots, grains and rates, as a bullet list."""
    execution = m["wall_s"] - (m["startup_s"] or 0.0)
    rate = f"{m['grains'] / execution:,.1f}" if execution > 0 else "-"
    first = "-" if m["first_root_s"] is None else f"{m['first_root_s']:.3f} s"
    batches = sum(c["batches"] for c in m["calls"].values())
    lines = [f"- wall: {m['wall_s']:.3f} s (start-up {m['startup_s'] or 0.0:.3f} s, "
             f"execution {execution:.3f} s)",
             f"- roots: {m['roots']}; first root done at {first}",
             f"- grains: {m['grains']} ({rate} grains/s over execution)",
             f"- batches: {batches}; stale reports: {m['stale_reports']}"]
    if len(m["timeline"]) < batches:
        lines.append(f"- the timeline holds {len(m['timeline'])} of the {batches} batches")
    if m.get("files_written_by_workers") or m.get("files_through_writer"):
        lines.append(f"- {payload_files_line(m)}")
    return "\n".join(lines)


def _calls_table(m: dict) -> str:
    """One row per Call, in plan order."""
    rows = []
    for c in m["calls"].values():
        rate = f"{c['items'] / c['busy_s']:,.1f}" if c["busy_s"] > 0 else "-"
        rows.append([c["name"], c["pool"], c["batch_size"], c["batches"], c["items"], f"{c['batch_fill']:.2f}",
                     c["retries"], c["suppressed"], c["failed"], c["dropped"], f"{c['busy_s']:.3f}", rate])
    return _table(["call", "pool", "batch size", "batches", "items", "mean fill", "retries", "suppressed",
                   "failed", "dropped", "busy s", "items/s busy"], rows)


def _pools_table(m: dict) -> str:
    """One row per pool: its Calls and what each worker did."""
    rows = [[p["name"], p["replicas"], ", ".join(p["calls"]), _per_worker(p["worker_batches"], "{:d}"),
             _per_worker(p["worker_busy_s"], "{:.3f}")] for p in m["pools"].values()]
    return _table(["pool", "replicas", "calls", "batches per worker", "busy s per worker"], rows)


def _per_worker(values: list, fmt: str) -> str:
    """Every worker's value, or min / mean / max when there are too many to list."""
    if len(values) <= MAX_WORKERS_LISTED:
        return ", ".join(fmt.format(v) for v in values)
    mean = sum(values) / len(values)
    return f"min {fmt.format(min(values))}, mean {mean:.3f}, max {fmt.format(max(values))}"


def _counts_table(counts: dict[str, dict[str, int]]) -> str:
    """One row per output; the known statuses first, then any other the caller gave."""
    given = {s.lower() for by_status in counts.values() for s in by_status}
    columns = list(STATUSES) + sorted(given - set(STATUSES))
    rows = []
    for output, by_status in counts.items():
        lower = {s.lower(): n for s, n in by_status.items()}
        rows.append([output, *(lower.get(s, 0) for s in columns), sum(lower.values())])
    return _table(["output", *columns, "total"], rows) if rows else "_no outputs_"


def _causes_table(causes: list[tuple[str, int, str]]) -> str:
    """The top failure causes, most frequent first, as given."""
    rows = [[i, n, _clip(cause), f"`{_clip(key)}`"] for i, (cause, n, key) in enumerate(causes, 1)]
    return _table(["#", "count", "cause", "example input"], rows) if rows else "_no failures_"


def _clip(text: object) -> str:
    """One line of at most MAX_CAUSE_CHARS characters, without backticks (they end a code span)."""
    text = " ".join(str(text).replace("`", "'").split())
    return text if len(text) <= MAX_CAUSE_CHARS else text[:MAX_CAUSE_CHARS - 1] + "…"


def _table(headers: list[str], rows: list[list]) -> str:
    """A markdown table; numbers right-aligned, `|` in a cell escaped."""
    numeric = [bool(rows) and all(isinstance(r[i], (int, float)) or NUMBER.fullmatch(str(r[i])) for r in rows)
               for i in range(len(headers))]
    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join("---:" if num else "---" for num in numeric) + "|"]
    lines += ["| " + " | ".join(str(v).replace("|", "\\|").replace("\n", " ") for v in r) + " |" for r in rows]
    return "\n".join(lines)

