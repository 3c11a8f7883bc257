"""`curate eval`: unit tests in olmOCR-Bench's JSONL format run against the `pages` output of one
or more runs, pass rates by kind side by side.

A test file has one JSON object a line: `pdf` (the input file's name, or its path relative to
the run's input root), `page` (1-based, as the format numbers pages), `id`, `type` (present,
absent, order, table, math, baseline) and the fields of its kind (eval_checks.py, eval_tables.py).
A run's page (`pages_from_rows`) is found by the input's relative path (the root key before `@`), else by its file
name; a page the run lacks or FAILED fails its tests. The rate of a kind is passed / tests of
that kind; overall is passed / all tests. Math is checked as olmOCR-Bench does, both formulas
rendered with KaTeX (eval_math.py), where Chromium and KaTeX are installed; elsewhere by comparing
TeX (eval_checks.check_math), and `curate eval` says which one ran."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from curate.errors import InputError

from curate.modalities.pdf.eval_checks import check_baseline, check_math, check_order, check_text
from curate.modalities.pdf.eval_tables import check_table

CHECKS = {"present": check_text, "absent": check_text, "order": check_order, "table": check_table,
          "math": check_math, "baseline": check_baseline}
KINDS = tuple(CHECKS)
REQUIRED = {"present": ("text",), "absent": ("text",), "order": ("before", "after"), "table": ("cell",),
            "math": ("math",), "baseline": ()}
OTHER_KINDS = ("format", "footnote")  # kinds of the format's later versions that this eval does not run
PRESENT = "present"  # the status of a row that holds its value (curate.core.outcome.Status)
PAGES_OUTPUT = "pages"  # the output of the PDF recipes that holds one row per page


@dataclass(frozen=True)
class Outcome:
    """One test's result on one run."""

    id: str
    kind: str
    passed: bool
    why: str = ""


def load_tests(path: str | Path, skipped: dict | None = None) -> list[dict]:
    """The tests of one JSONL file, each checked for its kind's fields; InputError naming the
    file, line and the fix for a line that is not a test. Tests of OTHER_KINDS are counted by
    kind into `skipped` when it is given (an error otherwise)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the test file ({exc}); give an existing JSONL file") from None
    tests, problems = [], []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            t = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"line {n}: not JSON ({exc.msg})")
            continue
        if skipped is not None and isinstance(t, dict) and t.get("type") in OTHER_KINDS:
            skipped[t["type"]] = skipped.get(t["type"], 0) + 1
            continue
        why = _invalid(t)
        if why:
            problems.append(f"line {n}: {why}")
        else:
            tests.append(t)
    if problems:
        raise InputError(f"{path}: {len(problems)} line(s) are not olmOCR-Bench tests: " + "; ".join(problems[:5])
                         + "; each line needs pdf, page, id, type and the fields of its type")
    return tests


def _invalid(t) -> str:
    """Why `t` is not a test ("" when it is one)."""
    if not isinstance(t, dict):
        return "not an object"
    missing = [f for f in ("pdf", "page", "id", "type") if t.get(f) in (None, "")]
    if missing:
        return f"missing {', '.join(missing)}"
    if t["type"] not in CHECKS:
        return f"type {t['type']!r} is not one of {', '.join(KINDS)}"
    if not isinstance(t["page"], int) or t["page"] < 1:
        return f"page {t['page']!r} is not a page number (1-based)"
    if not isinstance(t.get("max_diffs", 0), int) or t.get("max_diffs", 0) < 0:
        return "max_diffs must be an integer >= 0"
    empty = [f for f in REQUIRED[t["type"]] if not str(t.get(f) or "").strip()]
    return f"{t['type']} test {t['id']!r} has no {', '.join(empty)}" if empty else ""


def run_test(test: dict, md: str | None, math=None) -> Outcome:
    """One test against one page's Markdown (None: the run has no such page); `math`: the math
    check to use (eval_math.KatexMath or TexMath), else eval_checks.check_math."""
    if md is None:
        return Outcome(test["id"], test["type"], False, "page missing or FAILED in this run")
    check = math.check if math is not None and test["type"] == "math" else CHECKS[test["type"]]
    ok, why = check(test, md)
    return Outcome(test["id"], test["type"], ok, why)


def pages_from_rows(rows) -> dict[tuple[str, int], str | None]:
    """A run's `pages` rows (dicts with root_key, ordinal, status, markdown, as curate writes
    them) as {(input path relative to its root, 1-based page): markdown}; a page that is not
    PRESENT maps to None."""
    pages = {}
    for r in rows:
        if r.get("ordinal") is None or not r.get("root_key"):
            continue
        rel = r["root_key"].rsplit("@", 1)[0]
        pages[(rel, r["ordinal"] + 1)] = r.get("markdown") if r.get("status", PRESENT) == PRESENT else None
    return pages


def page_of(pages: dict, pdf: str, page: int) -> str | None:
    """The page a test names: by relative path, else by file name (None: not in the run)."""
    if (pdf, page) in pages:
        return pages[(pdf, page)]
    name = PurePosixPath(pdf).name
    return next((md for (rel, p), md in pages.items() if p == page and PurePosixPath(rel).name == name), None)


def evaluate(tests: list[dict], pages: dict, math=None) -> list[Outcome]:
    """Every test against the page it names; `math` (eval_math.math_check) renders every formula
    its tests compare in one batch first."""
    named = [(t, page_of(pages, t["pdf"], t["page"])) for t in tests]
    if math is not None:
        math.prepare([(t, md) for t, md in named if t["type"] == "math"])
    return [run_test(t, md, math) for t, md in named]


def rates(outcomes: list[Outcome]) -> dict[str, tuple[int, int]]:
    """(passed, tests) by kind present in `outcomes`, in KINDS order, and "overall"."""
    by = {k: (sum(o.passed for o in outcomes if o.kind == k), sum(o.kind == k for o in outcomes)) for k in KINDS}
    by = {k: v for k, v in by.items() if v[1]}
    by["overall"] = (sum(o.passed for o in outcomes), len(outcomes))
    return by


def table(columns: dict[str, list[Outcome]]) -> str:
    """Pass rates by kind, one column per run (its name as given), as printed text."""
    names = list(columns)
    per = {n: rates(columns[n]) for n in names}
    kinds = [k for k in (*KINDS, "overall") if any(k in per[n] for n in names)]
    width = max([12] + [len(n) + 2 for n in names])
    lines = [f"{'kind':<10}{'tests':>6}" + "".join(f"{n:>{width}}" for n in names)]
    for k in kinds:
        total = max(per[n].get(k, (0, 0))[1] for n in names)
        cells = [per[n].get(k) for n in names]
        lines.append(f"{k:<10}{total:>6}" + "".join(
            f"{'-':>{width}}" if not c or not c[1] else f"{f'{c[0] / c[1]:.1%} ({c[0]})':>{width}}" for c in cells))
    return "\n".join(lines)
