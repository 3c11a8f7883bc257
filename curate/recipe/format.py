"""The recipe format: the keys each mapping may hold and what a good value is, shared by the
loader (`curate.recipe`), its checks (`recipe_check`) and `--set` overrides (`recipe_set`)."""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from typing import Any

from curate import defaults
from curate.dedup import options as dedup_options
from curate.dedup.options import ENTRY_KEYS as DEDUP_KEYS
from curate.io.sources import PARQUET_KEYS, SOURCE_KINDS
from curate.recipe.rerun_section import ENTRY_KEYS as RERUN_KEYS
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


# ---- the format's reference: each key's type, default and meaning ----------------------------
# docs/reference/recipe-keys.md is generated from these (docs/hooks/reference.py), and
# tests/test_docs.py checks that every key the sections above allow has its entry here.
@dataclass(frozen=True)
class KeyDoc:
    """One recipe key as its reference gives it: what a good value is, its default, its meaning."""

    type: str  # the check's own words (CHECKS) where the key has a check
    default: str  # Markdown; "required" where the key may not be left out
    meaning: str  # Markdown, one or two sentences


def _keys(*entries: tuple) -> dict[str, KeyDoc]:
    """(key, default, meaning[, type]) entries as key -> KeyDoc; a key without a type takes its
    check's description of a good value."""
    return {k: KeyDoc(rest[0] if rest else CHECKS[k][1], str(default), meaning)
            for k, default, meaning, *rest in entries}


_BATCH = ("batch_size", f"`{defaults.DEFAULT_BATCH_SIZE}`", "Items per call of the stage: a model stage batches, "
          "a cheap function can take many at once.")
_RETRIES = ("retries", f"`{defaults.DEFAULT_RETRIES}`", "Attempts of an isolated item after its batch failed, "
            "before the item is FAILED.")
_TIMEOUT = ("timeout_s", "`null` (no limit)", "Seconds one attempt on one batch may take; past it the attempt "
            "fails and its worker is replaced.")
_NAME = ("name", "the function's or method's name", "The Call's name in progress, metrics and causes.")
_INIT = ("init", "`{}`", "Keyword arguments of the class, built once per worker (`cls(**init)`).")
_MAPPING = "a mapping"  # the type of a key without a check in CHECKS
# section -> (heading, where it goes, the keys the format allows there): the reference's order
KEY_SECTIONS = {
    "top": ("Top level", "the recipe file's own keys", TOP_KEYS),
    "input": ("input:", "`input: {glob: ...}`: exactly one of these", SOURCE_KINDS),
    "input.parquet": ("input: parquet:", "`input: {parquet: {path: ..., column: ...}}`", PARQUET_KEYS),
    "step": ("steps:", "each step of the list: its `id` and exactly one operation", ("id", *OPS)),
    "op": ("An operation's own keys", "inside `expand:`, `map:`, `filter:`, `reduce:` or `broadcast:`",
           tuple(dict.fromkeys(k for keys in OP_KEYS.values() for k in keys))),
    "stage": ("A step with its own stage", "inside the operation, with `stage:`; the resource keys too",
              tuple(k for k in STAGE_KEYS if k not in RESOURCE_KEYS)),
    "pool_call": ("A step on a shared pool", "inside the operation, with `pool:`", POOL_CALL_KEYS),
    "pool": ("pools:", "`pools: {NAME: {...}}`: a pool several steps share; the resource keys too",
             tuple(k for k in POOL_KEYS if k not in RESOURCE_KEYS)),
    "resources": ("Resources", "what each worker holds: in a pool, or in a step with its own stage",
                  RESOURCE_KEYS),
    "output": ("outputs:", "`outputs: {NAME: STEP_ID}`, or `NAME: {step: STEP_ID, ...}` with options",
               OUTPUT_KEYS),
    "run": ("run:", "the options of `curate.run`", RUN_KEYS),
    "dedup": ("dedup:", "each entry of the list: a corpus-level dedup `curate run` runs after the job",
              DEDUP_KEYS),
    "rerun": ("rerun:", "`rerun: {STEP: {...}}`: what `curate rerun OUT --step STEP` runs", RERUN_KEYS),
}
KEY_DOCS: dict[str, dict[str, KeyDoc]] = {
    "top": _keys(
        ("name", "the file's stem", "The recipe's name, in messages about it (a rerun's recipe is named after it)."),
        ("description", "`\"\"`", "One line: what `curate recipes` lists beside the name."),
        ("domains", "required", "The levels, `CHILD: PARENT` (`null` for the one root), e.g. "
         "`{document: null, page: document}`.", "a mapping of names to a parent name or null"),
        ("pools", "`{}`", "Worker pools that several steps share (one model, several Calls), by name.", _MAPPING),
        ("steps", "required", "The dataflow, in any order: each step names the steps it reads "
         "(`source` is the input).", "a list of steps"),
        ("outputs", "required", "Output name -> the step whose values become `<output_dir>/<name>/`.", _MAPPING),
        ("input", "none: `--input` gives it", "What to read; `curate run --input` replaces it.", _MAPPING),
        ("extensions", "every file", "The file name endings an `--input DIR` expands to (any case, recursively)."),
        ("run", "`{}`", "Run options, as `curate.run` takes them.", _MAPPING),
        ("dedup", "`[]`", "Corpus-level dedups run after the job, each writing `<output_dir>/<output>_dedup/`.",
         "a list of mappings"),
        ("rerun", "`{}`", "Steps `curate rerun` can run again on committed rows, by name.", _MAPPING)),
    "input": _keys(
        ("glob", "-", "A pattern (`**` recurses); relative to the recipe's directory; a URL works too.", "text"),
        ("paths", "-", "A list of files, relative to the recipe's directory.", "a list of paths"),
        ("list_file", "-", "A text file of paths, one a line, relative to the list file.", "a path"),
        ("parquet", "-", "A column of a Parquet file: its values, or the files they name.", _MAPPING)),
    "input.parquet": _keys(
        ("path", "required", "The Parquet file, relative to the recipe's directory.", "a path"),
        ("column", "required", "The column whose values are the inputs.", "a column name"),
        ("paths", "`false`", "The column holds file paths (relative to the Parquet file's directory).",
         "true or false")),
    "step": _keys(
        ("id", "required", "The step's name: other steps read it (`from:`), outputs name it; not `source`.", "text"),
        ("expand", "-", "Each item becomes ordered children in the domain `into:` names.", _MAPPING),
        ("map", "-", "One value per item, in the same domain.", _MAPPING),
        ("filter", "-", "Keep an item or DROP it with a reason: the stage gives `(keep, reason)` per item.",
         _MAPPING),
        ("reduce", "-", "Each parent's children, in order, become one value of the parent.", _MAPPING),
        ("zip", "-", "Steps of one domain, combined into a tuple per item.", "a list of step ids"),
        ("broadcast", "-", "A parent's value, copied onto each of its children (`from:` the parent, `onto:` "
         "a child step).", _MAPPING)),
    "op": _keys(
        ("from", "required", "The step this one reads (`source`: the input).", "a step id"),
        ("into", "required (expand)", "The child domain the items expand into.", "a domain name"),
        ("on_child_failure", "`suppress`", "A reduce whose child FAILED: `suppress` the parent with that cause, "
         "or `drop` the failed child and reduce the rest."),
        ("onto", "required (broadcast)", "The child-domain step whose items receive the parent's value.",
         "a step id")),
    "stage": _keys(
        ("stage", "required (or `pool:`)", "The stage: a batched function, or a class built once per worker.",
         "an import path, `module:attribute`"),
        _INIT, _BATCH,
        ("replicas", f"one per GPU for a GPU stage, else `{defaults.DEFAULT_REPLICAS}`", "Workers of the stage."),
        _RETRIES, _NAME, _TIMEOUT),
    "pool_call": _keys(
        ("pool", "required (or `stage:`)", "The pool (under `pools:`) whose workers run this step.", "a pool name"),
        ("method", "`__call__`", "The method of the pool's class this step calls, `list -> list`."),
        _BATCH, _RETRIES, _NAME, _TIMEOUT),
    "pool": _keys(
        ("class", "required", "The class built once per worker; each step on the pool calls one of its methods.",
         "an import path, `module:Class`"),
        _INIT,
        ("replicas", f"one per GPU for a GPU pool, else `{defaults.DEFAULT_REPLICAS}`", "Workers of the pool.")),
    "resources": _keys(
        ("num_cpus", f"`{defaults.DEFAULT_NUM_CPUS}`, or the class's `default_resources`",
         "CPUs each worker holds (fractions are fine)."),
        ("num_gpus", "`0`, or the class's `default_resources`", "GPUs each worker holds (a fraction shares one)."),
        ("memory", "`null`", "Bytes of RAM reserved per worker (Ray's `memory`)."),
        ("resources", "`{}`", "Custom Ray resources per worker, e.g. `{accel: 1}`."),
        ("accelerator_type", "`null`", "Only nodes with this accelerator, e.g. `H100`."),
        ("runtime_env", "`null`", "The Ray runtime_env each worker's process starts with.")),
    "output": _keys(
        ("step", "required", "The step whose values the output keeps.", "a step id"),
        ("schema", "inferred", "Column -> Arrow type (`string`, `int64`, ...) instead of inferring it.", _MAPPING),
        ("files", "`{}`", "Column -> file extension (or `{ext: .png, name: TEMPLATE}`): those columns are written "
         "as files under `<output>/_files/<column>/` and hold their relative path.", _MAPPING)),
    "run": _keys(
        ("executor", f"`{defaults.DEFAULT_EXECUTOR}`", "`ray`: actor pools, payloads in the object store; "
         "`local`: threads in this process."),
        ("input_batch_size", f"`{defaults.DEFAULT_INPUT_BATCH_SIZE}`", "Inputs (roots) per input window."),
        ("inflight", "`null` (on demand)", "Input windows admitted at once; `null` admits while the pools are "
         "short of work, within the two budgets below."),
        ("max_live_entities", f"`{defaults.DEFAULT_ADMIT_ENTITIES}`", "Live entities (every level) that stop "
         "admitting inputs."),
        ("max_live_bytes", f"`{defaults.DEFAULT_ADMIT_BYTES}`", "Payload bytes live windows may pin that stop "
         "admitting inputs."),
        ("address", "`null` (a local Ray)", "The Ray cluster: `auto` or `HOST:PORT`."),
        ("ray_init", "`{}`", "Options of `ray.init` for a local Ray that curate starts."),
        ("pipeline_depth", "`2`", "Calls in flight per Ray actor: one computes while the next is shipped."),
        ("output_dir", "none: `--output` gives it", "The output directory or `s3://` prefix, relative to where "
         "the run starts."),
        ("resume", "`false`", "Continue a killed run, skipping committed inputs (`curate run --resume` does the "
         "same for one run)."),
        ("progress", "on a terminal", "Show progress per level (`curate run --no-progress` turns it off for one "
         "run)."),
        ("sink_options", "`{}`", f"Options of the Parquet writer: `shard_rows` (`{defaults.DEFAULT_SHARD_ROWS}`), "
         f"`flush_s` (`{defaults.DEFAULT_FLUSH_S}`), `row_group_rows` (`{defaults.DEFAULT_ROW_GROUP_ROWS}`).")),
    "dedup": _keys(
        ("output", "required", "The output to deduplicate, e.g. `documents`.", "an output name"),
        ("column", "required (or `embedding:`)", "Its text column, e.g. `markdown`.", "a column name"),
        ("threshold", f"`{dedup_options.DEFAULT_THRESHOLD}`", "Estimated Jaccard at which two texts are "
         "near-duplicates.", "a number in (0, 1]"),
        ("method", f"`{dedup_options.DEFAULT_METHOD}`", "`exact` (normalised text hash), `minhash` "
         "(near-duplicates) or `both`.", " or ".join(f"'{m}'" for m in dedup_options.METHODS)),
        ("shingle", f"`{dedup_options.DEFAULT_SHINGLE}`", "Words per shingle.", "a whole number >= 1"),
        ("bands", f"`{dedup_options.DEFAULT_BANDS}`", "LSH bands.", "a whole number >= 1"),
        ("rows", f"`{dedup_options.DEFAULT_ROWS}`", "Permutations per band (bands x rows in all).",
         "a whole number >= 1"),
        ("seed", f"`{dedup_options.DEFAULT_SEED}`", "Seed of the permutations.", "a whole number"),
        ("hash", f"`{dedup_options.DEFAULT_HASH}`", "MinHash signature scheme: curate's own, or datatrove's math.",
         " or ".join(f"'{h}'" for h in dedup_options.HASHES)),
        ("embedding", "`null`", "A vector column for semantic dedup (clips) instead of `column:`.", "a column name"),
        ("eps", f"`{dedup_options.DEFAULT_EPS}`", "Semantic dedup: duplicates where cosine >= 1 - eps.",
         "a number in [0, 1)")),
    "rerun": _keys(
        ("description", "`\"\"`", "What the rerun does, one line.", "text"),
        ("select", "required", "The output whose rows `--where` picks (default: every PRESENT row).", "an output name"),
        ("reads", "`[select]`", "The outputs whose committed rows the rerun reads.", "a list of output names"),
        ("steps", "required", "The rerun's steps; a bare id reuses the recipe's step of that id, with the "
         "`--set` overrides.", "a list of steps or step ids"),
        ("domains", "`{}`", "Domains added to the recipe's, e.g. a pick under the picked entity.", _MAPPING),
        ("outputs", "the recipe's outputs its steps write", "Output name -> step id, as `outputs:`.", _MAPPING)),
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
