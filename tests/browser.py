"""A real headless browser for the tests of web pages: Debian's `chromium` driven by Playwright
(which cannot download its own browsers here, so it is given the system's binary).

A test module imports the fixture by name, like the other helpers in tests/:

    from browser import assert_no_console_errors, browser, open_page, screenshot  # noqa: F401 - fixture

    def test_the_index(browser, tmp_path):
        with open_page(browser, url) as visit:  # url: the site under test, served by the test
            assert visit.status == 200 and visit.page.title() == "..."
            screenshot(visit.page, tmp_path / "index.png")
            assert_no_console_errors(visit)

Hostile data must never run a script. Every alert, confirm and prompt is recorded in
`visit.dialogs` (and `visit.errors`) and dismissed; a test may also plant
`<script>window.__xss = 1</script>` in the data and check
`visit.page.evaluate("typeof window.__xss") == "undefined"`.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ConsoleMessage, Dialog, Error, Page

# A local page loads in well under a second: a hung one fails its test in 10 s, not Playwright's 30.
PAGE_TIMEOUT_MS = 10_000
# Debian's /usr/bin/chromium is a shell launcher that adds desktop defaults (extensions, GPU
# rasterization) and execs this binary; Playwright passes its own flags, so it starts the binary.
DEBIAN_BINARY = "/usr/lib/chromium/chromium"


def chromium_executable() -> str | None:
    """The Chromium to drive: $CURATE_CHROMIUM if set, else `chromium` or `chromium-browser` on PATH."""
    if os.environ.get("CURATE_CHROMIUM"):
        return os.environ["CURATE_CHROMIUM"]
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found and Path(found).resolve() == Path("/usr/bin/chromium") and os.access(DEBIAN_BINARY, os.X_OK):
        return DEBIAN_BINARY
    return found


def _absent(why: str):
    """Skip, naming what is missing; fail instead where CURATE_REQUIRE_BROWSER=1 (CI, which installs
    both: a browser test skipped there would hide a broken set-up)."""
    if os.environ.get("CURATE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"CURATE_REQUIRE_BROWSER=1 but {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium for the module. Module scope, not session: each module that imports the
    fixture gets its own, and Playwright's sync API allows one at a time per thread; a module's is
    closed before the next module's starts (about 0.7 s each)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _absent("playwright is not installed (pip install playwright: curate's test extra)")
    executable = chromium_executable()
    if executable is None:
        _absent("chromium is not installed (apt-get install chromium, as scripts/setup-browser does, "
                "or set CURATE_CHROMIUM to a Chromium binary)")
    with sync_playwright() as playwright:
        # No sandbox: Chromium's needs user namespaces or a setuid helper, and as root it refuses to
        # start without --no-sandbox (which chromium_sandbox=False passes). Playwright's own flags
        # already cover the rest: --headless (Chromium's new headless), --disable-dev-shm-usage.
        launched = playwright.chromium.launch(executable_path=executable, headless=True, chromium_sandbox=False)
        yield launched
        launched.close()


@dataclass
class Visit:
    """A page opened in its own browser context, with what went wrong on it so far: console
    errors, uncaught exceptions and dialogs (as text, in order), and the dialogs alone."""

    page: Page
    status: int | None = None
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def close(self) -> None:
        self.page.context.close()

    def __enter__(self) -> Visit:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _console(self, message: ConsoleMessage) -> None:
        where = message.location.get("url", "")
        # Chromium asks for /favicon.ico on its own, after the load event and at a time of its
        # choosing; a 404 there is the browser's guess, not the page's error, and would come and go.
        if message.type == "error" and urlsplit(where).path != "/favicon.ico":
            self.errors.append(f"console: {message.text} ({where}:{message.location.get('lineNumber')})")

    def _page_error(self, error: Error) -> None:
        self.errors.append(f"uncaught: {error.message}")

    def _dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        self.errors.append(f"dialog {self.dialogs[-1]}")
        dialog.dismiss()


def open_page(browser: Browser, url: str) -> Visit:
    """Open `url` in a fresh context (no cookies or storage from other visits) and wait for its load
    event; the recorders are attached before the request, so nothing the page does is missed."""
    context = browser.new_context()
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    visit = Visit(context.new_page())
    visit.page.on("console", visit._console)
    visit.page.on("pageerror", visit._page_error)
    visit.page.on("dialog", visit._dialog)
    try:
        response = visit.page.goto(url, wait_until="load")
    except BaseException:
        visit.close()  # the test never gets this visit to close it
        raise
    visit.status = response.status if response is not None else None
    return visit


def assert_no_console_errors(visit: Visit) -> None:
    """Fail with every console error, uncaught exception and dialog the page has had. A round trip
    to the page first: the events it sent before answering are then all recorded."""
    if not visit.page.is_closed():
        visit.page.evaluate("0")
    assert not visit.errors, "the page reported:\n" + "\n".join(visit.errors)


def screenshot(page: Page, path: str | Path) -> Path:
    """Write a PNG of the whole page (not only the viewport), animations stopped; return its path."""
    page.screenshot(path=str(path), full_page=True, animations="disabled")
    return Path(path)
