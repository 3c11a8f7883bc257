"""`Resources`: what each worker of a pool holds for the whole run. One value, used by stages and
pools (`cu.stage(..., num_gpus=1)` or `resources=cu.Resources(...)`), the compiler (its checks),
recipes (their keys are its fields), the feasibility check and the executors (Ray actor
options). A new field is added here and nowhere else."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from curate import defaults

CUSTOM = "resources"  # the field of custom resources, named as Ray names it


@dataclass(frozen=True)
class Resources:
    """Per worker: CPUs (fractions fine), GPUs (fractions share a GPU; more than 1 for a
    tensor-parallel worker), memory in bytes, custom resources, an accelerator type, and the
    Ray runtime_env its process starts with."""

    num_cpus: float = defaults.DEFAULT_NUM_CPUS
    num_gpus: float = 0
    memory: float | None = None  # bytes of RAM reserved per worker (Ray's `memory`)
    resources: Mapping[str, float] = field(default_factory=dict)  # custom resources, e.g. {"accel": 1}
    accelerator_type: str | None = None  # e.g. "H100": only nodes with that accelerator
    runtime_env: Mapping | None = None  # e.g. {"env_vars": {...}, "pip": [...]}

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The option names: the fields, as stage, pool and recipe keys."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def of(cls, spec: Resources | Mapping | None = None, **options: Any) -> Resources:
        """A Resources from a Resources (or, as Ray has it, a dict of custom resources) and
        option keywords that replace its fields. Raises TypeError for an unknown keyword."""
        unknown = sorted(set(options) - set(cls.names()))
        if unknown:
            raise TypeError(f"unknown resource option(s) {', '.join(map(repr, unknown))}; resource options "
                            f"are {', '.join(cls.names())}")
        if isinstance(spec, Resources):
            base = spec
        elif spec is None:
            base = cls()
        else:
            base = cls(resources=dict(spec))
        given = {k: (dict(v) if k == CUSTOM and v is not None else v) for k, v in options.items()}
        return dataclasses.replace(base, **given) if given else base

    @classmethod
    def declared(cls, target: Any, init: Mapping | None = None) -> Resources:
        """What a stage class or function declares each worker holds by default: its
        `default_resources` attribute, a mapping of field -> value or a callable taking the
        stage's init dict and giving one (when it depends on an option, such as a model
        backend's engine or device). The fields a stage or pool is given replace these."""
        decl = getattr(target, "default_resources", None)
        if callable(decl):
            decl = decl(dict(init or {}))
        if not decl:
            return cls()
        try:
            return cls.of(None, **dict(decl))
        except TypeError as exc:
            raise TypeError(f"{getattr(target, '__name__', target)}.default_resources: {exc}") from None

    @property
    def uses_gpu(self) -> bool:
        return _number(self.num_gpus) and self.num_gpus > 0

    def problems(self) -> list[str]:
        """What is wrong with these values, each with a fix."""
        out = []
        for name in ("num_cpus", "num_gpus"):
            v = getattr(self, name)
            if not _number(v) or v < 0:
                out.append(f"{name}={v!r}; it must be a number >= 0 (fractions are fine)")
        if self.memory is not None and (not _number(self.memory) or self.memory <= 0):
            out.append(f"memory={self.memory!r}; it must be a number of bytes > 0, or None")
        if not isinstance(self.resources, Mapping) or not all(
                isinstance(k, str) and _number(v) and v >= 0 for k, v in self.resources.items()):
            out.append(f"resources={self.resources!r}; it must map resource names to numbers >= 0, "
                       "e.g. resources={'accel': 1}")
        if self.accelerator_type is not None and not (isinstance(self.accelerator_type, str) and self.accelerator_type):
            out.append(f"accelerator_type={self.accelerator_type!r}; it must be a name such as 'H100', or None")
        if self.runtime_env is not None and not isinstance(self.runtime_env, Mapping):
            out.append(f"runtime_env={self.runtime_env!r}; it must be a dict (Ray's runtime_env), or None")
        return out

    def demand(self) -> dict[str, float]:
        """What one worker takes from a node, by Ray resource name (what the feasibility check
        packs onto nodes)."""
        out = {"CPU": float(self.num_cpus), "GPU": float(self.num_gpus),
               "memory": float(self.memory or 0), **{k: float(v) for k, v in self.resources.items()}}
        if self.accelerator_type:
            out[f"accelerator_type:{self.accelerator_type}"] = 0.001  # how Ray asks for the type
        return {k: v for k, v in out.items() if v}

    def ray_options(self) -> dict:
        """Keyword arguments of Ray's `.options()` for one worker actor."""
        opts: dict[str, Any] = {"num_cpus": self.num_cpus, "num_gpus": self.num_gpus}
        if self.resources:
            opts["resources"] = dict(self.resources)
        if self.memory:
            opts["memory"] = self.memory
        if self.accelerator_type:
            opts["accelerator_type"] = self.accelerator_type
        if self.runtime_env:
            opts["runtime_env"] = dict(self.runtime_env)
        return opts

    def signature(self) -> str:
        """Stable text of the values: equal for equal requests (function stages that ask the
        same share workers; a warm pool is reused only for the same request)."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True, default=repr)


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
