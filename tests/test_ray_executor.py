"""What only the Ray executor has: dying actors, resource checks, the data path, clusters."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import pytest

import curate as cu
from curate.executors.ray.cluster import ResourceError

Doc = cu.Domain("doc")
Page = Doc.child("page")
P, F = cu.Status.PRESENT, cu.Status.FAILED


@pytest.fixture(autouse=True)
def _ray(ray_cluster):
    return ray_cluster


def paged(n_docs=6):
    return [f"d{i}:{i % 4 + 1}" for i in range(n_docs)]


def split(docs):
    return [[f"{d}/p{i}" for i in range(int(d.split(":")[1]))] for d in docs]


def build(ocr_stage):
    pipe = cu.Pipeline(Doc)
    text = pipe.source.expand(cu.stage(split), into=Page).map(ocr_stage)
    pipe.output("pages", text)
    pipe.output("docs", text.reduce(cu.stage(lambda gs: ["|".join(g) for g in gs], name="join")))
    return pipe


def clean_result():
    return cu.run(build(cu.stage(lambda ps: [p.upper() for p in ps], batch_size=3, name="ocr")),
                  paged(), executor="local")


def assert_same(res, ref):
    assert res.values("docs") == ref.values("docs")
    assert res.items("pages") == ref.items("pages")


def test_stage_that_exits_its_worker_once_gives_the_clean_output(ray_recorder):
    def ocr(ps):
        if ray_recorder.incr("exit") == 1:
            os._exit(1)  # the actor's process dies mid-batch; Ray restarts it
        return [p.upper() for p in ps]

    res = cu.run(build(cu.stage(ocr, batch_size=3)), paged(), executor="ray")
    assert_same(res, clean_result())
    assert res.metrics.calls["ocr"].retries >= 1


def test_actor_killed_mid_batch_gives_the_clean_output(ray_recorder):
    import ray

    @ray.remote(num_cpus=0)
    class Gate:
        def __init__(self):
            import asyncio

            self.arrived, self.victim = asyncio.Event(), None

        async def arrive(self, actor):
            self.victim = actor
            self.arrived.set()
            import asyncio

            await asyncio.Event().wait()  # hold the batch until the test kills the actor

        async def victim_of(self):
            await self.arrived.wait()
            return self.victim

    gate = Gate.remote()

    class Ocr:
        def __call__(self, ps):
            if ray_recorder.incr("first") == 1:
                ray.get(gate.arrive.remote(ray.get_runtime_context().current_actor))
            return [p.upper() for p in ps]

    out = {}
    runner = threading.Thread(target=lambda: out.setdefault(
        "res", cu.run(build(cu.stage(Ocr, batch_size=3, replicas=2)), paged(), executor="ray")))
    runner.start()
    ray.kill(ray.get(gate.victim_of.remote()), no_restart=False)
    runner.join()
    assert_same(out["res"], clean_result())
    assert out["res"].metrics.calls["Ocr"].retries >= 1


def test_stage_that_keeps_killing_its_workers_ends_as_failed_items():
    def ocr(ps):
        if any(p.startswith("d2:") for p in ps):
            os._exit(1)
        return [p.upper() for p in ps]

    res = cu.run(build(cu.stage(ocr, batch_size=2, retries=1)), ["d0:2", "d1:3", "d2:1", "d3:1"], executor="ray")
    pages = res.items("pages")
    bad = [it for it in pages if it.status is F]
    assert [it.lineage for it in bad] == [(2, 0)]
    assert bad[0].cause.kind == "worker_died" and "died" in bad[0].cause.message
    assert all(it.status is P for it in pages if it.lineage[0] != 2)
    assert res.values("docs")[2].status is cu.Status.SUPPRESSED
    assert res.values("docs")[1] == "D1:3/P0|D1:3/P1|D1:3/P2"


def test_pipeline_that_can_never_be_scheduled_is_refused_before_start():
    greedy = cu.stage(lambda ps: ps, replicas=4, num_cpus=1, name="greedy")  # 4 CPUs: all of them
    with pytest.raises(ResourceError) as err:
        cu.run(build(greedy), paged(), executor="ray")
    msg = str(err.value)
    assert "can never be scheduled" in msg and "ask for 4.25 CPU in all" in msg and "lower num_cpus" in msg


def test_a_gpu_request_without_a_gpu_names_the_gpu_and_its_fix():
    gpu = cu.stage(lambda ps: ps, num_gpus=1, name="gpu_ocr")
    with pytest.raises(ResourceError) as err:
        cu.run(build(gpu), paged(), executor="ray")
    msg = str(err.value)
    assert "(gpu_ocr) asks for 1 GPU, but no node has any" in msg and "set num_gpus=0" in msg
    assert "num_cpus" not in msg and "memory" not in msg and "node:" not in msg  # only what is short


def test_custom_resources_are_checked_too():
    accel = cu.stage(lambda ps: ps, resources={"accel": 1}, name="accel_ocr")
    with pytest.raises(ResourceError, match="asks for 1 accel.*ray start --resources"):
        cu.run(build(accel), paged(), executor="ray")


def test_runtime_env_applies_to_its_pool_only():
    class Probe:
        def __call__(self, ps):
            return [f"{p}:{os.environ.get('CURATE_PROBE', '-')}" for p in ps]

    pool = cu.Pool(Probe, runtime_env={"env_vars": {"CURATE_PROBE": "set"}})
    res = cu.run(build(pool.stage()), paged(2), executor="ray")
    assert res.values("docs")[0] == "d0:1/p0:set"
    assert all(v.endswith(":set") for v in res.values("pages"))


@pytest.fixture
def driver_fetches(monkeypatch) -> list[int]:
    """Sizes (repr length) of everything the driver fetches with ray.get during the test."""
    import ray

    import curate.executors.ray as rex

    fetched = []
    real_get = ray.get

    def spy(refs, *a, **k):
        out = real_get(refs, *a, **k)
        fetched.append(len(repr(out)))
        return out

    monkeypatch.setattr(rex.ray, "get", spy)
    return fetched


def test_payloads_move_between_workers_not_through_the_driver(driver_fetches):
    big = 2_000_000

    def render(docs):  # pages of 2 MB each
        return [[b"x" * big for _ in range(int(d.split(":")[1]))] for d in docs]

    pipe = cu.Pipeline(Doc)
    sizes = pipe.source.expand(cu.stage(render), into=Page).map(cu.stage(lambda ps: [len(p) for p in ps], name="measure"))
    pipe.output("docs", sizes.reduce(cu.stage(lambda gs: [sum(g) for g in gs], name="total")))
    res = cu.run(pipe, paged(4), executor="ray")
    assert res.values("docs") == [big * (i % 4 + 1) for i in range(4)]
    assert driver_fetches and max(driver_fetches) < 20_000, max(driver_fetches)  # metadata, small outputs


def test_ray_metrics_report_per_actor_busy_time():
    def ocr(ps):
        return [p.upper() for p in ps]

    class Model:
        def __call__(self, ps):
            return [p.lower() for p in ps]

    pipe = build(cu.stage(Model, batch_size=2, replicas=2))
    res = cu.run(pipe, paged(8), executor="ray")
    pm = res.metrics.pools["Model"]
    assert pm.replicas == 2 and len(pm.worker_busy_s) == 2
    assert sum(pm.worker_batches) == res.metrics.calls["Model"].batches
    assert all(t >= 0 for t in pm.worker_busy_s) and res.metrics.calls["Model"].busy_s > 0


CLUSTER_SCRIPT = textwrap.dedent("""
    import ray
    from ray.cluster_utils import Cluster
    import curate as cu

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    Doc = cu.Domain("doc"); Page = Doc.child("page")

    class Ocr:
        def __call__(self, ps):
            import os
            return [(p, os.getpid()) for p in ps]

    pipe = cu.Pipeline(Doc)
    text = pipe.source.expand(lambda ds: [list(range(d)) for d in ds], into=Page)
    # two workers of 0.75 CPU cannot share a 1-CPU node: this needs both nodes
    out = text.map(cu.stage(Ocr, batch_size=4, replicas=2, num_cpus=0.75))
    pipe.output("docs", out.reduce(lambda gs: [[p for p, _ in g] for g in gs]))
    pipe.output("pids", out)
    res = cu.run(pipe, [5, 3, 8], executor="ray", address=cluster.address)
    assert res.values("docs") == [list(range(5)), list(range(3)), list(range(8))], res.values("docs")
    print("NODES", len(ray.nodes()), "WORKERS", len({v[1] for v in res.values("pids")}))
    ray.shutdown()
    cluster.shutdown()
""")


def test_runs_on_a_two_node_cluster_given_its_address():
    env = dict(os.environ, RAY_ADDRESS="")
    proc = subprocess.run([sys.executable, "-c", CLUSTER_SCRIPT], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "NODES 2" in proc.stdout


def test_parquet_output_on_ray_writes_payloads_without_the_driver_fetching_them(driver_fetches, tmp_path):
    import pyarrow.parquet as pq
    big = 1_000_000

    def render(docs):
        return [[{"page": i, "image": bytes([i]) * big} for i in range(int(d.split(":")[1]))] for d in docs]

    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(cu.stage(render), into=Page)
    pipe.output("pages", pages, files={"image": ".raw"})
    pipe.output("docs", pages.reduce(cu.stage(lambda gs: [len(g) for g in gs], name="count")))
    res = cu.run(pipe, paged(4), executor="ray", output_dir=tmp_path)
    assert res.counts["pages"] == {"present": 10} and res.values("docs") == [1, 2, 3, 4]
    rows = sorted(pq.read_table(tmp_path / "pages").to_pylist(), key=lambda r: r["lineage"])
    assert (tmp_path / "pages" / rows[-1]["image"]).read_bytes() == bytes([3]) * big
    assert driver_fetches and max(driver_fetches) < 20_000, max(driver_fetches)  # 10 MB of images, none here


def test_metrics_report_the_peak_memory_of_the_driver_and_each_actor():
    import ray

    from recorders import ray_barrier

    barrier = ray_barrier(2)  # each actor's first batch waits for the other's: both must have run

    class Model:
        def __init__(self):
            self.met = False

        def __call__(self, ps):
            if not self.met:
                self.met = ray.get(barrier.arrive.remote(120)) >= 2
            return [p.upper() for p in ps]

    res = cu.run(build(cu.stage(Model, batch_size=2, replicas=2, retries=0)), paged(4), executor="ray")
    assert len(res.values("pages")) == 10  # every page present: no call failed at the barrier
    m = res.metrics
    assert m.driver_peak_rss > 10 * 2**20 and "peak memory: driver" in m.summary()
    peaks = m.pools["Model"].worker_peak_rss
    assert len(peaks) == 2 and all(p > 10 * 2**20 for p in peaks)  # each actor's own process
    private = m.pools["Model"].worker_peak_private  # its own heap at a call's end, no shared pages
    assert len(private) == 2 and all(10 * 2**20 < v <= p for v, p in zip(private, peaks))
