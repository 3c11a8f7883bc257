"""Shared fixtures. `executor` parametrises the semantic suite over executors; the Ray
executor joins the list when it lands, so the same tests run against both."""

from __future__ import annotations

import pytest

EXECUTORS = ["local"]


@pytest.fixture(params=EXECUTORS)
def executor(request):
    return request.param
