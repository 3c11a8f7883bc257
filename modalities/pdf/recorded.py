"""A PDF run's committed page rows -> the values its OCR steps take: what `curate rerun OUT --step
ocr --where "ocr_confidence < 0.8"` uses (recipes/pdf_to_markdown.yaml, `rerun: ocr:`) to read
the picked pages again with OCR, instead of checking, laying out and reading every page again.

- `ScanPage` (map: a picked page's row -> its `PageRecord`, routed to OCR) opens the input the
  row came from (`source_file()`: the file the manifest's inputs name, checked against the hash in
  its root key),
  and gives the page as `PdfPages` gives it (size, /Rotate, render scale), with the row's
  routing reason; a page read by its text layer before is read by OCR now.
- `no_regions` (map) gives such a page's text-layer regions: none (OCR reads the whole page).
- `reread_page` (map: a page's row and its new reading or None) gives the new reading of a picked
  page, and the recorded page (as the `PageMarkdown` it was) for the others, so the documents
  are assembled again from every page: the pages OCR read again, and the rest as they were."""

from __future__ import annotations

from dataclasses import fields, replace

from curate.modalities.pdf.documents import MUPDF_LOCK, PdfPages, open_pdf
from curate.modalities.pdf.records import PageMarkdown

import curate as cu

_PAGE_FIELDS = tuple(f.name for f in fields(PageMarkdown))


class ScanPage(PdfPages):
    """Map: a page's recorded row -> the PageRecord OCR reads (see the module docstring)."""

    def __call__(self, rows: list) -> list:
        opened: dict[str, object] = {}  # path -> (doc, password), for this batch
        try:
            return [self._guarded(row, opened) for row in rows]
        finally:
            with MUPDF_LOCK:
                for doc, _ in (v for v in opened.values() if not isinstance(v, cu.InputError)):
                    doc.close()

    def _guarded(self, row, opened: dict):
        try:
            return self._scan(row, opened)
        except cu.InputError as exc:
            return cu.ItemFailure(exc)

    def _scan(self, row, opened: dict):
        path = row.source
        if path not in opened:  # once a batch per file: its hash checked, then opened
            try:
                checked = row.source_file()
                with MUPDF_LOCK:
                    opened[path] = open_pdf(checked, self.passwords)
            except cu.InputError as exc:
                opened[path] = exc
        if isinstance(opened[path], cu.InputError):
            raise opened[path]
        doc, password = opened[path]
        title = row.get("doc_title") or ""
        with MUPDF_LOCK:
            record = self._record(doc, path, row.ordinal, password, title)
        return replace(record, text_usable=False, text_reason=row.get("reason") or "read again by OCR")


def no_regions(pages: list) -> list:
    """Map: a page OCR reads whole has no text-layer regions."""
    return [[] for _ in pages]


def reread_page(items: list[tuple]) -> list:
    """Map: (a page's recorded row, its new reading or None) -> the new reading, or the page as
    recorded (a PageMarkdown of the row's columns)."""
    out = []
    for row, new in items:
        if new is not None:
            out.append(new)
        else:
            f = row.fields
            out.append(PageMarkdown(**{k: _tuple(f[k]) if k in ("titles", "hyphens") else f[k]
                                       for k in _PAGE_FIELDS if k in f}))
    return out


def _tuple(v):
    return tuple(tuple(x) if isinstance(x, list) else x for x in v or ())
