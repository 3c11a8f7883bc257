"""Fingerprints of stages: a digest of each Call's code and init arguments, recorded in the
manifest so that a resumed run whose stage changed under the same name is refused instead of
mixing old and new rows.

What counts: a function's source text (its bytecode where there is no source), a class's
source (every method it defines), a callable object's class and state, `functools.partial`
arguments, and the pool's `init`. Not seen: helpers a stage calls and library versions; a
change there is the user's to judge (`allow_changed_code=True`)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import re
from typing import Any

DIGEST_CHARS = 16
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # reprs with memory addresses differ run to run


def stage_fingerprints(plan) -> dict[str, str]:
    """Call name -> digest of what computes it: the target's code, the method, the init."""
    out = {}
    for c in plan.calls:
        pool = plan.pools[c.pool]
        text = "\n".join((code_text(pool.target), c.method, stable_text(pool.init)))
        out[c.name] = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST_CHARS]
    return out


def warm_key(pool) -> str:
    """A pool's identity for reuse between the runs of a session: its class (or function)
    code, init and resources; equal keys may share warm workers."""
    text = "\n".join((code_text(pool.target), stable_text(pool.init), pool.resources.signature()))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST_CHARS]


def changed(before: dict[str, str], now: dict[str, str]) -> list[str]:
    """Calls present in both whose fingerprints differ."""
    return sorted(name for name in now if name in before and before[name] != now[name])


def code_text(obj: Any) -> str:
    if isinstance(obj, functools.partial):
        return f"partial({code_text(obj.func)}, {stable_text(obj.args)}, {stable_text(obj.keywords)})"
    if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismethod(obj):
        try:
            return inspect.getsource(obj)
        except (OSError, TypeError):  # defined in a REPL or built at run time: use its code
            code = getattr(getattr(obj, "__func__", obj), "__code__", None)
            return _bytecode(code) if code is not None else stable_text(obj)
    if callable(obj) and not inspect.isbuiltin(obj):  # a callable object: its class and state
        return code_text(type(obj)) + stable_text(getattr(obj, "__dict__", None))
    return stable_text(obj)


def _bytecode(code) -> str:
    consts = [_bytecode(c) if inspect.iscode(c) else repr(c) for c in code.co_consts]
    return f"{code.co_code.hex()}|{consts}|{code.co_names}"


def stable_text(v: Any) -> str:
    """A repr that is the same in every run for the same value."""
    if isinstance(v, dict):
        return "{" + ", ".join(f"{stable_text(k)}: {stable_text(x)}" for k, x in sorted(v.items(), key=lambda kv: repr(kv[0]))) + "}"
    if isinstance(v, (list, tuple)):
        return type(v).__name__ + "[" + ", ".join(stable_text(x) for x in v) + "]"
    if isinstance(v, (set, frozenset)):
        return "set[" + ", ".join(sorted(stable_text(x) for x in v)) + "]"
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return type(v).__qualname__ + stable_text({f.name: getattr(v, f.name) for f in dataclasses.fields(v)})
    if inspect.isclass(v) or inspect.isfunction(v):
        return f"{v.__module__}.{v.__qualname__}"
    return _ADDRESS.sub("", repr(v))
