"""`curate rerun OUT --step STEP [--set K=V] [--where COND]`: run one step again, and everything
downstream of it, on the rows an earlier run committed, writing a new version beside the old.

The recipe that wrote OUT (the manifest keeps its text) says how, under `rerun: STEP:`:
- `select`: the output whose rows the selection (`--where`) picks; only its PRESENT rows are
  picked (none given: all of them), and only the inputs that have a picked row run again;
- `reads`: the outputs whose rows each input gets (`curate.rerun.recorded.RecordedRoot`);
- `steps`: the rerun's dataflow. A bare id is the recipe's own step of that id, as it is (with
  the `--set` overrides: a new model for the captioner); the others rebuild the upstream values
  from the rows with the built-in stages of `curate.rerun.recorded` (a clip's span and file from
  its row, instead of probing, splitting and scoring the video again) and the modality's own
  (`curate.modalities.video.recorded`);
- `domains`: child domains the rerun's steps add (a pick's domain);
- `outputs`: the outputs it writes (default: the recipe's outputs whose step it runs).

The rows a rerun writes (`curate.rerun.versions`): those of the picked entities, their
descendants and their ancestors, each with its entity id, lineage and `version`; the readers then
give the latest version of every row, the others unchanged. `resume=True` continues a killed
rerun (the latest version, as it was started)."""

from __future__ import annotations

from dataclasses import dataclass

from curate.errors import CurateError


class RerunError(CurateError):
    """A rerun that cannot start: no recipe, no such rerun entry, nothing picked."""


@dataclass(frozen=True)
class RerunResult:
    version: int  # the version it wrote
    directory: str  # where: OUT/_versions/v<k>
    picked: int  # rows of the selected output it picked
    inputs: int  # inputs it ran again
    run: object  # the curate.RunResult of the rerun's run

    def summary(self) -> str:
        counts = "; ".join(f"{name}: " + ", ".join(f"{n} {st}" for st, n in sorted(c.items()))
                           for name, c in self.run.counts.items())
        return (f"version {self.version} in {self.directory}: {self.picked} rows picked in {self.inputs} inputs; "
                f"rows written: {counts or 'none'}")


def rerun(out, step: str, overrides: list[str] | tuple[str, ...] = (), where: str | None = None, *,
          resume: bool = False, progress: bool | None = None, **run_options) -> RerunResult:
    """Run rerun entry `step` of the recipe that wrote `out` (a path or URL) with `overrides`
    (`pools.captioner.init.model=DIR`, as `curate run --set`) on the rows `where` picks; the
    keyword arguments not named here go to `curate.run` (executor, address, ...)."""
    import curate as cu
    from curate.io import manifest
    from curate.io.location import location
    from curate.rerun import versions
    from curate.rerun.build import load_entry, recorded_roots

    loc = location(out)
    man = manifest.load(loc)
    if man is None:
        raise RerunError(f"{loc.spec} holds no curate output (no {manifest.MANIFEST}); give the output directory "
                         "of a `curate run`")
    made = versions.existing(loc)
    if resume:
        if not made:
            raise RerunError(f"{loc.spec} has no rerun to resume; run `curate rerun` without --resume")
        k = made[-1]
        entry = next(v for v in man.get("reruns", []) if v["version"] == k)
        step, overrides, where = entry["step"], entry["set"], entry["where"]
    else:
        k = (made[-1] if made else 1) + 1
    recipe, spec = load_entry(man, step, overrides, loc.spec)
    roots, picked, keep = recorded_roots(loc, spec, where, before=k - 1, runs=man.get("runs", []))
    if not roots:
        raise RerunError(f"the selection picks no PRESENT row of output {spec['select']!r} in {loc.spec}"
                         + (f" (--where {where!r})" if where else "") + "; nothing to run again")
    vloc = loc.child(versions.version_dir(k))
    versions.record_start(loc, {"version": k, "dir": versions.version_dir(k), "step": step, "set": list(overrides),
                                "where": where, "select": spec["select"], "picked": picked, "inputs": len(roots)})
    hook = _row_hook(keep, {r.key: r.index for r in roots}, k)
    opts = {**recipe.run_options, **run_options}
    opts.pop("output_dir", None)
    sink = {**(opts.pop("sink_options", None) or {}), "rows": hook}
    try:
        res = cu.run(recipe.pipeline, roots, key=lambda r: r.key, output_dir=vloc.spec, resume=resume,
                     progress=progress, recipe=recipe.text, sink_options=sink, **opts)
    except BaseException as exc:
        versions.record_end(loc, k, status="interrupted" if isinstance(exc, KeyboardInterrupt) else "failed",
                            error=str(exc)[:500])
        raise
    versions.record_end(loc, k, status="done", run=res.run_id, rows=res.counts)
    return RerunResult(k, str(vloc.spec), picked, len(roots), res)


def _row_hook(keep: dict[str, list[tuple]], index: dict[str, int], version: int):
    """The sink's row filter: a row of a picked entity, of a descendant or of an ancestor of one,
    with its input index as the run that wrote it gave it, and the version; others are left out
    (they are the rows of the version before, unchanged)."""

    def hook(_output: str, row: dict) -> dict | None:
        path = tuple(row["lineage"][1:])
        mine = keep.get(row["root_key"], ())
        if not any(p[:len(path)] == path or path[:len(p)] == p for p in mine):
            return None
        row["lineage"] = [index[row["root_key"]], *path]
        row["version"] = version
        return row

    return hook
