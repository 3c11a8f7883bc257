"""A 30-minute video (made here with PyAV: 64x36 at 10 fps, 18,000 frames) runs probe -> shots
(stride) -> frames -> a reduce per clip in bounded memory: the probe seeks to the end instead of
decoding, the stride needs no decoding, and frames are read in windows. Peak RSS is VmHWM of a
fresh process (this test process's own peak carries the other tests)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from video_samples import write_video

MINUTES = 30
FPS = 10
SIZE = (64, 36)
WHOLE_VIDEO_MB = MINUTES * 60 * FPS * SIZE[0] * SIZE[1] * 3 / 2**20  # every frame decoded to RGB: 119 MB
HELD_FRAMES_MB = MINUTES * 60 * 2 * SIZE[0] * SIZE[1] * 3 / 2**20  # the 3,600 sampled frames: 24 MB
# Peak RSS over the process after its imports. Measured +52 MB (decord) and +63 MB (PyAV): the engine
# keeps a root's values until the root is done, so all 3,600 sampled frames are alive at the end
# (HELD_FRAMES_MB), plus PyAV/decord buffers and allocator arenas (~25 MB: sampling the same clips
# in a plain loop peaks at +22-25 MB). Decoding the whole video would add WHOLE_VIDEO_MB on top.
MAX_GROWTH_MB = 100

RUN = """
import json, sys, time
import curate as cu
from curate.modalities.video.frames import SampleFrames
from curate.modalities.video.probe import Probe
from curate.modalities.video.records import Clip, Frame, Video
from curate.modalities.video.shots import SplitShots
import av, decord, numpy, scenedetect  # loaded before the baseline, like the stages' libraries


def status(key):
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith(key)).split()[1]) / 1024


def frames_in_order(groups):
    out = []
    for frames in groups:
        times = [f.timestamp_s for f in frames]
        assert times == sorted(times) and frames[0].image.shape == (36, 64, 3), times
        out.append((len(frames), times[0], times[-1]))
    return out


path, prefer = sys.argv[1], sys.argv[2]
baseline = status("VmRSS")
pipe = cu.Pipeline(Video)
videos = pipe.source.map(cu.stage(Probe, init={"prefer": prefer}))
clips = videos.expand(cu.stage(SplitShots, init={"method": "stride", "stride_s": 10.0}, batch_size=1), into=Clip)
frames = clips.expand(cu.stage(SampleFrames, init={"size": 448}, batch_size=4), into=Frame)
per_clip = frames.reduce(cu.stage(frames_in_order, batch_size=16))
pipe.output("clips", per_clip)
pipe.output("videos", videos)
start = time.perf_counter()
result = cu.run(pipe, [path], executor="local")
seconds = time.perf_counter() - start
(video,) = result.values("videos")
rows = result.values("clips")
print(json.dumps({"baseline_mb": baseline, "peak_mb": status("VmHWM"), "seconds": seconds, "clips": len(rows),
                  "frames": sum(r[0] for r in rows), "last": rows[-1], "decoder": video.decoder,
                  "duration_s": video.duration_s, "measured": video.duration_measured}))
"""


@pytest.fixture(scope="module")
def long_video(tmp_path_factory) -> Path:
    def frames():
        import numpy as np

        for i in range(MINUTES * 60 * FPS):
            image = np.full((SIZE[1], SIZE[0], 3), (i * 7) % 256, np.uint8)
            image[:, i % SIZE[0]] = 255
            yield image

    path = tmp_path_factory.mktemp("long") / "thirty_minutes.mp4"
    return write_video(path, frames(), fps=FPS, size=SIZE, options={"preset": "ultrafast", "crf": "35", "g": "100"})


@pytest.mark.slow
@pytest.mark.parametrize("prefer", ["decord", "pyav"])
def test_a_thirty_minute_video_runs_in_bounded_memory(long_video, prefer):
    proc = subprocess.run([sys.executable, "-c", RUN, str(long_video), prefer], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    growth = report["peak_mb"] - report["baseline_mb"]
    print(f"{MINUTES} min video, decoder {report['decoder']}: {report['clips']} clips, {report['frames']} frames in "
          f"{report['seconds']:.1f} s; RSS {report['baseline_mb']:.0f} MB after imports, "
          f"peak {report['peak_mb']:.0f} MB "
          f"(+{growth:.0f} MB; every frame decoded would be {WHOLE_VIDEO_MB:.0f} MB)")
    assert report["decoder"] == prefer and report["duration_s"] == MINUTES * 60 and not report["measured"]
    assert report["clips"] == MINUTES * 6 and report["frames"] == MINUTES * 6 * 20
    assert report["last"] == [20, pytest.approx(1790.2), pytest.approx(1799.7)]  # frames shown at 1790.25, ...: 10 fps
    assert growth < MAX_GROWTH_MB


def test_the_limit_means_something():
    assert HELD_FRAMES_MB + WHOLE_VIDEO_MB > MAX_GROWTH_MB > HELD_FRAMES_MB
