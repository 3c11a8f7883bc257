"""The suite's printed and recorded tables (`Table`), and one benchmark script run in a fresh
process (`fresh`)."""

from __future__ import annotations

from pathlib import Path

from common import run_fresh

HERE = Path(__file__).resolve().parent


def fresh(script: str, *args: str) -> dict | None:
    r, err = run_fresh([str(HERE / script), *args])
    if r is None:
        print(f"  {script} {' '.join(args)}: FAILED\n{err[-2500:]}", flush=True)
    return r


def _fmt(v, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def _cell(text: str, column: str, width: int, index: int) -> str:
    """A printed cell: the first column and notes to the left (a note after two spaces), numbers right."""
    if column == "note":
        return f"  {text}"
    return f"{text:>{width}}" if index else f"{text:<{width}}"


class Table:
    """A printed and recorded table: header, rows, and targets (name, value, goal, met)."""

    def __init__(self, title: str, columns: list[tuple[str, int]]):
        self.title, self.columns, self.rows, self.targets, self.notes = title, columns, [], [], []

    def add(self, *cells) -> None:
        self.rows.append([str(c) for c in cells])
        print("".join(_cell(c, n, w, i) for i, (c, (n, w)) in enumerate(zip(self.rows[-1], self.columns))), flush=True)

    def header(self) -> None:
        print(f"\n{self.title}")
        print("".join(_cell(n, n, w, i) for i, (n, w) in enumerate(self.columns)), flush=True)

    def target(self, name: str, value: float | None, goal: str, met: bool | None) -> None:
        self.targets.append((name, value, goal, met))
        mark = "n/a" if met is None else ("met" if met else "MISSED")
        print(f"  target: {name}: {_fmt(value, '.3g')} (goal {goal}) {mark}", flush=True)

    def markdown(self) -> str:
        head = [n for n, _ in self.columns]
        out = [f"### {self.title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(r) + " |" for r in self.rows]
        if self.targets:
            out += ["", "| target | value | goal | |", "|---|---|---|---|"]
            out += [f"| {n} | {_fmt(v, '.3g')} | {g} | {'n/a' if m is None else ('met' if m else '**missed**')} |"
                    for n, v, g, m in self.targets]
        out += [f"\n{n}" for n in self.notes]
        return "\n".join(out) + "\n"


