"""`import curate` stays light: no Ray, torch, Arrow, media or model library loads until a stage
needs it. Checked in a fresh interpreter, since this test process may already hold them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("ray", "torch", "pyarrow", "pandas", "av", "decord", "fitz", "pymupdf", "vllm",
         "transformers", "mineru", "numpy", "scenedetect", "cv2")

ENTRY_POINTS = ("curate", "curate.modalities", "curate.models", "curate.recipes")

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
