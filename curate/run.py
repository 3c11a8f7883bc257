"""`run()`: compile, schedule, execute; and what it gives back (`RunResult`, metrics)."""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager
from os import PathLike
from pathlib import Path
from typing import Any, Callable, Iterable

from curate import defaults
from curate.core.outcome import Issue, Item, Status
from curate.core.plan import Plan, compile_plan
from curate.core.scheduler import Scheduler
from curate.deps import check_installed, plan_needs
from curate.run_driver import Driver, input_count
from curate.errors import ClusterLostError, CurateError
from curate.executors import get_executor
from curate.fingerprint import stage_fingerprints
from curate.io import manifest
from curate.io.files import FileInputs, check_resume
from curate.io.outdir import OutputDir, new_run_id
from curate.keys import IndexDigests
from curate.metrics import RunMetrics, collect
from curate.pipeline import Pipeline
from curate.progress import Progress
from curate.sinks import MemorySink


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
        retry_failed: bool = False, progress: bool | None = None, recipe: str | None = None, sink_options: dict | None = None,
        **executor_options) -> RunResult:
    """Run `pipe` over `inputs` (a list or any iterator, consumed window by window).

    `input_batch_size` roots form an input window. By default windows are admitted on demand
    (while the model pools are short of work), bounded by `max_live_entities` and
    `max_live_bytes` (payloads pinned in Ray's object store); `inflight=N` admits at most N
    windows at once instead. `key(input)` gives a root's stable key: a non-empty str (an int is taken as its
    text), unique among the inputs; a key that is None, another type or a duplicate stops the
    run with a RootKeyError naming the input(s). The default (`curate.keys`): a file's name
    and content hash, bytes' content hash, else the input index as text (and a resume whose
    input at a committed index changed is refused); a `curate.io.files.FileInputs` keys each
    file relative to its input root, and a resume where those resolve differently is refused.
    `executor` is "ray" (actor pools; a local Ray starts on demand, or pass `address=`),
    "local" (threads in this process) or an executor object; other keyword arguments go to it.

    With `output_dir`, each output streams to Parquet shards there as roots complete instead
    of being kept in memory; `resume=True` continues a killed run, skipping committed roots,
    and refuses a stage whose code or init changed unless `allow_changed_code=True`.
    `retry_failed=True` resumes and also runs again the committed roots that FAILED or were
    SUPPRESSED (their root-level row), plus an input whose key has such a root's path before
    its '@' (the file, fixed); each one's new rows replace its old ones in one commit. It
    accepts changed stages (the fix may be in the code), recording them in the manifest.
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
    files = inputs if isinstance(inputs, FileInputs) else None
    if key is None and files is not None:
        key = files.key  # each file relative to its input's root (curate.io.files)
    ex = get_executor(executor, **executor_options)
    sched = Scheduler(plan, inflight=inflight, max_entities=max_live_entities, max_bytes=max_live_bytes)
    if retry_failed and output_dir is None:
        raise CurateError("retry_failed=True reruns the failed roots of an output directory; pass output_dir=")
    out = OutputDir(output_dir) if output_dir is not None else None
    if out is None:
        sink, resumed = MemorySink(plan.outputs), {}
    else:
        sink = out.open_run(plan, new_run_id(), resume=resume, allow_changed_code=allow_changed_code,
                            retry_failed=retry_failed, fingerprints=stage_fingerprints(plan), recipe=recipe, sink_options=sink_options)
        resumed = _resumed(out, sink, files, key, inputs, check=resume or retry_failed)
    shown = None
    if progress or (progress is None and out is not None and sys.stderr.isatty()):
        shown = Progress(plan, sys.stderr, total=input_count(inputs))
    driver = Driver(plan, sched, inputs, input_batch_size=input_batch_size, key=key, sink=sink, progress=shown,
                    **resumed)
    metrics = _execute(ex, driver, plan, sched, out, sink, shown)
    if out is not None:
        return RunResult(plan, sink, metrics, output_dir=out.path, run_id=sink.run_id)
    return RunResult(plan, sink, metrics)


def _resumed(out: OutputDir, sink, files: FileInputs | None, key, inputs, check: bool) -> dict:
    """What the Driver of a run into `out` is given: the roots committed before (skipped, but
    for those a retry runs again), their index-keyed inputs' digests, and the manifest's
    "running" once the workers are up. `check`: a resume, refused now if its inputs changed."""
    committed = IndexDigests(sink.records)
    if sink.retry:  # a retried index-keyed root may have been fixed in its input
        committed.forget(int(k) for k in sink.retry.failed if k.isdigit())
    if check:
        _check_resume(out, sink, files, key, inputs, committed)
    described = files.describe() if files is not None else None
    return {"skip": sink.committed_keys - (sink.retry.failed if sink.retry else set()), "committed": committed,
            "on_start": lambda cluster: out.run_started(cluster.to_dict() if cluster else None, described)}


def _execute(ex, driver: Driver, plan: Plan, sched: Scheduler, out: OutputDir | None, sink,
             shown: Progress | None) -> RunMetrics:
    """Run the executor under Ctrl-C handling; whatever the end, close the progress lines and
    (with an output directory) record in the manifest how the run ended. Returns its metrics."""
    status, error, pools_run = "failed", None, []
    with _ctrl_c(driver):  # from connecting to Ray until the manifest says how the run ended
        try:
            pools_run = ex.execute(driver)  # its driver closes the sink when the run is done
            status = "completed"
        except KeyboardInterrupt:
            status, error = "interrupted", "interrupted (Ctrl-C)"
            if out is not None and out.started:
                raise RunInterrupted(out.path, sink) from None
            if out is not None:  # the manifest records no run that never started (docs/concepts/resume.md)
                raise KeyboardInterrupt(f"interrupted before the run started: nothing was committed in "
                                        f"{out.path}; run it again as it was (no --resume needed)") from None
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
            if shown:
                shown.close(driver)
            stats = driver.stats()
            metrics = collect(plan, sched, stats, pools_run)
            if out is not None:
                out.run_finished(sink, metrics, status=status, error=error, roots_done=stats.roots,
                                 roots_skipped=stats.skipped)
    return metrics


def _check_resume(out: OutputDir, sink, files: FileInputs | None, key, inputs, digests: IndexDigests) -> None:
    """Refuse, before anything starts, a resume whose inputs are not those committed: files
    rooted elsewhere (the same content under another key), or a list whose index-keyed inputs
    changed."""
    if files is not None:
        check_resume(files, key, sink.committed_keys, (manifest.load(out.path) or {}).get("runs", []))
    elif key is None and isinstance(inputs, (list, tuple)) and digests:
        digests.check_all(inputs)


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run into an output directory after committing every finished root."""

    def __init__(self, out: Path, sink):
        self.out, self.roots = out, len(sink.committed_keys) + sum(len(r["roots"]) for r in sink.records
                                                                     if r["run"] == sink.run_id)
        super().__init__(f"interrupted: {self.roots} input(s) are committed in {out}; resume continues "
                         "with the rest (curate run ... --resume, or resume=True)")


@contextmanager
def _ctrl_c(driver: Driver):
    """Ctrl-C over a whole run, from connecting to Ray to the manifest's last word: each one is
    `driver.interrupt()` (until the workers are up it stops the run at once; while the run
    goes on it asks the driver to stop at its next heartbeat, after committing what is
    finished, and a second one stops at once; once the run is stopping, more are ignored:
    releasing the workers and writing the manifest are short and must finish, so
    that the directory says what is committed). The CLI's exit after it, Ray's own
    shutdown, is `curate.ctrl_c`. The driver's wake-up for a lost cluster is a SIGINT too."""
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
        driver.interrupt()

    signal.signal(signal.SIGINT, ask)
    driver.wake_with(lambda: signal.pthread_kill(threading.main_thread().ident, signal.SIGINT))
    try:
        yield
    finally:
        driver.wake_with(None)  # under the driver's lock: from here on the watch thread sends no signal
        try:
            pass  # a wake-up sent just before is handled here, by `ask`, not by Python's default
        finally:
            signal.signal(signal.SIGINT, previous)
