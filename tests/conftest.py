"""Shared fixtures. `executor` parametrises the semantic suite over executors, so the same
tests run against the local and the Ray executor; one Ray instance serves the whole session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from recorders import LocalRecorder, RayRecorder

EXECUTORS = ["local", "ray"]

# A background job of a non-interactive shell (scripts/test runs the suite in two such pytest
# processes) starts with SIGINT ignored, and so would every job the tests start: curate then
# rightly leaves Ctrl-C alone, and the tests of Ctrl-C could not send one. Python's own default
# here, and in the children (a handled signal is reset to the default at exec).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
TESTS = str(Path(__file__).resolve().parent)


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray for the session; its workers import test modules from tests/."""
    import ray

    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [TESTS, os.environ.get("PYTHONPATH")]))
    # 4 logical CPUs on a 2-core machine: pools ask for fractions, and a test's actors may still
    # be shutting down when the next test asks for its own.
    if not ray.is_initialized():
        ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> str:
    """The tiny Qwen2.5-VL, built once a session by `python -m curate.models.tiny_checkpoints PATH`
    in a subprocess, so torch stays out of the test process (whose peak memory some tests check)."""
    path = tmp_path_factory.mktemp("tiny-qwen25vl")
    proc = subprocess.run([sys.executable, "-m", "curate.models.tiny_checkpoints", str(path)], capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return str(path)


@pytest.fixture(scope="session")
def _ray_recorder(ray_cluster):
    return RayRecorder.start()


@pytest.fixture(params=EXECUTORS)
def executor(request):
    if request.param == "ray":
        request.getfixturevalue("ray_cluster")
    return request.param


@pytest.fixture
def recorder(request, executor):
    """An event log the stages of this test can write to, wherever they run."""
    rec = request.getfixturevalue("_ray_recorder") if executor == "ray" else LocalRecorder()
    rec.reset()
    return rec


@pytest.fixture
def ray_recorder(_ray_recorder):
    """The Ray event log alone, for tests that only run on Ray."""
    _ray_recorder.reset()
    return _ray_recorder
