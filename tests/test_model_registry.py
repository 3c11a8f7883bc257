"""The engine registry a model backend chooses its engine from (models/registry.py)."""

from __future__ import annotations

import pytest

from curate.errors import CurateError
from curate.models.registry import Engines


def _registry() -> Engines:
    engines = Engines("ToyBackend", default="local")

    @engines.register("local", modules=("numpy",))
    class Local:
        def __init__(self, size):
            self.size = size

    @engines.register("served", resources={"num_cpus": 0.1})
    def served(size):
        return ("served", size)

    return engines


def test_an_engine_is_built_by_name_and_the_default_when_none_is_named():
    engines = _registry()
    assert engines.names == ("local", "served")
    assert engines.build(None, 3).size == 3
    assert engines.build("served", 4) == ("served", 4)


def test_an_engine_declares_its_modules_and_worker_resources():
    engines = _registry()
    assert engines.requires({}) == ("numpy",)
    assert engines.requires({"engine": "served"}) == ()
    assert engines.default_resources({"engine": "served"}) == {"num_cpus": 0.1}
    assert engines.default_resources({"engine": "nope"}) == {}


def test_an_unknown_engine_names_the_backend_and_the_known_ones():
    with pytest.raises(CurateError, match=r"ToyBackend: unknown engine 'gpu'; use one of local, served"):
        _registry().build("gpu", 1)
