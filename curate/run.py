"""`run()`: compile, schedule, execute; and what it gives back (`RunResult`, metrics)."""

from __future__ import annotations

import signal
import sys
import threading
import time
from contextlib import contextmanager
from os import PathLike
from pathlib import Path
from typing import Any, Callable, Iterable

from curate import defaults
from curate.core.outcome import Issue, Item, Status
from curate.core.plan import Plan, compile_plan
from curate.core.scheduler import Scheduler
from curate.deps import check_installed, plan_needs
from curate.driver import Driver, MemorySink
from curate.errors import ClusterLostError, CurateError
from curate.executors import get_executor
from curate.fingerprint import stage_fingerprints
from curate.io.outdir import OutputDir, new_run_id
from curate.metrics import RunMetrics, collect
from curate.pipeline import Pipeline
from curate.progress import Progress


class RunResult:
    """What a run gives back: its metrics, and its outputs (held in memory, or read back from
    the Parquet shards of `output_dir`)."""

    def __init__(self, plan: Plan, sink, metrics: RunMetrics, output_dir: Path | None = None,
                 run_id: str | None = None):
        self._plan = plan
        self._sink = sink
        self.metrics = metrics
        self.output_dir = output_dir
        self.run_id = run_id

    @property
    def counts(self) -> dict[str, dict[str, int]]:
        """Rows per output and status written by this run (Parquet output only)."""
        return getattr(self._sink, "counts", {})

    def _check(self, name: str) -> None:
        if name not in self._plan.outputs:
            raise KeyError(f"no output named {name!r}; outputs are {sorted(self._plan.outputs)}")

    def root_keys(self) -> list[str]:
        """Stable key of every input, in input order (the `key=` of `run`)."""
        if self.output_dir is not None:
            raise CurateError("root keys of a Parquet run are in its rows (column root_key)")
        keys = self._sink.keys
        return [keys[i] for i in sorted(keys)]

    def items(self, name: str) -> list[Item]:
        """Every item of an output, in lineage order (input order, then ordinals)."""
        self._check(name)
        if self.output_dir is not None:
            from curate.io.read import read_items

            return read_items(self.output_dir, name)
        by_root = self._sink.rows[name]
        return [it for i in sorted(by_root) for it in by_root[i]]

    def values(self, name: str) -> list[Any]:
        """Values in lineage order (input order for root-level outputs); an item that is not
        PRESENT appears as an `Issue` carrying its status and cause."""
        return [it.value if it.status is Status.PRESENT else Issue(it.lineage, it.status, it.cause)
                for it in self.items(name)]


def run(pipe: Pipeline, inputs: Iterable[Any], *, executor: Any = defaults.DEFAULT_EXECUTOR,
        input_batch_size: int = defaults.DEFAULT_INPUT_BATCH_SIZE,
        inflight: int | None = defaults.DEFAULT_INFLIGHT, key: Callable[[Any], str] | None = None,
        max_live_entities: int = defaults.DEFAULT_ADMIT_ENTITIES, max_live_bytes: int = defaults.DEFAULT_ADMIT_BYTES,
        output_dir: str | PathLike | None = None, resume: bool = False, allow_changed_code: bool = False,
        progress: bool | None = None, recipe: str | None = None, sink_options: dict | None = None,
        **executor_options) -> RunResult:
    """Run `pipe` over `inputs` (a list or any iterator, consumed window by window).

    `input_batch_size` roots form an input window. By default windows are admitted on demand
    (while the model pools are short of work), bounded by `max_live_entities` and
    `max_live_bytes` (payloads pinned in Ray's object store); `inflight=N` admits at most N
    windows at once instead. `key(input)` gives a root's stable key: a non-empty str (an int is taken as its
    text), unique among the inputs (default: the input index as text); a key that is None,
    another type or a duplicate stops the run with a RootKeyError naming the input(s).
    `executor` is "ray" (actor pools; a local Ray starts on demand, or pass `address=`),
    "local" (threads in this process) or an executor object; other keyword arguments go to it.

    With `output_dir`, each output streams to Parquet shards there as roots complete instead
    of being kept in memory; `resume=True` continues a killed run, skipping committed roots,
    and refuses a stage whose code or init changed unless `allow_changed_code=True`.
    Ctrl-C commits the roots already finished, marks the run interrupted and raises
    KeyboardInterrupt; resuming continues it. `progress` shows live progress per level (None:
    only when stderr is a terminal and an output_dir is given); `recipe` is the recipe text
    recorded in the manifest."""
    plan = compile_plan(pipe)  # every declaration problem, before anything starts
    if isinstance(inputs, (str, bytes, PathLike)):
        raise CurateError(f"inputs is a single {type(inputs).__name__}; pass a list (or iterator) of inputs")
    if not isinstance(input_batch_size, int) or input_batch_size < 1:
        raise CurateError(f"input_batch_size={input_batch_size!r}; use a whole number >= 1 (roots per input window)")
    # every module the stages, the executor and the sink need, before anything starts or is written
    check_installed(plan_needs(plan, executor=executor, output_dir=output_dir))
    ex = get_executor(executor, **executor_options)
    sched = Scheduler(plan, inflight=inflight, max_entities=max_live_entities, max_bytes=max_live_bytes)
    out = OutputDir(output_dir) if output_dir is not None else None
    if out is None:
        sink = MemorySink(plan.outputs)
    else:
        sink = out.open_run(plan, new_run_id(), resume=resume, allow_changed_code=allow_changed_code,
                            fingerprints=stage_fingerprints(plan), recipe=recipe, sink_options=sink_options)
    driver = Driver(plan, sched, inputs, input_batch_size=input_batch_size, key=key, sink=sink)
    if out is not None:
        driver.skip = sink.committed_keys
        driver.on_start = lambda: out.run_started(driver.cluster.to_dict() if driver.cluster else None)
    if progress or (progress is None and out is not None and sys.stderr.isatty()):
        driver.progress = Progress(plan, sys.stderr, total=driver.total)
    status, error, pools_run = "failed", None, []
    try:
        with _ctrl_c(driver):
            pools_run = ex.execute(driver)  # its driver closes the sink when the run is done
        status = "completed"
    except KeyboardInterrupt:
        status, error = "interrupted", "interrupted (Ctrl-C)"
        if out is not None and out.started:
            raise RunInterrupted(out.path, sink) from None
        raise
    except ClusterLostError as exc:
        status, error = "interrupted", str(exc)
        if out is not None and out.started:
            roots = RunInterrupted(out.path, sink).roots
            raise ClusterLostError(f"{exc} ({roots} input(s) are committed in {out.path})") from None
        raise
    except BaseException as exc:
        error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        if driver.progress:
            driver.progress.close(driver)
        metrics = collect(plan, sched, driver, pools_run, time.perf_counter() - driver.started)
        if out is not None:
            out.run_finished(sink, metrics, status=status, error=error, roots_done=driver.roots_done,
                             roots_skipped=driver.skipped)
    if out is not None:
        return RunResult(plan, sink, metrics, output_dir=out.path, run_id=sink.run_id)
    return RunResult(plan, sink, metrics)


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run into an output directory after committing every finished root."""

    def __init__(self, out: Path, sink):
        self.out, self.roots = out, len(sink.committed_keys) + sum(len(r["roots"]) for r in sink.records
                                                                     if r["run"] == sink.run_id)
        super().__init__(f"interrupted: {self.roots} input(s) are committed in {out}; resume continues "
                         "with the rest (curate run ... --resume, or resume=True)")


@contextmanager
def _ctrl_c(driver: Driver):
    """While a run goes on, Ctrl-C asks the driver to stop at its next heartbeat (after
    committing what is finished); a second Ctrl-C stops at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:
        yield
        return

    def ask(signum, frame):
        if driver.lost is not None:  # the watch thread's wake-up (sent once): the cluster is gone
            raise driver.lost
        if driver.interrupted:
            signal.signal(signal.SIGINT, previous)
            raise KeyboardInterrupt
        driver.interrupted = True

    signal.signal(signal.SIGINT, ask)
    driver.wake = lambda: signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    try:
        yield
    finally:
        with driver._lost_lock:  # from here on the watch thread sends no signal
            driver.wake = None
        try:
            pass  # a wake-up sent just before is handled here, by `ask`, not by Python's default
        finally:
            signal.signal(signal.SIGINT, previous)
