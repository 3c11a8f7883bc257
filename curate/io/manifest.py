"""`out/_curate/manifest.json`: what produced the directory (recipe, pipeline, package
versions), the history of runs into it, and row counts per output and status."""

from __future__ import annotations

import json
import platform
import time
from importlib import metadata
from pathlib import Path

from curate.errors import CurateError
from curate.io.commits import META, write_json_atomic

FORMAT = 1


def describe(plan) -> dict:
    """The pipeline's shape: what a resumed run must match for its rows to belong here."""
    calls = [{"name": c.name, "kind": c.kind} for c in plan.calls]
    outputs = {name: plan.spaces[plan.slot_space[plan.output_slot(name)]].domain for name in plan.outputs}
    return {"calls": calls, "outputs": outputs}


def versions() -> dict:
    out = {"python": platform.python_version()}
    for pkg in ("curate", "ray", "pyarrow"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def path(out: Path) -> Path:
    return out / META / "manifest.json"


def load(out: Path) -> dict | None:
    p = path(out)
    return json.loads(p.read_text()) if p.exists() else None


def start_run(out: Path, run_id: str, plan, recipe: str | None, resume: bool) -> dict:
    """Record a run's start; a resumed run must have the pipeline shape of the directory."""
    (out / META).mkdir(parents=True, exist_ok=True)
    man = load(out)
    shape = describe(plan)
    if man is not None and resume and man["pipeline"] != shape:
        raise CurateError(f"{out} was written by a different pipeline ({man['pipeline']}) than this one "
                          f"({shape}); resume it with the pipeline that started it, or use a new directory")
    if man is None or not resume:
        man = {"format": FORMAT, "pipeline": shape, "runs": [], "counts": {}}
    for r in man["runs"]:
        if r["status"] == "running":
            r["status"] = "interrupted"  # it never recorded its end: killed
    man.update(recipe=recipe, versions=versions())
    man["runs"].append({"run": run_id, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "status": "running",
                        "resumed": resume})
    write_json_atomic(path(out), man)
    return man


def finish_run(out: Path, man: dict, run_id: str, *, status: str, counts: dict, totals: dict,
               roots_done: int, roots_skipped: int, error: str | None = None) -> None:
    entry = next(r for r in man["runs"] if r["run"] == run_id)
    entry.update(status=status, finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"), rows=counts,
                 roots_done=roots_done, roots_skipped=roots_skipped, metrics=f"{META}/{run_id}/metrics.json")
    if error:
        entry["error"] = error
    man["counts"] = totals
    write_json_atomic(path(out), man)
