"""`init` keys are checked against the class's constructor when the plan is built (recipes and
the Python API alike), every problem at once with a "did you mean"; a constructor's TypeError
on a worker is a setup failure, never retried."""

from __future__ import annotations

import pytest

import curate as cu
from curate.cli import EXIT_ERROR, main
from curate.core.plan import compile_plan


def test_validate_names_every_misspelt_init_key_with_the_close_one(capsys):
    code = main(["validate", "pdf_to_markdown", "--set", "steps.pages.expand.init.passwrds=[x]",
                 "--set", "pools.pdf_text.init.forse=1"])
    err = capsys.readouterr().err
    assert code == EXIT_ERROR
    assert "2 problem(s)" in err
    assert "init key 'passwrds' is not an argument of PdfPages(); did you mean 'passwords'?" in err
    assert "init key 'forse' is not an argument of PdfText(); did you mean 'force_ocr'?" in err


class Model:
    """A class stage with named keyword arguments."""

    def __init__(self, model: str, threads: int = 1):
        self.model, self.threads = model, threads

    def __call__(self, batch: list) -> list:
        return batch


class Open:
    """A class stage taking any keyword."""

    def __init__(self, **options):
        self.options = options

    def __call__(self, batch: list) -> list:
        return batch


def _pipe(stage) -> cu.Pipeline:
    pipe = cu.Pipeline(cu.Domain("doc"))
    pipe.output("out", pipe.source.map(stage))
    return pipe


def test_the_python_api_gets_the_check_for_pools_and_class_stages():
    pool = cu.Pool(Model, init={"modle": "m", "thread": 2})
    with pytest.raises(cu.PlanError) as err:
        compile_plan(_pipe(pool.stage()))
    msg = str(err.value)
    assert "init key 'modle' is not an argument of Model(); did you mean 'model'?" in msg
    assert "init key 'thread' is not an argument of Model(); did you mean 'threads'?" in msg
    assert "init lacks 'model', which Model() needs" in msg
    with pytest.raises(cu.PlanError, match="init key 'zzz' is not an argument of Model"):
        compile_plan(_pipe(cu.stage(Model, init={"model": "m", "zzz": 1})))


def test_a_constructor_taking_kwargs_accepts_any_key_and_a_good_init_passes():
    compile_plan(_pipe(cu.stage(Open, init={"anything": 1, "at_all": 2})))
    compile_plan(_pipe(cu.Pool(Model, init={"model": "m", "threads": 2}).stage()))


class TypeErrorInInit:
    """A constructor that raises TypeError (as a wrong keyword deep inside it would)."""

    def __init__(self, **options):
        raise TypeError(f"__init__() got an unexpected keyword argument {next(iter(options))!r}")

    def __call__(self, batch: list) -> list:
        return batch


def test_a_constructors_type_error_fails_its_items_as_setup_without_retries():
    pipe = _pipe(cu.stage(TypeErrorInInit, init={"forse": 1}, batch_size=2, retries=3))
    res = cu.run(pipe, list(range(6)), executor="local")
    issues = res.values("out")
    assert len(issues) == 6
    assert all(isinstance(v, cu.Issue) and v.cause.kind == "setup" for v in issues)
    assert "unexpected keyword argument 'forse'" in str(issues[0].cause)
    (call,) = res.metrics.calls.values()
    assert (call.retries, call.items, call.failed) == (0, 6, 6)  # each item sent once, none retried
