"""A backend's engines by name: what each one imports, what each worker holds, how it is built.

A backend with several ways to run its model (transformers in the actor, vLLM in the actor, an
OpenAI-compatible server over HTTP) keeps one `Engines` registry. Each engine is registered
with the modules it imports and the resources a worker needs for it; the backend's
`requires(init)` and `default_resources(init)` read them, so the plan checks the right
packages and a recipe that names only `engine:` gets a worker sized for it. The backend builds
its engine with `ENGINES.build(name, ...)` instead of a chain of if/elif.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from curate.errors import CurateError


@dataclass(frozen=True)
class Engine:
    """One engine: how it is built, what it imports, what each worker holds for it."""

    name: str
    build: Callable[..., Any]
    modules: tuple[str, ...] = ()
    resources: dict = field(default_factory=dict)  # Resources fields, e.g. {"num_gpus": 1}


class Engines:
    """The engines of one backend, registered with `@ENGINES.register(name, modules=..., resources=...)`."""

    def __init__(self, backend: str, default: str):
        self.backend, self.default = backend, default
        self._engines: dict[str, Engine] = {}

    def register(self, name: str, *, modules: tuple[str, ...] = (), resources: dict | None = None):
        """Register the decorated class or function as engine `name`."""

        def add(build):
            self._engines[name] = Engine(name, build, tuple(modules), dict(resources or {}))
            return build

        return add

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._engines)

    def get(self, name: str | None) -> Engine:
        """The engine `name` (None: the default); a CurateError lists the known ones."""
        name = self.default if name is None else name
        if name not in self._engines:
            raise CurateError(f"{self.backend}: unknown engine {name!r}; use one of {', '.join(self._engines)}")
        return self._engines[name]

    def build(self, name: str | None, *args, **kwargs) -> Any:
        """Build engine `name` with the given arguments."""
        return self.get(name).build(*args, **kwargs)

    def requires(self, init: dict) -> tuple[str, ...]:
        """The modules the engine `init` names imports (for a backend's `requires`); none for an
        unknown engine (the backend's own option check reports it)."""
        engine = self._engines.get(init.get("engine", self.default))
        return engine.modules if engine else ()

    def default_resources(self, init: dict) -> dict:
        """What each worker holds for the engine `init` names (for a backend's `default_resources`)."""
        engine = self._engines.get(init.get("engine", self.default))
        return dict(engine.resources) if engine else {}
