"""A rerun's recipe and inputs: the `rerun: STEP:` entry of the recipe that wrote the output turned
into a recipe of its own, and each input's committed rows."""

from __future__ import annotations

import tempfile
from pathlib import Path


def load_entry(man: dict, step: str, overrides, out: str):
    """The rerun's Recipe and its entry (with `reads` filled in) from the manifest's recipe text
    and the `--set` overrides (applied to the recipe, as `curate run --set` would)."""
    from curate.recipe import load_recipe

    text = man.get("recipe")
    if not text:
        from curate.rerun import RerunError

        raise RerunError(f"{out} was written by curate.run from Python, which records no recipe; a rerun reruns a "
                         "recipe's step: write the pipeline as a recipe with a rerun: entry, or call curate.run again")
    with tempfile.TemporaryDirectory(prefix="curate-rerun-") as tmp:
        src = Path(tmp, "recipe.yaml")
        src.write_text(text, encoding="utf-8")
        data = load_recipe(src, list(overrides), input_optional=True, input_given=True).data
    spec = _entry(data, step, out)
    return compile_entry(data, spec, step), spec


def compile_entry(data: dict, spec: dict, step: str):
    """The Recipe of rerun entry `step` of recipe `data` (RecipeError naming the entry)."""
    import yaml

    from curate.recipe import RecipeError, load_recipe

    from curate.rerun import RerunError

    try:
        rerun = _recipe_data(data, spec, step)
    except RerunError as exc:  # a recipe's problem: what `curate validate` reports as one
        raise RecipeError([str(exc)], f"rerun entry {step!r}") from None
    with tempfile.TemporaryDirectory(prefix="curate-rerun-") as tmp:
        made = Path(tmp, f"rerun-{step}.yaml")
        made.write_text(yaml.safe_dump(rerun, sort_keys=False), encoding="utf-8")
        try:
            return load_recipe(made, (), input_optional=True, input_given=True)
        except RecipeError as exc:
            raise RecipeError([f"rerun entry {step!r} of recipe {data.get('name')!r}: {p}" for p in exc.problems],
                              f"rerun entry {step!r}") from None


def compile_entries(data: dict) -> list[str]:
    """Compile every rerun entry of recipe `data` (what `curate validate` checks); their names."""
    for step in data.get("rerun") or {}:
        compile_entry(data, _entry(data, step, "its output"), step)
    return list(data.get("rerun") or {})


def _entry(data: dict, step: str, out: str) -> dict:
    from curate.rerun import RerunError

    entries = data.get("rerun") or {}
    if step is None:
        raise RerunError(f"give --step STEP, the step to run again: recipe {data.get('name')!r}, which wrote {out}, "
                         f"has rerun entries for {', '.join(sorted(entries)) or 'no step (it has no rerun: section)'}")
    if step not in entries:
        have = ", ".join(sorted(entries)) or "none"
        raise RerunError(f"recipe {data.get('name')!r}, which wrote {out}, has no rerun entry for step {step!r} (its "
                         f"entries: {have}); give one of those to --step, or add rerun: {step}: to the recipe")
    spec = dict(entries[step])
    spec.setdefault("reads", [spec["select"]])
    for name in [spec["select"], *spec["reads"]]:
        if name not in data.get("outputs", {}):
            raise RerunError(f"rerun entry {step!r} reads output {name!r}, which the recipe does not write; its "
                             f"outputs: {', '.join(data.get('outputs', {}))}")
    return spec


def _recipe_data(data: dict, spec: dict, step: str) -> dict:
    """The rerun as recipe data: the recipe's domains, pools and run options, the entry's steps
    (a bare id: the recipe's step of that id) and outputs, no input."""
    from curate.rerun import RerunError

    by_id = {s.get("id"): s for s in data.get("steps", []) if isinstance(s, dict)}
    steps = []
    for s in spec["steps"]:
        if isinstance(s, str):
            if s not in by_id:
                raise RerunError(f"rerun entry {step!r} reuses step {s!r}, which the recipe does not have")
            s = by_id[s]
        steps.append(s)
    ids = {s.get("id") for s in steps if isinstance(s, dict)}
    outputs = spec.get("outputs")
    if outputs is None:
        outputs = {name: o for name, o in data.get("outputs", {}).items()
                   if (o if isinstance(o, str) else o.get("step")) in ids}
    plain = {}
    for name, o in outputs.items():  # a file column keeps the path it has: the rerun writes no files
        plain[name] = o if isinstance(o, str) else {k: v for k, v in o.items() if k != "files"}
    run = {k: v for k, v in (data.get("run") or {}).items() if k not in ("output_dir", "resume")}
    out = {"name": f"{data.get('name', 'recipe')}.rerun.{step}", "domains": {**data.get("domains", {}),
                                                                           **spec.get("domains", {})}}
    if data.get("pools"):
        out["pools"] = data["pools"]
    out.update(steps=steps, outputs=plain)
    if run:
        out["run"] = run
    return out


def recorded_roots(loc, spec: dict, where: str | None, before: int, runs: list[dict]):
    """The rerun's inputs: a RecordedRoot per input with a picked row (in their input order),
    the number of rows picked, and per root key the ordinal paths of its picked entities.
    `runs`: the manifest's runs (their inputs say where each root's file is)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from curate.io.read import read_table
    from curate.names import LINEAGE_COLUMNS
    from curate.rerun.recorded import RecordedRoot, RecordedRow
    from curate.rerun.select import selected_ids

    table = read_table(loc, spec["select"], version=before)
    picked = selected_ids(table.filter(pc.equal(table.column("status"), "present")), where) if table.num_rows else set()
    keep: dict[str, list[tuple]] = {}
    index: dict[str, int] = {}
    for r in table.select(["root_key", "entity_id", "lineage"]).to_pylist():
        if r["entity_id"] in picked:
            keep.setdefault(r["root_key"], []).append(tuple(r["lineage"][1:]))
            index[r["root_key"]] = r["lineage"][0]
    rows: dict[str, dict[str, list]] = {key: {} for key in keep}
    source = _sources(runs, keep)
    wanted = pa.array(list(keep), pa.string())
    for name in spec["reads"]:
        files_dir = loc.child(name).absolute()
        t = table if name == spec["select"] else read_table(loc, name, version=before)  # each read once
        if not t.num_rows:
            continue
        t = t.filter(pc.is_in(t.column("root_key"), value_set=wanted))
        for r in sorted(t.to_pylist(), key=lambda r: r["lineage"]):
            fields = {k: v for k, v in r.items() if k not in LINEAGE_COLUMNS and k != "version"}
            rows[r["root_key"]].setdefault(name, []).append(RecordedRow(
                r["entity_id"], len(r["lineage"]) - 1, r["ordinal"], r["status"], r["cause"], fields,
                r["entity_id"] in picked, files_dir, source.get(r["root_key"])))
    roots = [RecordedRoot(key, index[key], {name: rows[key].get(name, []) for name in spec["reads"]})
             for key in sorted(keep, key=index.__getitem__)]
    return roots, len(picked), keep


def _sources(runs: list[dict], keys) -> dict[str, str]:
    """Root key -> the input file it was read from: its path relative to an input root the
    manifest's `runs` name (the newest run first), where that file is there (its content is
    checked by the stage that opens it)."""
    from curate.io.remote import is_url

    roots = [i["root"] for run in reversed(runs) for i in run.get("inputs") or ()]
    out = {}
    for key in keys:
        rel = key.rpartition("@")[0]
        for root in roots:
            path = f"{root.rstrip('/')}/{rel}"
            if is_url(path) or Path(path).is_file():
                out[key] = path
                break
    return out
