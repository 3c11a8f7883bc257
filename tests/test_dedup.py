"""Document dedup (curate.dedup): normalisation and exact hashes, MinHash signatures, planted
near-duplicates found and unrelated texts left alone, the representative rule, the CLI on a
real output directory, incremental runs equal to one run, and bad arguments."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

pytest.importorskip("pyarrow", reason="curate dedup reads and writes Parquet (pyarrow)")

from dedup_corpus import corpus, write_documents  # noqa: E402

from curate.cli import main  # noqa: E402
from curate.dedup import dedup  # noqa: E402
from curate.dedup.clusters import components, representatives  # noqa: E402
from curate.dedup.minhash import MinHashParams, jaccard, signatures  # noqa: E402
from curate.dedup.normalize import exact_hash, normalise  # noqa: E402
from curate.errors import InputError  # noqa: E402
from curate.io.read import read_table  # noqa: E402


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """An output directory of 45 sources and their planted copies, plus one DROPPED row."""
    docs, pairs, far = corpus(45)
    out = tmp_path_factory.mktemp("dedup") / "out"
    write_documents(out, docs + ["DROP this row"])
    return out, docs, pairs, far


def rows_by_id(out, name="documents_dedup") -> dict[str, dict]:
    return {r["entity_id"]: r for r in read_table(out, name).to_pylist()}


def test_normalised_text_hashes_alike_up_to_case_punctuation_and_spacing():
    assert normalise("  Ｈello,\tWORLD!!\n# Title_x ") == "hello world title x"
    assert exact_hash(normalise("A  b, c.")) == exact_hash(normalise("a b c"))
    assert exact_hash(normalise("page 1")) != exact_hash(normalise("page 2"))  # digits count
    assert normalise(None) == ""


def test_signatures_do_not_depend_on_batching_and_estimate_jaccard():
    import curate.dedup.minhash as mh

    words = [f"t{i}" for i in range(400)]
    a = " ".join(words)
    b = " ".join(words[:300] + [f"x{i}" for i in range(100)])  # 296 of 496 shingles shared: J ~ 0.6
    texts = [a, b, "", "short text", a]
    p = MinHashParams()
    one = signatures(texts, p)
    small = mh.BATCH_BYTES
    try:
        mh.BATCH_BYTES = 10  # one text a batch
        apart = signatures(texts, p)
    finally:
        mh.BATCH_BYTES = small
    assert np.array_equal(one, apart)
    assert (one[2] == mh.EMPTY).all() and not (one[3] == mh.EMPTY).any()
    est = jaccard(one, np.array([0, 0]), np.array([1, 4]))
    assert abs(est[0] - 296 / 496) < 0.12 and est[1] == 1.0


def test_components_and_representatives_by_hand():
    labels = components(7, np.array([5, 1, 3]), np.array([6, 2, 1]))
    assert labels.tolist() == [0, 1, 1, 1, 4, 5, 5]
    rep = representatives(np.array([0, 0, 1, 1, 1]), np.array([3, 5, 2, 2, 1]), ["b", "a", "z", "y", "x"])
    assert rep.tolist() == [1, 1, 3, 3, 3]  # longest; a tie of lengths goes to the lowest entity id


def test_planted_duplicates_found_unrelated_and_dropped_rows_not(planted):
    out, docs, pairs, far = planted
    res = dedup(out, output="documents", column="markdown")
    rows = rows_by_id(out)
    assert len(rows) == len(docs) == res.rows  # the DROPPED row is not considered
    for s, c in pairs:
        assert rows[str(s)]["cluster_id"] == rows[str(c)]["cluster_id"], (s, c)
    families = {rows[str(s)]["cluster_id"] for s, _ in pairs}
    assert res.duplicate_clusters == len(families) and res.duplicates == len(pairs)
    assert res.exact == len(pairs) // 2
    for f in far:  # half the words replaced: its own cluster
        assert rows[str(f)]["keep"] and rows[str(f)]["cluster_id"] == str(f)
    sources = {rows[str(s)]["cluster_id"] for s in range(45)}
    assert len(sources) == 45  # no two unrelated documents merged
    for r in rows.values():
        if r["keep"]:
            assert r["duplicate_of"] is None and r["similarity"] is None and r["reason"] is None
        else:
            assert r["duplicate_of"] == r["cluster_id"] != r["entity_id"]
            assert r["reason"].startswith(("exact duplicate of", "near-duplicate of")), r
            rep = rows[r["duplicate_of"]]
            assert rep["keep"] and len(docs[int(rep["entity_id"])]) >= len(docs[int(r["entity_id"])])
    exact = [r for r in rows.values() if r["method"] == "exact" and not r["keep"]]
    assert all(r["similarity"] == 1.0 for r in exact)
    near = [r for r in rows.values() if r["method"] == "minhash" and not r["keep"]]
    assert near and all(0.8 <= r["similarity"] < 1.0 for r in near)


def test_exact_method_leaves_near_copies(planted):
    out, docs, pairs, far = planted
    res = dedup(out, output="documents", column="markdown", method="exact")
    rows = rows_by_id(out)
    assert res.duplicates == res.exact == len(pairs) // 2
    assert {r["method"] for r in rows.values()} == {"exact"}


def test_cli_end_to_end(planted, capsys):
    import pyarrow as pa

    out, docs, pairs, _ = planted
    assert main(["dedup", str(out), "--output", "documents", "--column", "markdown", "--threshold", "0.8"]) == 0
    printed = capsys.readouterr().out
    assert f"{len(docs)} rows" in printed and f"{len(pairs)} duplicates" in printed
    t = read_table(out, "documents_dedup")
    assert t.schema.field("similarity").type == pa.float64() and t.schema.field("keep").type == pa.bool_()
    assert t.column_names == ["entity_id", "root_key", "cluster_id", "duplicate_of", "similarity", "keep",
                              "method", "reason"]
    assert (out / "documents_dedup" / "_index" / "signatures.parquet").exists()
    assert rows_by_id(out, "documents")["0"]["markdown"] == docs[0]  # the job's own output untouched


def test_incremental_runs_equal_one_run(tmp_path):
    docs, _, _ = corpus(24, seed=3)
    docs = docs + [docs[0] + " and a longer ending that makes this copy the representative"]
    one = tmp_path / "one"
    write_documents(one, docs)
    dedup(one, output="documents", column="markdown")
    grown = tmp_path / "grown"
    cuts = [5, 12, 20, 31, len(docs)]
    results = []
    for k, cut in enumerate(cuts):
        write_documents(grown, docs[:cut], resume=k > 0)
        results.append(dedup(grown, output="documents", column="markdown"))
    assert read_table(grown, "documents_dedup").equals(read_table(one, "documents_dedup"))
    assert [r.rows for r in results] == cuts
    new_texts = {normalise(d) for d in docs[31:]} - {normalise(d) for d in docs[:31]}
    assert results[-1].signed == len(new_texts)  # only new texts were signed; the rest came from the index
    assert results[-1].changed >= 1  # the longer late copy took over its cluster: the rule wins


def test_bad_arguments_name_the_fix(planted, capsys):
    out, _, _, _ = planted
    with pytest.raises(InputError, match=r"method 'fuzzy' is not one of exact, minhash, both; threshold 0: .*\(0, 1\]"):
        dedup(out, output="documents", column="markdown", threshold=0, method="fuzzy")
    with pytest.raises(InputError, match=r"no column 'text'; its text columns are \['markdown', 'title'\]"):
        dedup(out, output="documents", column="text")
    with pytest.raises(InputError, match=r"holds int64, not text"):
        dedup(out, output="documents", column="ordinal")
    with pytest.raises(InputError, match=r"no rows in an output 'docs'; give --output one of \['documents'\]"):
        dedup(out, output="docs", column="markdown")
    with pytest.raises(InputError, match=r"MinHash bands=0"):
        dedup(out, output="documents", column="markdown", bands=0)
    with pytest.raises(InputError, match="not a directory"):
        dedup(out / "nowhere", output="documents", column="markdown")
    assert main(["dedup", str(out), "--output", "documents", "--column", "markdown", "--threshold", "1.5"]) == 1
    assert "threshold 1.5" in capsys.readouterr().err


def test_a_killed_dedup_leaves_the_last_one_readable(planted):
    out, docs, _, _ = planted
    dedup(out, output="documents", column="markdown")
    stale = out / ".documents_dedup.tmp-deadbeef"
    stale.mkdir()
    (stale / "part-00000.parquet").write_bytes(b"half written")
    assert read_table(out, "documents_dedup").num_rows == len(docs)
    dedup(out, output="documents", column="markdown")
    assert not stale.exists() and read_table(out, "documents_dedup").num_rows == len(docs)
    shutil.rmtree(out / "documents_dedup")


def test_embedding_column_goes_to_semantic_dedup(tmp_path):
    from dedup_corpus import write_clips

    clips = [{"embedding": [1.0, 0.0, 0.0], "start_s": 0.0, "end_s": 2.0},
             {"embedding": [1.0, 0.0, 0.0], "start_s": 0.0, "end_s": 1.5},  # the same content, cut shorter
             {"embedding": [0.0, 1.0, 0.0], "start_s": 0.0, "end_s": 3.0}]
    write_clips(tmp_path, clips)
    try:
        import curate.dedup.semantic  # noqa: F401  (helper "clips" builds it)
    except ImportError:
        with pytest.raises(InputError, match=r"needs curate.dedup.semantic"):
            dedup(tmp_path, output="clips", embedding="embedding")
        return
    res = dedup(tmp_path, output="clips", embedding="embedding", n_clusters=1)
    rows = rows_by_id(tmp_path, "clips_dedup")
    assert res.duplicates == 1 and rows["1"]["duplicate_of"] == "0" and rows["1"]["method"] == "semantic"
    assert rows["1"]["root_key"] == "1" and rows["2"]["keep"]


def test_an_output_without_present_rows_gives_an_empty_dedup(tmp_path):
    write_documents(tmp_path, ["DROP one", "DROP two"])
    res = dedup(tmp_path, output="documents", column="markdown")
    assert res.rows == res.duplicates == 0 and read_table(tmp_path, "documents_dedup").num_rows == 0


def test_other_minhash_settings_sign_every_text_again(planted):
    out, docs, _, _ = planted
    dedup(out, output="documents", column="markdown")
    again = dedup(out, output="documents", column="markdown")
    assert again.signed == 0 and not again.rebuilt  # every signature from the index
    other = dedup(out, output="documents", column="markdown", shingle=3)
    assert other.rebuilt and other.signed == len({normalise(d) for d in docs})
    assert "all computed again" in other.summary()


def test_the_index_round_trips_in_chunks(tmp_path, monkeypatch):
    """The signature index is written and read a row group at a time: chunks of 3 rows give back
    every hash and signature, in order, and the settings still guard it."""
    from curate.dedup import index

    monkeypatch.setattr(index, "CHUNK_ROWS", 3)
    params = MinHashParams()
    texts = [normalise(f"document {i} " + "word " * (i + 5)) for i in range(10)]
    hashes = np.sort(np.array([exact_hash(t) for t in texts], dtype="S16"))
    sig = signatures(texts, params)
    (tmp_path / index.INDEX_DIR).mkdir()
    index.write(tmp_path / index.INDEX_DIR / index.INDEX_FILE, hashes, sig, params)
    import pyarrow.parquet as pq

    assert pq.ParquetFile(tmp_path / index.INDEX_DIR / index.INDEX_FILE).metadata.num_row_groups == 4
    got_h, got_sig, stale = index.load(tmp_path, params)
    assert not stale and (got_h == hashes).all() and (got_sig == sig).all() and got_sig.dtype == sig.dtype
    h2, s2, stale2 = index.load(tmp_path, MinHashParams(bands=params.bands - 1))
    assert stale2 and h2.size == 0 and s2.shape[0] == 0
