"""Video captioning clips/s on the real videos of ../shared/data/videos, side by side in one run:

- curate: the bundled `video_captions` recipe on curate's Ray executor (probe -> shots -> scores
  -> filter -> frames -> caption (a reduce on the shared captioner pool, batches mixing clips of
  several videos) -> clip files -> rows -> video reduce + summary), after an untimed warm-up:
  one-shot `cu.run` end to end (its actors start and load the model inside the timing) and its
  execution phase, and a warm `cu.Session`'s second run (`curate warm session`: actors up and
  models loaded in the session's untimed first run, as the loop builds its models before its
  timing); plus the caption Call's batch fill;
- a plain sequential loop in a fresh process doing the same work with the same stage classes and
  settings, one video and one clip at a time (models built once, after the same warm-up;
  benchmarks/ceiling.py runs it);
- the machine's ceiling (`2 loops at once`, benchmarks/ceiling.py): that loop in two processes at
  once, each over every video: what two cores give for this work with no engine at all.

Both sides run one thread per process (OMP_NUM_THREADS=1: torch, OpenMP, BLAS; `threads: 1` for
FFmpeg's decoders and the clip encoder, which otherwise took the loop to 1.22 cores), and curate
gives its heavy stages (shots, scores, frames, clip encoding, the captioner) two workers each:
pools scale by replicas. The captioner is the tiny Qwen2.5-VL that `curate.models.tiny_checkpoints` builds (random weights: the
captions are noise, the code path and the frames' trip are the real ones), run by transformers
on the CPU, so the caption step costs what a small model costs and decoding, shot detection,
scoring, sampling and encoding carry the rest. Videos: every decodable file of the folder,
`--copies` times (copies are distinct inputs: their clips share caption batches).

    python benchmarks/video_compare.py [--copies 3] [--no-extract] [--no-ceiling]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
ROOT = HERE.parent
DATA = ROOT.parent / "shared" / "data" / "videos"
SKIP = {"small_tiny_mpeg4.avi"}  # not decodable (by design): it fails alone in both systems


def inputs(copies: int, tmp: Path) -> list[str]:
    out = []
    for k in range(copies):
        for p in sorted(DATA.iterdir()):
            if p.name in SKIP:
                continue
            dst = tmp / f"c{k}_{p.name}"
            shutil.copyfile(p, dst)
            out.append(str(dst))
    return out


# The heavy stages get two workers each in curate (one thread each, see OMP_NUM_THREADS below):
# pools scale by replicas, not threads.
REPLICAS = ["steps.clips.expand.replicas=2", "steps.clip_files.map.replicas=2", "pools.captioner.replicas=2",
            "steps.scored.map.replicas=2", "steps.frames.expand.replicas=2"]


# One decoder/encoder thread in every video stage, on both sides (FFmpeg's frame threads and x264's
# own threads would otherwise put the loop on 1.2 cores and oversubscribe curate's workers).
ONE_THREAD = [f"steps.{step}.{op}.init.threads=1" for step, op in
              (("clips", "expand"), ("scored", "map"), ("frames", "expand"), ("clip_files", "map"))]


def recipe(model: str, extract: bool, replicas: bool = False):
    from curate.recipe import load_recipe

    sets = [f"pools.captioner.init.model={model}", "pools.captioner.init.device=cpu", *ONE_THREAD]
    sets += REPLICAS if replicas else []
    r = load_recipe(ROOT / "recipes" / "video_captions.yaml", sets, input_given=True)
    return r, {s["id"]: s for s in r.data["steps"]}


def sequential(paths: list[str], model: str, extract: bool) -> tuple[int, float]:
    """The recipe's work in a plain loop: (clips captioned, seconds)."""
    from curate.modalities.video.assemble import ClipRows, collect, video_captions
    from curate.modalities.video.captions import QwenVL
    from curate.modalities.video.extract import ExtractClip
    from curate.modalities.video.filters import ClipFilter, ScoreClips
    from curate.modalities.video.frames import SampleFrames
    from curate.modalities.video.probe import Probe
    from curate.modalities.video.shots import SplitShots

    r, steps = recipe(model, extract)
    init = lambda sid, op: steps[sid][op].get("init", {})  # noqa: E731
    probe, shots, score = Probe(**init("videos", "map")), SplitShots(**init("clips", "expand")), ScoreClips(**init("scored", "map"))
    keep, frames = ClipFilter(), SampleFrames(**init("frames", "expand"))
    captioner = QwenVL(**r.data["pools"]["captioner"]["init"])
    encode, rows = ExtractClip(**init("clip_files", "map")), ClipRows()
    start, clips_done = time.perf_counter(), 0
    for path in paths:
        (video,) = probe([path])
        if not hasattr(video, "path"):
            continue
        (clips,) = shots([video])
        kept = []
        for clip in clips:
            (scored,) = score([clip])
            (verdict,) = keep([scored])
            if not verdict[0]:
                continue
            (fs,) = frames([scored])
            (caption,) = captioner.caption_clips([fs])
            encoded = encode([scored])[0] if extract else None
            kept.append(rows([(scored, caption, encoded)])[0])
            clips_done += 1
        (grouped,) = collect([kept])
        video_captions([(video, grouped)])
        captioner.summarize([[c.caption for c in kept]])
    return clips_done, time.perf_counter() - start


def curate_run(paths: list[str], model: str, extract: bool, session=None):
    import curate as cu
    from curate.io.sources import path_key

    r, _ = recipe(model, extract, replicas=True)
    if session is not None:
        return session.run(r.pipeline, paths, key=path_key)
    return cu.run(r.pipeline, paths, executor="ray", key=path_key)


def main() -> None:
    # One thread per worker on both sides (torch, OpenMP, BLAS): the loop runs on one core as a
    # loop does, and curate's workers do not fight over the cores; pools scale by replicas.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=3)
    ap.add_argument("--no-extract", action="store_true", help="(the recipe always extracts; kept for the loop)")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--no-ceiling", action="store_true", help="skip the two-loops-at-once ceiling")
    args = ap.parse_args()
    import ray
    from ceiling import loops_at_once

    from curate.models.tiny_checkpoints import build_tiny_qwen25vl

    tmp = Path(tempfile.mkdtemp(prefix="curate-video-bench-"))
    model = str(tmp / "tiny-qwen25vl")
    build_tiny_qwen25vl(model)
    paths = inputs(args.copies, tmp)
    # 4 logical CPUs on this 2-core machine: the doubled pools' fractional requests fit; the
    # threads pinned above keep the real cores from being oversubscribed.
    ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}})
    extract = not args.no_extract
    curate_run(paths[:2], model, extract)  # untimed warm-up
    loop = ("video_compare", "sequential", (paths[:1], model, extract), (paths, model, extract))
    clips, secs = loops_at_once(*loop)
    ceiling = None if args.no_ceiling else loops_at_once(*loop, copies=2)
    res = curate_run(paths, model, extract)
    clips_c = sum(1 for it in res.items("clips") if it.status.name == "PRESENT")
    cap = res.metrics.calls.get("QwenVL.caption_clips")
    import curate as cu

    with cu.Session(executor="ray") as session:
        curate_run(paths[:2], model, extract, session)  # untimed: actors up, models loaded and run once
        warm = curate_run(paths, model, extract, session)
    clips_w = sum(1 for it in warm.items("clips") if it.status.name == "PRESENT")
    print(f"{len(paths)} videos ({args.copies} copies of each decodable file in {DATA}); tiny Qwen2.5-VL on CPU")
    print(f"{'system':<22}{'clips':>6}{'seconds':>9}{'clips/s':>9}{'vs loop':>9}")
    base = clips / secs
    rows = []
    measured = [("sequential loop", clips, secs), *([("2 loops at once", *ceiling)] if ceiling else []),
                ("curate end to end", clips_c, res.metrics.wall_s),
                ("curate execution", clips_c, res.metrics.execution_s),
                ("curate warm session", clips_w, warm.metrics.wall_s)]
    for name, n, s in measured:
        print(f"{name:<22}{n:>6}{s:>9.2f}{n / s:>9.2f}{n / s / base:>8.2f}x")
        rows.append({"system": name, "clips": n, "seconds": s, "clips_per_s": n / s, "vs_loop": n / s / base})
    if cap is not None:
        print(f"caption batches: {cap.batches}, fill {cap.batch_fill:.2f} (batch {cap.batch_size}), "
              f"{len({v.split('/')[-1] for v in paths})} distinct files")
    ray.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"videos": len(paths), "rows": rows, "caption_fill": cap and cap.batch_fill,
                                               "caption_batches": cap and cap.batches}, indent=1))


if __name__ == "__main__":
    main()
