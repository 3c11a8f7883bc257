"""The vLLM engine tests skip only where vllm is not installed: an installed vllm that cannot be
imported (a CUDA torchvision beside a CPU torch) fails them with its import error."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ["tests/test_qwen_vl.py::test_vllm_engine", "tests/test_mineru25.py::test_vllm_engine"]
BROKEN = "vllm is broken here: libcudart.so.12: cannot open shared object file"


def test_a_broken_vllm_fails_the_engine_tests_instead_of_skipping_them(tmp_path):
    (tmp_path / "vllm").mkdir()
    (tmp_path / "vllm" / "__init__.py").write_text(f"raise ImportError({BROKEN!r})\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-m", "pytest", "-rs", "-p", "no:cacheprovider", *TESTS],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    summary = [line for line in out.splitlines() if re.match(r"\d+ (failed|passed|skipped)", line)]
    assert summary and summary[-1].startswith("2 failed in"), out  # pytest's closing line: no skip

    assert BROKEN in out
