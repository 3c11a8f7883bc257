"""The `hash="datatrove"` MinHash scheme: datatrove's signatures bit for bit where the two
tokenisations agree, a bad scheme name refused, an index of one scheme never extended with
the other, and `curate dedup --hash datatrove` on a real output directory."""

from __future__ import annotations

import json
import tempfile

import numpy as np
import pytest

pytest.importorskip("pyarrow", reason="curate dedup reads and writes Parquet (pyarrow)")
pytest.importorskip("xxhash", reason="the datatrove scheme hashes shingles with xxhash")

from dedup_corpus import corpus, write_documents  # noqa: E402

from curate.cli import main  # noqa: E402
from curate.dedup import dedup  # noqa: E402
from curate.dedup.minhash import MinHashParams, signatures  # noqa: E402
from curate.dedup.normalize import normalise  # noqa: E402
from curate.errors import InputError  # noqa: E402
from curate.io.read import read_table  # noqa: E402

TEXTS = [
    "# A Title Here\n\nThe quick brown fox jumps over the lazy dog, and then it ran away from the farm.",
    "Hello world! This is a test of the emergency broadcast system; it's only a test.",
    "five words make one shingle",
    " ".join("w" + "abcdefghijklmnopqrstuvwxyz"[i % 26] * (1 + i % 3) for i in range(3000)),  # 78 shingles, repeated
    "too short here",  # fewer than 5 words: no shingle, no signature
]


def test_signatures_equal_datatrove_where_the_words_agree():
    pytest.importorskip("datatrove", reason="the reference is datatrove's MinhashDedupSignature")
    pytest.importorskip("spacy", reason="datatrove's English word tokenizer is spaCy's")
    from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupSignature
    from datatrove.utils.text import simplify_text

    import curate.dedup.minhash_datatrove as mdt

    for shingle, bands, rows, seed in ((5, 14, 8, 1), (3, 4, 5, 7)):
        step = MinhashDedupSignature(output_folder=tempfile.mkdtemp(), config=MinhashConfig(
            n_grams=shingle, num_buckets=bands, hashes_per_bucket=rows, seed=seed))
        params = MinHashParams(shingle=shingle, bands=bands, rows=rows, seed=seed, hash="datatrove")
        small = mdt.SHINGLE_BLOCK
        try:
            mdt.SHINGLE_BLOCK = 100  # a text's shingles across blocks
            ours = signatures([normalise(t) for t in TEXTS], params)
        finally:
            mdt.SHINGLE_BLOCK = small
        assert ours.dtype == np.uint64 and ours.shape == (len(TEXTS), bands * rows)
        for text, sig in zip(TEXTS, ours):
            assert normalise(text).split() == step.word_tokenizer.word_tokenize(simplify_text(text))
            sh = step.get_shingles(text)
            if sh.size == 0:
                assert len(text.split()) < shingle and (sig == params.empty).all()
                continue
            theirs = np.array([v for band in step.get_signature(sh) for v in band], np.uint64)
            assert np.array_equal(sig, theirs)


def test_a_bad_scheme_is_refused_naming_the_choices(tmp_path):
    with pytest.raises(InputError, match=r"hash='xxh'.*curate, datatrove"):
        MinHashParams(hash="xxh")
    write_documents(tmp_path, ["one text", "another text"])
    with pytest.raises(InputError, match=r"hash 'sha' is not one of curate, datatrove"):
        dedup(tmp_path, output="documents", column="markdown", method="exact", hash="sha")
    from curate.dedup.options import check_entry

    problems = check_entry({"output": "documents", "column": "markdown", "hash": "md5"}, {"documents"})
    assert [p for _, p in problems] == ["dedup: hash 'md5' is not one of curate, datatrove"]


def test_an_index_of_one_scheme_is_not_extended_with_the_other(tmp_path):
    docs, _, _ = corpus(6, seed=2)
    write_documents(tmp_path, docs)
    dedup(tmp_path, output="documents", column="markdown")
    before = read_table(tmp_path, "documents_dedup")
    with pytest.raises(InputError, match=r"built with --hash curate.*--hash datatrove.*Run with --hash curate.*"
                                         r"or delete .*_index"):
        dedup(tmp_path, output="documents", column="markdown", hash="datatrove")
    assert read_table(tmp_path, "documents_dedup").equals(before)  # nothing written
    dedup(tmp_path, output="documents", column="markdown", method="exact", hash="datatrove")  # no index read
    import shutil

    shutil.rmtree(tmp_path / "documents_dedup" / "_index")
    dedup(tmp_path, output="documents", column="markdown", hash="datatrove")
    with pytest.raises(InputError, match=r"built with --hash datatrove.*Run with --hash datatrove"):
        dedup(tmp_path, output="documents", column="markdown")


def test_cli_hash_datatrove_finds_the_planted_copies_and_records_the_scheme(tmp_path, capsys):
    import pyarrow.parquet as pq

    docs, pairs, far = corpus(24, seed=4)
    docs += ["short one", "short one!"]  # exact copies under a shingle's length: exact dedup only
    write_documents(tmp_path, docs)
    args = ["dedup", str(tmp_path), "--output", "documents", "--column", "markdown", "--hash", "datatrove"]
    assert main(args) == 0
    assert f"{len(pairs) + 1} duplicates" in capsys.readouterr().out
    rows = {r["entity_id"]: r for r in read_table(tmp_path, "documents_dedup").to_pylist()}
    for s, c in pairs:
        assert rows[str(c)]["cluster_id"] == rows[str(s)]["cluster_id"]
    assert all(rows[str(f)]["keep"] for f in far)
    short = rows[str(len(docs) - 2)]  # the shorter of the two
    assert short["method"] == "exact" and short["duplicate_of"] == str(len(docs) - 1)
    idx = pq.read_table(tmp_path / "documents_dedup" / "_index" / "signatures.parquet")
    assert json.loads(idx.schema.metadata[b"curate.dedup"])["minhash"]["hash"] == "datatrove"
    assert idx.schema.field("signature").type.value_type == "uint64"
    assert main(args) == 0 and "0 new signatures" in capsys.readouterr().out  # extended from its own index


def test_texts_under_a_shingle_never_pair_by_minhash(tmp_path):
    write_documents(tmp_path, ["alpha beta gamma", "alpha beta gamma delta", "one two"])
    res = dedup(tmp_path, output="documents", column="markdown", method="minhash", hash="datatrove")
    assert res.duplicates == 0
