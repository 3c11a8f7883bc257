"""Killing a job subprocess while it works: SIGKILL once it has printed a given number of
lines carrying a marker (worker lines on Ray arrive prefixed with the worker), so the kill lands
mid-work whatever the machine's speed."""

from __future__ import annotations

import signal
import subprocess


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
