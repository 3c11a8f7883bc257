"""A resumed run whose stage changed (code or init) under the same name is refused, naming the
stage, unless the user accepts the mix; the fingerprints are recorded in the manifest."""

from __future__ import annotations

import json

import pytest

import curate as cu
from curate.fingerprint import stage_fingerprints

Doc = cu.Domain("doc")


def upper(xs):
    return [str(x).upper() for x in xs]


def upper_v2(xs):
    return [str(x).upper() + "!" for x in xs]


class Scale:
    def __init__(self, factor):
        self.factor = factor

    def __call__(self, xs):
        return [x * self.factor for x in xs]


def pipeline(fn=upper, factor=2):
    pipe = cu.Pipeline(Doc)
    pipe.output("text", pipe.source.map(cu.stage(fn, name="ocr")))
    pipe.output("scaled", pipe.source.map(cu.stage(Scale, init={"factor": factor}, name="scale")))
    return pipe


def test_an_unchanged_pipeline_resumes(tmp_path):
    cu.run(pipeline(), range(3), executor="local", output_dir=tmp_path)
    res = cu.run(pipeline(), range(5), executor="local", output_dir=tmp_path, resume=True)
    assert res.metrics.roots == 2
    man = json.loads((tmp_path / "_curate" / "manifest.json").read_text())
    assert set(man["fingerprints"]) == {"ocr", "scale"}


def test_changed_code_is_refused_naming_the_stage(tmp_path):
    cu.run(pipeline(), range(3), executor="local", output_dir=tmp_path)
    with pytest.raises(cu.CurateError, match=r"stage\(s\) ocr changed .*--allow-changed-code"):
        cu.run(pipeline(upper_v2), range(5), executor="local", output_dir=tmp_path, resume=True)
    man = json.loads((tmp_path / "_curate" / "manifest.json").read_text())
    assert len(man["runs"]) == 1  # the refused run left no entry


def test_changed_init_is_refused_naming_the_stage(tmp_path):
    cu.run(pipeline(), range(3), executor="local", output_dir=tmp_path)
    with pytest.raises(cu.CurateError, match=r"stage\(s\) scale changed"):
        cu.run(pipeline(factor=3), range(5), executor="local", output_dir=tmp_path, resume=True)


def test_a_changed_stage_is_accepted_when_the_user_says_so(tmp_path):
    cu.run(pipeline(), range(3), executor="local", output_dir=tmp_path)
    res = cu.run(pipeline(upper_v2), range(5), executor="local", output_dir=tmp_path, resume=True,
                 allow_changed_code=True)
    assert sorted(res.values("text")) == ["0", "1", "2", "3!", "4!"]  # the mix the user accepted
    man = json.loads((tmp_path / "_curate" / "manifest.json").read_text())
    assert man["runs"][-1]["changed_code"] == ["ocr"]


def test_fingerprints_are_stable_and_see_lambdas_partials_and_inits():
    import functools

    def prints(**kw):
        return stage_fingerprints(cu.compile_plan(pipeline(**kw)))

    assert prints() == prints()
    assert prints()["ocr"] != prints(fn=upper_v2)["ocr"]
    assert prints()["scale"] != prints(factor=3)["scale"] and prints()["ocr"] == prints(factor=3)["ocr"]
    p1 = prints(fn=functools.partial(upper))
    assert p1 == prints(fn=functools.partial(upper)) and p1["ocr"] != prints(fn=functools.partial(upper_v2))["ocr"]
