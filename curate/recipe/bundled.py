"""Recipes run by name: `curate run pdf_to_markdown --input 'docs/*.pdf' --output out/`.

An argument names a recipe when it is not an existing file, has no path separator and no
`.yaml`/`.yml` suffix. The name is looked up as `NAME.yaml` in each directory on
`CURATE_RECIPES_PATH` (os.pathsep-separated, searched in order), then among the YAML files
shipped in the package `curate.recipes` (found with importlib.resources, so an installed wheel
works as well as a checkout). The first match wins, so a directory on the path can replace a
bundled recipe.

A recipe found by name lives in a directory the user did not name, so its relative input paths
would resolve against that directory: such a recipe needs `--input` unless its own input is an
absolute path (`input_needed` says so)."""

from __future__ import annotations

import atexit
import contextlib
import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curate.errors import CurateError

ENV_VAR = "CURATE_RECIPES_PATH"  # extra recipe directories, searched before the bundled ones
PACKAGE = "curate.recipes"  # the repo folder recipes/, installed as package data
SUFFIX = ".yaml"
BUNDLED = "bundled"  # Found.origin of a recipe shipped in PACKAGE
RUN_EXAMPLE = "--input 'docs/*.pdf' --output out/"

_extracted = contextlib.ExitStack()  # files importlib.resources had to extract (a zipped install)
atexit.register(_extracted.close)


@dataclass(frozen=True)
class Found:
    """A recipe found by name: its file, and where it was found (BUNDLED or a directory)."""

    name: str
    path: Path
    origin: str

    @property
    def bundled(self) -> bool:
        return self.origin == BUNDLED


def looks_like_name(arg: str) -> bool:
    """Whether `arg` may name a recipe: not an existing file, no path separator, no YAML suffix."""
    seps = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    return (bool(arg) and not any(s in arg for s in seps) and not arg.endswith((".yaml", ".yml"))
            and not Path(arg).is_file())


def search_path() -> list[Path]:
    """The directories of CURATE_RECIPES_PATH, in order (empty entries skipped)."""
    raw = os.environ.get(ENV_VAR, "")
    return [Path(p).expanduser() for p in raw.split(os.pathsep) if p.strip()]


def every_recipe() -> list[Found]:
    """Every recipe file on the search path, then the bundled ones; a name may appear twice
    (the first one is the one that runs)."""
    out = []
    for d in search_path():
        if d.is_dir():
            out += [Found(f.name[: -len(SUFFIX)], f, str(d)) for f in sorted(d.iterdir()) if _is_recipe(f.name, f)]
    out += _bundled()
    return out


def available() -> list[Found]:
    """The recipes runnable by name, one per name (the first found), sorted by name."""
    first: dict[str, Found] = {}
    for f in every_recipe():
        first.setdefault(f.name, f)
    return sorted(first.values(), key=lambda f: f.name)


def find(name: str) -> Found | None:
    """The recipe `name` runs, or None."""
    return next((f for f in every_recipe() if f.name == name), None)


def resolve(arg: str) -> tuple[Path, Found | None]:
    """The recipe file `arg` means, and how it was found by name (None: `arg` is a path).
    A name that no recipe has is a CurateError that lists what there is."""
    if not looks_like_name(arg):
        return Path(arg), None
    found = find(arg)
    if found is not None:
        return found.path, found
    names = [f.name for f in available()]
    close = difflib.get_close_matches(arg, names, 1)
    if close:
        fix = f"did you mean {close[0]!r}? (`curate recipes` lists them)"
    elif names:
        fix = f"the recipes runnable by name are: {', '.join(names)}"
    else:
        fix = (f"no recipe is bundled yet; give a recipe file's path, or put {arg}{SUFFIX} in a directory "
               f"named on {ENV_VAR}")
    raise CurateError(f"{arg!r} is neither a recipe file nor the name of a recipe; {fix}")


def description(path: Path) -> str:
    """A recipe's one-line `description:`, read without importing its stages ('' if none)."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return f"(cannot be read: {type(exc).__name__}; `curate validate {path}` says why)"
    text = data.get("description") if isinstance(data, dict) else None
    return text.strip().splitlines()[0] if isinstance(text, str) and text.strip() else ""


def listing() -> list[str]:
    """`curate recipes`: one line per recipe (name, description, and where it is from unless
    bundled), or one line saying there is none and how to add some."""
    found = available()
    if not found:
        where = f" and none on {ENV_VAR} ({os.pathsep.join(map(str, search_path()))})" if search_path() else ""
        return [(f"no recipes: none is bundled yet{where}; put NAME{SUFFIX} files in a directory and "
                 f"name it on {ENV_VAR} to run them with `curate run NAME {RUN_EXAMPLE}`")]
    width = max(len(f.name) for f in found)
    shadowed = _shadowed()
    lines = []
    for f in found:
        line = f"{f.name:<{width}}  {description(f.path) or '(no description: add description: to the recipe)'}"
        if not f.bundled:
            line += f"  [{f.path}" + ("; replaces the bundled one]" if f.name in shadowed else "]")
        lines.append(line)
    return lines


def missing_dirs() -> list[Path]:
    """Entries of CURATE_RECIPES_PATH that are not directories (a typo, probably)."""
    return [d for d in search_path() if not d.is_dir()]


def input_needed(recipe: Any, found: Found | None, arg: str) -> str | None:
    """Why the recipe cannot run without `--input` (None: it can): it has no input, or it was
    found by name and its input is relative to a directory the user did not name."""
    if recipe.input_spec is None:
        return (f"recipe {arg!r} has no input: say what to read on the command line, e.g. "
                f"curate run {arg} {RUN_EXAMPLE} (--input takes a file, a glob or a directory and may be repeated)")
    if found is not None and not input_is_absolute(recipe.input_spec):
        kind = next(iter(recipe.input_spec), "input")
        return (f"recipe {arg!r} was found by name ({found.path}) and its input ({kind}) is a relative path, "
                f"which would be read relative to {found.path.parent}; give the input on the command line, "
                f"e.g. curate run {arg} {RUN_EXAMPLE} (or make the recipe's input an absolute path)")
    return None


def input_is_absolute(spec: Any) -> bool:
    """Whether an input spec names its files by absolute paths only (list-file entries and
    Parquet path values are relative to that file, so only its own path counts)."""
    if not isinstance(spec, dict):
        return False
    if "glob" in spec:
        return isinstance(spec["glob"], str) and _absolute(spec["glob"])
    if "paths" in spec:
        return isinstance(spec["paths"], list) and all(isinstance(p, str) and _absolute(p) for p in spec["paths"])
    if "list_file" in spec:
        return isinstance(spec["list_file"], str) and os.path.isabs(spec["list_file"])
    if "parquet" in spec:
        v = spec["parquet"]
        return isinstance(v, dict) and isinstance(v.get("path"), str) and os.path.isabs(v["path"])
    return False


def _is_recipe(name: str, entry) -> bool:
    return name.endswith(SUFFIX) and not name.startswith(("_", ".")) and entry.is_file()


def _bundled() -> list[Found]:
    from importlib import resources

    root = resources.files(PACKAGE)
    out = []
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if _is_recipe(entry.name, entry):
            path = entry if isinstance(entry, Path) else _extracted.enter_context(resources.as_file(entry))
            out.append(Found(entry.name[: -len(SUFFIX)], Path(path), BUNDLED))
    return out


def _shadowed() -> set[str]:
    """Names on the search path that a bundled recipe also has."""
    bundled = {f.name for f in _bundled()}
    return {f.name for f in every_recipe() if not f.bundled and f.name in bundled}


def _absolute(path: str) -> bool:
    """An absolute path, or a URL (`s3://...`: it names the same objects from anywhere)."""
    from curate.io.remote import is_url

    return os.path.isabs(path) or is_url(path)
