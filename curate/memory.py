"""This process's memory, as workers, the driver and the Parquet writer report it."""

from __future__ import annotations

import os


def private_rss() -> int:
    """This process's private resident memory now, in bytes (Linux RssAnon: its own heap and
    arrays, not the shared object-store or file pages it has mapped); 0 where unknown. Read from
    /proc/self/statm (resident minus shared pages: one short line, as workers read it per call)."""
    try:
        with open("/proc/self/statm") as f:
            fields = f.read().split()
        return (int(fields[1]) - int(fields[2])) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def peak_rss() -> int:
    """The peak resident memory of this process in bytes (Linux VmHWM; elsewhere ru_maxrss)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource
    import sys

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024
