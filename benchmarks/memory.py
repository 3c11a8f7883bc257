"""Bounded memory on long inputs, on curate's Ray executor: the peak resident memory of the
driver and of each worker (`RunMetrics.driver_peak_rss`, `PoolMetrics.worker_peak_rss`: VmHWM of
each process) for

- a 3,000-page PDF (written here with PyMuPDF: one line of text per page) through the bundled
  `pdf_to_markdown` recipe (text-layer route);
- a 30-minute video (written here with PyAV: 320x180 at 10 fps, a moving gradient) through the
  bundled `video_captions` recipe with stride clips of 20 s, the tiny Qwen2.5-VL of
  `curate.models.tiny_checkpoints` as the captioner, and every clip extracted to its own file.

Both run in a fresh local Ray into a temporary output directory; each worker is a process of
its own, so its peak is its own. The inputs are made first, in a subprocess (so the driver's
peak is the run's, not PyAV's or torch's while writing them), and not timed. A worker's peak
includes the pages of Ray's shared object store it touched (values it wrote or read there);
"private" is its largest private memory (RssAnon) at the end of a call, without those pages.
Run it with --minutes 10 and --minutes 30 to see whether a worker's peak grows with the video.

    python benchmarks/memory.py [--pages 3000] [--minutes 30]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write_pdf(path: Path, pages: int) -> None:
    import pymupdf

    doc = pymupdf.open()
    for n in range(pages):
        page = doc.new_page(width=300, height=60)
        page.insert_text((10, 30), f"Page {n} of the long document: the quick brown fox jumps over the lazy dog.")
    doc.save(path)


def write_video(path: Path, minutes: float, size=(320, 180), fps: int = 10) -> None:
    import av
    import numpy as np

    w, h = size
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=fps, options={"preset": "ultrafast", "crf": "30"})
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        x = np.arange(w, dtype=np.uint16)[None, :, None]
        y = np.arange(h, dtype=np.uint16)[:, None, None]
        for i in range(int(minutes * 60 * fps)):
            img = ((x + y + i * 3 + np.array([0, 80, 160], dtype=np.uint16)) % 256).astype(np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


def report(label: str, res) -> None:
    m = res.metrics
    print(f"\n{label}: {m.roots} input(s) in {m.wall_s:.1f} s (start-up {m.startup_s:.1f} s)")
    print(f"  driver peak RSS {m.driver_peak_rss / 2**20:.0f} MiB")
    for name, p in m.pools.items():
        if any(p.worker_peak_rss):
            peaks = ", ".join(f"{v / 2**20:.0f} (private {u / 2**20:.0f})"
                              for v, u in zip(p.worker_peak_rss, p.worker_peak_private))
            print(f"  {name:<28} workers' peak RSS {peaks} MiB ({sum(p.worker_batches)} batches)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=3000)
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--make", help=argparse.SUPPRESS)  # internal: write the inputs into this directory
    args = ap.parse_args()
    if args.make:
        make = Path(args.make)
        write_pdf(make / "long.pdf", args.pages)
        write_video(make / "long.mp4", args.minutes)
        from curate.models.tiny_checkpoints import build_tiny_qwen25vl

        build_tiny_qwen25vl(str(make / "tiny-qwen25vl"))
        return
    import ray

    import subprocess

    import curate as cu
    from curate.io.sources import path_key
    from curate.recipe import load_recipe

    tmp = Path(tempfile.mkdtemp(prefix="curate-memory-"))
    pdf, video, model = tmp / "long.pdf", tmp / "long.mp4", tmp / "tiny-qwen25vl"
    t = time.perf_counter()
    subprocess.run([sys.executable, __file__, "--make", str(tmp), "--pages", str(args.pages),
                    "--minutes", str(args.minutes)], check=True)
    print(f"made a {args.pages}-page PDF ({pdf.stat().st_size / 2**20:.1f} MB) and a {args.minutes:g}-minute "
          f"video ({video.stat().st_size / 2**20:.1f} MB) in {time.perf_counter() - t:.0f} s")
    ray.init(address="local", include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}})
    recipe = load_recipe(ROOT / "recipes" / "pdf_to_markdown.yaml", input_given=True)
    res = cu.run(recipe.pipeline, [str(pdf)], key=path_key, executor="ray", output_dir=tmp / "out-pdf")
    report(f"pdf_to_markdown, {args.pages} pages", res)
    sets = [f"pools.captioner.init.model={model}", "pools.captioner.init.device=cpu",
            "steps.clips.expand.init.method=stride", "steps.clips.expand.init.stride_s=20"]
    recipe = load_recipe(ROOT / "recipes" / "video_captions.yaml", sets, input_given=True)
    res = cu.run(recipe.pipeline, [str(video)], key=path_key, executor="ray", output_dir=tmp / "out-video")
    clips = res.counts.get("clips", {})
    report(f"video_captions, {args.minutes:g} minutes ({clips} clips)", res)
    ray.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
