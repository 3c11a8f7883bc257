"""The code blocks of the Getting started pages (docs/getting-started/*.md), run as a reader would
run them, on the bundled data: a page whose commands stop working fails here.

Which blocks run (the rule the pages are written to):
- a fenced block whose info string is `python` runs whole, in a Python process of its own (each
  block imports what it uses, so a reader can copy any one of them);
- in a fenced `bash` block, each command (lines joined at a trailing backslash, `#` comments cut)
  whose first word is `curate` or `python` runs; a `pip` command is for the reader only, and any
  other command fails the parse, so nothing is shown as runnable that this test skips;
- any other block (`text`: output, a server that runs until Ctrl-C, a model path the reader has)
  is not run.

Commands run in document order from one temporary directory holding a link to the checkout's
`examples/`, so the pages' relative paths (`examples/data/pdfs/*.pdf`, `out/pdfs`) resolve and
everything they write stays in that directory. `curate` runs as `python -m curate.cli`, `python`
as this interpreter. Every command must exit 0, but `curate run` may exit 3 (finished, with FAILED
inputs): each test then says which exit code its page promises and checks the rows written.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from curate.io.read import read_table

ROOT = Path(__file__).resolve().parent.parent
PAGES = ROOT / "docs" / "getting-started"
RUN_WORDS = ("curate", "python")  # the first words of the bash commands that run
READER_ONLY = ("pip",)  # bash commands shown to the reader, not run here
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
TIMEOUT_S = 300  # per command; the whole module takes well under a minute

pytestmark = pytest.mark.slow


@dataclass
class Ran:
    """One command or block that ran: what, its exit code and output."""

    what: str
    argv: list[str]
    code: int
    out: str


def blocks(text: str) -> list[tuple[str, str]]:
    """The fenced code blocks of a Markdown page, in order: (info string's language, body)."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def commands(body: str) -> list[list[str]]:
    """The commands of a bash block as argv lists, backslash continuations joined, comments cut."""
    found = []
    for line in re.sub(r"\\\n", " ", body).splitlines():
        argv = shlex.split(line, comments=True)
        if argv:
            found.append(argv)
    return found


def runnable(text: str) -> list[tuple[str, list[str]]]:
    """What a page runs, in order: ("bash", argv) for a command, ("python", [code]) for a block.
    Raises ValueError for a bash command that is neither run nor reader-only."""
    steps = []
    for lang, body in blocks(text):
        if lang == "python":
            steps.append(("python", [body]))
        elif lang == "bash":
            for argv in commands(body):
                if argv[0] in RUN_WORDS:
                    steps.append(("bash", argv))
                elif argv[0] not in READER_ONLY:
                    raise ValueError(f"`{shlex.join(argv)}`: a bash command this test neither runs ({RUN_WORDS}) "
                                     f"nor skips ({READER_ONLY}); fence it as text if the reader is not to run it")
    return steps


def run_page(name: str, workdir: Path) -> list[Ran]:
    """Run every runnable block of docs/getting-started/NAME in `workdir`, in order; fail the test
    at the first one that fails (exit code other than 0, or 3 from `curate run`)."""
    ran = []
    for kind, argv in runnable((PAGES / name).read_text()):
        if kind == "python":
            what, cmd = argv[0], [sys.executable, "-c", argv[0]]
        else:
            what = shlex.join(argv)
            cmd = [sys.executable, *(["-m", "curate.cli"] if argv[0] == "curate" else []), *argv[1:]]
        proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=TIMEOUT_S)
        allowed = (0, 3) if argv[:2] == ["curate", "run"] else (0,)
        if proc.returncode not in allowed:
            pytest.fail(f"{name}: `{what}` exited {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}\n"
                        f"--- stderr\n{proc.stderr[-3000:]}")
        ran.append(Ran(what, cmd, proc.returncode, proc.stdout))
    return ran


def statuses(out: Path, name: str) -> list[str]:
    """The `status` of every row of an output, sorted."""
    return sorted(read_table(out, name, columns=["status"]).column("status").to_pylist())


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """Where the pages' commands run: a fresh directory where `examples/` is the checkout's."""
    d = tmp_path_factory.mktemp("getting-started")
    (d / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    return d


@pytest.fixture(scope="module")
def pdf_run(workdir) -> list[Ran]:
    return run_page("first-pdf-run.md", workdir)


def test_the_rule_for_runnable_blocks():
    page = ("```bash\npip install '.[pdf]'   # not run\ncurate run x --input 'a b/*.pdf' \\\n"
            "    --output out   # a comment\n```\n\n```text\ncurate view out\n```\n\n"
            "```python\nimport duckdb\nprint(1)\n```\n")
    assert runnable(page) == [("bash", ["curate", "run", "x", "--input", "a b/*.pdf", "--output", "out"]),
                              ("python", ["import duckdb\nprint(1)\n"])]
    with pytest.raises(ValueError, match="neither runs"):
        runnable("```bash\nrm -rf out\n```\n")


def test_every_getting_started_page_is_parsed():
    """Each page parses under the rule; the three pages with a job run something."""
    counts = {p.name: len(runnable(p.read_text())) for p in sorted(PAGES.glob("*.md"))}
    assert set(counts) == {"install.md", "first-pdf-run.md", "first-video-run.md", "reading-output.md"}
    assert all(counts[p] >= 2 for p in ("first-pdf-run.md", "first-video-run.md", "reading-output.md")), counts


def test_install(workdir):
    ran = run_page("install.md", workdir)
    assert [r.what for r in ran] == ["curate recipes"]
    listed = {line.split()[0] for line in ran[0].out.splitlines() if line.strip()}
    assert {"pdf_to_markdown", "pdf_curated", "pdf_to_markdown_routed", "pdf_to_markdown_mineru4",
            "pdf_to_markdown_mineru25", "video_captions", "video_curated", "video_captions_vllm"} <= listed


def test_first_pdf_run(pdf_run, workdir):
    run, show, inspect = pdf_run
    assert run.what.startswith("curate run pdf_to_markdown") and run.code == 3  # the page: exit 3, the broken PDF
    out = workdir / "out" / "pdfs"
    assert statuses(out, "documents") == ["failed", "present", "present", "present"]
    pages = read_table(out, "pages", columns=["route", "status"]).to_pylist()
    assert sorted(p["route"] for p in pages) == ["empty", "ocr", "text_layer"]
    assert {p["status"] for p in pages} == {"present"}
    assert "SLEREXE" in show.out  # document 1: the scanned letter, read by OCR
    assert "damaged" in inspect.out and "pdfjs_bug1020226_broken.pdf" in inspect.out


def test_reading_output(pdf_run, workdir):
    ran = run_page("reading-output.md", workdir)
    assert len(ran) == 3 and all(r.argv[1] == "-c" for r in ran)  # pandas, DuckDB, read_table
    pandas_out, duckdb_out, latest = (r.out for r in ran)
    assert "THE SLEREXE COMPANY LIMITED" in pandas_out and "text_layer" in pandas_out
    assert "failed" in duckdb_out and "ocr" in duckdb_out and "text_layer" in duckdb_out
    assert "text_layer" in latest


def test_first_video_run(workdir):
    ran = run_page("first-video-run.md", workdir)
    assert [r.what.split()[:2] for r in ran] == [["python", "-m"], ["curate", "run"], ["curate", "show"],
                                                 ["curate", "inspect"]]
    assert ran[1].code == 0
    out = workdir / "out" / "videos"
    assert statuses(out, "videos") == ["present"]
    clips = read_table(out, "clips", columns=["status", "caption", "clip_file"]).to_pylist()
    kept = [c for c in clips if c["status"] == "present"]
    assert kept, clips
    for clip in kept:
        assert clip["caption"] and (out / "clips" / clip["clip_file"]).is_file()
    assert "clip_file" in ran[2].out
