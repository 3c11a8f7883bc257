"""`curate rerun` on an output on object storage (a real S3 API server, tests/s3server.py): the
version is written beside the run's rows under the same prefix, read back as the latest, and the
run's own rows stay readable."""

from __future__ import annotations

from s3server import s3_bucket, s3_endpoint  # noqa: F401 - fixtures
from test_rerun import LOCAL, RECIPE, write_docs

from curate.cli import main
from curate.io.read import read_table


def test_a_rerun_on_s3_writes_its_version_under_the_prefix(tmp_path, s3_bucket, capsys):
    docs = write_docs(tmp_path / "docs")
    out = f"s3://{s3_bucket}/out"
    assert main(["run", str(RECIPE), "--input", str(docs), "--output", out, *LOCAL]) == 3
    before = {r["entity_id"]: r for r in read_table(out, "lines").to_pylist()}
    assert main(["rerun", out, "--step", "label", "--set", "steps.label.map.init.tag=v2", "--where", "text == 'two'",
                 *LOCAL]) == 0
    assert "1 rows picked in 1 inputs" in capsys.readouterr().out
    after = {r["entity_id"]: r for r in read_table(out, "lines").to_pylist()}
    changed = {e: r["label"] for e, r in after.items() if r["version"] == 2}
    assert list(changed.values()) == ["v2:TWO"] and set(after) == set(before)
    assert {e: r for e, r in (
        (e, {k: v for k, v in r.items() if k != "version"}) for e, r in after.items()) if e not in changed} == \
        {e: r for e, r in before.items() if e not in changed}
    assert {r["label"] for r in read_table(out, "lines", version=1).to_pylist()} >= {"v1:TWO"}
    assert read_table(f"{out}/_versions/v2", "lines").num_rows == 1
    assert main(["show", out, "lines", next(iter(changed)), "--column", "label"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("v2:TWO")
