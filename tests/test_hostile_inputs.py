"""The hostile-input corpus (issue 12, point 4; tests/hostile_corpus.py) through the bundled
recipes, one run each on real Ray, as `curate run RECIPE --input ... --output ...` runs them:
`pdf_to_markdown` (CPU) and `video_captions` (a tiny random Qwen2.5-VL built offline, on CPU).

For every input of the corpus: exactly one row, FAILED with a cause that names the input, what
is wrong and the fix, or PRESENT and correct where the input is odd but valid (10,000 blank
pages, a 100,000 x 100,000 pt page, a one-frame video, a header that lies about the duration, a
file name with a newline). Nothing is written outside the output directory (the corpus' parent
and ../shared/data are listed before and after), every row that names a payload file names its
own, the good inputs give what they give in a run of their own, and the driver's peak memory
(the run's metrics.json) stays under a generous bound.

Cost (2 cores): the PDF run about 25 s (RapidOCR on the huge page's 3,500 px render is 12 s of
it; the 10,000 pages are blank, so they take the `empty` route: neither rendered nor read), the
video run about 20 s; the runs of the good inputs alone use the local executor (no actors to
start): under a second for the PDFs, about 12 s for the video (the captioner loads in this
process)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hostile_corpus import (
    GOOD_PDFS,
    GOOD_VIDEOS,
    HUGE_PT,
    HUGE_WORDS,
    LONG_PAGES,
    SHARED_PDFS,
    SHARED_VIDEOS,
    Hostile,
    pdf_corpus,
    pdf_line,
    text_pdf,
    video_corpus,
)
from pdf_samples import REAL as PDFS
from video_samples import REAL as VIDEOS

import curate as cu
from curate.cli import EXIT_PARTIAL, main
from curate.io import files, sources
from curate.io.read import read_items, read_table

MAX_DRIVER_PEAK = 2 * 2**30  # bytes; measured about 250 MiB on Ray (the workers are other processes)
MAX_RENDER_PEAK = 1 * 2**30  # bytes of the render worker; measured about 340 MiB with the 3,500 px page
TOKENS = 6  # new tokens per caption and summary: the tiny model's noise is short, the code path the same
FILES_LAYOUT = 'outputs.documents={step: document_signals, files: {markdown: {ext: .md, name: "{key}/txt/{key}"}}}'
# Cost, not behaviour: the recipe's per-page Calls ship 16-64 pages a batch, so the 10,000 blank
# pages would be about 1,700 Ray calls of a few ms each (38 s here, where the local executor
# takes 9); batches of 512 (`--set steps.<id>.<op>.batch_size=...` overrides any field:
# docs/reference/recipe-keys.md) make it 24 s. A run's rows do not depend on batch sizes, which the runs alone (defaults) check.
PAGE_BATCHES = [f"steps.{step}.batch_size=512" for step in ("checked.map", "regions.expand", "page_layer.reduce",
                                                             "page_ocr.reduce", "page_markdown.map",
                                                             "page_signals.map", "page_rows.map")]
VIDEO_SETS = ["pools.captioner.init.device=cpu", f"pools.captioner.init.max_new_tokens={TOKENS}",
              f"pools.captioner.init.summary_max_new_tokens={TOKENS}", "steps.frames.expand.init.fps=1.0"]


# ---- running a recipe the way the command line does -----------------------------------------------
def listing(d: Path) -> list[str]:
    """Every path under `d`, relative, sorted (links listed, not followed)."""
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


def run_recipe(recipe: str, inputs: list[str], out: Path, executor: str, sets: list[str]) -> dict:
    """`curate run RECIPE --input ... --output OUT --executor EXECUTOR --set ...`: the exit code,
    each output's rows in lineage order (read as `cu.read` reads them: however many timed flushes
    split the output, every part's schema unified), and the run's metrics.json."""
    args = ["run", recipe, *[a for i in inputs for a in ("--input", i)], "--output", str(out),
            "--executor", executor, "--no-progress", *[a for s in sets for a in ("--set", s)]]
    rc = main(args)
    tables = {p.name: sorted(read_table(out, p.name).to_pylist(), key=lambda r: r["lineage"])
              for p in out.iterdir() if p.is_dir() and not p.name.startswith("_")}
    (metrics,) = out.glob("_curate/*/metrics.json")
    return {"rc": rc, "tables": tables, "metrics": json.loads(metrics.read_text()), "out": out}


def hostile_run(tmp: Path, corpus: list[Hostile], inputs: list[str], recipe: str, sets: list[str]) -> dict:
    """The whole corpus in one run on Ray, with the listings of the corpus' parent and of
    ../shared/data before and after, and each input's row by corpus key."""
    watched = [tmp, PDFS.parent]
    before = [listing(d) for d in watched]
    res = run_recipe(recipe, inputs, tmp / "out", "ray", sets)
    res["outside"] = [sorted(set(listing(d)) ^ set(b)) for d, b in zip(watched, before)]
    res["inputs"] = expanded(inputs)
    return res


def expanded(inputs: list[str]) -> list[str]:
    """The run's inputs in order, as the command line expands them (globs sorted)."""
    return list(files.expand(inputs, Path.cwd()))


def by_input(corpus: list[Hostile], order: list[str], rows: list[dict]) -> dict[str, dict]:
    """Corpus key -> its root row; every input of the run is one corpus entry and has one row."""
    index = {p: n for n, p in enumerate(order)}
    assert len(index) == len(order), "an input was listed twice"
    assert sorted(index) == sorted(os.path.abspath(h.path) for h in corpus), "the run's inputs are not the corpus"
    assert sorted(r["lineage"][0] for r in rows) == list(range(len(order))), "not one row per input"
    rows_at = {r["lineage"][0]: r for r in rows}
    return {h.key: rows_at[index[os.path.abspath(h.path)]] for h in corpus}


def check_rows(corpus: list[Hostile], rows: dict[str, dict]) -> None:
    for h in corpus:
        row = rows[h.key]
        # every file of the corpus is directly under its input's root: the glob's, or its parent
        assert row["root_key"].rsplit("@", 1)[0] == h.path.name, (h.key, row["root_key"])
        if h.status == "present":
            assert row["status"] == "present", (h.key, h.what, row["cause"])
            continue
        cause = row["cause"] or ""
        assert row["status"] == "failed" and row["cause_kind"] == "input", (h.key, row["status"], cause)
        assert "InputError" in cause and str(h.path) in cause, (h.key, cause)  # names the input
        missing = [w for w in h.words if w not in cause]
        assert not missing, f"{h.key} ({h.what}): the cause lacks {missing}: {cause}"


def same_rows(alone: list[dict], together: list[dict], columns: tuple[str, ...]) -> None:
    """The rows of each root of `alone` equal that root's rows in `together` (by root key and
    the lineage below the root)."""
    mine = {r["root_key"] for r in alone}
    picked = {(r["root_key"], tuple(r["lineage"][1:])): tuple(r[c] for c in columns)
              for r in together if r["root_key"] in mine}
    assert mine and len(picked) == len(alone)
    for r in alone:
        assert picked[(r["root_key"], tuple(r["lineage"][1:]))] == tuple(r[c] for c in columns), r["root_key"]


# ---- PDF -> Markdown -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pdf_runs(ray_cluster, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile_pdf")
    corpus, inputs = pdf_corpus(tmp / "corpus")
    # MinerU's file layout (the --set of docs/guides/pdf-to-markdown.md, "Outputs"): document
    # Markdown files named after the input's stem, so hostile names meet the code that turns names
    # into paths.
    together = hostile_run(tmp, corpus, inputs, "pdf_to_markdown", [FILES_LAYOUT, *PAGE_BATCHES])
    together["rows"] = by_input(corpus, together["inputs"], together["tables"]["documents"])
    valid = [str(h.path) for h in corpus if h.status == "present" and h.path.parent == PDFS]
    alone = run_recipe("pdf_to_markdown", valid, tmp_path_factory.mktemp("alone_pdf") / "out", "local", [])
    return corpus, together, alone


def test_every_hostile_pdf_is_one_row_failed_with_its_cause_or_present(pdf_runs):
    corpus, run, _ = pdf_runs
    assert run["rc"] == EXIT_PARTIAL
    assert {h.key.split(":")[0] for h in corpus} >= {"shared", "good", "name", "empty", "png", "long", "huge",
                                                      "symlink_loop", "fifo"}
    assert {f"shared:{n}" for n in SHARED_PDFS} <= {h.key for h in corpus}
    check_rows(corpus, run["rows"])
    assert len(run["tables"]["documents"]) == len(corpus)


def assert_nothing_outside(run: dict) -> None:
    """The listings beside the corpus and of ../shared/data changed only under out/."""
    corpus_side, shared = run["outside"]
    assert [p for p in corpus_side if p != "out" and not p.startswith("out/")] == []
    assert shared == []


def test_nothing_is_written_outside_the_output_directory(pdf_runs):
    _, run, _ = pdf_runs
    assert_nothing_outside(run)
    out = run["out"].resolve()
    files = [r["markdown"] for r in run["tables"]["documents"] if r["status"] == "present"]
    assert len(set(files)) == len(files)  # one file per document
    for rel in files:
        path = (out / "documents" / rel).resolve()
        assert path.is_file() and path.is_relative_to(out / "documents" / "_files" / "markdown"), rel


def markdown_of(run: dict, row: dict) -> str:
    return (run["out"] / "documents" / row["markdown"]).read_text(encoding="utf-8")


def test_odd_names_are_read_and_their_files_hold_their_own_markdown(pdf_runs):
    corpus, run, _ = pdf_runs
    named = [h for h in corpus if h.key.startswith("name:")]
    assert {"name:newline", "name:unicode", "name:backslash", "name:dotdot_path", "name:long_name"} <= {
        h.key for h in named}
    for h in named:
        row = run["rows"][h.key]
        assert row["routes"]["text_layer"] == 1 and markdown_of(run, row).strip() == pdf_line(h.key[5:]), h.key
        parts = Path(row["markdown"]).parts
        assert parts[:2] == ("_files", "markdown") and parts[3] == "txt", parts  # {key}/txt/{key}.md
        assert all(p.isprintable() and "\\" not in p and not p.startswith(".") for p in parts[2:]), parts


def test_ten_thousand_blank_pages_are_one_document_of_empty_pages(pdf_runs):
    _, run, _ = pdf_runs
    doc = run["rows"]["long"]
    assert doc["pages"] == LONG_PAGES and doc["routes"]["empty"] == LONG_PAGES and markdown_of(run, doc) == ""
    root = doc["lineage"][0]
    ordinals = [p["lineage"][1] for p in run["tables"]["pages"] if p["lineage"][0] == root]
    assert ordinals == list(range(LONG_PAGES))


def test_the_huge_page_is_rendered_within_the_cap_and_read(pdf_runs):
    _, run, _ = pdf_runs
    doc = run["rows"]["huge"]
    (page,) = [p for p in run["tables"]["pages"] if p["lineage"][0] == doc["lineage"][0]]
    assert (page["width_pt"], page["height_pt"]) == (HUGE_PT, HUGE_PT) and page["route"] == "ocr"
    words = markdown_of(run, doc).lower().split()
    assert sum(w in words for w in HUGE_WORDS.lower().split()) >= 3, words  # read at 3,500 px, not lost
    render = run["metrics"]["pools"]["render"]["worker_peak_rss"]
    print(f"render worker peak RSS: {[round(b / 2**20) for b in render]} MiB")
    assert render and 0 < max(render) < MAX_RENDER_PEAK  # 37 MB of pixels, not 231 GB


def test_good_pdfs_read_as_they_do_alone(pdf_runs):
    _, run, alone = pdf_runs
    assert alone["rc"] == 0
    docs = alone["tables"]["documents"]
    assert {Path(r["root_key"].rsplit("@", 1)[0]).name for r in docs} == {*GOOD_PDFS, "pdfjs_xref_missing.pdf",
                                                                           "small_tiny.pdf"}
    together = {r["root_key"]: r for r in run["tables"]["documents"]}
    for doc in docs:
        mine = together[doc["root_key"]]
        assert mine["status"] == doc["status"] == "present"
        assert (mine["pages"], mine["routes"], mine["title"]) == (doc["pages"], doc["routes"], doc["title"])
        assert markdown_of(run, mine) == doc["markdown"], doc["root_key"]
    same_rows(alone["tables"]["pages"], run["tables"]["pages"], ("status", "markdown", "route", "chars", "regions"))


def test_driver_memory_stays_bounded(pdf_runs):
    _, run, _ = pdf_runs
    peak = run["metrics"]["driver_peak_rss"]
    print(f"PDF run: driver peak RSS {peak / 2**20:.0f} MiB")
    assert 0 < peak < MAX_DRIVER_PEAK


# ---- videos -> captioned clips -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def video_runs(ray_cluster, tmp_path_factory, tiny_model):
    tmp = tmp_path_factory.mktemp("hostile_video")
    corpus, inputs = video_corpus(tmp / "corpus")
    sets = [f"pools.captioner.init.model={tiny_model}", *VIDEO_SETS]
    together = hostile_run(tmp, corpus, inputs, "video_captions", sets)
    together["rows"] = by_input(corpus, together["inputs"], together["tables"]["videos"])
    alone = run_recipe("video_captions", [str(VIDEOS / n) for n in GOOD_VIDEOS],
                       tmp_path_factory.mktemp("alone_video") / "out", "local", sets)
    return corpus, together, alone


def test_every_hostile_video_is_one_row_failed_with_its_cause_or_present(video_runs):
    corpus, run, _ = video_runs
    assert run["rc"] == EXIT_PARTIAL
    assert {f"shared:{n}" for n in SHARED_VIDEOS} <= {h.key for h in corpus}
    check_rows(corpus, run["rows"])
    assert len(run["tables"]["videos"]) == len(corpus)


def test_no_video_output_is_written_outside_the_output_directory(video_runs):
    _, run, _ = video_runs
    assert_nothing_outside(run)
    out = (run["out"] / "clips").resolve()
    named = [r["clip_file"] for r in run["tables"]["clips"] if r["clip_file"]]
    assert named and len(set(named)) == len(named)
    for rel in named:
        path = (out / rel).resolve()
        assert path.is_file() and path.stat().st_size > 0 and path.is_relative_to(out / "_files" / "clip_file"), rel


def test_a_one_frame_video_is_present_with_its_clip_dropped_for_being_short(video_runs):
    _, run, _ = video_runs
    video = run["rows"]["one_frame"]
    assert video["duration_s"] == pytest.approx(0.1) and video["clips"] == 0 and not video["duration_measured"]
    (clip,) = [c for c in run["tables"]["clips"] if c["lineage"][0] == video["lineage"][0]]
    assert clip["status"] == "dropped" and "duration 0.10 s (>= 1: failed)" in clip["cause"]


@pytest.mark.parametrize("key, claimed", [("longer_claim", 1000.0), ("shorter_claim", 0.5)])
def test_a_header_that_lies_about_the_duration_is_measured_and_noted(video_runs, key, claimed):
    _, run, _ = video_runs
    video = run["rows"][key]
    assert video["duration_s"] == pytest.approx(3.0) and video["duration_measured"]
    assert f"the container says {claimed:.2f} s but its frames end at 3.00 s" in video["notes"][0]
    assert video["spans"][0][0] == 0.0 and video["spans"][-1][1] == pytest.approx(3.0)
    assert video["clips"] == len(video["captions"]) >= 1


def test_a_webm_without_a_duration_is_measured(video_runs):
    _, run, _ = video_runs
    video = run["rows"]["shared:moviepy_no_duration_vp9.webm"]
    assert video["duration_measured"] and video["duration_s"] == pytest.approx(4.938)
    assert "no duration in the container" in video["notes"][0]


def test_odd_video_names_are_captioned_into_their_own_clip_files(video_runs):
    corpus, run, _ = video_runs
    for h in (h for h in corpus if h.key.startswith("name:")):
        video = run["rows"][h.key]
        assert video["clips"] == 1 and video["spans"] == [[0.0, 1.2]], h.key
        (clip,) = [c for c in run["tables"]["clips"] if c["lineage"][0] == video["lineage"][0]]
        parts = Path(clip["clip_file"]).parts
        assert parts[:2] == ("_files", "clip_file") and parts[3] == "0.mp4", parts
        assert parts[2].isprintable() and not parts[2].startswith("."), parts


def test_good_videos_caption_as_they_do_alone(video_runs):
    _, run, alone = video_runs
    assert alone["rc"] == 0
    assert [Path(r["root_key"].rsplit("@", 1)[0]).name for r in alone["tables"]["videos"]] == GOOD_VIDEOS
    same_rows(alone["tables"]["videos"], run["tables"]["videos"],
              ("status", "clips", "spans", "captions", "duration_s", "duration_measured", "notes", "summary"))
    same_rows(alone["tables"]["clips"], run["tables"]["clips"],
              ("status", "start_s", "end_s", "scores", "caption", "frames", "clip_file", "decisions"))
    for row in (r for r in alone["tables"]["clips"] if r["clip_file"]):
        mine = alone["out"] / "clips" / row["clip_file"]
        assert mine.read_bytes() == (run["out"] / "clips" / row["clip_file"]).read_bytes(), row["clip_file"]


def test_video_driver_memory_stays_bounded(video_runs):
    _, run, _ = video_runs
    peak = run["metrics"]["driver_peak_rss"]
    print(f"video run: driver peak RSS {peak / 2**20:.0f} MiB")
    assert 0 < peak < MAX_DRIVER_PEAK


# ---- input globbing: loops, pipes ------------------------------------------------------------------
def test_a_recursive_glob_does_not_follow_directory_symlink_loops(tmp_path):
    """Two links back up (loops/up -> .., loops/again -> ../loops): the standard glob lists each
    file under 2^40 names and never returns; `sources.glob` lists each once."""
    (tmp_path / "loops" / "deeper").mkdir(parents=True)
    os.symlink("..", tmp_path / "loops" / "up")
    os.symlink("../loops", tmp_path / "loops" / "again")
    os.symlink("../..", tmp_path / "loops" / "deeper" / "top")
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    elsewhere.mkdir()
    text_pdf(elsewhere / "linked.pdf", "reached through a link that is not a loop")
    os.symlink(elsewhere, tmp_path / "loops" / "linked")
    for name in ("a.pdf", "loops/b.pdf", "loops/deeper/c.pdf"):
        text_pdf(tmp_path / name, name)
    assert [os.path.relpath(p, tmp_path) for p in sources.glob("**/*.pdf", tmp_path)] == [
        "a.pdf", "loops/b.pdf", "loops/deeper/c.pdf", "loops/linked/linked.pdf"]
    assert list(sources.glob(str(tmp_path / "**" / "c.pdf"))) == [str(tmp_path / "loops" / "deeper" / "c.pdf")]


def test_a_named_pipe_is_keyed_without_opening_it(tmp_path):
    """Hashing a FIFO for its root key would block the driver until something wrote to it."""
    os.mkfifo(tmp_path / "pipe.pdf")
    assert sources.path_key(tmp_path / "pipe.pdf", tmp_path) == "pipe.pdf@missing"


# ---- the three curate/io/ bugs the corpus found (fixed; tests/test_named_files.py and
# tests/test_parquet_readers.py hold their focused tests) ------------------------------------------
def test_two_long_names_that_share_100_characters_get_their_own_files(tmp_path):
    long_a, long_b = ("L" * 150 + tail for tail in ("-first", "-second"))
    inputs = [str(text_pdf(tmp_path / f"{stem}.pdf", f"Document {n}")) for n, stem in enumerate((long_a, long_b))]
    res = run_recipe("pdf_to_markdown", inputs, tmp_path / "out", "local", [FILES_LAYOUT])
    docs = res["tables"]["documents"]
    assert [r["status"] for r in docs] == ["present", "present"]
    assert [markdown_of(res, r) for r in docs] == ["Document 0", "Document 1"]


Row = cu.Domain("row")


def empty_list_first(batch: list) -> list:
    return [{"n": x, "xs": [] if x == 0 else ["a"]} for x in batch]


def failed_first(batch: list) -> list:
    return [cu.ItemFailure(cu.InputError("input 0 is bad")) if x == 0 else {"text": f"text {x}"} for x in batch]


def one_shard_per_root(tmp_path: Path, stage) -> Path:
    """Run `stage` over inputs 0 and 1 into tmp_path/out, each root its own flush (shard)."""
    pipe = cu.Pipeline(Row)
    pipe.output("rows", pipe.source.map(stage))
    cu.run(pipe, [0, 1], executor="local", output_dir=tmp_path / "out", input_batch_size=1, inflight=1,
           sink_options={"shard_rows": 1})
    return tmp_path / "out"


def test_a_list_column_empty_in_the_first_shard_and_filled_later_is_written(tmp_path):
    out = one_shard_per_root(tmp_path, empty_list_first)
    assert [i.value for i in read_items(out, "rows")] == [{"n": 0, "xs": []}, {"n": 1, "xs": ["a"]}]


def test_payload_columns_survive_a_first_shard_of_failed_rows(tmp_path):
    out = one_shard_per_root(tmp_path, failed_first)
    items = read_items(out, "rows")
    assert [i.status for i in items] == [cu.Status.FAILED, cu.Status.PRESENT]
    assert items[1].value == {"text": "text 1"}
