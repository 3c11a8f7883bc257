"""The dedup on Ray Data (scan, band-bucket groupby, star rounds for the components) gives the
rows the local path gives, on a local Ray (tests/conftest.py's session cluster)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ray.data", reason="the Ray Data path needs ray[data]")
pytest.importorskip("pyarrow", reason="curate dedup reads and writes Parquet (pyarrow)")

from dedup_corpus import corpus, write_documents  # noqa: E402

from curate.dedup import clusters, dedup, distributed  # noqa: E402
from curate.io.read import read_table  # noqa: E402


def test_ray_data_path_equals_local(tmp_path, ray_cluster):
    docs, pairs, _ = corpus(18, seed=5)
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    for out in (local, on_ray):
        write_documents(out, docs)
    a = dedup(local, output="documents", column="markdown")
    b = dedup(on_ray, output="documents", column="markdown", executor="ray")
    assert read_table(on_ray, "documents_dedup").equals(read_table(local, "documents_dedup"))
    assert a == b.__class__(**{**b.__dict__, "path": a.path}) and b.duplicates == len(pairs)
    # the components alone, on a graph with chains (1-2-3, 0-9) and a lone node (4)
    i, j = np.array([2, 1, 5, 0, 7, 3]), np.array([3, 2, 6, 9, 8, 8])
    assert distributed.components(10, i, j).tolist() == clusters.components(10, i, j).tolist()


def test_ray_data_path_carries_datatrove_signatures(tmp_path, ray_cluster):
    pytest.importorskip("xxhash", reason="the datatrove scheme hashes shingles with xxhash")
    docs, pairs, _ = corpus(9, seed=6)
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    for out in (local, on_ray):
        write_documents(out, docs)
    a = dedup(local, output="documents", column="markdown", hash="datatrove")
    b = dedup(on_ray, output="documents", column="markdown", hash="datatrove", executor="ray")
    assert read_table(on_ray, "documents_dedup").equals(read_table(local, "documents_dedup"))
    assert a.duplicates == b.duplicates == len(pairs)
    import pyarrow.parquet as pq

    idx = [pq.read_table(o / "documents_dedup" / "_index" / "signatures.parquet").column("signature")
           for o in (local, on_ray)]
    assert idx[0].type.value_type == "uint64" and idx[0].equals(idx[1])
