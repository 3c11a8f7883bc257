"""One resources spec: `cu.Resources` is what stages, pools, the compiler, recipes, the
feasibility check and the Ray executor all read; GPU pools get one worker per GPU by default."""

from __future__ import annotations

import pytest

import curate as cu
from curate.executors.ray.cluster import ResourceError, check
from curate.executors.ray.pools import resolve_replicas
from curate.executors.ray.replica import ActorPool
from curate.executors.ray.cluster import Demand
from curate.recipe.format import POOL_KEYS, STAGE_KEYS

Doc = cu.Domain("doc")


def model(xs):
    return xs


def test_keywords_and_a_resources_value_are_the_same_request():
    a = cu.stage(model, num_gpus=1, memory=2e9, accelerator_type="H100", resources={"accel": 2})
    b = cu.stage(model, resources=cu.Resources(num_gpus=1, memory=2e9, accelerator_type="H100",
                                               resources={"accel": 2}))
    assert a.resources == b.resources and a.resources.signature() == b.resources.signature()
    assert cu.Pool(model, num_gpus=0.5).resources.num_gpus == 0.5
    assert cu.stage(model, resources={"accel": 1}).resources.resources == {"accel": 1}  # Ray's meaning


def test_an_unknown_resource_keyword_names_the_known_ones():
    with pytest.raises(TypeError, match="unknown resource option.*'num_gpu'.*num_cpus, num_gpus, memory"):
        cu.stage(model, num_gpu=1)


def test_bad_values_are_plan_problems_all_at_once():
    pipe = cu.Pipeline(Doc)
    bad = cu.stage(model, num_cpus=-1, memory=-5, accelerator_type="", runtime_env="x", name="bad")
    pipe.output("out", pipe.source.map(bad))
    with pytest.raises(cu.PlanError) as err:
        cu.compile_plan(pipe)
    text = str(err.value)
    for fragment in ("num_cpus=-1", "memory=-5", "accelerator_type=''", "runtime_env='x'"):
        assert fragment in text
    assert len(err.value.problems) == 4


def test_ray_options_and_demand_come_from_one_value():
    r = cu.Resources(num_cpus=0.5, num_gpus=2, memory=1e9, resources={"accel": 1}, accelerator_type="A100",
                     runtime_env={"env_vars": {"X": "1"}})
    assert r.ray_options() == {"num_cpus": 0.5, "num_gpus": 2, "memory": 1e9, "resources": {"accel": 1},
                               "accelerator_type": "A100", "runtime_env": {"env_vars": {"X": "1"}}}
    assert r.demand() == {"CPU": 0.5, "GPU": 2.0, "memory": 1e9, "accel": 1.0, "accelerator_type:A100": 0.001}


def test_recipe_keys_are_the_resources_fields():
    for name in cu.Resources.names():
        assert name in STAGE_KEYS and name in POOL_KEYS


def _group(name, num_gpus, replicas=None):
    return ActorPool(name, key=name, target=None, init={}, resources=cu.Resources(num_gpus=num_gpus), replicas=replicas)


def test_gpu_pools_get_one_worker_per_gpu_by_default():
    nodes = [{"CPU": 8, "GPU": 4}, {"CPU": 8, "GPU": 4}]
    one, half, tp = _group("one", 1), _group("half", 0.5), _group("tp", 2)
    resolve_replicas([one], nodes)
    resolve_replicas([half], nodes)
    resolve_replicas([tp], nodes)
    assert (one.replicas, half.replicas, tp.replicas) == (8, 16, 4)
    a, b, fixed, cpu = _group("a", 1), _group("b", 1), _group("fixed", 1, replicas=2), _group("cpu", 0)
    resolve_replicas([a, b, fixed, cpu], nodes)
    assert (a.replicas, b.replicas, fixed.replicas, cpu.replicas) == (3, 3, 2, 1)  # 8 GPUs shared


def test_an_impossible_request_names_the_pool_the_resource_and_the_fix():
    nodes = [{"CPU": 2, "memory": 4e9}]
    with pytest.raises(ResourceError, match="each worker of vlm asks for 8e\\+09 memory.*lower memory="):
        check([Demand("vlm", 1, cu.Resources(memory=8e9).demand())], nodes)
    with pytest.raises(ResourceError, match="no node has a H100 accelerator"):
        check([Demand("vlm", 1, cu.Resources(accelerator_type="H100").demand())], nodes)
    with pytest.raises(ResourceError, match="tensor-parallel|lower num_gpus"):
        check([Demand("vlm", 1, cu.Resources(num_gpus=2).demand())], [{"CPU": 2, "GPU": 1}])


def test_a_recipe_sets_every_resource_field(tmp_path):
    from curate.recipe import load_recipe

    (tmp_path / "stages.py").write_text("def model(xs):\n    return xs\n\nclass M:\n    def __call__(self, xs):\n"
                                        "        return xs\n")
    (tmp_path / "r.yaml").write_text("""
domains: {doc: null}
pools:
  vlm: {class: "stages:M", num_gpus: 0.5, memory: 2000000000, accelerator_type: H100, resources: {accel: 1}}
steps:
  - {id: a, map: {from: source, stage: "stages:model", num_cpus: 0.5, memory: 1000000000}}
  - {id: b, map: {from: a, pool: vlm}}
outputs: {b: b}
input: {paths: [x.txt]}
""")
    plan = cu.compile_plan(load_recipe(tmp_path / "r.yaml").pipeline)
    assert plan.pools[0].resources == cu.Resources(num_cpus=0.5, memory=1000000000)
    assert plan.pools[1].resources == cu.Resources(num_gpus=0.5, memory=2000000000, accelerator_type="H100",
                                                   resources={"accel": 1})
    assert plan.pools[1].replicas is None  # a GPU pool: one worker per GPU, counted on the cluster


class _Backend:
    """A backend that declares what its workers hold, by engine."""

    @staticmethod
    def default_resources(init):
        return {"num_gpus": 1, "num_cpus": 1} if init.get("engine") == "gpu" else {"num_cpus": 0.5}

    def __call__(self, batch):
        return batch


def _echo(batch):
    return batch


_echo.default_resources = {"memory": 2e9}


def test_a_stage_declares_its_default_resources_and_given_fields_replace_them():
    assert cu.Pool(_Backend).resources == cu.Resources(num_cpus=0.5)
    assert cu.Pool(_Backend, init={"engine": "gpu"}).resources == cu.Resources(num_cpus=1, num_gpus=1)
    # a keyword replaces one declared field and keeps the others; a whole value replaces all
    assert cu.Pool(_Backend, init={"engine": "gpu"}, num_cpus=0.25).resources == cu.Resources(num_cpus=0.25, num_gpus=1)
    assert cu.Pool(_Backend, resources=cu.Resources(num_cpus=2)).resources == cu.Resources(num_cpus=2)
    assert cu.stage(_Backend, init={"engine": "gpu"}).resources.num_gpus == 1
    assert cu.stage(_echo).resources == cu.Resources(memory=2e9)
    assert cu.stage(_echo, memory=1e9).resources == cu.Resources(memory=1e9)
    assert cu.stage(lambda b: b).resources == cu.Resources()  # nothing declared: the defaults


def test_a_bad_declared_resource_names_the_stage():
    class Bad:
        default_resources = {"gpus": 1}

    with pytest.raises(TypeError, match=r"Bad.default_resources: unknown resource option\(s\) 'gpus'"):
        cu.Pool(Bad)
