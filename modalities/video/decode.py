"""Reading frames: PyAV to open, seek and decode, decord to sample where the probe chose it.

- `open_video(path)` opens a container and its video stream (the first one that is not cover art).
- `FrameSource` decodes a stream packet by packet. A packet that does not decode is skipped and
  recorded in `errors` (its time and FFmpeg's message), so a corrupt stretch costs its own frames
  and nothing else; a read error ends the stream (recorded in `read_error`) after the decoder
  gives back what it holds.
- `frames_at(clip, times, size)` returns the frame shown at each time, resized. On PyAV it seeks
  to a sample (a keyframe seek) when the sample lies more than one GOP ahead and decodes on
  otherwise, converting only the frames it returns: a long video is read in windows, with at
  most two full-size frames alive. On decord (the video's `decoder`) it asks for the frames by
  index; a clip decord fails on is read by PyAV instead.
- `fit_size` is the size to resize to: a long side or a box, keeping the aspect ratio.

PyAV and decord are imported where a stage runs, never when this module loads, so planning a
video recipe on a machine without them stays cheap and says what to install.
"""

from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import curate as cu
from curate.deps import require

DEFAULT_THREADS = 0  # decoder threads per stream; 0: 2 for frames of THREAD_MIN_PIXELS and more, else 1
THREAD_MIN_PIXELS = 640 * 360  # below this, frame threading costs more than it gives (docs/benchmarks.md)
MIN_SEEK_GAP_S = 1.0  # decode on rather than seek when the next sample is this close (or one GOP, if longer)
SEEK_BACKOFF_S = (1.0, 4.0, 16.0)  # a seek that lands after its target is retried this much earlier, then from 0
EPS = 1e-6  # seconds: timestamps closer than this are the same instant
READERS_KEPT = 2  # open decord readers a worker keeps (a video's clips arrive at a worker in runs)
DECORD_LOCK = threading.Lock()  # decord readers are not thread-safe; the local executor runs stages on threads
CONVERT_FIX = "convert it, e.g. `ffmpeg -i IN -c:v libx264 -pix_fmt yuv420p OUT.mp4`"


def pyav():
    """The PyAV module, quiet: FFmpeg's own log lines are dropped, its errors come back as exceptions."""
    av = require("av", "the video modality")
    av.logging.set_level(av.logging.PANIC)
    return av


def each(task: Callable[[Any], Any], items: list, record: Callable[[Any], Any] = lambda item: item) -> list:
    """`task(record(item))` per item of a batch: an InputError, or an FFmpeg error while reading
    the item's file (damaged in a way the probe did not see), fails that item alone."""
    av = pyav()
    out = []
    for item in items:
        try:
            out.append(task(record(item)))
        except cu.InputError as exc:
            out.append(cu.ItemFailure(exc))
        except av.error.FFmpegError as exc:
            path = getattr(record(item), "path", item)
            out.append(cu.ItemFailure(cu.InputError(
                f"{path}: FFmpeg failed reading it ({type(exc).__name__}: {ffmpeg_message(exc)}); the file is "
                f"damaged or changed since it was probed: {CONVERT_FIX}, or leave it out")))
    return out


def open_video(path: str, threads: int = DEFAULT_THREADS) -> tuple[Any, Any]:
    """(container, video stream) of a file the probe accepted; InputError if it no longer opens."""
    av = pyav()
    try:
        container = av.open(cu.local_copy(os.fspath(path)), metadata_errors="ignore")  # a URL: this node's copy
    except (av.error.FFmpegError, OSError) as exc:
        raise cu.InputError(f"{path}: cannot be opened as a video any more ({exc}); was it changed or moved "
                            "after it was probed? Run it again") from None
    stream = video_stream(container)
    if stream is None or stream.codec_context is None:
        container.close()
        raise cu.InputError(f"{path}: no decodable video stream any more; was it changed after it was probed?")
    set_threads(stream, threads)
    return container, stream


def video_stream(container) -> Any | None:
    """The first video stream that is not an attached picture (cover art), or None."""
    av = pyav()
    for stream in container.streams.video:
        if av.stream.Disposition.attached_pic not in stream.disposition:
            return stream
    return None


def set_threads(stream, threads: int = DEFAULT_THREADS) -> None:
    """Frame threading for big frames (`threads` 0: automatic, see DEFAULT_THREADS)."""
    ctx = stream.codec_context
    if threads == 0:
        threads = 2 if (ctx.width or 0) * (ctx.height or 0) >= THREAD_MIN_PIXELS else 1
    ctx.thread_count = threads
    ctx.thread_type = "AUTO" if threads > 1 else "SLICE"


class FrameSource:
    """The frames of one video stream in presentation order, tolerant of bad packets."""

    def __init__(self, container, stream):
        self.container, self.stream = container, stream
        self.time_base = float(stream.time_base)
        rate = stream.average_rate or stream.guessed_rate or stream.base_rate
        self.frame_s = 1.0 / float(rate) if rate else None  # nominal frame interval, for frames without pts
        self.packets = 0  # non-empty packets read
        self.errors: list[tuple[float | None, str]] = []  # packets that did not decode: (seconds, message)
        self.read_error: str | None = None
        self.last_time: float | None = None  # container seconds of the last frame given
        self._frames = None

    def seek(self, seconds: float) -> None:
        """Go to the keyframe at or before `seconds` (container time); frames follow from there."""
        target = max(0, math.floor(seconds / self.time_base))
        self.container.seek(target, stream=self.stream, backward=True, any_frame=False)
        self._frames, self.last_time = None, None

    def next(self) -> Any | None:
        """The next decodable frame, or None at the end; its time (container seconds) is then
        `last_time` (a frame without pts is timed one frame after the one before it)."""
        if self._frames is None:
            self._frames = self._decode()
        frame = next(self._frames, None)
        if frame is not None:
            if frame.pts is not None:
                self.last_time = frame.pts * self.time_base
            else:
                self.last_time = (self.last_time or 0.0) + (self.frame_s or 0.0)
        return frame

    def _decode(self):
        av = pyav()
        packets = self.container.demux(self.stream)
        while True:
            try:
                packet = next(packets)
            except StopIteration:
                return
            except (av.error.FFmpegError, OSError) as exc:  # a truncated file: give what the decoder holds
                self.read_error = f"{type(exc).__name__}: {ffmpeg_message(exc)}"
                yield from self._flush(av)
                return
            if packet.size:
                self.packets += 1
            try:
                frames = packet.decode()
            except av.error.FFmpegError as exc:
                at = packet.pts * self.time_base if packet.pts is not None else self.last_time
                self.errors.append((at, ffmpeg_message(exc)))
                continue
            yield from frames

    def _flush(self, av):
        try:
            yield from self.stream.codec_context.decode(None)
        except av.error.FFmpegError:
            return

    def error_note(self, offset: float = 0.0) -> str | None:
        """One line on the packets that did not decode, or None."""
        if not self.errors and not self.read_error:
            return None
        parts = []
        if self.errors:
            times = [t - offset for t, _ in self.errors if t is not None]
            where = f" between {min(times):.2f} and {max(times):.2f} s" if times else ""
            parts.append(f"{len(self.errors)} packet(s){where} did not decode ({self.errors[0][1][:120]}); "
                         "their frames are skipped")
        if self.read_error:
            parts.append(f"reading stopped early: {self.read_error[:120]}")
        return "; ".join(parts)


def ffmpeg_message(exc: Exception) -> str:
    """FFmpeg's reason without PyAV's wrapping ("[Errno ...] ...: 'avcodec_send_packet()'; last error log")."""
    return str(getattr(exc, "strerror", None) or exc)


def fit_size(width: int, height: int, size: int | tuple[int, int] | list[int] | None,
             upscale: bool = False) -> tuple[int, int]:
    """(w, h) to resize a width x height frame to: `size` is the long side, or a (w, h) box the
    frame fits in; the aspect ratio is kept, and a frame is never enlarged unless `upscale`."""
    if size is None:
        return width, height
    if isinstance(size, int):
        scale = size / max(width, height)
    else:
        box_w, box_h = size
        scale = min(box_w / width, box_h / height)
    if not upscale:
        scale = min(scale, 1.0)
    return max(1, round(width * scale)), max(1, round(height * scale))


def check_size(size: Any, name: str = "size") -> int | tuple[int, int] | None:
    """`size` as given in a recipe (a long side, [w, h], or null); ValueError naming the fix."""
    if size is None or (isinstance(size, int) and not isinstance(size, bool) and size > 0):
        return size
    if isinstance(size, (list, tuple)) and len(size) == 2 and all(isinstance(v, int) and v > 0 for v in size):
        return int(size[0]), int(size[1])
    raise ValueError(f"{name}={size!r}; give the long side in pixels (e.g. {name}: 448), a box [w, h] "
                     f"(e.g. {name}: [448, 448]) or null for the video's own size")


class _Cursor:
    """Moves forward through one stream to the frame shown at each requested time."""

    def __init__(self, source: FrameSource, offset: float):
        self.src, self.offset = source, offset
        self.prev = self.pending = None  # (time, frame): the last frame at or before the target; one read past it
        self.position = 0.0  # relative time of the last frame read (the stream starts at 0)
        self.gap = MIN_SEEK_GAP_S  # grows to the longest GOP seen: seeking less far than that gains nothing
        self._last_key: float | None = None

    def at(self, t: float) -> tuple[float, Any] | None:
        """(time, frame) of the frame shown at relative time t (the last one at or before it; the
        first after it if the stream starts later), or None if nothing decodes from there on."""
        if t - self.position > self.gap or (self.prev is not None and t < self.prev[0] - EPS):
            self._seek(t)
        while True:
            item, self.pending = self.pending or self._read(), None
            if item is None:
                break
            if item[0] <= t + EPS:
                self.prev = item
                continue
            self.pending = item
            break
        return self.prev or self.pending

    def _seek(self, t: float) -> None:
        for back in (*[0.0, *SEEK_BACKOFF_S], None):
            self.src.seek(self.offset + (0.0 if back is None else max(0.0, t - back)))
            self.prev, self._last_key = None, None
            self.pending = self._read()
            if back is None or self.pending is None or self.pending[0] <= t + EPS:
                return  # landed at or before t (or at the start, or past the last frame)

    def _read(self) -> tuple[float, Any] | None:
        frame = self.src.next()
        if frame is None:
            return None
        t = self.src.last_time - self.offset
        self.position = t
        if frame.key_frame:
            if self._last_key is not None and t > self._last_key:
                self.gap = max(self.gap, t - self._last_key)
            self._last_key = t
        return t, frame


def to_array(frame, size: tuple[int, int], fmt: str = "rgb24"):
    """A decoded frame as a contiguous uint8 array (H, W, 3), resized with area averaging."""
    import numpy as np

    w, h = size
    return np.ascontiguousarray(frame.to_ndarray(width=w, height=h, format=fmt, interpolation="AREA"))


def pyav_frames_at(path: str, times: list[float], size: tuple[int, int], offset: float = 0.0,
                   threads: int = DEFAULT_THREADS) -> tuple[list[tuple[float, Any]], str | None]:
    """([(relative time, RGB array)] of the frames shown at `times` (sorted), each frame once;
    a note on packets that did not decode, or None)."""
    container, stream = open_video(path, threads)
    try:
        source = FrameSource(container, stream)
        cursor = _Cursor(source, offset)
        out: list[tuple[float, Any]] = []
        for t in sorted(times):
            found = cursor.at(t)
            if found is not None and (not out or found[0] > out[-1][0] + EPS):
                out.append((found[0], to_array(found[1], size)))
        return out, source.error_note(offset)
    finally:
        container.close()


class DecordReaders:
    """The last few decord readers a worker opened, by (path, size): an LRU."""

    def __init__(self, size: int = READERS_KEPT):
        self.size = size
        self._readers: OrderedDict[tuple, Any] = OrderedDict()

    def get(self, path: str, width: int, height: int):
        key = (path, width, height)
        if key in self._readers:
            self._readers.move_to_end(key)
            return self._readers[key]
        decord = require("decord", "reading frames with decord")
        reader = decord.VideoReader(cu.local_copy(path), ctx=decord.cpu(0), width=width, height=height,
                                    num_threads=1)
        self._readers[key] = reader
        while len(self._readers) > self.size:
            self._readers.popitem(last=False)
        return reader


READERS = DecordReaders()


def decord_frames_at(path: str, times: list[float], size: tuple[int, int], fps: float) -> list[tuple[float, Any]]:
    """[(relative time, RGB array)] of the frames shown at `times`, read by decord by index."""
    with DECORD_LOCK:
        reader = READERS.get(path, *size)
        n = len(reader)
        index = sorted({min(n - 1, max(0, math.floor(t * fps + EPS))) for t in times})
        batch = reader.get_batch(index).asnumpy()
        stamps = reader.get_frame_timestamp(index)[:, 0]
        first = float(reader.get_frame_timestamp([0])[0, 0])
        # back to the start: a kept reader left mid-file goes on decoding ahead into memory while it
        # waits for the next call (dmlc/decord#197, #208): a worker grew by ~6 MiB a batch on a long video
        reader.seek(0)
    return [(float(s) - first, batch[i]) for i, s in enumerate(stamps)]


def frames_at(clip, times: list[float], size: tuple[int, int], threads: int = DEFAULT_THREADS
              ) -> tuple[list[tuple[float, Any]], str | None]:
    """The frames of `clip` (a ClipRecord) shown at `times`, by its video's decoder: ([(time,
    RGB array)] in time order, a note or None). A clip decord fails on is read by PyAV."""
    if clip.decoder == "decord":
        try:
            return decord_frames_at(clip.path, times, size, clip.fps), None
        except Exception as exc:  # noqa: BLE001 - DECORDError and friends: PyAV reads it instead
            frames, note = pyav_frames_at(clip.path, times, size, clip.start_offset_s, threads)
            fallback = f"decord failed ({type(exc).__name__}: {str(exc)[:100]}); read by PyAV"
            return frames, fallback if note is None else f"{fallback}; {note}"
    return pyav_frames_at(clip.path, times, size, clip.start_offset_s, threads)
