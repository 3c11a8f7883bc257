"""`curate view` without a browser: the pages' content, filters, paging and sorting against the
rows a job wrote, escaping of hostile text, refusal of every path outside the output directory
and the recorded inputs, the server's binding and Host check, and the static export's links.
(tests/test_view_browser.py drives the same site in Chromium.)"""

from __future__ import annotations

import http.client
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
import view_job

pytest.importorskip("jinja2", reason="curate view needs jinja2 (pip install jinja2)")
pytest.importorskip("markdown_it", reason="curate view needs markdown-it-py (pip install markdown-it-py)")

from curate.errors import CurateError  # noqa: E402
from curate.view.links import Links  # noqa: E402
from curate.view.site import Site  # noqa: E402
from curate.view.views import Views  # noqa: E402

HOSTILE = ("<script>window.__xss = 1</script> Title\n\n<img src=x onerror=\"window.__xss=2\"> body text "
           "[click](javascript:alert(1)) ![pic](http://example.invalid/x.png)\n\n"
           "<a href=\"javascript:alert(3)\">link</a> & \"quotes\" 'single'")
DOCS = [f"Doc {i} intro paragraph number {i}.\n\nSecond part {i * 7}.\n\nThird part, longer, {i * 13} words."
        for i in range(40)] + ["FAIL this one", HOSTILE, "Bonjour le monde.\n\nBonjour encore."]


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("view") / "out"
    view_job.write(d, DOCS)
    return d


def views(out, static: bool = False) -> Views:
    return Views(Site(out), Links(static=static))


def html(out, route: str, **params) -> str:
    resp = views(out).get(route, {k: str(v) for k, v in params.items()})
    assert resp.status == 200, resp.body.decode()[:500]
    return resp.body.decode()


def matched(page: str) -> int:
    return int(re.search(r'data-matched="(\d+)"', page).group(1))


def test_summary_counts_and_causes(out):
    page = html(out, "")
    want = view_job.expected(DOCS)
    assert f">{want['dropped']}</a>" in page and f">{want['present']}</a>" in page
    assert "a document marked FAIL; remove the mark" in page  # the top failure cause, with its count
    assert 'id="runs"' in page and "completed" in page


def test_table_facets_ranges_sort_and_paging(out):
    want = view_job.expected(DOCS)
    total = want["present"] + want["dropped"]
    assert matched(html(out, "table", o="sections")) == total
    assert matched(html(out, "table", o="sections", **{"f.status": "dropped"})) == want["dropped"]
    rows = Site(out).table("sections").load().to_pylist()
    fr = sum(1 for r in rows if r["language"] == "fr" and r["status"] == "present")
    assert matched(html(out, "table", o="sections", **{"f.status": "present", "f.language": "fr"})) == fr
    band = sum(1 for r in rows if r["score"] is not None and 0.5 <= r["score"] <= 0.8)
    assert 0 < band < total
    assert matched(html(out, "table", o="sections", **{"min.score": 0.5, "max.score": 0.8})) == band
    table = Site(out).table("sections")
    from curate.view.tables import PAGE_ROWS, Query

    first = table.page(Query(sort="score", desc=True))
    scores = [r["score"] for r in first.rows]
    assert scores == sorted(scores, reverse=True) and len(scores) == PAGE_ROWS
    assert scores[0] == max(r["score"] for r in rows)
    last = table.page(Query(page=10_000))  # past the end: the last page
    assert last.page == last.pages - 1 and len(last.rows) == total - PAGE_ROWS * (last.pages - 1)
    lineages = [r["lineage"] for r in table.page(Query()).rows]
    assert lineages == sorted(lineages)  # lineage order by default
    bad = table.page(Query.from_params({"f.nope": "x", "min.route": "1", "sort": "nope"}))
    assert len(bad.problems) == 3 and bad.matched == total


def test_row_and_input_pages(out):
    site = Site(out)
    row = site.table("sections").load().to_pylist()[0]
    page = html(out, "row", o="sections", id=row["entity_id"])
    assert row["entity_id"] in page and "<h2>markdown</h2>" in page
    doc = html(out, "root", key=row["root_key"])
    assert doc.count('<article class="page"') == sum(1 for r in site.table("sections").load().to_pylist()
                                             if r["root_key"] == row["root_key"])


def test_hostile_text_is_shown_never_run(out):
    key = "doc%04d" % DOCS.index(HOSTILE)
    pages = [html(out, "root", key=key), html(out, "table", o="documents")]
    site = Site(out)
    docs = site.table("documents").load().to_pylist()
    hostile = next(r for r in docs if r["root_key"] == key)
    pages.append(html(out, "row", o="documents", id=hostile["entity_id"]))
    for page in pages:
        low = page.lower()  # the pages have no script of their own: any would be the data's
        assert "<script" not in low and "<img src=x" not in low and "<a href=\"javascript" not in low
        assert 'href="javascript:' not in low and 'src="http' not in low
    row_page = pages[2]
    assert "&lt;script&gt;window.__xss = 1&lt;/script&gt;" in row_page  # shown as text, in the Markdown too
    assert 'src="http' not in row_page and "[image: pic]" in row_page


def test_paths_outside_are_refused(out, tmp_path):
    v = views(out)
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    (out / "sections" / "link.txt").symlink_to(secret)
    for rel in ["../../secret.txt", str(secret), "link.txt", "../_curate/manifest.json", "", "a\x00b"]:
        assert v.get("file", {"o": "sections", "p": rel}).status == 404, rel
    assert v.get("file", {"o": "../..", "p": "etc/passwd"}).status == 404
    for key in ["../../etc/passwd@0", "/etc/passwd@0", "doc0000", "x@y"]:
        assert v.get("pageimg", {"key": key, "n": "0"}).status == 404, key
    assert v.get("assets/../site.py", {}).status == 404
    assert v.get("../../etc/passwd", {}).status == 404
    assert v.get("dedup", {"o": "../sections"}).status == 404


def test_server_binds_loopback_checks_host_and_serves_ranges(out):
    from curate.view.server import start

    (out / "sections" / "_files").mkdir(exist_ok=True)
    blob = out / "sections" / "_files" / "blob.bin"
    blob.write_bytes(bytes(range(256)) * 4)
    server = start(out)
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1"
        conn = http.client.HTTPConnection(host, port, timeout=30)
        conn.request("GET", "/", headers={"Host": f"evil.example:{port}"})
        r = conn.getresponse()
        assert r.status == 403
        r.read()
        conn.request("GET", "/file?o=sections&p=_files/blob.bin", headers={"Range": "bytes=10-19"})
        r = conn.getresponse()
        assert r.status == 206 and r.read() == bytes(range(10, 20))
        assert r.getheader("Content-Range") == "bytes 10-19/1024"
        conn.request("GET", "/")
        r = conn.getresponse()
        assert r.status == 200 and "script-src" not in r.getheader("Content-Security-Policy")
        assert "default-src 'none'" in r.getheader("Content-Security-Policy")
        r.read()
        conn.request("POST", "/", body=b"x")
        r = conn.getresponse()
        assert r.status == 501  # read-only: GET and HEAD only
        r.read()
        conn.close()
    finally:
        server.shutdown()
        server.server_close()
        blob.unlink()


class _Refs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs = []

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("href", "src") and v and not v.startswith("data:"):
                self.refs.append(v)


def test_static_export_links_resolve(out, tmp_path):
    from curate.view.export import MARKER, export

    done = export(out, tmp_path / "site")
    site = tmp_path / "site"
    assert (site / "index.html").is_file() and (site / MARKER).is_file()
    assert done.pages == len(list(site.glob("*.html")))
    for page in site.glob("*.html"):
        parser = _Refs()
        parser.feed(page.read_text())
        for ref in parser.refs:
            assert not ref.startswith(("/", "http")), (page.name, ref)  # relative: opens from disk
            assert (site / ref).is_file(), (page.name, ref)
    # one table page per view (no filter, or one facet value) and page of it, in lineage order
    # only: a sort per column per view made 2,188 pages of the 4-PDF example before the bound
    from math import ceil

    from curate.view.links import STATIC_TABLE_PAGES
    from curate.view.tables import PAGE_ROWS, Query

    want = 0
    for name in Site(out).outputs():
        first = Site(out).table(name).page(Query())
        views = [first.total] + [n for values in first.facets.values() for _, n in values]
        want += sum(min(STATIC_TABLE_PAGES, max(1, ceil(n / PAGE_ROWS))) for n in views)
    assert len(list(site.glob("table-*.html"))) == want
    with pytest.raises(CurateError, match="inside the output directory"):
        export(out, out / "site")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine")
    with pytest.raises(CurateError, match="not empty"):
        export(out, tmp_path / "busy")
    export(out, site)  # over an earlier export: replaced
    assert not any(p.name == "keep.txt" for p in site.rglob("*"))


def test_dedup_clusters(tmp_path):
    from curate.dedup import dedup

    base = "The quick brown fox jumps over the lazy dog near the river bank at dawn today."
    docs = [view_job.kept(t) for t in (base, base.replace("dawn", "dusk"), base.upper().replace(".", "!"),
                               "Something else entirely, alone.")]
    out = tmp_path / "out"
    view_job.write(out, docs)
    dedup(out, output="documents", column="markdown", threshold=0.5)
    page = html(out, "dedup", o="documents_dedup")
    cluster = re.search(r'cluster\?c=([^&"]+)&amp;o=documents_dedup', page)
    assert cluster is not None
    from urllib.parse import unquote

    members = html(out, "cluster", o="documents_dedup", c=unquote(cluster.group(1)))
    assert members.count('data-keep="true"') == 1 and members.count('data-keep="false"') >= 1
    assert "representative" in members and "quick brown fox" in members.lower()


def test_not_an_output_directory(tmp_path):
    with pytest.raises(CurateError, match="not a curate output directory"):
        Site(tmp_path)
    assert os.path.isdir(tmp_path)
