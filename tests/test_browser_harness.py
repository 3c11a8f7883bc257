"""The browser harness (tests/browser.py) on a few static pages: it must see what a page reports,
and see nothing on a clean one, before the viewer's tests can trust a pass."""

from __future__ import annotations

import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest
from browser import assert_no_console_errors, browser, chromium_executable, open_page, screenshot  # noqa: F401

PAGES = {
    "clean.html": "<!doctype html><title>clean</title><h1>nothing to report</h1>",
    "logs.html": "<!doctype html><title>logs</title><script>console.error('boom')</script>",
    "missing.html": "<!doctype html><title>missing</title><img src='missing.png'>",
    "throws.html": "<!doctype html><title>throws</title><script>throw new Error('unhandled')</script>",
    # the title is set after the dialogs return: proof that each was answered, and how
    "dialogs.html": "<!doctype html><title>dialogs</title>"
                    "<script>alert('xss'); document.title = String(confirm('sure?'))</script>",
}


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass  # pytest would show every request of a failed test


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The pages served on 127.0.0.1 from a thread: the base URL."""
    root = tmp_path_factory.mktemp("site")
    for name, html in PAGES.items():
        (root / name).write_text(html)
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def test_a_clean_page_reports_nothing_and_is_photographed(browser, site, tmp_path):
    with open_page(browser, f"{site}/clean.html") as visit:
        assert visit.status == 200 and visit.page.title() == "clean"
        png = screenshot(visit.page, tmp_path / "clean.png")
        assert_no_console_errors(visit)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(("page", "reported"), [
    ("logs.html", "console: boom"),
    ("missing.html", "console: Failed to load resource: the server responded with a status of 404"),
    ("throws.html", "uncaught: unhandled"),
])
def test_what_a_page_reports_fails_the_check(browser, site, page, reported):
    with open_page(browser, f"{site}/{page}") as visit:
        with pytest.raises(AssertionError, match="the page reported"):
            assert_no_console_errors(visit)
    assert len(visit.errors) == 1 and visit.errors[0].startswith(reported), visit.errors


def test_dialogs_are_recorded_and_dismissed(browser, site):
    with open_page(browser, f"{site}/dialogs.html") as visit:
        assert visit.page.title() == "false"  # confirm() dismissed: the script went on
        assert visit.dialogs == ["alert: xss", "confirm: sure?"]
        with pytest.raises(AssertionError, match="dialog alert: xss"):
            assert_no_console_errors(visit)


def test_curate_chromium_names_the_browser(monkeypatch):
    monkeypatch.setenv("CURATE_CHROMIUM", "/opt/other/chrome")
    assert chromium_executable() == "/opt/other/chrome"
