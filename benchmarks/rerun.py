"""Running one stage again on committed rows (`curate rerun`) against running the whole job, side by
side in one run, each command a fresh process, round-robin:

- video: `curate run video_captions` on the bundled videos (examples/data/videos), then
  `curate rerun OUT --step captions` (a new prompt): the rerun reads each clip's frames from its
  file and runs no probe, shot split, scoring, frame sampling from the video or clip encoding;
- PDF: `curate run pdf_to_markdown` on ../shared/data/pdfs, then `curate rerun OUT --step ocr
  --where "ocr_confidence < 0.98"`: only the pages OCR read with lower confidence are read again.

Both on the local executor (Ray's start-up, the same for both, would dilute the ratio) with the
tiny random Qwen2.5-VL as the captioner (python -m curate.models.tiny_checkpoints): its
captioning is far cheaper than a 7B model's, so the video ratio shows what the rerun saves of the
upstream; with a real captioner the caption step, which a rerun runs again, is a larger share.

    python benchmarks/rerun.py [--rounds 3] [--json PATH] [--quick]
    python -m benchmarks run rerun
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
VIDEOS = HERE.parent / "examples" / "data" / "videos"
PDFS = HERE.parent.parent / "shared" / "data" / "pdfs"
LOCAL = ["--executor", "local", "--no-progress"]
WHERE = "ocr_confidence < 0.98"  # the shared corpus: 2 of its 333 pages, both read by OCR


def sets(*pairs: str) -> list[str]:
    return [a for s in pairs for a in ("--set", s)]


def timed(args: list[str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "curate.cli", *args], capture_output=True, text=True, check=False)
    secs = time.perf_counter() - t0
    if proc.returncode not in (0, 3):  # 3: some inputs FAILED (the damaged files of the corpora)
        raise SystemExit(f"curate {' '.join(args[:2])} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return secs


def items(out: Path) -> dict[str, tuple[int, float]]:
    """(items, busy seconds) per call of the last run into `out`, from its metrics.json."""
    last = json.loads((out / "_curate" / "manifest.json").read_text())["runs"][-1]
    calls = json.loads((out / last["metrics"]).read_text())["calls"]
    return {name: (c["items"], c["busy_s"]) for name, c in calls.items()}


def one_round(tmp: Path, k: int, model: str, pdfs: list[Path]) -> list[dict]:
    captioner = sets(f"pools.captioner.init.model={model}", "pools.captioner.init.device=cpu",
                     "pools.captioner.init.max_new_tokens=16", "pools.captioner.init.summary_max_new_tokens=16")
    out = []
    vout = tmp / f"video{k}"
    full = timed(["run", "video_captions", "--input", str(VIDEOS), "--output", str(vout), *LOCAL, *captioner])
    again = timed(["rerun", str(vout), "--step", "captions", *LOCAL, *captioner,
                   *sets("pools.captioner.init.prompt=Describe these {frames} frames.")])
    out.append({"job": "video_captions --step captions", "full_s": full, "rerun_s": again, "full_calls": items(vout),
                "rerun_calls": items(vout / "_versions" / "v2")})
    pout = tmp / f"pdf{k}"
    inputs = [a for p in pdfs for a in ("--input", str(p))]
    full = timed(["run", "pdf_to_markdown", *inputs, "--output", str(pout), *LOCAL])
    again = timed(["rerun", str(pout), "--step", "ocr", "--where", WHERE, *LOCAL])
    out.append({"job": f"pdf_to_markdown --step ocr --where '{WHERE}'", "full_s": full, "rerun_s": again,
                "full_calls": items(pout), "rerun_calls": items(pout / "_versions" / "v2")})
    return out


def measure(rounds: int, quick: bool) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="rerun-bench-"))
    model = tmp / "tiny-qwen25vl"
    subprocess.run([sys.executable, "-m", "curate.models.tiny_checkpoints", str(model)], check=True,
                   capture_output=True)
    pdfs = sorted(PDFS.glob("*.pdf"))[: 6 if quick else None]
    runs = [r for k in range(rounds) for r in one_round(tmp, k, str(model), pdfs)]
    jobs = []
    for job in dict.fromkeys(r["job"] for r in runs):
        mine = [r for r in runs if r["job"] == job]
        full, again = statistics.median(r["full_s"] for r in mine), statistics.median(r["rerun_s"] for r in mine)
        busy = [(sum(b for _, b in r["full_calls"].values()), sum(b for _, b in r["rerun_calls"].values())) for r in mine]
        jobs.append({"job": job, "full_s": full, "rerun_s": again,
                     "ratio": statistics.median(r["rerun_s"] / r["full_s"] for r in mine),
                     "busy_ratio": statistics.median(b / a for a, b in busy), "rounds": [(r["full_s"], r["rerun_s"])
                                                                                   for r in mine],
                     "full_calls": mine[0]["full_calls"], "rerun_calls": mine[0]["rerun_calls"]})
    return {"rounds": rounds, "pdfs": len(pdfs), "videos": len([p for p in VIDEOS.iterdir() if p.suffix in (".mp4", ".avi")]), "jobs": jobs}


def tables(res: dict) -> list:
    from table import Table

    t = Table(f"curate rerun vs the whole job (local executor, median of {res['rounds']} fresh runs each)",
              [("job and rerun", 52), ("full s", 8), ("rerun s", 8), ("ratio", 7), ("busy ratio", 10)])
    t.header()
    for j in res["jobs"]:
        t.add(j["job"], f"{j['full_s']:.2f}", f"{j['rerun_s']:.2f}", f"{j['ratio']:.2f}", f"{j['busy_ratio']:.2f}")
    video, pdf = res["jobs"]
    t.target("video re-caption / full job, wall", video["ratio"], "<= 0.5", video["ratio"] <= 0.5)
    skipped = sorted(set(video["full_calls"]) - set(video["rerun_calls"]))
    t.notes.append(f"calls of the video job the rerun did not run: {', '.join(skipped)} ("
                   f"{sum(video['full_calls'][c][1] for c in skipped):.1f} busy s of the job's "
                   f"{sum(b for _, b in video['full_calls'].values()):.1f})")
    cap = "QwenVL.caption_clips"
    t.notes.append(f"the captioner, which a rerun runs again: {video['full_calls'][cap][1]:.1f} busy s in the job, "
                   f"{video['rerun_calls'][cap][1]:.1f} in the rerun; busy ratio: the rerun's stage-busy seconds "
                   "over the job's")
    t.notes.append("ratio: the median of the rounds' ratios of wall seconds")
    t.notes.append(f"PDF: pages read by OCR in the job {pdf['full_calls'].get('RapidOcr.detect_lines', (0,))[0]}, in "
                   f"the rerun {pdf['rerun_calls'].get('RapidOcr.detect_lines', (0,))[0]} of "
                   f"{pdf['full_calls'].get('PdfText.check', (0,))[0]} pages")
    return [t]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1 round, 6 PDFs")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    res = measure(1 if a.quick else a.rounds, a.quick)
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))
    sys.path.insert(0, str(HERE))
    for t in tables(res):
        print(t.markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
