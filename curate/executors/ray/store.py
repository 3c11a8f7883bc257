"""The Ray executor's value store (`curate.value_store.ValueStore`): values as references into Ray's
object store. Inputs travel inline; outputs are fetched once per payload; a sink's writer can be
placed in an actor on the driver's node that fetches payloads itself. `output_calls` names the
Calls whose payloads hold output values (the run keeps a copy of those on the driver's node)."""

from __future__ import annotations

import ray

from curate.errors import Cause, CurateError
from curate.executors.ray.wire import Inline, resolve, to_wire, unpicklable
from curate.executors.ray.worker import Placed


class RayStore:
    """Values as references into Ray's object store (see `curate.value_store.ValueStore`)."""

    def __init__(self):
        self._placed: list = []

    def wrap_inputs(self, values: list) -> tuple[list, dict[int, Cause]]:
        out, failed = [], {}
        for i, v in enumerate(values):
            why = unpicklable(v)
            if why is None:
                out.append(Inline(v))
            else:
                out.append(None)
                failed[i] = Cause("input", f"the input is a {type(v).__name__}, which cannot be pickled to "
                                  f"travel to Ray workers ({why}); pass inputs that pickle (paths, text, "
                                  "numbers, dicts of those) and open resources inside the stage",
                                  "", "PicklingError")
        return out, failed

    def fetch(self, values: list) -> list:
        """Output values: fetch each payload once, then pick the items."""
        refs, pos = [], {}
        wire = [to_wire(v, refs, pos) for v in values]
        payloads = ray.get(refs) if refs else []
        return [resolve(w, payloads) for w in wire]

    def place(self, factory, *args):
        """`factory(*args)` in an actor on this node (same filesystem as the driver); the returned
        callable ships value references, which the actor fetches itself. A store kept warm by
        a session reuses its actor, building a fresh object in it for each run."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        if self._placed:
            actor = self._placed[0]
            ray.get(actor.build.remote(factory, args))
        else:
            here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
            actor = ray.remote(Placed).options(num_cpus=0, scheduling_strategy=here).remote()
            ray.get(actor.build.remote(factory, args))
            self._placed.append(actor)

        def call(values: list, *call_args):
            refs, pos = [], {}
            wire = [to_wire(v, refs, pos) for v in values]
            try:
                return ray.get(actor.call.remote(wire, call_args, *refs))
            except ray.exceptions.RayTaskError as exc:  # curate's own error in the actor: as is
                if isinstance(exc.cause, CurateError):
                    raise exc.cause from None
                raise

        return call

    def close(self) -> None:
        for a in self._placed:
            ray.kill(a)
        self._placed = []


def output_calls(plan) -> set[int]:
    """Calls whose payloads hold output values: those a PRESENT row reaches through filters,
    zips and broadcasts (which pass values on as they are), and those whose value a filter
    upstream of an output may drop (a DROPPED row carries the value it had at the filter)."""
    by_slot = {n.out_slot: n for n in plan.nodes}
    out, seen = set(), set()
    # (node, whether its own value may reach an output row)
    stack = [(by_slot[plan.output_slot(name)], True) for name in plan.outputs]
    while stack:
        n, reaches = stack.pop()
        if (n.id, reaches) in seen:
            continue
        seen.add((n.id, reaches))
        if reaches and n.call >= 0 and n.kind != "filter":
            out.add(n.call)
        passes = n.call < 0 or n.kind == "filter"  # its input value is its value
        for s in n.in_slots:
            if s in by_slot:
                stack.append((by_slot[s], n.kind == "filter" or (reaches and passes)))
    return out
