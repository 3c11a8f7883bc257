"""A missing optional dependency says what needs it and the pip line to install it."""

from __future__ import annotations

import sys

import pytest

import curate as cu
from curate.deps import require


def test_missing_module_names_the_feature_and_the_install_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(cu.CurateError, match=r'Parquet output \(output_dir=\) needs pyarrow.*pip install "curate\[parquet\]"'):
        require("pyarrow.parquet", "Parquet output (output_dir=)")


def test_ray_executor_without_ray_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    pipe = cu.Pipeline(cu.Domain("doc"))
    pipe.output("out", pipe.source.map(lambda xs: xs))
    with pytest.raises(cu.CurateError, match=r'pip install "curate\[ray\]"'):
        cu.run(pipe, [1], executor="ray")
