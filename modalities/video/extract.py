"""Clip -> its own small video file, as bytes the run's sink writes (the stage writes no file).

`ExtractClip` (a map on clips or scored clips) decodes a clip's frames with PyAV (a keyframe
seek to its start) and encodes them with `codec` (libx264 at `crf`/`preset` by default; the
MPEG-4 Part 2 encoder at a matching bit rate where this PyAV build has no libx264) into a
`container` (mp4), optionally shrunk to `size` (a long side or a [w, h] box). Timestamps are
kept (a variable frame rate stays variable); audio is left out. `threads` is the decoder's and
the encoder's thread count (0: FFmpeg's choice, x264 about 1.5 per core; 1 where a pool scales by
replicas on a small machine). It returns an `EncodedClip` whose `clip_file` holds the bytes:
declare it as a file column of the output,
`files={"clip_file": {"ext": ".mp4", "name": "{key}/{ordinal}"}}`, and the sink writes
`<out>/<output>/_files/clip_file/<video>-<hash>/<ordinal>.mp4` and puts that path in the row.
A row names a file only if its bytes were made, so it never names a file that does not exist.
"""

from __future__ import annotations

import io
from fractions import Fraction

from curate.modalities.video.decode import (
    DEFAULT_THREADS,
    EPS,
    FrameSource,
    check_size,
    each,
    fit_size,
    open_video,
    pyav,
)
from curate.modalities.video.records import ClipRecord, EncodedClip, clip_of

import curate as cu

DEFAULT_CODEC = "libx264"
DEFAULT_CRF = 23  # x264's default quality
DEFAULT_PRESET = "veryfast"  # x264 speed/size trade-off: much faster than 'medium', a little bigger (docs/benchmarks.md)
FALLBACK_CODEC = "mpeg4"  # in every FFmpeg build: used when libx264 is missing
FALLBACK_BITS_PER_PIXEL = 0.15  # mpeg4's bit rate: bits per pixel per frame, about crf 23's quality
TIME_BASE = Fraction(1, 1000)  # output timestamps in ms: keeps the source's frame times
CONTAINERS = {"mp4": ".mp4", "matroska": ".mkv", "mov": ".mov", "avi": ".avi"}


class ExtractClip:
    """Map: a clip -> EncodedClip (its encoded bytes and how they were made), or an ItemFailure."""

    requires = ("av",)  # checked before a run starts (curate.deps.check_installed)

    def __init__(self, codec: str = DEFAULT_CODEC, crf: int = DEFAULT_CRF, preset: str = DEFAULT_PRESET,
                 size: int | list[int] | None = None, container: str = "mp4", threads: int = DEFAULT_THREADS):
        if container not in CONTAINERS:
            raise ValueError(f"container={container!r}; one of {sorted(CONTAINERS)}, e.g. container: mp4")
        if not isinstance(crf, int) or not 0 <= crf <= 51:
            raise ValueError(f"crf={crf!r}; give a whole number 0-51 (lower is better and bigger), e.g. crf: 23")
        self.codec, self.note = pick_codec(codec)
        self.crf, self.preset, self.container, self.threads = crf, preset, container, threads
        self.size = check_size(size)

    def __call__(self, clips: list) -> list:
        return each(self.encode, clips, clip_of)

    def encode(self, clip: ClipRecord) -> EncodedClip:
        """The clip as a video file's bytes; raises InputError if none of its frames decodes."""
        av = pyav()
        w, h = (max(2, v - v % 2) for v in fit_size(clip.width, clip.height, self.size))  # yuv420p: even sides
        buffer = io.BytesIO()
        frames, last = 0, -1
        with av.open(buffer, mode="w", format=self.container) as out:
            stream = self._stream(out, clip, w, h)
            container, source_stream = open_video(clip.path, self.threads)
            try:
                source = FrameSource(container, source_stream)
                source.seek(clip.start_offset_s + clip.start_s)
                while (frame := source.next()) is not None:
                    t = source.last_time - clip.start_offset_s
                    if t >= clip.end_s - EPS:
                        break
                    pts = round((t - clip.start_s) / TIME_BASE)
                    if t < clip.start_s - EPS or pts <= last:
                        continue
                    picture = frame.reformat(width=w, height=h, format="yuv420p")
                    picture.pts, picture.time_base, last = pts, TIME_BASE, pts
                    out.mux(stream.encode(picture))
                    frames += 1
            finally:
                container.close()
            if frames:
                out.mux(stream.encode(None))
        if not frames:
            raise cu.InputError(f"{clip.path}: no frame of the clip [{clip.start_s:.2f}, {clip.end_s:.2f}) s decodes, "
                                "so it cannot be extracted; the file is damaged there: re-encode it, or drop the clip")
        return EncodedClip(clip_file=buffer.getvalue(), codec=self.codec, container=self.container, width=w,
                           height=h, frames=frames, start_s=clip.start_s, end_s=clip.end_s)

    def _stream(self, out, clip: ClipRecord, w: int, h: int):
        stream = out.add_stream(self.codec, rate=Fraction(clip.fps).limit_denominator(100_000))
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        stream.time_base = stream.codec_context.time_base = TIME_BASE
        if self.threads:  # 0: the encoder's own choice (x264: 1.5 threads per core)
            stream.codec_context.thread_count = self.threads
        if self.codec == "libx264":
            stream.options = {"crf": str(self.crf), "preset": self.preset}
        else:
            stream.codec_context.bit_rate = max(100_000, int(w * h * clip.fps * FALLBACK_BITS_PER_PIXEL))
        return stream


def pick_codec(codec: str) -> tuple[str, str | None]:
    """(the encoder to use, a note if it is not the one asked for); ValueError if none fits."""
    av = pyav()
    if codec in av.codecs_available:
        try:
            av.codec.Codec(codec, "w")
            return codec, None
        except (av.error.FFmpegError, ValueError):
            pass  # a decoder of that name, no encoder
    if codec in ("libx264", "h264") and FALLBACK_CODEC in av.codecs_available:
        return FALLBACK_CODEC, f"{codec} is not in this PyAV build: encoded with {FALLBACK_CODEC}"
    raise ValueError(f"codec={codec!r}: this PyAV build has no such encoder; use libx264 (or mpeg4, mjpeg)")
