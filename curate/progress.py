"""Live progress per level: roots done / admitted / total, children done / created and
failures per level, rate and ETA. On a terminal it redraws in place; elsewhere it logs a line every
PROGRESS_LOG_S seconds."""

from __future__ import annotations

import time

REDRAW_S = 0.25  # terminal refresh: smooth enough, cheap enough
PROGRESS_LOG_S = 10.0  # one log line this often when stderr is a file or a CI log


class Progress:
    """Reads the driver and scheduler counters; never touches the run's state."""

    def __init__(self, plan, stream, *, total: int | None = None):
        self.plan, self.stream, self.total = plan, stream, total
        self.tty = getattr(stream, "isatty", lambda: False)()
        domains = [s.domain for s in plan.spaces]
        expand_call = {n.space: plan.calls[n.call].name for n in plan.nodes if n.kind == "expand" and n.call >= 0}
        self.levels = [(s.id, f"{s.domain} ({expand_call[s.id]})" if domains.count(s.domain) > 1 and s.id in expand_call
                        else s.domain, "  " * s.depth) for s in plan.spaces]  # two expands into one domain: say which
        self.calls_of = {s.id: [c.id for c in plan.calls if plan.nodes_by_id[c.node].grain_space == s.id]
                         for s in plan.spaces}
        self.start = time.monotonic()
        self._last = 0.0
        self._drawn = 0

    def update(self, driver, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < (REDRAW_S if self.tty else PROGRESS_LOG_S):
            return
        self._last = now
        lines = self.lines(driver, now - self.start)
        if self.tty:
            up = f"\x1b[{self._drawn}F" if self._drawn else ""
            self.stream.write(up + "".join(f"\x1b[2K{ln}\n" for ln in lines))
            self._drawn = len(lines)
        else:
            self.stream.write(" | ".join(ln.strip() for ln in lines) + "\n")
        self.stream.flush()

    def lines(self, driver, elapsed: float) -> list[str]:
        sched = driver.sched
        done = driver.roots_done + driver.skipped
        rate = driver.roots_done / elapsed if elapsed > 0 else 0.0
        total = f"/{self.total}" if self.total is not None else ""
        eta = ""
        if self.total is not None and rate > 0:
            eta = f", ETA {_clock((self.total - done) / rate)}"
        out = [f"[{_clock(elapsed)}] {self.levels[0][1]}: {done}{total} done ({driver.skipped} resumed), "
               f"{sched.admitted - driver.roots_done} in flight, {rate:.1f}/s{eta}"]
        for sid, domain, indent in self.levels:
            calls = self.calls_of[sid]
            failed = sum(sched.counters[c].failed for c in calls)
            grains = sum(sched.counters[c].items for c in calls)
            what = f"{sched.completed[sid]:,}/{sched.created[sid]:,} done, " if sid else ""
            out.append(f"  {indent}{domain}: {what}{grains:,} grains run, {failed} failed")
        return out

    def note(self, text: str) -> None:
        """One line above the live lines (printed before the first redraw)."""
        self.stream.write(f"{text}\n")
        self.stream.flush()

    def close(self, driver) -> None:
        self.update(driver, force=True)


def _clock(s: float) -> str:
    s = int(s)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"
