"""The run report: `report.png` and `summary.md` from the metrics of a real (local) run."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

import curate as cu
from curate.errors import CurateError
from curate.report import summary_markdown, write_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
N_DOCS = 30
COUNTS = {"totals": {"present": 28, "failed": 2},
          "pages": {"present": 80, "dropped": 5, "failed": 3, "suppressed": 2}}
CAUSES = [("[input in pages] InputError: doc 7 is encrypted", 2, "doc-7"),
          ("[user_code in embed] ValueError: bad | page", 1, "doc-9")]


def pages(docs: list[int]) -> list[list[str]]:
    """Doc -> 1..5 pages."""
    return [[f"{d}-p{i}" for i in range(d % 5 + 1)] for d in docs]


def embed(ps: list[str]) -> list[int]:
    """Stands in for a model: a little work per batch, so batches have a length."""
    time.sleep(0.001)
    return [len(p) for p in ps]


def total(groups: list[list[int]]) -> list[int]:
    return [sum(g) for g in groups]


def _pipeline() -> cu.Pipeline:
    Doc = cu.Domain("doc")
    Page = Doc.child("page")
    pipe = cu.Pipeline(Doc)
    embedded = pipe.source.expand(pages, into=Page).map(cu.stage(embed, batch_size=4, replicas=2))
    pipe.output("totals", embedded.reduce(total))
    pipe.output("pages", embedded)
    return pipe


@pytest.fixture(scope="module")
def metrics() -> dict:
    return cu.run(_pipeline(), list(range(N_DOCS)), executor="local").metrics.to_dict()


def _assert_png(path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 20_000, f"{path} is only {len(data)} bytes: is the figure empty?"


def test_writes_a_png_and_a_summary(metrics, tmp_path):
    paths = write_report(metrics, tmp_path / "out", title="doc -> pages")
    assert paths == {"png": tmp_path / "out" / "report.png", "summary": tmp_path / "out" / "summary.md"}
    _assert_png(paths["png"])
    md = paths["summary"].read_text(encoding="utf-8")
    assert md.startswith("# doc -> pages\n")
    assert "![timeline](report.png)" in md
    assert f"- roots: {N_DOCS};" in md


def test_summary_lists_every_call_with_its_batches(metrics):
    md = summary_markdown(metrics)
    assert set(metrics["calls"]) == {"pages", "embed", "total"}
    for name, c in metrics["calls"].items():
        row = next(ln for ln in md.splitlines() if ln.startswith(f"| {name} | {c['pool']} |"))
        cells = [x.strip() for x in row.strip("|").split("|")]
        assert cells[2:5] == [str(c["batch_size"]), str(c["batches"]), str(c["items"])]
    assert "| embed | 2 | embed |" in md  # the pool with two workers
    assert "Rows per output" not in md and "failure causes" not in md  # only when given


def test_counts_and_causes_appear_when_given(metrics):
    md = summary_markdown(metrics, counts=COUNTS, causes=CAUSES)
    assert "## Rows per output and status" in md
    assert "| output | present | dropped | failed | suppressed | total |" in md
    assert "| totals | 28 | 0 | 2 | 0 | 30 |" in md
    assert "| pages | 80 | 5 | 3 | 2 | 90 |" in md
    assert "## Top failure causes" in md
    assert "| 1 | 2 | [input in pages] InputError: doc 7 is encrypted | `doc-7` |" in md
    assert "bad \\| page" in md  # a `|` in a cause does not break the table


def test_a_run_with_no_batches(metrics, tmp_path):
    empty = dict(metrics, timeline=[], first_root_s=None, roots=0, grains=0,
                 calls={n: dict(c, batches=0, items=0, busy_s=0.0, batch_fill=0.0)
                        for n, c in metrics["calls"].items()})
    paths = write_report(empty, tmp_path)
    assert paths["png"].read_bytes()[:8] == PNG_MAGIC
    assert "first root done at -" in paths["summary"].read_text(encoding="utf-8")


def test_a_run_of_one_call(tmp_path):
    pipe = cu.Pipeline(cu.Domain("doc"))
    pipe.output("lengths", pipe.source.map(cu.stage(embed, batch_size=3)))
    m = cu.run(pipe, [str(i) for i in range(10)], executor="local").metrics.to_dict()
    paths = write_report(m, tmp_path)
    _assert_png(paths["png"])
    batches = m["calls"]["embed"]["batches"]
    assert batches >= 4  # 10 items in batches of at most 3
    assert f"| embed | embed | 3 | {batches} | 10 |" in paths["summary"].read_text(encoding="utf-8")


def test_metrics_read_back_from_json(metrics, tmp_path):
    again = json.loads(json.dumps(metrics))
    paths = write_report(again, tmp_path, counts=COUNTS, causes=[list(c) for c in CAUSES])
    _assert_png(paths["png"])
    assert summary_markdown(again) == summary_markdown(metrics)


def test_many_batches_merge_into_fewer_bars(metrics, tmp_path):
    timeline = [["embed", i * 1e-4, 8e-5, 4, f"embed/{i % 2}"] for i in range(25_000)]
    paths = write_report(dict(metrics, timeline=timeline, wall_s=2.5), tmp_path)
    _assert_png(paths["png"])


def test_missing_matplotlib_says_how_to_install(metrics, tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)  # an import of it now raises ImportError
    with pytest.raises(CurateError, match=r'pip install "curate\[report\]"'):
        write_report(metrics, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_importing_the_report_loads_no_plotting_library():
    code = "import sys, curate.report; print(sorted(m for m in ('matplotlib', 'numpy') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
