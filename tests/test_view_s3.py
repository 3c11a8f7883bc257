"""`curate view` over an output directory on object storage (a real S3 API server on 127.0.0.1,
tests/s3server.py): the summary, a filtered table, a row and an input's page read through the
same location as the job wrote; files are served from local directories only, so a payload path
is refused with a 404 page, not read."""

from __future__ import annotations

import re

import pytest
import view_job
from s3server import s3_bucket, s3_endpoint  # noqa: F401 - fixtures

pytest.importorskip("jinja2", reason="curate view needs jinja2")
pytest.importorskip("s3fs", reason="an s3:// output needs s3fs (curate[s3])")

from curate.view.links import Links  # noqa: E402
from curate.view.site import Site  # noqa: E402
from curate.view.views import Views  # noqa: E402

DOCS = [f"Doc {i} first part.\n\nDoc {i} second part, a little longer." for i in range(12)] + ["FAIL here"]


def test_view_reads_an_output_on_s3(s3_bucket):
    out = f"{s3_bucket}/out"
    view_job.write(out, DOCS)
    views = Views(Site(out), Links())
    summary = views.get("", {})
    assert summary.status == 200 and "a document marked FAIL" in summary.body.decode()
    want = view_job.expected(DOCS)
    table = views.get("table", {"o": "sections", "f.status": "dropped"})
    assert int(re.search(r'data-matched="(\d+)"', table.body.decode()).group(1)) == want["dropped"]
    row = Site(out).table("sections").load().to_pylist()[0]
    assert views.get("row", {"o": "sections", "id": row["entity_id"]}).status == 200
    assert views.get("root", {"key": row["root_key"]}).status == 200
    assert views.get("file", {"o": "sections", "p": "_files/x.bin"}).status == 404
