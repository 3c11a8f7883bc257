"""Page windows: a PDF splits into runs of consecutive pages that parse in parallel, and the
windows' results join back into the document's Markdown, in window order.

    Window = Document.child("window")
    windows = docs.expand(cu.stage(SplitWindows, init={"window_pages": 64}), into=Window)
    parsed = windows.map(mineru.stage("parse"))            # models/mineru4.py: WindowMarkdown
    documents = parsed.reduce(join_windows)                # DocumentMarkdown per document

`SplitWindows` counts pages with pypdfium2 (the PDF engine MinerU itself opens files with, so a
file it refuses here MinerU would refuse too) and cuts the document into windows of at most
`window_pages` pages, of near-equal size. A missing file, a file that is not a PDF, an encrypted
one without its password and one with no pages are one FAILED document each.

Why the join is a render and not a string join: MinerU 4 joins a document's pages with a blank
line ("\\n\\n", empty pages skipped; docvortex `render/_internal/markdown/renderer.py`), but
before that it merges, across pages, a paragraph, list or table that continues from one page to
the next (`continues_prev`, set by its post-processing from the previous page's last block).
So each window but the first also reads the page before it (`context_pages`), so that MinerU
sees whether the window's first block continues the previous window; the worker drops that page
again and returns its window's pages in MinerU's own page format (`WindowMarkdown.middle`), and
`join_windows` renders all windows' pages as one document with MinerU's renderer: the same
cross-page merges, page join and document-wide link targets as one call on the whole file.
(mineru_demo3_tableformer, 10 pages in 4-page windows: joining the windows' Markdown with "\n\n"
leaves two paragraphs that cross a window boundary split; this join gives MinerU's Markdown.)

What a window cannot reproduce: MinerU's flash tier also learns from the whole document at once
(body and heading font profiles, repeated page decorations, the first page). A document that
fits in one window gives MinerU's Markdown byte for byte; a longer one can differ in which lines
are headings (`## ` or not) or a caption's place, while its words stay nearly the same (token F1
against one native call, to 5 decimals: 1.00000 for the 285-page MuPDF book in 64-page windows,
0.99995 in 32; redp5110_sampled 1.00000 in 6-page windows, 0.99789 in 3; tests/test_mineru4.py).

`ocr_mode: auto` is decided by MinerU per call, from the pages it is given; a window of a text
PDF can look scanned on its own (pages 3-5 of redp5110_sampled do). So for a document of several
windows `SplitWindows` classifies the whole file the way MinerU does and each window carries the
verdict (`WindowRecord.classified_as`).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from curate.modalities.pdf.records import ROUTES, Document, DocumentMarkdown

import curate as cu
from curate.deps import require
from curate.errors import CurateError

Window = Document.child("window")

# Pages per window: MinerU's own processing window (MINERU_PROCESSING_WINDOW_SIZE defaults to 64).
# Measured on this project's 2-core machine with the 285-page MuPDF book, CPU of the whole process
# tree against one native call on the file (21.8-23.2 s): each MinerU call re-reads the file and
# sets up its fonts and document profile, so cutting the book into 64-page windows (5 calls)
# costs about 12% more work, 16-page windows (18 calls) about 25%; and through curate with two
# actors (benchmarks/mineru4_vs_native.py, 320 pages) 64 pages ran at 1.35x native pages/s where
# 16 pages ran at 0.66x. 64 pages still give two workers enough windows of a long book (5 for
# this one), and every document of up to 64 pages is one window: MinerU's Markdown byte for byte.
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
        verdict = classify(path, password) if len(spans) > 1 else None
        return [WindowRecord(path, first, last, pages, password, verdict,
                             min(self.context_pages, first)) for first, last in spans]


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
    if not Path(path).is_file():
        return _bad(f"{path}: no such file; check the path (or the --input glob)")
    for password in (None, *passwords):
        try:
            doc = pdfium.PdfDocument(path, password=password)
            break
        except pdfium.PdfiumError as exc:
            error = exc
    else:
        return _bad(_unopenable(Path(path), bool(passwords), error))
    try:
        n = len(doc)
    finally:
        doc.close()
    if n == 0:
        return _bad(f"{name}: the PDF has no pages; check the file (it may be truncated)")
    return n, password


def _unopenable(path: Path, tried_passwords: bool, exc: Exception) -> str:
    """Why pdfium refused the file, told from its bytes: pdfium's own error code is the last
    one it set in this thread, so it can be stale (a file with no pages sets none)."""
    data = path.read_bytes()
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


def classify(path: str, password: str | None = None) -> str:
    """MinerU's own whole-document verdict, "txt" (usable text layer) or "ocr", as its `ocr_mode:
    auto` takes it (mineru.backend.analysis.pdf.pipeline: PDFDocument(bytes).classify())."""
    require("mineru", "classifying a PDF the way MinerU 4 does")
    # docvortex is MinerU 4's PDF layer, installed with it
    from docvortex.document.pdf import PDFDocument

    data = read_pdf_bytes(path, password)
    with PDFDocument(data) as doc:
        return doc.classify()


def read_pdf_bytes(path: str, password: str | None = None) -> bytes:
    """The file's bytes; with a password, a decrypted copy (MinerU takes no password)."""
    if password is None:
        return Path(path).read_bytes()
    import io

    pdfium = _pdfium()
    doc = pdfium.PdfDocument(path, password=password)
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
        markdown = render_pages([w.middle for w in windows])
    else:  # windows parsed without their pages (a remote MinerU API): MinerU's page join
        markdown = "\n\n".join(w.markdown for w in windows if w.markdown)
    return DocumentMarkdown(markdown, pages, len(markdown), routes)


def render_pages(middles: list[str]) -> str:
    """Render the windows' pages (MiddleJson dicts as JSON, in order) as one MinerU document."""
    require("mineru", "joining MinerU 4 windows")
    from mineru.render import render_markdown
    from mineru.types import MiddleJson

    parts = [json.loads(m) for m in middles]
    whole = dict(parts[0], pages=[page for part in parts for page in part["pages"]], is_full_document=True)
    return render_markdown(MiddleJson.from_dict(whole))


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
