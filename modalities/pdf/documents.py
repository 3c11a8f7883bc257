"""Document -> pages: open a PDF, and list its pages as small records.

`PdfPages` is the expand from a document to its pages. It opens each file once, tries the
passwords it was given, and returns one `PageRecord` per page: where the page is (path and
index), its size and rotation, the scale to render it at (`render_scale`: 200 dpi, long side
at most 3,500 px) and the document's /Title metadata (`doc_title`; whether it can be trusted as
the title is `assemble.trusted_title`'s call). No text and no pixels: a 3,000-page PDF becomes
3,000 records of a few hundred bytes, and the per-page stages (`pdf_text`, `render`) reopen the file
where they run. A document that cannot be read is one `ItemFailure` with an `InputError` that
names the file and says how to fix it: missing or unreadable, not a PDF, damaged beyond what
MuPDF recovers, encrypted (no password given worked), or without pages. A damaged file that
MuPDF repairs (a missing xref) opens as repaired and runs like any other.

`DocumentCache` keeps the last few opened documents of a worker (an LRU): the pages of one
document arrive at a worker in runs, so one open serves many pages. It reopens a document after
`reopen_pages` page loads: MuPDF keeps what it parsed for an open document until it is closed,
so a worker reading one long PDF would otherwise grow with every page it reads (a 3,000-page
PDF through the layout model: docs/benchmarks.md, "Peak memory of one long PDF"); a reopen
costs about 20 ms on that file. PyMuPDF is not
thread-safe, and the local executor runs stages on threads of one process, so every PyMuPDF
call of this modality holds `MUPDF_LOCK` (on Ray each worker is its own process: no contention).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any

from curate.modalities.files import check_file
from curate.modalities.pdf.records import (
    DEFAULT_DPI,
    MAX_LONG_SIDE_PX,
    PageRecord,
    PdfFile,
    render_scale,
)

import curate as cu

MUPDF_LOCK = threading.RLock()  # one PyMuPDF call at a time per process (see the module docstring)
DEFAULT_CACHE_DOCS = 4  # open documents a worker keeps: pages of a few documents interleave in batches
DEFAULT_REOPEN_PAGES = 100  # page loads after which a kept document is closed and opened again
PDF_MAGIC = b"%PDF-"
MAGIC_WINDOW = 1024  # PDF readers accept the header anywhere in the first KiB
NOMINAL_SIZE_PT = (612.0, 792.0)  # US letter: the size given to a page MuPDF cannot load (it fails later)
PASSWORD_FIX = ("give the password in the recipe (steps.pages.expand.init.passwords: [...], or on the command "
                "line: --set steps.pages.expand.init.passwords='[secret]'), or pass the input as "
                "{'path': ..., 'password': ...}")
REPAIR_FIX = "repair it (qpdf input.pdf fixed.pdf, or mutool clean input.pdf fixed.pdf) or export it again"


def pymupdf():
    """The PyMuPDF module, quiet (its messages are read with `warnings()`, not printed)."""
    from curate.deps import require

    mod = require("pymupdf", "the PDF modality")
    mod.TOOLS.mupdf_display_errors(False)
    mod.TOOLS.mupdf_display_warnings(False)
    return mod


def warnings(mod) -> str:
    """MuPDF's messages since the last call, on one line (and forget them)."""
    text = " / ".join(line for line in mod.TOOLS.mupdf_warnings().splitlines() if line.strip())
    mod.TOOLS.reset_mupdf_warnings()
    return text[:300]


def document_spec(item: Any) -> tuple[str, tuple[str, ...]]:
    """(path, passwords) of a document input: a path, a PdfFile, or {"path": ..., "password": ...}
    (or "passwords": [...])."""
    if isinstance(item, PdfFile):
        return item.path, (item.password,) if item.password is not None else ()
    if isinstance(item, dict) and isinstance(item.get("path"), (str, os.PathLike)):
        given = item.get("passwords") or ([item["password"]] if item.get("password") is not None else [])
        return os.fspath(item["path"]), tuple(str(p) for p in given)
    if isinstance(item, (str, os.PathLike)) and os.fspath(item):
        return os.fspath(item), ()
    raise cu.InputError(f"a document input is a path, or a mapping {{'path': ..., 'password': ...}}; got "
                        f"{type(item).__name__} {str(item)[:80]!r}: give the PDF's path")


def open_pdf(path: str, passwords: tuple[str, ...] | list[str] = ()) -> tuple[Any, str | None]:
    """(the open pymupdf.Document, the password that opened it or None); raises InputError
    with what is wrong with the file and how to fix it. Call with MUPDF_LOCK held."""
    _check_file(path)
    mod = pymupdf()
    warnings(mod)
    try:
        doc = mod.open(cu.local_copy(path), filetype="pdf")  # a URL: this node's copy of the object
    except Exception as exc:  # noqa: BLE001 - FileDataError and friends: MuPDF could not make a PDF of it
        raise cu.InputError(_unopenable(path, exc, warnings(mod))) from None
    password = None
    if doc.needs_pass:
        password = next((p for p in passwords if doc.authenticate(p)), None)
        if password is None:
            doc.close()
            tried = f"none of the {len(passwords)} password(s) given opens it" if passwords else "no password was given"
            raise cu.InputError(f"{path}: encrypted: the PDF needs a password to open ({tried}); {PASSWORD_FIX}")
    if doc.page_count == 0:
        damaged = doc.is_repaired
        doc.close()
        if damaged:
            raise cu.InputError(f"{path}: damaged: MuPDF repaired the file but recovered no page "
                                f"({warnings(mod) or 'no detail'}); {REPAIR_FIX}")
        raise cu.InputError(f"{path}: the PDF has no pages; there is nothing to convert: leave it out of the input")
    warnings(mod)
    return doc, password


def _check_file(path: str) -> None:
    check_file(path, "PDF", "*.pdf")  # a regular file with something in it
    try:
        with open(cu.local_copy(path), "rb") as f:
            head = f.read(MAGIC_WINDOW)
    except OSError as exc:
        raise cu.InputError(f"{path}: cannot be read ({exc.strerror or exc}); fix its permissions") from None
    if PDF_MAGIC not in head:
        raise cu.InputError(f"{path}: not a PDF: it does not start with '%PDF-' (it starts with {head[:16]!r}); "
                            "check what the file is, and convert it to PDF or leave it out of the input")


def _unopenable(path: str, exc: Exception, detail: str) -> str:
    return (f"{path}: damaged: MuPDF cannot open it as a PDF ({type(exc).__name__}: {exc}"
            f"{'; ' + detail if detail else ''}); {REPAIR_FIX}")


def guarded(mod: Any, task, record: PageRecord):
    """`task(record)` for a per-page stage, or an ItemFailure with an InputError: the task's own,
    or MuPDF's error on a damaged page named with its file and page (its siblings go on)."""
    try:
        return task(record)
    except cu.InputError as exc:
        return cu.ItemFailure(exc)
    except (mod.mupdf.FzErrorBase, RuntimeError) as exc:  # MuPDF's own errors: a damaged page
        return cu.ItemFailure(cu.InputError(
            f"{record.path}: page {record.index + 1} (index {record.index}): MuPDF cannot read it "
            f"({type(exc).__name__}: {exc}); the page is damaged: {REPAIR_FIX}"))


class DocumentCache:
    """The last `size` documents this worker opened, by (path, password): an LRU; each is
    opened again after `reopen_pages` page loads (the module docstring says why)."""

    def __init__(self, size: int = DEFAULT_CACHE_DOCS, reopen_pages: int = DEFAULT_REOPEN_PAGES):
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"cache size {size!r}; give a whole number >= 1, e.g. cache_docs: 4")
        if not isinstance(reopen_pages, int) or reopen_pages < 1:
            raise ValueError(f"reopen_pages={reopen_pages!r}; give a whole number >= 1, e.g. 100")
        self.size, self.reopen_pages = size, reopen_pages
        self._docs: OrderedDict[tuple[str, str | None], Any] = OrderedDict()
        self._loads: dict[tuple[str, str | None], int] = {}  # page loads since each kept document opened
        self.reopened = 0  # documents closed and opened again after reopen_pages loads

    def get(self, path: str, password: str | None = None) -> Any:
        """The open document (opened now if it is not kept); raises InputError if it cannot be."""
        key = (path, password)
        doc = self._docs.get(key)
        if doc is not None:
            self._docs.move_to_end(key)
            return doc
        doc, _ = open_pdf(path, () if password is None else (password,))
        self._docs[key], self._loads[key] = doc, 0
        while len(self._docs) > self.size:
            old, evicted = self._docs.popitem(last=False)
            self._loads.pop(old, None)
            evicted.close()
        return doc

    def page(self, record: PageRecord) -> Any:
        """The pymupdf.Page of a page record; raises InputError if the page cannot be loaded.
        The page is valid until the next call (its document may be reopened then)."""
        key = (record.path, record.password)
        if self._loads.get(key, 0) >= self.reopen_pages:
            self._loads.pop(key)
            self._docs.pop(key).close()
            self.reopened += 1
        doc = self.get(record.path, record.password)
        self._loads[key] += 1
        try:
            return doc.load_page(record.index)
        except Exception as exc:  # noqa: BLE001 - whatever MuPDF raises, that page is damaged
            raise cu.InputError(f"{record.path}: page {record.index + 1} (index {record.index}) cannot be loaded "
                                f"({type(exc).__name__}: {exc}); the page is damaged: {REPAIR_FIX}") from None

    def close(self) -> None:
        self._loads.clear()
        while self._docs:
            self._docs.popitem()[1].close()


class PdfPages:
    """Expand: document -> its pages (`PageRecord`s in page order), or an ItemFailure.

    `passwords`: tried in order on an encrypted PDF (an input {"path", "password"} adds its
    own first). `dpi` and `max_long_side` set each page's render scale (`render_scale`)."""

    requires = ("pymupdf",)  # checked before a run starts (curate.deps.check_installed)

    def __init__(self, passwords: list[str] | tuple[str, ...] = (), dpi: float = DEFAULT_DPI,
                 max_long_side: int = MAX_LONG_SIDE_PX):
        if isinstance(passwords, str) or not all(isinstance(p, str) for p in passwords or ()):
            raise ValueError(f"passwords={passwords!r}; give a list of texts, e.g. passwords: [secret, other]")
        if not (isinstance(dpi, (int, float)) and dpi > 0 and isinstance(max_long_side, int) and max_long_side > 0):
            raise ValueError(f"dpi={dpi!r}, max_long_side={max_long_side!r}; give numbers > 0, e.g. dpi: 200")
        self.passwords, self.dpi, self.max_long_side = tuple(passwords or ()), dpi, max_long_side

    def __call__(self, documents: list) -> list:
        return [self._pages(item) for item in documents]

    def _pages(self, item: Any) -> list[PageRecord] | cu.ItemFailure:
        try:
            path, own = document_spec(item)
            with MUPDF_LOCK:
                doc, password = open_pdf(path, own + self.passwords)
                try:
                    title = " ".join(str((doc.metadata or {}).get("title") or "").split())  # the /Title, one line
                    return [self._record(doc, path, i, password, title) for i in range(doc.page_count)]
                finally:
                    doc.close()
        except cu.InputError as exc:
            return cu.ItemFailure(exc)

    def _record(self, doc: Any, path: str, index: int, password: str | None, title: str = "") -> PageRecord:
        try:
            page = doc.load_page(index)
            box, rotation = page.cropbox, page.rotation % 360
            width, height = float(box.width), float(box.height)
        except Exception:  # noqa: BLE001 - the page's own stage fails it, with MuPDF's reason; its siblings go on
            (width, height), rotation = NOMINAL_SIZE_PT, 0
        if not (width > 0 and height > 0):
            (width, height) = NOMINAL_SIZE_PT  # an empty /MediaBox: the per-page stage says so
        return PageRecord(path=path, index=index, width_pt=width, height_pt=height, rotation=rotation,
                          scale=render_scale(width, height, self.dpi, self.max_long_side), password=password,
                          doc_title=title)
