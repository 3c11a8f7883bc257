"""Stages for the hang, timeout and Ctrl-C tests, importable by recipes and Ray workers.
A document's pages are `doc:page` strings; `CURATE_TEST_HANG_DOC` names a document whose
pages hang (sleep in a loop, printing `blocked` once) until the process is stopped."""

from __future__ import annotations

import os
import time


def pages(docs):
    return [[f"{d}:{i}" for i in range(int(d) % 3 + 1)] for d in docs]


def ocr(ps):
    hang = os.environ.get("CURATE_TEST_HANG_DOC")
    for p in ps:
        if hang is not None and p.split(":")[0] == hang:
            print("blocked on", p, flush=True)
            while True:  # a stage that never returns: what timeout_s and Ctrl-C are for
                time.sleep(1)
    print("ran", ",".join(ps), flush=True)
    return [p.upper() for p in ps]


def join(groups):
    return ["|".join(g) for g in groups]


RECIPE = """
name: hang
domains: {doc: null, page: doc}
steps:
  - {id: pages, expand: {from: source, stage: "hang_stages:pages", into: page}}
  - {id: text, map: {from: pages, stage: "hang_stages:ocr", batch_size: 2}}
  - {id: docs, reduce: {from: text, stage: "hang_stages:join"}}
outputs: {docs: docs, pages: text}
input: {parquet: {path: docs.parquet, column: doc}}
run: {input_batch_size: 1, inflight: 1, sink_options: {shard_rows: 1000000, flush_s: 3600}}
"""
