"""The compiler: every declaration mistake is reported at once, as one PlanError whose problems
each name the user's file:line and say how to fix it; a valid pipeline lowers to the expected Plan.

Mistakes are declared on the line after `at = _next_line()`, so each test knows the exact
location the message must name."""

from __future__ import annotations

import os
import sys

import pytest

import curate as cu
from curate import defaults

Doc = cu.Domain("doc")
Page = Doc.child("page")
Region = Page.child("region")
Other = cu.Domain("other")

THIS_FILE = os.path.basename(__file__)  # "test_plan.py"


def _next_line() -> str:
    """file:line of the line after the caller's: where the declaration under test sits."""
    f = sys._getframe(1)
    return f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno + 1}"


def problems_of(pipe: cu.Pipeline) -> list[str]:
    """The problems compile_plan reports for `pipe` (it must raise PlanError)."""
    with pytest.raises(cu.PlanError) as info:
        cu.compile_plan(pipe)
    assert isinstance(info.value.problems, list)
    assert all(isinstance(p, str) for p in info.value.problems)
    return info.value.problems


def the_problem(pipe: cu.Pipeline) -> str:
    """The single problem of a pipeline declared with exactly one mistake."""
    problems = problems_of(pipe)
    assert len(problems) == 1, "expected exactly one problem, got:\n" + "\n".join(problems)
    return problems[0]


# Stage functions: batch in, list of the same length out.
def split(batch: list) -> list:
    return [[x, x] for x in batch]


def ident(batch: list) -> list:
    return list(batch)


def double(batch: list) -> list:
    return [x * 2 for x in batch]


def keep(batch: list) -> list:
    return [True for _ in batch]


def join(batch: list) -> list:
    return [tuple(children) for children in batch]


class Model:
    """A class stage with several methods, to share one pool between Calls."""

    def __init__(self, scale: int = 1):
        self.scale = scale

    def embed(self, batch: list) -> list:
        return [("emb", x) for x in batch]

    def caption(self, batch: list) -> list:
        return [("cap", x) for x in batch]


class Doubler:
    def __call__(self, batch: list) -> list:
        return [x * 2 for x in batch]


# --- expand / reduce ---------------------------------------------------------------------------

def test_expand_into_a_grandchild_domain_is_rejected():
    pipe = cu.Pipeline(Doc)
    at = _next_line()
    regions = pipe.source.expand(cu.stage(split), into=Region)
    pipe.output("regions", regions)
    p = the_problem(pipe)
    assert p.startswith(f"{at}: expand split: ")
    assert "from 'doc' into 'doc/page/region'" in p
    assert "not a child of 'doc'" in p
    assert "doc.child(...)" in p  # the fix


def test_expand_into_an_unrelated_root_domain_is_rejected():
    pipe = cu.Pipeline(Doc)
    at = _next_line()
    others = pipe.source.expand(cu.stage(split), into=Other)
    pipe.output("others", others)
    p = the_problem(pipe)
    assert p.startswith(f"{at}: expand split: ")
    assert "into 'other', which is not a child of 'doc'" in p


def test_reduce_of_a_root_level_port_is_rejected():
    pipe = cu.Pipeline(Doc)
    at = _next_line()
    total = pipe.source.reduce(cu.stage(join))
    pipe.output("total", total)
    p = the_problem(pipe)
    assert p.startswith(f"{at}: reduce join: ")
    assert "reduce of a 'doc' port that no expand produced" in p
    assert "reduce a port that comes from .expand(...)" in p


def test_on_child_failure_must_be_suppress_or_drop():
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(split, into=Page)
    at = _next_line()
    joined = pages.reduce(cu.stage(join), on_child_failure="bogus")
    pipe.output("docs", joined)
    p = the_problem(pipe)
    assert p.startswith(f"{at}: reduce join: ")
    assert "on_child_failure='bogus'" in p
    assert "'suppress'" in p and "'drop'" in p


@pytest.mark.parametrize("mode", ["suppress", "drop"])
def test_on_child_failure_valid_modes_reach_the_plan(mode):
    pipe = cu.Pipeline(Doc)
    joined = pipe.source.expand(split, into=Page).reduce(join, on_child_failure=mode)
    pipe.output("docs", joined)
    plan = cu.compile_plan(pipe)
    (reduce_node,) = [n for n in plan.nodes if n.kind == "reduce"]
    assert reduce_node.on_child_failure == mode
    assert reduce_node.expand == 1  # the expand node that opened the children


# --- zip / broadcast ----------------------------------------------------------------------------

def test_zip_of_ports_of_different_domains_is_rejected():
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(split, into=Page)
    at = _next_line()
    both = cu.zip(pipe.source, pages)
    pipe.output("both", both)
    p = the_problem(pipe)
    assert p.startswith(f"{at}: zip: ")
    assert "zip of a 'doc' port with a 'doc/page' port" in p
    assert "use broadcast" in p


def test_zip_of_same_domain_ports_from_two_expands_is_rejected():
    pipe = cu.Pipeline(Doc)
    pages_a = pipe.source.expand(split, into=Page)
    pages_b = pipe.source.expand(split, into=Page)
    at = _next_line()
    both = cu.zip(pages_a, pages_b)
    pipe.output("both", both.reduce(join))
    p = the_problem(pipe)
    assert p.startswith(f"{at}: zip: ")
    assert "'doc/page' ports from different expands (different lineages)" in p
    assert "zip ports derived from the same expand" in p


def test_zip_of_ports_derived_from_one_expand_compiles():
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(split, into=Page)
    pipe.output("pairs", cu.zip(pages.map(ident), pages.map(double)).reduce(join))
    plan = cu.compile_plan(pipe)
    (z,) = [n for n in plan.nodes if n.kind == "zip"]
    assert len(z.in_slots) == 2 and z.space == 1


def test_zip_of_ports_from_two_pipelines_is_rejected():
    pipe, other = cu.Pipeline(Doc), cu.Pipeline(Doc)
    at = _next_line()
    both = cu.zip(pipe.source, other.source)
    pipe.output("both", both)
    p = the_problem(pipe)
    assert p.startswith(f"{at}: zip of ports from different pipelines")


def test_broadcast_onto_a_grandchild_port_is_rejected():
    pipe = cu.Pipeline(Doc)
    regions = pipe.source.expand(split, into=Page).expand(split, into=Region)
    at = _next_line()
    spread = pipe.source.broadcast(onto=regions)
    pipe.output("regions", cu.zip(spread, regions).reduce(join).reduce(join))
    p = the_problem(pipe)
    assert p.startswith(f"{at}: broadcast: ")
    assert "broadcast of a 'doc' port onto a 'doc/page/region' port that is not its children's" in p
    assert "broadcast onto a port derived from an expand of this port's entities" in p


def test_broadcast_onto_a_sibling_lineage_is_rejected():
    pipe = cu.Pipeline(Doc)
    pages_a = pipe.source.expand(split, into=Page)
    pages_b = pipe.source.expand(split, into=Page)
    at = _next_line()
    spread = pages_a.broadcast(onto=pages_b)
    pipe.output("docs", spread.reduce(join))
    p = the_problem(pipe)
    assert p.startswith(f"{at}: broadcast: ")
    assert "broadcast of a 'doc/page' port onto a 'doc/page' port that is not its children's" in p


def test_broadcast_onto_a_port_of_another_pipeline_is_reported():
    pipe, other = cu.Pipeline(Doc), cu.Pipeline(Doc)
    other_pages = other.source.expand(split, into=Page)
    at = _next_line()
    spread = pipe.source.broadcast(onto=other_pages)
    pipe.output("spread", spread)
    problems = problems_of(pipe)
    # Only presence: pipeline.py keeps the foreign node index in `onto`, so the compiler may add
    # a misleading second problem by reading this pipeline's port at that index.
    assert any(p.startswith(f"{at}: broadcast onto a port of another pipeline") for p in problems)


def test_broadcast_onto_children_compiles():
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(split, into=Page)
    title = pipe.source.map(ident)
    pipe.output("pairs", cu.zip(pages, title.broadcast(onto=pages)).reduce(join))
    plan = cu.compile_plan(pipe)
    (b,) = [n for n in plan.nodes if n.kind == "broadcast"]
    assert b.expand == 1 and b.space == 1
    assert plan.slot_space[b.in_slots[0]] == 0  # reads the parent's value


# --- stages -------------------------------------------------------------------------------------

@pytest.mark.parametrize("make, expected", [
    (lambda: 42, "map got 42, which is not callable; pass a function or class taking a batch"),
    (lambda: cu.stage(42), "map int: 42 is not callable; pass a function or a class"),
    (lambda: cu.Pool(Model).stage("nope"),
     "class Model has no method 'nope'; define it as `def nope(self, batch: list) -> list`"),
    (lambda: cu.stage(double, batch_size=0), "map double: batch_size=0; it must be an integer >= 1"),
    (lambda: cu.stage(double, replicas=0), "map double: replicas=0; it must be an integer >= 1"),
    (lambda: cu.Pool(Model, replicas=0).stage("embed"),
     "Pool Model.embed (declared at test_plan.py:245): replicas=0; it must be an integer >= 1"),
    (lambda: cu.stage(double, retries=-1), "map double: retries=-1; it must be an integer >= 0"),
    (lambda: cu.stage(double, num_cpus=-1), "map double: num_cpus=-1; it must be a number >= 0"),
    (lambda: cu.stage(double, num_gpus=-0.5), "map double: num_gpus=-0.5; it must be a number >= 0"),
    (lambda: cu.stage(double, init={"scale": 2}),
     "map double: init= is only for classes (built once per worker); a function takes no init"),
], ids=["not-callable", "stage-of-not-callable", "pool-no-method", "batch-size-0", "replicas-0",
        "pool-replicas-0", "retries-neg", "num-cpus-neg", "num-gpus-neg", "init-on-function"])
def test_bad_stage_is_reported_with_its_fix(make, expected):
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(split, into=Page)
    st = make()
    at = _next_line()
    mapped = pages.map(st)
    pipe.output("pages", mapped.reduce(join))
    p = the_problem(pipe)
    assert p.startswith(f"{at}: ")
    assert expected in p


def test_bare_function_is_wrapped_with_default_stage_settings():
    pipe = cu.Pipeline(Doc)
    pipe.output("out", pipe.source.map(double))
    plan = cu.compile_plan(pipe)
    (call,) = plan.calls
    (pool,) = plan.pools
    assert (call.name, call.kind, call.method) == ("double", "map", "__call__")
    assert call.batch_size == defaults.DEFAULT_BATCH_SIZE
    assert call.retries == defaults.DEFAULT_RETRIES
    assert pool.target is double and not pool.is_class and pool.init == {}
    assert pool.replicas == defaults.DEFAULT_REPLICAS
    assert pool.resources == cu.Resources() and pool.resources.num_cpus == defaults.DEFAULT_NUM_CPUS
    assert pool.calls == [call.id]
    assert cu.run(pipe, [1, 2, 3], executor="local").values("out") == [2, 4, 6]


def test_bare_class_is_accepted_as_a_class_stage():
    pipe = cu.Pipeline(Doc)
    pipe.output("out", pipe.source.map(Doubler))
    plan = cu.compile_plan(pipe)
    (pool,) = plan.pools
    assert pool.is_class and pool.target is Doubler and plan.calls[0].name == "Doubler"


# --- outputs and reachability -------------------------------------------------------------------

def test_pipeline_without_outputs_is_rejected():
    pipe = cu.Pipeline(Doc)
    p = the_problem(pipe)
    assert "the pipeline has no outputs" in p
    assert "pipe.output(name, port)" in p


def test_output_name_used_twice_is_rejected():
    pipe = cu.Pipeline(Doc)
    doubled = pipe.source.map(double)
    pipe.output("x", doubled)
    at = _next_line()
    pipe.output("x", pipe.source)
    p = the_problem(pipe)
    assert p.startswith(f"{at}: output name 'x' is used twice")
    assert "give each output its own name" in p


def test_output_of_a_port_of_another_pipeline_is_rejected():
    pipe, other = cu.Pipeline(Doc), cu.Pipeline(Doc)
    pipe.output("mine", pipe.source)
    at = _next_line()
    pipe.output("theirs", other.source)
    p = the_problem(pipe)
    assert p.startswith(f"{at}: output 'theirs' is a port of another pipeline")


def test_stage_reaching_no_output_is_rejected():
    pipe = cu.Pipeline(Doc)
    pipe.output("docs", pipe.source.map(ident))
    at_map = _next_line()
    dead = pipe.source.map(cu.stage(double))
    at_filter = _next_line()
    dead.filter(cu.stage(keep))
    problems = problems_of(pipe)
    assert sorted(problems) == sorted([
        f"{at_map}: map double reaches no output; name its result with pipe.output(...) or remove it",
        f"{at_filter}: filter keep reaches no output; name its result with pipe.output(...) or remove it",
    ])


def test_unused_expand_and_zip_reach_no_output():
    pipe = cu.Pipeline(Doc)
    pipe.output("docs", pipe.source)
    at_expand = _next_line()
    pages = pipe.source.expand(cu.stage(split), into=Page)
    at_zip = _next_line()
    cu.zip(pages, pages)
    problems = problems_of(pipe)
    assert len(problems) == 2
    assert any(p.startswith(f"{at_expand}: expand split reaches no output") for p in problems)
    assert any(p.startswith(f"{at_zip}: zip reaches no output") for p in problems)


# --- all problems at once -----------------------------------------------------------------------

def _three_mistakes(calls: list):
    def spy(batch: list) -> list:
        calls.append(batch)
        return list(batch)

    pipe = cu.Pipeline(Doc)
    at_expand = _next_line()
    regions = pipe.source.expand(cu.stage(split), into=Region)
    at_map = _next_line()
    scored = regions.map(cu.stage(spy, batch_size=0))
    at_reduce = _next_line()
    total = pipe.source.map(spy).reduce(cu.stage(join))
    pipe.output("regions", scored)
    pipe.output("total", total)
    return pipe, (at_expand, at_map, at_reduce)


def test_three_mistakes_give_one_error_listing_all_three():
    pipe, (at_expand, at_map, at_reduce) = _three_mistakes([])
    with pytest.raises(cu.PlanError) as info:
        cu.compile_plan(pipe)
    problems = info.value.problems
    assert len(problems) == 3, "\n".join(problems)
    expected = {
        at_expand: "from 'doc' into 'doc/page/region', which is not a child of 'doc'",
        at_map: "batch_size=0; it must be an integer >= 1",
        at_reduce: "reduce of a 'doc' port that no expand produced",
    }
    for at, text in expected.items():
        (match,) = [p for p in problems if p.startswith(f"{at}: ")]
        assert text in match
    message = str(info.value)
    assert "3 problem(s)" in message
    assert f"{THIS_FILE}:" in message
    for at in expected:
        assert at in message
    for p in problems:
        assert p in message


def test_run_raises_the_same_plan_error_before_any_stage_runs():
    calls: list = []
    pipe, locations = _three_mistakes(calls)
    with pytest.raises(cu.PlanError) as info:
        cu.run(pipe, [1, 2, 3])
    assert len(info.value.problems) == 3
    assert all(any(p.startswith(f"{at}: ") for p in info.value.problems) for at in locations)
    assert calls == []  # nothing ran


def test_every_problem_names_a_location_in_this_file():
    pipe, other = cu.Pipeline(Doc), cu.Pipeline(Doc)
    pages = pipe.source.expand(split, into=Region)
    bad = pages.map(42).reduce(join, on_child_failure="nope")
    pipe.output("a", bad)
    pipe.output("a", pipe.source)
    pipe.output("b", other.source)
    pipe.source.map(cu.stage(double, retries=-1))
    problems = problems_of(pipe)
    assert len(problems) == 7, "\n".join(problems)
    for p in problems:
        where, _, rest = p.partition(": ")
        name, _, line = where.partition(":")
        assert name == THIS_FILE and line.isdigit(), p
        assert ";" in rest, f"no fix given: {p}"


# --- a valid pipeline lowers to the expected Plan -----------------------------------------------

def _valid_pipeline():
    pipe = cu.Pipeline(Doc)
    pool = cu.Pool(Model, init={"scale": 3}, replicas=2, num_gpus=0.5)
    shared = cu.stage(ident, batch_size=4)
    pages = pipe.source.expand(cu.stage(split, name="split_pages"), into=Page)  # node 1
    regions = pages.expand(cu.stage(split, name="split_regions"), into=Region)  # node 2
    emb = regions.map(pool.stage("embed", batch_size=8))  # node 3
    cap = regions.map(pool.stage("caption", retries=0))  # node 4
    clean = cu.zip(emb, cap).map(shared)  # nodes 5, 6
    per_page = clean.reduce(join)  # node 7
    title = pipe.source.map(shared)  # node 8: the same Stage object again
    both = cu.zip(per_page, title.broadcast(onto=pages))  # nodes 9, 10
    pipe.output("pages", both.reduce(join, on_child_failure="drop"))  # node 11
    pipe.output("docs", pipe.source.filter(keep).map(double).map(double))  # nodes 12-14
    return pipe


def test_valid_pipeline_compiles_to_spaces_calls_and_pools():
    plan = cu.compile_plan(_valid_pipeline())
    assert [(s.domain, s.parent, s.expand, s.depth) for s in plan.spaces] == [
        ("doc", -1, -1, 0), ("page", 0, 1, 1), ("region", 1, 2, 2)]  # root + one per expand
    assert [n.id for n in plan.nodes] == list(range(15))
    assert [c.name for c in plan.calls] == [
        "split_pages", "split_regions", "Model.embed", "Model.caption", "ident", "join", "ident#2",
        "join#2", "keep", "double", "double#2"]
    assert plan.outputs == {"pages": 11, "docs": 14}
    assert plan.output_slot("docs") == plan.nodes[14].out_slot
    assert plan.slot_space[plan.source_slot] == 0


def test_pool_shared_by_two_calls_is_one_pool_spec():
    plan = cu.compile_plan(_valid_pipeline())
    by_name = {c.name: c for c in plan.calls}
    model_pools = [p for p in plan.pools if p.target is Model]
    assert len(model_pools) == 1
    (mp,) = model_pools
    assert mp.calls == [by_name["Model.embed"].id, by_name["Model.caption"].id]
    assert (mp.name, mp.init, mp.replicas, mp.resources.num_gpus, mp.is_class) == ("Model", {"scale": 3}, 2, 0.5, True)
    emb, cap = by_name["Model.embed"], by_name["Model.caption"]
    assert (emb.method, emb.batch_size, emb.retries) == ("embed", 8, defaults.DEFAULT_RETRIES)
    assert (cap.method, cap.batch_size, cap.retries) == ("caption", defaults.DEFAULT_BATCH_SIZE, 0)


def test_one_stage_object_used_twice_is_one_pool():
    plan = cu.compile_plan(_valid_pipeline())
    by_name = {c.name: c for c in plan.calls}
    ident_pools = [p for p in plan.pools if p.target is ident]
    assert len(ident_pools) == 1
    assert ident_pools[0].calls == [by_name["ident"].id, by_name["ident#2"].id]
    assert by_name["ident"].batch_size == by_name["ident#2"].batch_size == 4
    # Separate declarations of one function (a bare fn used twice) are separate pools.
    assert len([p for p in plan.pools if p.target is double]) == 2
    assert len(plan.pools) == 9  # split x2, Model, ident, join x2, keep, double x2


def test_duplicate_call_names_get_numbered_suffixes():
    pipe = cu.Pipeline(Doc)
    pipe.output("out", pipe.source.map(double).map(double).map(cu.stage(double)))
    plan = cu.compile_plan(pipe)
    assert [c.name for c in plan.calls] == ["double", "double#2", "double#3"]
    assert len({c.name for c in plan.calls}) == len(plan.calls)


def test_a_pool_class_without_the_method_a_call_names_is_refused():
    class Stack:
        def layout(self, xs):
            return xs

    pool = cu.Pool(Stack)
    pipe = cu.Pipeline(Doc)
    pipe.output("a", pipe.source.map(pool.stage("layout")))
    pipe.output("b", pipe.source.map(pool.stage()))  # __call__: not defined by Stack
    assert "class Stack has no method '__call__'" in the_problem(pipe)
