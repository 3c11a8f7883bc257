"""Every bundled recipe's outputs, read by pandas, pyarrow.dataset, DuckDB (default options), Ray
Data and Daft, give the columns and rows curate's own reader gives (and `curate show` shows),
on runs whose first part is all FAILED on purpose: the broken input goes first, one root a part
(input_batch_size 1, shard_rows 1), so the first part of the root-level output holds one FAILED
row and none of the payload columns."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from readers import READERS, assert_readers_agree

from curate.cli import EXIT_OK, EXIT_PARTIAL, main

ROOT = Path(__file__).resolve().parent.parent
PDFS = ROOT / "examples" / "data" / "pdfs"
VIDEOS = ROOT / "examples" / "data" / "videos"
BROKEN_PDF = PDFS / "pdfjs_bug1020226_broken.pdf"
ONE_ROOT_A_PART = ["--set", "run.input_batch_size=1", "--set", "run.inflight=1",
                   "--set", "run.sink_options={shard_rows: 1}"]
LOCAL = ["--executor", "local", "--no-progress"]
TOKENS = 6  # the tiny captioner's new tokens: its text is noise, the rows' shape is what counts
pytestmark = pytest.mark.slow  # whole recipes on real files and models: about 6 min here (still run in CI)


def run_recipe(recipe: str, inputs: list[Path], out: Path, *sets: str) -> Path:
    args = ["run", recipe, *[a for i in inputs for a in ("--input", str(i))], "--output", str(out),
            *LOCAL, *ONE_ROOT_A_PART, *[a for s in sets for a in ("--set", s)]]
    assert main(args) == EXIT_PARTIAL  # the broken input FAILED, the others did not
    return out


def outputs(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.is_dir() and not p.name.startswith("_"))


def first_part_failed(out: Path, name: str) -> bool:
    first = min((out / name).glob("*.parquet"))
    return set(pq.read_table(first, columns=["status"]).column("status").to_pylist()) == {"failed"}


def check(out: Path, root_output: str, capsys, readers=READERS) -> None:
    """Each output: every reader agreeing with curate's reader, and `curate show` showing
    curate's row; the root-level output's first part all FAILED (the broken input has no row in
    the child outputs)."""
    assert first_part_failed(out, root_output)
    for name in outputs(out):
        columns, rows = assert_readers_agree(out, name, readers)
        assert len(columns) > 8 and any(r["status"] == "present" for r in rows), name
        last = max(rows, key=lambda r: r["lineage"])
        capsys.readouterr()
        assert main(["show", str(out), name, str(len(rows) - 1)]) == EXIT_OK
        shown = capsys.readouterr().out
        assert f"{name} {last['entity_id']} (lineage {last['lineage']}): {last['status']}" in shown


@pytest.fixture(scope="module")
def pdf_out(tmp_path_factory) -> Path:
    good = sorted(p for p in PDFS.glob("*.pdf") if p != BROKEN_PDF)
    return run_recipe("pdf_to_markdown", [BROKEN_PDF, *good], tmp_path_factory.mktemp("pdf") / "out")


def test_pdf_to_markdown_reads_alike_in_every_reader(pdf_out, ray_cluster, capsys):
    assert outputs(pdf_out) == ["documents", "pages"]
    check(pdf_out, "documents", capsys)




def test_video_captions_reads_alike_in_every_reader(tmp_path, tiny_model, ray_cluster, capsys):
    broken = tmp_path / "a_broken.mp4"
    broken.write_bytes(b"\x00\x00\x00\x18ftypmp42 not a video at all" * 8)
    out = run_recipe("video_captions", [broken, *sorted(VIDEOS.glob("*.mp4"))], tmp_path / "out",
                     f"pools.captioner.init.model={tiny_model}", "pools.captioner.init.device=cpu",
                     f"pools.captioner.init.max_new_tokens={TOKENS}",
                     f"pools.captioner.init.summary_max_new_tokens={TOKENS}", "steps.frames.expand.init.fps=1.0")
    assert outputs(out) == ["clips", "videos"]
    check(out, "videos", capsys)


def test_mineru4_recipe_reads_alike_in_every_reader(tmp_path, ray_cluster, capsys):
    pytest.importorskip("mineru", reason="mineru (curate[mineru]) is not installed")
    out = run_recipe("pdf_to_markdown_mineru4", [BROKEN_PDF, PDFS / "small_tiny.pdf", PDFS / "docling_2305.03393v1-pg9.pdf"],
                     tmp_path / "out", "pools.mineru.replicas=1")
    assert outputs(out) == ["documents"]
    check(out, "documents", capsys)


def test_mineru25_recipe_reads_alike_in_every_reader(tmp_path, ray_cluster, capsys):
    pytest.importorskip("mineru_vl_utils", reason="mineru-vl-utils (curate[vlm]) is not installed")
    import tiny_vlm

    model = tiny_vlm.build(tmp_path / "tiny-mineru25")
    out = run_recipe("pdf_to_markdown_mineru25", [BROKEN_PDF, PDFS / "docling_2305.03393v1-pg9.pdf"], tmp_path / "out",
                     "pools.vlm.num_gpus=0", "pools.vlm.init.device=cpu", f"pools.vlm.init.model={model}")
    assert outputs(out) == ["documents", "pages"]
    check(out, "documents", capsys)
