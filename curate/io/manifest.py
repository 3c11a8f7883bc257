"""`out/_curate/manifest.json`: what produced the directory (recipe, pipeline, package
versions), the history of runs into it, and row counts per output and status."""

from __future__ import annotations

import json
import platform
import time
from importlib import metadata
from pathlib import Path

from curate.errors import CurateError
from curate.fingerprint import changed
from curate.io.commits import COMMITS, META, record_counts
from curate.io.location import location

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


MANIFEST = f"{META}/manifest.json"


def path(out) -> Path | str:
    return location(out).path(MANIFEST)


def load(out) -> dict | None:
    """The manifest of output directory `out` (a path, a URL or a location); None if it has none."""
    loc = location(out)
    return json.loads(loc.read_text(MANIFEST)) if loc.exists(MANIFEST) else None


def check(out, plan, resume: bool, fingerprints: dict[str, str], allow_changed_code: bool) -> list[str]:
    """Refuse a resume whose pipeline has another shape, or whose stages' code or init changed
    since the directory was started (unless `allow_changed_code`); returns the changed Calls."""
    man = load(out)
    if man is None or not resume:
        return []
    shape = describe(plan)
    if man["pipeline"] != shape:
        raise CurateError(f"{out} was written by a different pipeline ({man['pipeline']}) than this one "
                          f"({shape}); resume it with the pipeline that started it, or use a new directory")
    diff = changed(man.get("fingerprints", {}), fingerprints)
    if diff and not allow_changed_code:
        raise CurateError(f"{out} was written by other code: stage(s) {', '.join(diff)} changed (code or init) "
                          "since its rows were committed, and resuming would mix their old and new results; "
                          "resume with the code that started it, use a new directory, or pass --allow-changed-code "
                          "(allow_changed_code=True) to accept the mix")
    return diff


def start_run(out, run_id: str, plan, recipe: str | None, resume: bool,
              fingerprints: dict[str, str], changed_code: list[str], cluster: dict | None = None,
              inputs: list[dict] | None = None, retry: bool = False) -> dict:
    """Record a run that has started (its workers are up); a refused run leaves no entry."""
    loc = location(out)
    loc.mkdirs(META)
    man = load(loc)
    if man is None or not resume:
        man = {"format": FORMAT, "pipeline": describe(plan), "runs": [], "counts": {}}
    for r in man["runs"]:
        if r["status"] == "running":
            r["status"] = "interrupted"  # it never recorded its end: killed
    man.update(recipe=recipe, versions=versions(), fingerprints=fingerprints)
    entry = {"run": run_id, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "status": "running", "resumed": resume}
    if retry:
        entry["retry_failed"] = True
    if changed_code:
        entry["changed_code"] = changed_code  # accepted: allow_changed_code, or retry_failed
    if cluster is not None:
        entry["cluster"] = cluster  # which Ray: address, how it was reached, nodes, resources
    if inputs is not None:
        entry["inputs"] = inputs  # file inputs and their roots: a resume rooted elsewhere is refused
    man["runs"].append(entry)
    loc.write_json(MANIFEST, man)
    return man


def finish_run(out, man: dict, run_id: str, *, status: str, counts: dict, totals: dict,
               roots_done: int, roots_skipped: int, retried: int | None = None, error: str | None = None) -> None:
    """Record how a started run ended (with retry_failed: how many failed roots it replaced);
    names its metrics file only if it exists."""
    entry = next(r for r in man["runs"] if r["run"] == run_id)
    entry.update(status=status, finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"), rows=counts,
                 roots_done=roots_done, roots_skipped=roots_skipped)
    if retried is not None:
        entry["roots_retried"] = retried
    metrics = f"{META}/{run_id}/metrics.json"
    loc = location(out)
    if loc.exists(metrics):
        entry["metrics"] = metrics
    if error:
        entry["error"] = error
    man["counts"] = totals
    loc.write_json(MANIFEST, man)


def committed_counts(out) -> dict[str, dict[str, int]]:
    """Rows per output and status over every commit record: right even for a run that was
    killed before it could write its totals into the manifest."""
    loc = location(out)
    return record_counts([json.loads(loc.read_text(f"{COMMITS}/{n}")) for n in loc.list(COMMITS, "*.json")])
