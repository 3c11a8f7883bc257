"""A recipe's `rerun:` section, as the recipe check sees it: its shape, before any entry is built
(`curate.rerun.build` builds each entry as a recipe of its own; `curate validate` does)."""

from __future__ import annotations

ENTRY_KEYS = ("description", "select", "reads", "steps", "domains", "outputs")
EXAMPLE = ("rerun: {captions: {select: clips, reads: [clips, videos], steps: [...]}}; see "
           "recipes/video_captions.yaml")


def entry_problems(section, at) -> list[str]:
    """Problems of a recipe's `rerun:` section (`at(path, key)`: its FILE:LINE)."""
    if section is None:
        return []
    if not isinstance(section, dict):
        return [f"{at(('rerun',))}: rerun: is a {type(section).__name__}; give a mapping of step names to "
                f"entries, e.g. {EXAMPLE}"]
    out = []
    for step, entry in section.items():
        where = at(("rerun", step))
        if not isinstance(entry, dict):
            out.append(f"{where}: rerun entry {step!r} is not a mapping; e.g. {EXAMPLE}")
            continue
        out += [f"{at(('rerun', step, k), True)}: rerun entry {step!r} has an unknown key {k!r}; the keys: "
                f"{', '.join(ENTRY_KEYS)}" for k in entry if k not in ENTRY_KEYS]
        if not isinstance(entry.get("select"), str):
            out.append(f"{where}: rerun entry {step!r} needs select: OUTPUT (the output whose rows --where picks)")
        if not isinstance(entry.get("steps"), list) or not entry.get("steps"):
            out.append(f"{where}: rerun entry {step!r} needs steps: a list of steps (a bare id reuses the recipe's)")
        if not isinstance(entry.get("reads", []), list):
            out.append(f"{where}: rerun entry {step!r}: reads: is a list of output names")
    return out
