"""Root keys: what `key=` may return, and that a duplicate, None or a key function that raises
stops the run with one clear error instead of mixing or losing rows (also on resume)."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

import curate as cu

Doc = cu.Domain("doc")


def pipeline():
    pipe = cu.Pipeline(Doc)
    pipe.output("docs", pipe.source.map(lambda xs: [x * 10 for x in xs]))
    return pipe


def test_a_duplicate_key_names_both_inputs(tmp_path):
    with pytest.raises(cu.RootKeyError) as err:
        cu.run(pipeline(), range(6), executor="local", key=lambda x: f"k{x % 3}", output_dir=tmp_path)
    msg = str(err.value)
    assert "input 3 (3)" in msg and "'k0'" in msg and "input 0 already has" in msg


@pytest.mark.parametrize("bad", [None, ("a", 1), "", 1.5], ids=["none", "tuple", "empty", "float"])
def test_a_key_that_is_not_text_is_refused_with_a_fix(bad):
    with pytest.raises(cu.RootKeyError, match="must be a non-empty str") as err:
        cu.run(pipeline(), range(3), executor="local", key=lambda x: bad)
    assert "input 0" in str(err.value)


def test_int_keys_are_taken_as_text():
    res = cu.run(pipeline(), range(3), executor="local", key=lambda x: 100 + x)
    assert res.root_keys() == ["100", "101", "102"]


def test_a_key_function_that_raises_names_the_input():
    def key(x):
        if x == 2:
            raise ValueError("no name")
        return f"doc{x}"

    with pytest.raises(cu.RootKeyError, match=r"key= raised ValueError: no name for input 2 \(2\)"):
        cu.run(pipeline(), range(4), executor="local", key=key)


def test_resume_with_more_inputs_refuses_a_new_input_whose_key_is_committed(tmp_path):
    key = lambda x: f"k{x % 3}"  # noqa: E731 - unique for 3 inputs, not for 4
    cu.run(pipeline(), range(3), executor="local", key=key, output_dir=tmp_path)
    with pytest.raises(cu.RootKeyError, match="input 3 .* 'k0', which input 0 already has"):
        cu.run(pipeline(), range(4), executor="local", key=key, output_dir=tmp_path, resume=True)
    ids = pq.read_table(tmp_path / "docs").column("entity_id").to_pylist()
    assert sorted(ids) == ["k0", "k1", "k2"]  # nothing written twice, nothing lost


def test_resume_with_more_distinct_inputs_does_only_the_new_ones(tmp_path):
    key = lambda x: f"doc{x}"  # noqa: E731
    cu.run(pipeline(), range(3), executor="local", key=key, output_dir=tmp_path)
    res = cu.run(pipeline(), range(5), executor="local", key=key, output_dir=tmp_path, resume=True)
    assert res.metrics.roots == 2
    assert sorted(res.values("docs")) == [0, 10, 20, 30, 40]
