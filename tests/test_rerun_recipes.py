"""The bundled recipes' reruns on the bundled data, as a user runs them (`curate run`, then
`curate rerun`, local executor): re-captioning the clips of video_captions with a new prompt
reads the clips' files and runs no probe, split, score, frame sampling or clip encoding of the
videos; reading again with OCR the pages of pdf_to_markdown that a condition picks touches only
those pages. Both keep every other row as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curate.cli import EXIT_OK, EXIT_PARTIAL, main
from curate.io.read import read_table

ROOT = Path(__file__).resolve().parents[1]
VIDEOS = ROOT / "examples" / "data" / "videos"
PDFS = ROOT / "examples" / "data" / "pdfs"
LOCAL = ["--executor", "local", "--no-progress"]
TOKENS = 6  # the tiny captioner's new tokens: its text is noise, which rows change is what counts
pytestmark = pytest.mark.slow  # whole recipes on real files and models (still run in CI)


def sets(*pairs: str) -> list[str]:
    return [a for s in pairs for a in ("--set", s)]


def rows(out: Path, name: str, version: int | None = None) -> dict[str, dict]:
    return {r["entity_id"]: r for r in read_table(out, name, version=version).to_pylist()}


def calls(out: Path) -> dict[str, int]:
    """Items per call of the last run into output directory `out` (its metrics.json)."""
    runs = json.loads((out / "_curate" / "manifest.json").read_text())["runs"]
    metrics = json.loads((out / runs[-1]["metrics"]).read_text())
    return {name: c["items"] for name, c in metrics["calls"].items()}


def test_recaptioning_reads_the_clip_files_and_keeps_the_rest(tmp_path, tiny_model):
    model = sets(f"pools.captioner.init.model={tiny_model}", "pools.captioner.init.device=cpu",
                 f"pools.captioner.init.max_new_tokens={TOKENS}", f"pools.captioner.init.summary_max_new_tokens={TOKENS}",
                 "steps.frames.expand.init.fps=1.0")  # half the frames: the captioner is most of the time
    out = tmp_path / "out"
    assert main(["run", "video_captions", "--input", str(VIDEOS / "*.mp4"), "--output", str(out), *LOCAL, *model]) \
        == EXIT_OK
    first = calls(out)
    assert {"Probe", "SplitShots", "ScoreClips", "SampleFrames", "ExtractClip"} <= set(first)
    clips1, videos1 = rows(out, "clips"), rows(out, "videos")
    prompt = "Say what happens in these {frames} frames."
    assert main(["rerun", str(out), "--step", "captions", *LOCAL, *model,
                 *sets(f"pools.captioner.init.prompt={prompt}")]) == EXIT_OK
    ran = calls(out / "_versions" / "v2")
    assert not {"Probe", "SplitShots", "ScoreClips", "ClipFilter", "SampleFrames", "ExtractClip"} & set(ran)
    present = [e for e, r in clips1.items() if r["status"] == "present"]
    assert ran["ClipFileFrames"] == ran["QwenVL.caption_clips"] == len(present) > 0
    clips2, videos2 = rows(out, "clips"), rows(out, "videos")
    assert set(clips2) == set(clips1) and set(videos2) == set(videos1)
    same = ("entity_id", "lineage", "parent_id", "start_s", "end_s", "scores", "split", "decisions", "clip_file")
    for e in present:  # re-captioned: the new prompt, the same clip (and the same number of frames, at its times)
        old, new = clips1[e], clips2[e]
        assert new["version"] == 2 and new["prompt"] == prompt and new["model"] == old["model"]
        assert {k: new[k] for k in same} == {k: old[k] for k in same} and new["frames"] == old["frames"]
    for e in set(clips1) - set(present):  # DROPPED and FAILED clips: not re-captioned, their rows as they were
        assert clips2[e]["version"] == 1
    assert all(r["version"] == 2 for r in videos2.values() if r["status"] == "present")
    assert rows(out, "clips", version=1) == clips1


def test_ocr_again_on_the_picked_pages_only(tmp_path, capsys):
    out = tmp_path / "out"
    inputs = [a for p in ("docling_scanned_fax_letter.pdf", "small_tiny.pdf", "pdfjs_bug1020226_broken.pdf")
              for a in ("--input", str(PDFS / p))]
    assert main(["run", "pdf_to_markdown", *inputs, "--output", str(out), *LOCAL]) == EXIT_PARTIAL
    pages1, docs1 = rows(out, "pages"), rows(out, "documents")
    picked = {e for e, r in pages1.items() if r["route"] == "ocr"}
    assert len(picked) == 1 and len(pages1) == 2
    assert main(["rerun", str(out), "--step", "ocr", "--where", "ocr_confidence < 0.99", *LOCAL,
                 *sets("pools.ocr.init.layout=false")]) == EXIT_OK
    ran = calls(out / "_versions" / "v2")
    assert ran["ScanPage"] == ran["Render.crops"] == ran["RapidOcr.detect_lines"] == 1  # the scanned page alone
    assert not {"PdfPages", "PdfText.check", "Layout.regions", "Layout.figures"} & set(ran)
    pages2, docs2 = rows(out, "pages"), rows(out, "documents")
    (e,) = picked
    assert pages2[e]["version"] == 2 and pages2[e]["route"] == "ocr" and pages2[e]["lineage"] == pages1[e]["lineage"]
    assert pages2[e]["markdown"] and pages2[e]["markdown"] != pages1[e]["markdown"]  # read as one region now
    for other in set(pages1) - picked:
        assert {k: v for k, v in pages2[other].items() if k != "version"} == pages1[other]
    doc = pages1[e]["parent_id"]
    assert docs2[doc]["version"] == 2 and docs2[doc]["markdown"] == pages2[e]["markdown"]
    assert all(docs2[d]["version"] == 1 for d in docs2 if d != doc)
    capsys.readouterr()
    assert main(["show", str(out), "pages", e, "--version", "1"]) == EXIT_OK
    assert pages1[e]["markdown"].splitlines()[-1] in capsys.readouterr().out
