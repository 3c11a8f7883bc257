"""Warm sessions: a pool whose class, init and resources are unchanged keeps its workers (and
their loaded model) from run to run; a changed pool is rebuilt alone; workers are released when
the session ends and on Ctrl-C. On both executors."""

from __future__ import annotations

import os
import signal
import threading

import pytest

import curate as cu

Doc = cu.Domain("doc")


class Model:
    """Counts its constructions in the recorder: one per worker that loaded it."""

    def __init__(self, tag, recorder):
        recorder.add(f"load {tag}", os.getpid())
        self.tag = tag

    def __call__(self, xs):
        return [(self.tag, x, os.getpid(), threading.get_ident()) for x in xs]


def pipeline(recorder, tag_a="a", tag_b="b"):
    pipe = cu.Pipeline(Doc)
    a = pipe.source.map(cu.stage(Model, init={"tag": tag_a, "recorder": recorder}, name="A", batch_size=4))
    b = pipe.source.map(cu.stage(Model, init={"tag": tag_b, "recorder": recorder}, name="B", batch_size=4))
    pipe.output("a", a)
    pipe.output("b", b)
    return pipe


def workers(res, name):
    return {(pid, tid) for _, _, pid, tid in res.values(name)}


def test_a_second_run_reuses_the_loaded_workers(executor, recorder):
    with cu.Session(executor=executor) as s:
        first = s.run(pipeline(recorder), range(6))
        second = s.run(pipeline(recorder), range(6, 12))
    assert [v[1] for v in second.values("a")] == list(range(6, 12))
    assert len(recorder.values("load a")) == 1 and len(recorder.values("load b")) == 1  # loaded once
    assert workers(first, "a") == workers(second, "a")


def test_a_changed_pool_is_rebuilt_alone(executor, recorder):
    with cu.Session(executor=executor) as s:
        first = s.run(pipeline(recorder), range(4))
        second = s.run(pipeline(recorder, tag_b="b2"), range(4))
    assert [v[0] for v in second.values("b")] == ["b2"] * 4
    assert len(recorder.values("load a")) == 1  # unchanged: kept
    assert len(recorder.values("load b")) == 1 and len(recorder.values("load b2")) == 1  # changed: rebuilt
    assert workers(first, "a") == workers(second, "a")


def test_one_shot_runs_do_not_keep_workers(executor, recorder):
    cu.run(pipeline(recorder), range(3), executor=executor)
    cu.run(pipeline(recorder), range(3), executor=executor)
    assert len(recorder.values("load a")) == 2


def _alive(actors) -> list[bool]:
    import ray

    out = []
    for a in actors:
        try:
            ray.get(a.ping.remote(), timeout=30)
            out.append(True)
        except ray.exceptions.RayError:
            out.append(False)
    return out


def _all_die(actors, within_s: float = 60.0) -> bool:
    """ray.kill is asynchronous: ping each actor until its ping fails (it died), for at most
    `within_s`; True if every one died."""
    import time

    import ray

    deadline = time.monotonic() + within_s
    for a in actors:
        while True:
            try:
                ray.get(a.ping.remote(), timeout=max(0.1, deadline - time.monotonic()))
            except ray.exceptions.GetTimeoutError:
                return False
            except ray.exceptions.RayError:  # the actor is dead
                break
            if time.monotonic() > deadline:
                return False
    return True


class Meeting(Model):
    """A Model whose batches of items > 0 wait at `barrier` (a Ray barrier of two): two such
    batches must be inside two of its workers at once for either to finish."""

    def __init__(self, tag, recorder, barrier):
        super().__init__(tag, recorder)
        self.barrier = barrier

    def __call__(self, xs):
        import ray

        if min(xs) > 0:
            assert ray.get(self.barrier.arrive.remote(120)) >= 2, "no second worker took a batch"
        return super().__call__(xs)


def test_every_worker_of_a_session_loads_its_model_in_the_first_run(ray_recorder):
    """A warm session's first run builds the stage on each replica, even one that got no batch,
    so the second run (timed, in a benchmark) loads nothing: two of its batches meet inside two
    workers (however the warm workers answer), and no worker loads the model again."""
    from recorders import ray_barrier

    pipe = cu.Pipeline(Doc)
    pipe.output("a", pipe.source.map(cu.stage(Meeting, name="A", batch_size=4, replicas=3, retries=0, init={
        "tag": "a", "recorder": ray_recorder, "barrier": ray_barrier(2)})))
    with cu.Session(executor="ray") as s:
        s.run(pipe, [0])  # one batch: one replica gets work
        assert len(set(ray_recorder.values("load a"))) == 3
        second = s.run(pipe, range(1, 9))  # two batches, which wait for each other
    assert [v[1] for v in second.values("a")] == list(range(1, 9))  # neither failed at the barrier
    assert len(ray_recorder.values("load a")) == 3 and len(workers(second, "a")) == 2


class FlakyStart:
    """Its second construction anywhere fails with a TransientError (a busy device)."""

    def __init__(self, recorder):
        if recorder.incr("built") == 2:
            raise cu.TransientError("device busy, try again")

    def __call__(self, xs):
        return [x + 1 for x in xs]


def test_a_replica_that_failed_to_load_between_runs_loads_again_on_its_first_batch(ray_recorder):
    pipe = cu.Pipeline(Doc)
    pipe.output("a", pipe.source.map(cu.stage(FlakyStart, init={"recorder": ray_recorder}, batch_size=1,
                                              replicas=2, retries=2)))
    with cu.Session(executor="ray") as s:
        s.run(pipe, [0])  # one replica builds for the batch; the other, built when the run ends, fails
        assert len(ray_recorder.values("built")) == 2
        res = s.run(pipe, range(8))  # its first batch reports the failure, is retried, and builds
    assert res.values("a") == list(range(1, 9)) and len(ray_recorder.values("built")) == 3


def test_closing_the_session_releases_its_actors(ray_recorder):
    s = cu.Session(executor="ray")
    s.run(pipeline(ray_recorder), range(3))
    kept = [a for actors in s._executor.warm.actors.values() for a in actors]
    assert kept and all(_alive(kept))
    s.close()
    assert _all_die(kept)
    with pytest.raises(cu.CurateError, match="closed"):
        s.run(pipeline(ray_recorder), range(3))


def interrupt_driver(xs):
    """Ctrl-C, as the user would press it, to the process running the session (the driver)."""
    os.kill(int(os.environ["CURATE_TEST_DRIVER_PID"]), signal.SIGINT)
    return xs


def test_ctrl_c_during_a_run_releases_the_session(ray_recorder, monkeypatch):
    monkeypatch.setenv("CURATE_TEST_DRIVER_PID", str(os.getpid()))
    s = cu.Session(executor="ray")
    s.run(pipeline(ray_recorder), range(3))
    kept = [a for actors in s._executor.warm.actors.values() for a in actors]
    pipe = cu.Pipeline(Doc)
    pipe.output("x", pipe.source.map(cu.stage(interrupt_driver, runtime_env={"env_vars": {
        "CURATE_TEST_DRIVER_PID": str(os.getpid())}})))
    with pytest.raises(KeyboardInterrupt):
        s.run(pipe, range(2))
    assert s.closed and not any(_alive(kept))
