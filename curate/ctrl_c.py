"""Ctrl-C for the `curate` command (`cu.run` handles it within a run: `curate.run._ctrl_c`).

Outside a run a Ctrl-C stops the command, as Python's default does. Once it is stopping (a
KeyboardInterrupt is on its way out: the run's message is being printed) or done (the process
only exits, and Ray's exit handler stops a local Ray), a Ctrl-C never raises
into that code: that printed a traceback from Ray's shutdown. The first is ignored, so that Ray
stops cleanly and leaves no process behind; the next leaves at once. The exit code stays the
command's (130 for an interrupted run), and what it wrote is on disk: the manifest already says
how the run ended."""

from __future__ import annotations

import os
import signal
import sys
import threading

EXIT_INTERRUPTED = 130  # a Ctrl-C that leaves at once exits as an interrupted command does


class CommandCtrlC:
    """The SIGINT handler of a `curate` process: `install()` it first, `done()` once the
    command has its exit code."""

    def __init__(self):
        self.leaving = False  # the command is done, or already stopping: Ctrl-C no longer raises
        self.asked = False  # a Ctrl-C came while leaving: the next one leaves at once

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, self)

    def done(self) -> None:
        self.leaving = True

    def __call__(self, signum, frame) -> None:
        # A KeyboardInterrupt being handled anywhere up the stack (sys.exc_info) means the
        # command is already stopping: between the run handing Ctrl-C back and done().
        if not self.leaving and not isinstance(sys.exc_info()[1], KeyboardInterrupt):
            raise KeyboardInterrupt
        if self.asked:
            leave()
        self.asked = True


def leave() -> None:
    """End the process now, with what it printed flushed."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can reach it
            pass
    os._exit(EXIT_INTERRUPTED)
