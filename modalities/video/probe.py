"""Video -> VideoRecord: what a file holds, checked before any stage decodes it.

`Probe` (a batched map on the input paths) opens each file with PyAV and returns a `VideoRecord`,
or an `ItemFailure` whose `InputError` names the file, what is wrong and how to fix it:

- the path: missing, a directory, unreadable, empty;
- the container: not one FFmpeg reads (a truncated MP4 has lost its index, the "moov atom"; a
  PDF, a text or an archive under a video's name is named for what its first bytes say), or a
  still image (a PNG named .mp4, which FFmpeg would read as one frame);
- the streams: no video stream (audio only), a codec this FFmpeg cannot decode (the codec
  preflight: the decoder must exist and give a first frame), zero frames (no packet decodes),
  frames too small to caption (under `min_side` px, e.g. 1x1).

What it measures, and notes in `VideoRecord.notes`:

- **Duration.** The stream's (else the container's) claimed duration is checked against the
  packets near its end (demuxed, not decoded: cheap). If they disagree by more than
  `DURATION_TOLERANCE_S` (or 2 frames), or the container gives none, the duration is measured by
  decoding the last GOP (`duration_measured`): a truncated file gets the length of what decodes.
- **Frame rate.** The average rate; the first `VFR_WINDOW` frames' intervals decide
  `variable_fps`. Times in every record are relative to the first frame (`start_offset_s`).
- **Decoder.** decord when it reads the stream (its frame count agrees and its first and last
  frames decode), else PyAV; variable frame rate always PyAV (decord samples by index).
  The choice and its reason are recorded (`decoder`, `notes`).
"""

from __future__ import annotations

import itertools
import os
import re
from typing import Any

from curate.modalities.files import check_file
from curate.modalities.video.decode import (
    CONVERT_FIX,
    DECORD_LOCK,
    FrameSource,
    each,
    pyav,
    video_stream,
)
from curate.modalities.video.records import DECODERS, StreamInfo, VideoRecord

import curate as cu

MIN_SIDE_PX = 16  # frames smaller than this (a 1x1 video) carry nothing a captioner can read
PREFLIGHT_PACKETS = 300  # packets read looking for a first frame before the codec preflight gives up
VFR_WINDOW = 24  # frames whose intervals decide whether the frame rate is variable
VFR_SPREAD = 0.5  # (longest - shortest interval) / median above this: variable frame rate
DURATION_TOLERANCE_S = 0.5  # claimed vs packet end: a bigger gap (or 2 frames) means the header lies
END_WINDOW_S = 5.0  # the packet check starts this long before the claimed end (then at the keyframe before)
MAX_END_DECODE_S = 60.0  # a last GOP longer than this is not decoded: the packets' end is taken
FRAME_COUNT_TOLERANCE = 0.02  # header frame count vs duration x fps: a bigger gap is noted
STILL_IMAGE_FORMATS = ("image2", "png_pipe", "jpeg_pipe", "webp_pipe", "bmp_pipe", "tiff_pipe")  # and any *_pipe
SNIFF_BYTES = 64  # bytes read to say what a file that is not a video is
FILE_MAGIC = ((b"%PDF-", "a PDF document"), (b"\x89PNG\r\n\x1a\n", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"),
              (b"GIF8", "a GIF image"), (b"PK\x03\x04", "a ZIP archive"), (b"\x1f\x8b", "a gzip archive"))
DECORD_PREFIX = re.compile(r"\[\d\d:\d\d:\d\d\]\s*\S+:\d+:\s*")  # decord's log prefix in its messages


class Probe:
    """Map: a video's path -> its `VideoRecord`, or an ItemFailure naming the file and the fix.

    `prefer`: "decord" (used where it reads the stream) or "pyav"; `min_side`: smallest frame
    side accepted, in pixels."""

    requires = ("av",)  # checked before a run starts; decord is optional (prefer="decord" falls back)

    def __init__(self, prefer: str = "decord", min_side: int = MIN_SIDE_PX):
        if prefer not in DECODERS:
            raise ValueError(f"prefer={prefer!r}; one of {DECODERS}, e.g. prefer: decord")
        if not isinstance(min_side, int) or min_side < 1:
            raise ValueError(f"min_side={min_side!r}; give a whole number of pixels >= 1, e.g. min_side: 16")
        self.prefer, self.min_side = prefer, min_side

    def __call__(self, paths: list) -> list:
        return each(self.probe, paths)

    def probe(self, item: Any) -> VideoRecord:
        """The VideoRecord of one path; raises InputError naming the file and the fix."""
        return probe(item, self.prefer, self.min_side)


def probe(item: Any, prefer: str = "decord", min_side: int = MIN_SIDE_PX) -> VideoRecord:
    """The VideoRecord of one path; raises InputError naming the file and the fix."""
    path = _path_of(item)
    _check_file(path)
    av = pyav()
    try:
        container = av.open(cu.local_copy(path), metadata_errors="ignore")  # a URL: this node's copy
    except (av.error.FFmpegError, OSError, UnicodeDecodeError) as exc:
        raise cu.InputError(_unopenable(path, exc, _is_mp4(path))) from None
    with container:
        _not_an_image(container, path)
        stream = _checked_stream(container, path)
        facts = _measure(container, stream, path, min_side)
        streams = tuple(StreamInfo(s.index, s.type, _codec(s), s is stream or s.codec_context is not None)
                        for s in container.streams)
        codec, container_name = _codec(stream), container.format.name
    notes = facts.pop("notes")
    decoder = _decoder(path, prefer, facts["variable_fps"], facts["frame_count"], facts["shape"], notes)
    del facts["shape"]
    return VideoRecord(path=path, container=container_name, codec=codec, streams=streams, decoder=decoder,
                       notes=tuple(notes), **facts)


def _not_an_image(container, path: str) -> None:
    """InputError if FFmpeg opened the file as a still image (a PNG or JPEG named .mp4: FFmpeg
    sniffs the content, and would read it as a video of one frame)."""
    name = container.format.name
    if name in STILL_IMAGE_FORMATS or name.endswith("_pipe"):
        kind = _sniff(path) or f"an image ({container.format.long_name})"
        raise cu.InputError(f"{path}: not a video but a still image: {kind}, which FFmpeg reads with its "
                            f"{name} image reader; caption images with an image pipeline, or leave it out of the input")


def _checked_stream(container, path: str):
    """The video stream; InputError if there is none or FFmpeg has no decoder for it."""
    stream = video_stream(container)
    if stream is None:
        kinds = ", ".join(f"{s.type} {_codec(s)}" for s in container.streams) or "nothing"
        raise cu.InputError(f"{path}: no video stream (the file holds: {kinds}); captioning needs frames: "
                            "leave audio-only files out of the input")
    if stream.codec_context is None:
        raise cu.InputError(f"{path}: unsupported codec: this FFmpeg build has no decoder for its video stream "
                            f"({_tag(stream)}); {CONVERT_FIX}")
    return stream


def _measure(container, stream, path: str, min_side: int) -> dict:
    """The VideoRecord fields the stream's frames and packets give (and `shape`, `notes`)."""
    head, notes = _preflight(container, stream, path)
    width, height = head["size"]
    if min(width, height) < min_side:
        raise cu.InputError(f"{path}: frames are {width}x{height} px, under the {min_side} px a captioner can "
                            "read; leave it out of the input (or lower the probe's min_side)")
    offset = head["times"][0]
    fps, vfr = _rate(stream, head["times"])
    duration, measured, end_notes = _duration(container, stream, offset, fps, path)
    notes += end_notes
    if vfr:  # the header's rate means little: count the frames (packets, not decoded)
        frame_count = max(1, _count_packets(container, stream))
        fps = frame_count / duration
        notes.append(f"variable frame rate (frame intervals {_spread(head['times'])}); {fps:.3f} fps is the "
                     "average, frames are read by timestamp")
    else:
        frame_count = _frame_count(stream, duration, fps, measured, notes)
    return {"duration_s": round(duration, 6), "fps": fps, "width": width, "height": height,
            "frame_count": frame_count, "duration_measured": measured, "variable_fps": vfr,
            "start_offset_s": offset, "shape": (height, width), "notes": notes}


def _path_of(item: Any) -> str:
    if isinstance(item, dict) and isinstance(item.get("path"), (str, os.PathLike)):
        item = item["path"]
    if isinstance(item, (str, os.PathLike)) and os.fspath(item):
        return os.fspath(item)
    raise cu.InputError(f"a video input is a path; got {type(item).__name__} {str(item)[:80]!r}: give the file's path")


def _check_file(path: str) -> None:
    check_file(path, "video", "*.mp4")  # a regular file with something in it
    try:
        with open(cu.local_copy(path), "rb") as f:
            f.read(1)
    except OSError as exc:
        raise cu.InputError(f"{path}: cannot be read ({exc.strerror or exc}); fix its permissions") from None


def _is_mp4(path: str) -> bool:
    with open(cu.local_copy(path), "rb") as f:
        return f.read(12)[4:8] == b"ftyp"


def _unopenable(path: str, exc: Exception, mp4: bool) -> str:
    text = str(exc)
    if mp4 and "moov atom not found" in text:
        why = ("the MP4 has no index (moov atom): the file is truncated or was never finished; download it again, "
               "or rebuild the index from a good file of the same camera (e.g. with untrunc)")
    else:
        kind = _sniff(path)
        why = (f"{'it is ' + kind + ', not a video: leave it out of the input, or ' if kind else ''}check what the "
               f"file is (`ffprobe {path}`); if it is a video, {CONVERT_FIX}")
    return f"{path}: not a video FFmpeg can read ({type(exc).__name__}: {text[:200]}); {why}"


def _sniff(path: str) -> str | None:
    """What the file's first bytes say it is, when they say it clearly ("a PDF document (it
    starts with b'%PDF-1.5')"); None if they do not."""
    try:
        with open(cu.local_copy(path), "rb") as f:
            head = f.read(SNIFF_BYTES)
    except OSError:
        return None
    kind = next((name for magic, name in FILE_MAGIC if head.startswith(magic)), None)
    if kind is None and head and all(32 <= b < 127 or b in (9, 10, 13) for b in head):
        kind = "text"
    return f"{kind} (it starts with {head[:16]!r})" if kind else None


def _codec(stream) -> str:
    ctx = stream.codec_context
    return ctx.name if ctx is not None else "unknown"


def _tag(stream) -> str:
    tag = getattr(stream, "codec_tag", "") or ""
    return f"codec tag {tag!r}" if tag.strip() else "an unknown codec"


def _preflight(container, stream, path: str) -> tuple[dict, list[str]]:
    """The first frames' times (container seconds) and size; InputError if no frame decodes."""
    source = FrameSource(container, stream)
    times: list[float] = []
    size = None
    while len(times) < VFR_WINDOW and source.packets <= PREFLIGHT_PACKETS:
        frame = source.next()
        if frame is None:
            break
        times.append(source.last_time)
        size = size or (frame.width, frame.height)
    if not times:
        if source.packets == 0:
            raise cu.InputError(f"{path}: zero frames: the video stream holds no packets; there is nothing to "
                                "decode: leave it out of the input")
        detail = f" ({len(source.errors)} decode errors, e.g. {source.errors[0][1][:120]})" if source.errors else ""
        raise cu.InputError(f"{path}: zero frames: none of the first {source.packets} packets of its "
                            f"{_codec(stream)} stream decodes{detail}; the stream is damaged or its codec "
                            f"unsupported: {CONVERT_FIX}, or leave it out")
    notes = []
    if source.errors:
        notes.append(f"{len(source.errors)} packet(s) at the start did not decode ({source.errors[0][1][:120]})")
    return {"times": sorted(times), "size": size}, notes


def _rate(stream, times: list[float]) -> tuple[float, bool]:
    """(average frames per second, whether the frame rate is variable)."""
    rate = stream.average_rate or stream.guessed_rate or stream.base_rate
    deltas = [b - a for a, b in itertools.pairwise(times) if b > a]
    fps = float(rate) if rate else (1.0 / (sum(deltas) / len(deltas)) if deltas else 0.0)
    if not fps > 0:
        fps = 25.0  # a single frame and no rate: any rate shows it; the clip is one frame long
    if len(deltas) < 3:
        return fps, False
    median = sorted(deltas)[len(deltas) // 2]
    return fps, (max(deltas) - min(deltas)) / median > VFR_SPREAD


def _spread(times: list[float]) -> str:
    deltas = [b - a for a, b in itertools.pairwise(times) if b > a]
    return f"{min(deltas) * 1000:.0f}-{max(deltas) * 1000:.0f} ms"


def _claimed(container, stream) -> float | None:
    if stream.duration:
        return float(stream.duration * stream.time_base)
    if container.duration:
        return container.duration / 1_000_000
    return None


def _duration(container, stream, offset: float, fps: float, path: str) -> tuple[float, bool, list[str]]:
    """(duration in seconds, whether it was measured, notes): the claim if the packets near its end
    agree with it, else the end of the last frame that decodes."""
    claimed = _claimed(container, stream)
    tolerance = max(DURATION_TOLERANCE_S, 2.0 / fps)
    last_key, packet_end = _packets_to_end(container, stream, None if claimed is None else offset + claimed)
    if claimed is not None and packet_end is not None and abs(packet_end - offset - claimed) <= tolerance:
        return claimed, False, []
    end = _decoded_end(container, stream, last_key, packet_end, fps)
    if end is None:
        raise cu.InputError(f"{path}: no frame near the end of the stream decodes (from {last_key or 0:.2f} s on); "
                            f"the file is damaged: {CONVERT_FIX}")
    measured = end - offset
    if claimed is None:
        return measured, True, [f"no duration in the container: measured by decoding, {measured:.2f} s"]
    return measured, True, [(f"the container says {claimed:.2f} s but its frames end at {measured:.2f} s "
                            "(truncated, or a wrong header); using the measured duration")]


def _packets_to_end(container, stream, near: float | None) -> tuple[float | None, float | None]:
    """(container seconds of the last keyframe packet, of the end of the last packet), demuxing
    from a little before `near` (else from the start), without decoding."""
    av = pyav()
    tb = float(stream.time_base)
    for start in ([max(0.0, near - END_WINDOW_S)] if near is not None else []) + [0.0]:
        container.seek(int(start / tb), stream=stream, backward=True, any_frame=False)
        last_key = end = None
        try:
            for packet in container.demux(stream):
                if packet.pts is None or not packet.size:
                    continue
                t = packet.pts * tb
                if packet.is_keyframe:
                    last_key = t if last_key is None else max(last_key, t)
                end = max(end or t, t + (packet.duration * tb if packet.duration else 0.0))
        except (av.error.FFmpegError, OSError):
            pass  # a truncated file: its packets end here
        if end is not None:
            return last_key, end
    return None, None


def _decoded_end(container, stream, last_key: float | None, packet_end: float | None, fps: float) -> float | None:
    """Container seconds at which the last decodable frame ends (decoding from the last keyframe)."""
    if last_key is not None and packet_end is not None and packet_end - last_key > MAX_END_DECODE_S:
        return packet_end
    source = FrameSource(container, stream)
    source.seek(last_key or 0.0)
    end = None
    while (frame := source.next()) is not None:
        t = source.last_time
        length = frame.duration * source.time_base if frame.duration else 1.0 / fps
        end = max(end or t, t + length)
    if end is None and last_key:
        source.seek(0.0)  # the last GOP is damaged: what decodes from the start
        while (frame := source.next()) is not None:
            end = max(end or 0.0, source.last_time + 1.0 / fps)
    return end


def _count_packets(container, stream) -> int:
    av = pyav()
    container.seek(0, stream=stream, backward=True, any_frame=False)
    count = 0
    try:
        for packet in container.demux(stream):
            count += bool(packet.size)
    except (av.error.FFmpegError, OSError):
        pass  # a truncated file: its packets end here
    return count


def _frame_count(stream, duration: float, fps: float, measured: bool, notes: list[str]) -> int:
    expected = max(1, round(duration * fps))
    header = stream.frames or 0
    if header and not measured and abs(header - expected) <= max(2, FRAME_COUNT_TOLERANCE * expected):
        return header
    if header and abs(header - expected) > max(2, FRAME_COUNT_TOLERANCE * expected):
        notes.append(f"the header counts {header} frames, the stream holds about {expected} (truncated?)")
    return expected


def _decoder(path: str, prefer: str, vfr: bool, frame_count: int, shape: tuple[int, int], notes: list[str]) -> str:
    """"decord" if it should read this video, else "pyav" (the reason noted)."""
    if prefer == "pyav":
        return "pyav"
    if vfr:
        notes.append("decoder pyav: decord reads frames by index, which a variable frame rate makes wrong")
        return "pyav"
    try:
        import decord
    except ImportError:
        notes.append("decoder pyav: decord is not installed (pip install 'curate[video]')")
        return "pyav"
    try:
        with DECORD_LOCK:
            reader = decord.VideoReader(cu.local_copy(path), ctx=decord.cpu(0), num_threads=1)
            count = len(reader)
            ends = reader.get_batch([0, count - 1]).asnumpy() if count else None
        del reader
        if abs(count - frame_count) > max(2, FRAME_COUNT_TOLERANCE * frame_count):
            notes.append(f"decoder pyav: decord counts {count} frames, the stream about {frame_count}")
            return "pyav"
        if ends.shape[1:3] != shape:
            notes.append(f"decoder pyav: decord gives frames of {ends.shape[2]}x{ends.shape[1]}, "
                         f"not {shape[1]}x{shape[0]}")
            return "pyav"
    except Exception as exc:  # noqa: BLE001 - DECORDError, RuntimeError: decord cannot read this stream
        notes.append(f"decoder pyav: decord cannot read it ({type(exc).__name__}: {_decord_message(exc, path)})")
        return "pyav"
    return "decord"


def _decord_message(exc: Exception, path: str) -> str:
    """decord's message without its log prefixes ("[13:03:04] /src/video_reader.cc:270: [path] ")."""
    lines = str(exc).strip().splitlines()
    text = DECORD_PREFIX.sub("", lines[0] if lines else "").replace(f"[{cu.local_copy(path)}]", "").strip()
    return text[:160]
