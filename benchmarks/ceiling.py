"""The machine's own ceiling for a loop benchmark: the same sequential loop run as N processes at
once, each over the whole input, with no coordination between them.

On a machine whose cores share caches and memory bandwidth, N copies of a loop do not run at N
times one loop's throughput, and no scheduler can beat N independent copies of the very same
work (they have no hand-offs, no serialisation and no idle worker). So `copies x items /
slowest copy's seconds` is the throughput any engine could at best reach on N cores, and a
benchmark reports it beside the single loop it is compared with.

Each copy is a fresh (spawned) interpreter that runs the loop's untimed warm-up, waits at a
barrier for the others, then times the loop itself, as the single loop does.

    items, seconds = loops_at_once("pdf_compare", "sequential", warm_args, args, copies=2)
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _copy(module: str, fn: str, warm_args: tuple, args: tuple, barrier, results) -> None:
    sys.path.insert(0, str(HERE))
    loop = getattr(importlib.import_module(module), fn)
    loop(*warm_args)
    barrier.wait()
    results.put(loop(*args))


def loops_at_once(module: str, fn: str, warm_args: tuple, args: tuple, copies: int = 1,
                  timeout_s: float = 1800.0) -> tuple[int, float]:
    """Run `module.fn(*args)` (which returns (items, seconds)) in `copies` processes at once:
    (items done by all of them, the slowest copy's seconds)."""
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(copies), ctx.Queue()
    procs = [ctx.Process(target=_copy, args=(module, fn, warm_args, args, barrier, results)) for _ in range(copies)]
    for p in procs:
        p.start()
    try:
        out = [results.get(timeout=timeout_s) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    return sum(n for n, _ in out), max(s for _, s in out)
