"""Warm sessions: start-up and wall time of a first run, a second run of the same pipeline in
the same `cu.Session` (its pools kept warm), and a run with one pool changed (only that pool
rebuilt), against one-shot `cu.run` calls, on a local Ray.

The pipeline: documents -> pages (expand) -> a "model" pool (2 actors, whose constructor sleeps
`--load-s` seconds, standing in for loading weights; batch 8) -> per-document join. Printed:
`RunMetrics.startup_s` (until work began: the function stages run at once as Ray tasks),
`workers_ready_s` (until every actor answered) and the wall time; the model loads on the first
batch, so its cost shows in the wall time of the run that builds it.

    python benchmarks/session.py [--load-s 2.0] [--docs 40]
"""

from __future__ import annotations

import argparse
import time

import curate as cu

Doc = cu.Domain("doc")
Page = Doc.child("page")


class Model:
    def __init__(self, load_s: float, tag: str = "v1"):
        time.sleep(load_s)  # loading weights
        self.tag = tag

    def __call__(self, pages):
        time.sleep(0.002 * len(pages))
        return [f"{self.tag}:{p}" for p in pages]


def split(docs):
    return [[f"{d}/{i}" for i in range(d % 7 + 1)] for d in docs]


def join(groups):
    return ["|".join(g) for g in groups]


def pipeline(load_s: float, tag: str = "v1"):
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(split, into=Page)
    text = pages.map(cu.stage(Model, init={"load_s": load_s, "tag": tag}, batch_size=8, replicas=2))
    pipe.output("docs", text.reduce(join))
    return pipe


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--load-s", type=float, default=2.0)
    ap.add_argument("--docs", type=int, default=40)
    args = ap.parse_args()
    docs = list(range(args.docs))
    rows = []
    cu.run(pipeline(0.0), docs[:4], executor="ray")  # untimed: Ray itself starts here
    for label in ("one-shot run 1", "one-shot run 2"):
        res = cu.run(pipeline(args.load_s), docs, executor="ray")
        rows.append((label, res.metrics))
    with cu.Session(executor="ray") as s:
        for label, tag in (("session run 1", "v1"), ("session run 2 (same)", "v1"), ("session run 3 (changed)", "v2")):
            res = s.run(pipeline(args.load_s, tag), docs)
            assert res.values("docs")[1].startswith(f"{tag}:1/0")
            rows.append((label, res.metrics))
    first = rows[2][1].wall_s
    print(f"{args.docs} documents; model load {args.load_s:g} s per actor, 2 actors")
    print(f"{'run':<26}{'start-up':>10}{'actors up':>11}{'wall':>9}{'wall vs session run 1':>22}")
    for label, m in rows:
        up = "-" if m.workers_ready_s is None else f"{m.workers_ready_s:.3f}s"
        print(f"{label:<26}{m.startup_s:>9.3f}s{up:>11}{m.wall_s:>8.2f}s{m.wall_s / first:>21.1%}")


if __name__ == "__main__":
    main()
