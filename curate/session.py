"""`Session`: warm pools between runs. Notebooks, services and batch drivers that loop over
shards run pipeline after pipeline; a pool whose class, init and resources are unchanged keeps
its workers, and so its loaded model, from one run to the next (`cu.run` is the one-shot form:
its workers live for one run)."""

from __future__ import annotations

from typing import Any, Iterable

from curate import defaults
from curate.errors import CurateError
from curate.executors import get_executor


class Session:
    """`with cu.Session() as s: s.run(pipe, inputs, ...)`, run after run.

    `executor` is "ray" (a local Ray, or the cluster at `address=` / RAY_ADDRESS; `ray_init`
    and `pipeline_depth` as for `cu.run`) or "local" (threads). A run's pools are matched to
    the previous run's by class (or function) code, init and resources: equal ones keep their
    workers, changed or unused ones are released (their resources freed for the new ones),
    and new ones start. A run that fails or is interrupted releases its workers; Ctrl-C
    during a run releases every worker of the session. `close()` (or leaving the `with`
    block) releases the rest."""

    def __init__(self, *, executor: str = defaults.DEFAULT_EXECUTOR, address: str | None = None,
                 ray_init: dict | None = None, **executor_options):
        if executor not in ("ray", "local"):
            raise CurateError(f"unknown executor {executor!r}; a session runs on 'ray' or 'local'")
        if executor == "local" and (address or ray_init or executor_options):
            raise CurateError("a local session takes no Ray options (address, ray_init, pipeline_depth)")
        if executor == "ray":
            executor_options.update(address=address, ray_init=ray_init)
        self._executor = get_executor(executor, context="cu.Session(executor='ray')", keep_warm=True,
                                      **executor_options)
        self.closed = False

    def run(self, pipe, inputs: Iterable[Any], **options):
        """`cu.run(pipe, inputs, **options)` on this session's warm workers."""
        from curate.run import run

        if self.closed:
            raise CurateError("this session is closed; open a new cu.Session()")
        if "executor" in options:
            raise CurateError("a session runs on its own executor; give executor= to cu.Session(...)")
        try:
            return run(pipe, inputs, executor=self._executor, **options)
        except KeyboardInterrupt:
            self.close()
            raise

    def close(self) -> None:
        """Release every worker the session keeps."""
        if not self.closed:
            self.closed = True
            self._executor.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
