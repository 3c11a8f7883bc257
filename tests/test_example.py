"""The Book -> Chapter -> Paragraph example: run as a program, and its pipeline run directly."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import curate as cu

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "books.py"
TITLES = ["Alice's Adventures in Wonderland", None, "Moby-Dick; or, The Whale", "Pride and Prejudice"]
CHAPTERS = [3, None, 2, 4]  # per input, in file-name order; None: the bad input


def _load_example():
    spec = importlib.util.spec_from_file_location("books_example", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is built
    spec.loader.exec_module(mod)
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(mod)  # Ray workers cannot import it by this name
    return mod


@pytest.fixture(scope="module")
def books():
    return _load_example()


@pytest.fixture(scope="module")
def printed(tmp_path_factory) -> str:
    """The example's output, run from an unrelated directory: its paths are relative to the file."""
    proc = subprocess.run([sys.executable, str(EXAMPLE)], cwd=tmp_path_factory.mktemp("elsewhere"),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_bad_input_is_one_failed_row_with_its_input_error(printed):
    line = next(ln for ln in printed.splitlines() if "missing_chapters.txt:" in ln)
    assert ": FAILED [" in line  # the cause's kind (item, input) is the engine's to choose
    assert ("in split_chapters] InputError: missing_chapters.txt: "
            "no line starts with 'CHAPTER'") in line
    assert "mark each chapter with a line such as" in line  # the message says how to fix the file
    assert "  books      PRESENT 3  DROPPED 0  FAILED 1  SUPPRESSED 0" in printed


def test_every_good_book_prints_its_chapter_count(printed):
    assert "alice_in_wonderland.txt: PRESENT \"Alice's Adventures in Wonderland\", 3 chapters" in printed
    assert "moby_dick.txt: PRESENT 'Moby-Dick; or, The Whale', 2 chapters" in printed
    assert "pride_and_prejudice.txt: PRESENT 'Pride and Prejudice', 4 chapters" in printed


def test_short_paragraphs_are_dropped_with_a_reason(printed):
    assert "(0, 0, 2) DROPPED too short: 3 words < 8" in printed  # "Down, down, down."
    counts = next(ln for ln in printed.splitlines() if ln.startswith("  paragraphs "))
    assert counts == "  paragraphs PRESENT 23  DROPPED 6  FAILED 0  SUPPRESSED 0"


def test_metrics_summary_lists_every_call(printed):
    summary = printed.split("metrics:\n", 1)[1]
    assert summary.startswith("4 roots in ")
    for call in ("read_titles", "split_chapters", "split_paragraphs", "long_enough", "WordStats",
                 "join_chapter", "table_of_contents", "make_book"):
        assert f"\n{call} " in summary


def test_books_come_back_in_input_order(books, executor):
    paths = books.book_paths()
    assert [p.name for p in paths] == ["alice_in_wonderland.txt", "missing_chapters.txt",
                                       "moby_dick.txt", "pride_and_prejudice.txt"]
    values = cu.run(books.build_pipeline(), paths, input_batch_size=2, inflight=2, executor=executor).values("books")
    assert len(values) == len(paths)
    for i, (v, title, n_chapters) in enumerate(zip(values, TITLES, CHAPTERS)):
        if title is None:
            assert isinstance(v, cu.Issue) and v.status is cu.Status.FAILED and v.lineage == (i,)
            assert v.cause.error_type == "InputError" and "missing_chapters.txt" in v.cause.message
        else:
            assert isinstance(v, books.BookSummary)
            assert (v.title, len(v.chapters)) == (title, n_chapters)
            assert v.words == sum(c.words for c in v.chapters) > 0


def test_paragraphs_come_back_in_lineage_order(books, executor):
    items = cu.run(books.build_pipeline(), books.book_paths(), input_batch_size=2, inflight=2, executor=executor
                   ).items("paragraphs")
    lineages = [it.lineage for it in items]
    assert lineages == sorted(lineages) and len(set(lineages)) == len(lineages)
    assert all(len(lin) == 3 for lin in lineages)  # (book, chapter, paragraph)
    assert {lin[0] for lin in lineages} == {0, 2, 3}  # the failed book has no chapters
    for book in (0, 2, 3):
        assert len({lin[1] for lin in lineages if lin[0] == book}) == CHAPTERS[book]
    for it in items:
        if it.status is cu.Status.DROPPED:
            assert it.cause.startswith("too short: ")
        else:
            assert it.status is cu.Status.PRESENT and it.value.words >= books.MIN_WORDS


@pytest.mark.parametrize("input_batch_size, inflight", [(1, 1), (4, 4), (3, 1)])
def test_outputs_do_not_depend_on_the_admission_window(books, input_batch_size, inflight, executor):
    pipe, paths = books.build_pipeline(), books.book_paths()
    ref = cu.run(pipe, paths, input_batch_size=2, inflight=2, executor=executor)
    got = cu.run(pipe, paths, input_batch_size=input_batch_size, inflight=inflight, executor=executor)
    for name in ("books", "paragraphs"):
        assert got.items(name) == ref.items(name)
