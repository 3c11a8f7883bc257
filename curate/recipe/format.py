"""The recipe format: the keys each mapping may hold and what a good value is, shared by the
loader (`curate.recipe`), its checks (`recipe_check`) and `--set` overrides (`recipe_set`)."""

from __future__ import annotations

import difflib
import importlib
from typing import Any

from curate.io.sources import PARQUET_KEYS, SOURCE_KINDS
from curate.resources import Resources

# ---- the format: keys each mapping may hold, and what a good value is -------------------------
TOP_KEYS = ("name", "description", "domains", "pools", "steps", "outputs", "input", "extensions", "run", "dedup", "rerun")
OPS = ("expand", "map", "filter", "reduce", "zip", "broadcast")
OP_KEYS = {"expand": ("from", "into"), "map": ("from",), "filter": ("from",),
           "reduce": ("from", "on_child_failure"), "broadcast": ("from", "onto")}
RESOURCE_KEYS = Resources.names()  # num_cpus, num_gpus, memory, resources, accelerator_type, runtime_env
STAGE_KEYS = ("stage", "init", "batch_size", "replicas", "retries", "name", "timeout_s", *RESOURCE_KEYS)
POOL_CALL_KEYS = ("pool", "method", "batch_size", "retries", "name", "timeout_s")
POOL_KEYS = ("class", "init", "replicas", *RESOURCE_KEYS)
OUTPUT_KEYS = ("step", "schema", "files")  # an output as a mapping: {step: ID, schema: ..., files: ...}
RUN_KEYS = ("executor", "input_batch_size", "inflight", "max_live_entities", "max_live_bytes", "address", "ray_init", "pipeline_depth",
            "output_dir", "resume", "progress", "sink_options")


def _whole(lo: int):
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= lo


def _amount(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0


def _resources(v) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and _amount(n) for k, n in v.items())


def _extension(v) -> bool:
    """`.pdf`, `.tar.gz`: a dot, then a plain name (no separator, no wildcard)."""
    return isinstance(v, str) and len(v) > 1 and v[0] == "." and not any(c in v for c in "/\\*?[")


_TEXT = (lambda v: isinstance(v, str) and v != "", "text")
_DICT = (lambda v: isinstance(v, dict), "a mapping")
# name -> (check, what a good value is, an example): one table for steps, pools and run options.
CHECKS = {
    "batch_size": (_whole(1), "a whole number >= 1", "batch_size: 8"),
    "replicas": (_whole(1), "a whole number >= 1", "replicas: 2"),
    "retries": (_whole(0), "a whole number >= 0", "retries: 3"),
    "input_batch_size": (_whole(1), "a whole number >= 1", "input_batch_size: 16"),
    "inflight": (_whole(1), "a whole number >= 1", "inflight: 4"),
    "max_live_entities": (_whole(1), "a whole number >= 1", "max_live_entities: 500000"),
    "max_live_bytes": (_whole(1), "a whole number of bytes >= 1", "max_live_bytes: 2147483648"),
    "pipeline_depth": (_whole(1), "a whole number >= 1", "pipeline_depth: 2"),
    "num_cpus": (_amount, "a number >= 0", "num_cpus: 0.25"),
    "num_gpus": (_amount, "a number >= 0", "num_gpus: 1"),
    "memory": (lambda v: v is None or (_amount(v) and v > 0), "a number of bytes > 0 or null", "memory: 8000000000"),
    "accelerator_type": (lambda v: v is None or (isinstance(v, str) and v != ""), "a name or null",
                         "accelerator_type: H100"),
    "timeout_s": (lambda v: v is None or (_amount(v) and v > 0), "a number of seconds > 0 or null", "timeout_s: 600"),
    "resources": (_resources, "a mapping of resource names to numbers >= 0", "resources: {accel: 1}"),
    "init": (*_DICT, "init: {model: path/to/weights}"),
    "ray_init": (*_DICT, "ray_init: {num_cpus: 8}"),
    "sink_options": (*_DICT, "sink_options: {shard_rows: 100000}"),
    "runtime_env": (lambda v: v is None or isinstance(v, dict), "a mapping or null", "runtime_env: {pip: [x]}"),
    "name": (*_TEXT, "name: ocr"),
    "description": (lambda v: isinstance(v, str) and v.strip() != "" and "\n" not in v.strip(), "one line of text",
                    "description: PDF files to one Markdown document each"),
    "extensions": (lambda v: isinstance(v, list) and v != [] and all(_extension(e) for e in v),
                   "a list of file name endings, each starting with '.'", "extensions: [.pdf]"),
    "method": (*_TEXT, "method: layout"),
    "address": (*_TEXT, "address: 10.0.0.1:6379"),
    "output_dir": (*_TEXT, "output_dir: out/"),
    "executor": (lambda v: v in ("ray", "local"), "'ray' or 'local'", "executor: ray"),
    "on_child_failure": (lambda v: v in ("suppress", "drop"), "'suppress' or 'drop'", "on_child_failure: drop"),
    "resume": (lambda v: isinstance(v, bool), "true or false", "resume: true"),
    "progress": (lambda v: isinstance(v, bool), "true or false", "progress: true"),
}



def known_keys(trail: tuple) -> tuple[str, ...] | None:
    """The keys the format allows in the mapping at `trail` (None: any, e.g. domain names)."""
    if trail in ((), ("run",), ("input",), ("input", "parquet")):
        return {(): TOP_KEYS, ("run",): RUN_KEYS, ("input",): SOURCE_KINDS, ("input", "parquet"): PARQUET_KEYS}[trail]
    if len(trail) == 2 and trail[0] in ("pools", "steps"):
        return POOL_KEYS if trail[0] == "pools" else ("id", *OPS)
    if len(trail) == 3 and trail[0] == "steps" and trail[2] in OP_KEYS:
        return tuple(dict.fromkeys(OP_KEYS[trail[2]] + STAGE_KEYS + POOL_CALL_KEYS))
    return None


def hint_known(name: Any, known, fix: str = "") -> str:
    """'did you mean X?' for a near miss, else `fix`, else the list of known names."""
    close = difflib.get_close_matches(str(name), [str(k) for k in known], 1)
    if close:
        return f"did you mean {close[0]!r}?"
    return fix or f"use one of: {', '.join(map(str, known))}"


def _not_in_curate(mod_name: str) -> str:
    """Why a `curate.` module is missing: an installation that lacks part of curate (a wheel built
    without a subpackage) or a misspelt name (the closest module that exists, if any); never a
    file the user should copy next to the recipe."""
    import importlib.util
    import pkgutil

    import curate

    parent, _, leaf = mod_name.rpartition(".")
    try:
        spec = importlib.util.find_spec(parent) if parent else None
    except ImportError:  # the parent package itself is missing
        spec = None
    where = spec.submodule_search_locations if spec else None
    close = difflib.get_close_matches(leaf, [m.name for m in pkgutil.iter_modules(where)] if where else [], n=1)
    typo = f" or the name is misspelt (did you mean {parent}.{close[0]}?)" if close else ""
    return (f"module {mod_name!r} is missing from this installation of curate ({curate.__path__[0]}): the "
            f"installation is incomplete{typo}. Reinstall curate: pip install --force-reinstall "
            "\"curate[EXTRA]\" from its wheel or checkout (pip install -e . in a checkout)")


def find_loops(edges: dict[str, list[str]]) -> list[list[str]]:
    """The cycles of a graph given as node -> the nodes it points to (one per back edge)."""
    loops, state = [], {}  # state: 1 while on the current path, 2 once finished

    def visit(n: str, trail: list[str]) -> None:
        state[n] = 1
        for m in edges.get(n, ()):
            if state.get(m) == 1:
                loops.append([*trail, n][[*trail, n].index(m):])
            elif m in edges and m not in state:
                visit(m, [*trail, n])
        state[n] = 2

    for n in edges:
        if n not in state:
            visit(n, [])
    return loops


def import_path(spec: Any) -> tuple[Any, str | None]:
    """The object `module:attribute` names, or (None, why not): naming the module and the
    attribute, with a fix."""
    if not isinstance(spec, str) or spec.count(":") != 1 or not all(spec.split(":")):
        return None, f"{spec!r} is not an import path; write module:attribute, e.g. stage: \"books:split_chapters\""
    mod_name, attr = spec.split(":")
    try:
        obj = importlib.import_module(mod_name)
    except ModuleNotFoundError as exc:
        if exc.name and (mod_name == exc.name or mod_name.startswith(exc.name + ".")):
            if mod_name.split(".")[0] == "curate":
                return None, f"{spec!r}: {_not_in_curate(mod_name)}"
            fix = (f"put {mod_name.replace('.', '/')}.py next to the recipe or in the working directory, "
                   "or install the package that has it")
        else:
            fix = f"importing it needs module {exc.name!r}: install that where the recipe runs"
        return None, f"{spec!r}: module {mod_name!r} (for attribute {attr!r}) is not found; {fix}"
    except Exception as exc:  # the module itself is broken: say so, with its error
        return None, f"{spec!r}: importing module {mod_name!r} raised {type(exc).__name__}: {exc}; fix that module"
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(obj) if not n.startswith("_")]
            return None, (f"{spec!r}: module {mod_name!r} has no attribute {attr!r}; "
                          f"{hint_known(part, names, f'define {part} in {mod_name}')}")
        obj = getattr(obj, part)
    return obj, None
