"""MinerU 4 on PDF files, in page windows: a PDF splits into runs of consecutive pages
(`SplitWindows`), each parsed by MinerU 4 on its own worker (`MinerU4`, holding
`curate.models.mineru4`), and the windows' results render back into the document's Markdown,
in window order, as one MinerU call on the whole file would (`join_windows`).

    Window = Document.child("window")
    windows = docs.expand(cu.stage(SplitWindows, init={"window_pages": 64}), into=Window)
    parsed = windows.map(mineru.stage("parse"))            # mineru = cu.Pool(MinerU4, ...)
    documents = parsed.reduce(join_windows)                # DocumentMarkdown per document

Each window but the first also reads the page before it (`context_pages`), so that MinerU sees a
paragraph or table continue across the window boundary; the worker drops that page again and
returns its pages in MinerU's own format, which the join renders with MinerU's renderer. For a
document of several windows `SplitWindows` classifies the whole file the way MinerU does, and
each window carries the verdict for `ocr_mode: auto`. A document of up to `window_pages` pages
is one MinerU call; how far longer ones can differ: docs/benchmarks.md.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from curate.modalities.pdf.records import ROUTES, Document, DocumentMarkdown
from curate.models import mineru4 as mineru4_model
from curate.models.mineru4 import MinerU4Model

import curate as cu
from curate.errors import CurateError

Window = Document.child("window")

# Pages per window: MinerU's own processing window (MINERU_PROCESSING_WINDOW_SIZE defaults to 64);
# every document of up to 64 pages is one MinerU call (its Markdown byte for byte), and fewer,
# larger windows cost less repeated set-up per call (docs/benchmarks.md has the measurements).
DEFAULT_WINDOW_PAGES = 64
CONTEXT_PAGES = 1  # pages before a window that MinerU also reads, to see a paragraph or table continue


@dataclass(frozen=True, slots=True)
class WindowRecord:
    """A run of consecutive pages of one PDF: what a worker needs to parse it. Pages are 0-based
    and inclusive; the window's place in its document is its lineage ordinal."""

    path: str
    first_page: int
    last_page: int
    page_count: int  # pages of the whole document
    password: str | None = None
    classified_as: str | None = None  # MinerU's verdict on the whole file ("txt"/"ocr"); None: one window
    context_pages: int = 0  # pages before first_page to read along, then drop (see the module doc)

    def __post_init__(self):
        if not 0 <= self.first_page <= self.last_page < self.page_count:
            raise ValueError(f"{self.path}: window pages {self.first_page}-{self.last_page} "
                             f"outside 0-{self.page_count - 1}")
        if not 0 <= self.context_pages <= self.first_page:
            raise ValueError(f"{self.path}: {self.context_pages} context pages before page {self.first_page}")
        if self.classified_as not in (None, "txt", "ocr"):
            raise ValueError(f"classified_as={self.classified_as!r}; 'txt', 'ocr' or None")

    @property
    def pages(self) -> int:
        """Pages of the window itself (without its context pages)."""
        return self.last_page - self.first_page + 1

    @property
    def whole(self) -> bool:
        """The window is the whole document."""
        return self.first_page == 0 and self.last_page == self.page_count - 1

    @property
    def page_range(self) -> str:
        """MinerU's `page_range` of what to read: 1-based, inclusive, context pages included;
        "" for the whole document."""
        return "" if self.whole else f"{self.first_page - self.context_pages + 1}-{self.last_page + 1}"

    def __str__(self) -> str:
        return f"{Path(self.path).name} pages {self.first_page + 1}-{self.last_page + 1} of {self.page_count}"


@dataclass(frozen=True, slots=True)
class WindowMarkdown:
    """A parsed window: its own Markdown, and (when its document has several windows) its pages
    in MinerU's middle-JSON format, which `join_windows` renders together."""

    markdown: str
    pages: int
    chars: int
    route: str  # how the text was obtained, one of records.ROUTES
    seconds: float = 0.0
    middle: str | None = None  # MinerU MiddleJson (to_dict, as JSON) of the window's own pages

    def __post_init__(self):
        if self.route not in ROUTES:
            raise ValueError(f"route {self.route!r}; one of {ROUTES}")


class SplitWindows:
    """Expand Document -> Window: a PDF path to its page windows, in page order. An encrypted
    file opens with the first of `passwords` that works (as `documents.PdfPages` takes them)."""

    requires = ("pypdfium2", "mineru")  # checked before a run starts (curate.deps.check_installed)

    def __init__(self, window_pages: int = DEFAULT_WINDOW_PAGES, passwords: list[str] | tuple[str, ...] = (),
                 context_pages: int = CONTEXT_PAGES):
        if not isinstance(window_pages, int) or isinstance(window_pages, bool) or window_pages < 1:
            raise ValueError(f"window_pages={window_pages!r}; give a whole number >= 1, e.g. window_pages: 64")
        if context_pages not in (0, 1):
            raise ValueError(f"context_pages={context_pages!r}; 1 (join like one MinerU call) or 0")
        if isinstance(passwords, str) or not all(isinstance(p, str) for p in passwords):
            raise ValueError(f"passwords={passwords!r}; a list of strings, e.g. passwords: [secret]")
        self.window_pages, self.passwords, self.context_pages = window_pages, tuple(passwords), context_pages

    def __call__(self, paths: list) -> list:
        """Per document: its windows, or an ItemFailure saying what is wrong with the file."""
        return [self._windows(str(p)) for p in paths]

    def _windows(self, path: str) -> list[WindowRecord] | cu.ItemFailure:
        opened = open_pdf(path, self.passwords)
        if isinstance(opened, cu.ItemFailure):
            return opened
        pages, password = opened
        spans = split_pages(pages, self.window_pages)
        verdict = mineru4_model.classify(read_pdf_bytes(path, password)) if len(spans) > 1 else None
        return [WindowRecord(path, first, last, pages, password, verdict,
                             min(self.context_pages, first)) for first, last in spans]


class MinerU4:
    """One MinerU 4 parser per worker (`MinerU4Model`, its arguments); `parse` turns page windows
    into `WindowMarkdown`:
    `mineru = cu.Pool(MinerU4, init={"tier": "flash"}, replicas=2, num_cpus=0.5)`."""

    requires = MinerU4Model.requires  # checked before a run starts (curate.deps.check_installed)
    default_resources = MinerU4Model.default_resources

    def __init__(self, tier: str = "flash", ocr_mode: str = "auto", model: str | None = None,
                 server_url: str | None = None, api_url: str | None = None, device: str | None = None,
                 batch_size: int | None = None, image_analysis: bool = True, log_level: str = mineru4_model.QUIET):
        self.mineru = MinerU4Model(tier, ocr_mode, model, server_url, api_url, device, batch_size, image_analysis,
                                   log_level)
        self.tier, self.ocr_mode, self.model, self.device = tier, ocr_mode, model, device

    def parse(self, windows: list[WindowRecord]) -> list[WindowMarkdown | cu.ItemFailure]:
        """Per window: its Markdown (and its pages in MinerU's format when its document has
        several windows), or an ItemFailure whose cause names the file and pages."""
        return [self._one(w) for w in windows]

    __call__ = parse

    def _one(self, window: WindowRecord) -> WindowMarkdown | cu.ItemFailure:
        if not isinstance(window, WindowRecord):
            return cu.ItemFailure(cu.InputError(f"MinerU4.parse takes a WindowRecord, got {type(window).__name__}; "
                                                "split documents with curate.modalities.pdf.mineru4:SplitWindows"))
        # The user's ocr_mode wins; "auto" takes the whole document's verdict where the split
        # made one, since MinerU's own would look only at this window's pages.
        mode = self.ocr_mode if self.ocr_mode != "auto" else (window.classified_as or "auto")
        part = {"path": cu.local_copy(window.path), "page_range": window.page_range, "ocr_mode": mode, "label": str(window),
                "data": None if window.password is None else read_pdf_bytes(window.path, window.password),
                "keep_from": window.first_page, "with_pages": not window.whole}
        (parsed,) = self.mineru.parse([part])
        if isinstance(parsed, cu.ItemFailure):
            return parsed
        markdown = parsed["markdown"]
        route = "layout" if self.tier != "flash" else ("ocr" if parsed["parse_mode"] == "ocr" else "text_layer")
        return WindowMarkdown(markdown, window.pages, len(markdown), route, round(parsed["seconds"], 3),
                              parsed["pages_json"])


def split_pages(page_count: int, window_pages: int) -> list[tuple[int, int]]:
    """(first, last) 0-based inclusive spans of at most `window_pages` pages, sizes differing by
    at most one (285 pages by 32: nine windows of 31-32 pages, not eight of 32 and one of 29)."""
    n = math.ceil(page_count / window_pages)
    bounds = [page_count * i // n for i in range(n + 1)]
    return [(bounds[i], bounds[i + 1] - 1) for i in range(n)]


def open_pdf(path: str, passwords: tuple[str, ...] = ()) -> tuple[int, str | None] | cu.ItemFailure:
    """(page count, the password that opened it or None), or an ItemFailure(InputError) that
    says what is wrong with the file and how to fix it."""
    pdfium = _pdfium()
    name = Path(path).name
    try:
        local = cu.local_copy(path)  # a URL: this node's copy of the object
    except cu.InputError as exc:  # a missing object, a refused read: this input fails alone
        return cu.ItemFailure(exc)
    if not Path(local).is_file():
        return _bad(f"{path}: no such file; check the path (or the --input glob)")
    for password in (None, *passwords):
        try:
            doc = pdfium.PdfDocument(local, password=password)
            break
        except pdfium.PdfiumError as exc:
            error = exc
    else:
        return _bad(_unopenable(Path(path), bool(passwords), error, Path(local).read_bytes()))
    try:
        n = len(doc)
    finally:
        doc.close()
    if n == 0:
        return _bad(f"{name}: the PDF has no pages; check the file (it may be truncated)")
    return n, password


def _unopenable(path: Path, tried_passwords: bool, exc: Exception, data: bytes) -> str:
    """Why pdfium refused the file, told from its bytes: pdfium's own error code is the last
    one it set in this thread, so it can be stale (a file with no pages sets none)."""
    if b"%PDF-" not in data[:1024]:
        return f"{path.name}: not a PDF (no %PDF- header); check that the file is a PDF and not mis-named"
    if b"/Encrypt" in data:
        given = "none of the passwords given opens it" if tried_passwords else "no password was given"
        return (f"{path.name}: the PDF is encrypted and {given}; give its password (--set "
                "steps.windows.expand.init.passwords='[secret]') or decrypt it (qpdf --password=PW --decrypt "
                "in.pdf out.pdf)")
    if re.search(rb"/Count\s+0\b", data) and not re.search(rb"/Type\s*/Page\b", data):
        return f"{path.name}: the PDF has no pages; check the file (it may be truncated or empty)"
    return f"{path.name}: a PDF too damaged to open ({exc}); repair it (qpdf in.pdf out.pdf) or re-export it"


def read_pdf_bytes(path: str, password: str | None = None) -> bytes:
    """The file's bytes; with a password, a decrypted copy (MinerU takes no password)."""
    if password is None:
        return Path(cu.local_copy(path)).read_bytes()
    import io

    pdfium = _pdfium()
    doc = pdfium.PdfDocument(cu.local_copy(path), password=password)
    try:
        buf = io.BytesIO()
        doc.save(buf, flags=pdfium.raw.FPDF_REMOVE_SECURITY)
        return buf.getvalue()
    finally:
        doc.close()


def join_windows(documents: list[list[WindowMarkdown]]) -> list[DocumentMarkdown]:
    """Reduce Window -> Document: each document's windows, in window order, to its Markdown,
    the same as one MinerU call on the whole file would join them (see the module doc)."""
    return [_join(windows) for windows in documents]


def _join(windows: list[WindowMarkdown]) -> DocumentMarkdown:
    routes: dict[str, int] = {}
    for w in windows:
        routes[w.route] = routes.get(w.route, 0) + w.pages
    pages = sum(w.pages for w in windows)
    if len(windows) == 1:
        markdown = windows[0].markdown
    elif all(w.middle is not None for w in windows):
        markdown = mineru4_model.render_pages([w.middle for w in windows])
    else:  # windows parsed without their pages (a remote MinerU API): MinerU's page join
        markdown = "\n\n".join(w.markdown for w in windows if w.markdown)
    return DocumentMarkdown(markdown, pages, len(markdown), routes)


def _bad(message: str) -> cu.ItemFailure:
    return cu.ItemFailure(cu.InputError(message))


def _pdfium():
    try:
        import pypdfium2
        import pypdfium2.raw  # FPDF_REMOVE_SECURITY, for read_pdf_bytes
    except ImportError as exc:
        raise CurateError(f"page windows need pypdfium2, which is not installed ({exc}); install it with: "
                          'pip install "curate[mineru]" (MinerU 4 brings it)') from None
    return pypdfium2
