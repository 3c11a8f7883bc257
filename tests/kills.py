"""Killing a job subprocess while it works: SIGKILL once it has printed a given number of
lines carrying a marker (worker lines on Ray arrive prefixed with the worker), so the kill lands
mid-work whatever the machine's speed; a job's stage calls `hold_after` so that its later
batches wait for the kill, and the job cannot end before the test has read its lines."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path


def sigkill_after(p: subprocess.Popen, lines: int, marker: str = "ran ") -> int:
    """SIGKILL `p` after `lines` stdout lines containing `marker`; returns its exit status
    (-SIGKILL, or its own status if it ended first)."""
    seen = 0
    for line in p.stdout:
        seen += marker in line
        if seen >= lines:
            p.send_signal(signal.SIGKILL)
            break
    p.wait(timeout=120)
    p.stdout.close()
    p.stderr.close()
    return p.returncode


def hold_after(n: int, where: str) -> None:
    """In a job's stage, after it printed its line: return at once for the run's first `n`
    batches, and block every later one until the job is killed. The batches are numbered
    across the run's worker processes by files created exclusively in the directory `where`
    (one per run)."""
    k = 0
    while True:
        try:
            os.close(os.open(Path(where) / str(k), os.O_CREAT | os.O_EXCL))
            break
        except FileExistsError:
            k += 1
    if k >= n:
        threading.Event().wait()  # until the test kills the job
