"""A job whose Ray workers are held at their start, for the Ctrl-C tests: the SIGINT lands
while the run starts up (no actor has answered), deterministically. Every worker process runs
`hold_worker` first (Ray's `worker_process_setup_hook`): it creates the file named by
`CURATE_TEST_STARTED` (the test waits for it), then waits until the file named by
`CURATE_TEST_RELEASE` exists (never, unless the test creates it)."""

from __future__ import annotations

import os
import time

POLL_S = 0.05  # how often a held worker looks for the release file (and the test for the marker)


def hold_worker() -> None:
    """Hold this worker process until the test releases it."""
    started, release = os.environ.get("CURATE_TEST_STARTED"), os.environ.get("CURATE_TEST_RELEASE")
    if started:
        with open(started, "a") as f:
            f.write(f"{os.getpid()}\n")
    while release and not os.path.exists(release):
        time.sleep(POLL_S)


def upper(docs):
    return [d.upper() for d in docs]


HELD_WORKERS = """
name: startup
domains: {doc: null}
steps:
  - {id: upper, map: {from: source, stage: "startup_stages:upper"}}
outputs: {docs: upper}
input: {parquet: {path: docs.parquet, column: doc}}
run: {executor: ray, ray_init: {runtime_env: {worker_process_setup_hook: "startup_stages.hold_worker"}}}
"""
