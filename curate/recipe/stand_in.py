"""The stand-in a recipe check declares for a stage that did not import, so the rest of the
recipe is still checked and compiled without repeating that problem."""

from __future__ import annotations


DECLARATIONS = ("requires", "default_resources")  # stage attributes that are not methods


class _AnyMethod(type):
    """Metaclass of the stand-in for a stage that did not import: it has every method, so the
    compiler checks the rest of the pipeline without repeating that problem."""

    def __getattr__(cls, name: str):
        if name.startswith("__") or name in DECLARATIONS:  # a stand-in declares nothing
            raise AttributeError(name)
        return lambda self, batch: batch


def stand_in(name: str) -> type:
    """A class standing in for the stage `name` that did not import: it takes any init and has
    every method (each returns its batch)."""
    return _AnyMethod(name or "unresolved", (), {"__init__": lambda self, **kw: None,
                                                 "__call__": lambda self, batch: batch})
