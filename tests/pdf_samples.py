"""Small PDFs made on the fly for the PDF tests: written by hand (fast, and able to be wrong on
purpose: no pages, absurd sizes) or with PyMuPDF (a scan: text turned into an image)."""

from __future__ import annotations

from pathlib import Path

REAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "pdfs"  # ../shared/data/pdfs from the repo root
FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def write_pdf(path: Path, texts: list[str], size: tuple[float, float] = (300, 60), font_size: float = 7) -> Path:
    """A PDF with one page per text (one line of Helvetica each), all pages `size` points."""
    w, h = size
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"", FONT]  # 1, 2 (filled below), 3
    kids = []
    for text in texts:
        body = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")
        stream = b"BT /F1 %g Tf 10 %g Td (" % (font_size, h / 2) + body + b") Tj ET"
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %g %g] /Resources << /Font << /F1 3 0 R >> >> "
                       b"/Contents %d 0 R >>" % (w, h, len(objects)))
        kids.append(b"%d 0 R" % len(objects))
    objects[1] = b"<< /Type /Pages /Kids [" + b" ".join(kids) + b"] /Count %d >>" % len(kids)
    return _write(path, objects)


def zero_page_pdf(path: Path) -> Path:
    """A well-formed PDF whose page tree is empty."""
    return _write(path, [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"])


def _write(path: Path, objects: list[bytes]) -> Path:
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def scan_pdf(path: Path, lines: list[str], dpi: int = 150) -> Path:
    """A one-page 'scan': the lines typeset, rendered to an image, and the image alone put on a
    page (no text layer), as a scanner would."""
    import pymupdf

    src = pymupdf.open()
    page = src.new_page(width=420, height=40 + 30 * len(lines))
    for i, line in enumerate(lines):
        page.insert_text((30, 40 + 30 * i), line, fontsize=16)
    png = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY).tobytes("png")
    out = pymupdf.open()
    out.new_page(width=page.rect.width, height=page.rect.height).insert_image(page.rect, stream=png)
    out.save(path)
    return path


def mixed_pdf(path: Path, text: str = "A page of plain text, read from its text layer.") -> Path:
    """Two pages: one with a text layer, then a scan of a line (an image, no text layer)."""
    import pymupdf

    scan = pymupdf.open(scan_pdf(path.with_suffix(".scan.pdf"), ["A scanned line of text"]))
    doc = pymupdf.open()
    doc.new_page(width=scan[0].rect.width, height=scan[0].rect.height).insert_text((30, 40), text, fontsize=12)
    doc.insert_pdf(scan)
    doc.save(path)
    return path



def layout_scan_pdf(folder: Path) -> Path:
    """The eval set's scan of a paper's page (`eval_set.layout_scan`: an A4 image with no text
    layer, a running head, a title, two paragraphs, a ruled table, a copyright line and a page
    number) written into `folder`."""
    from curate.modalities.pdf.eval_set import write_eval_set

    (path,) = write_eval_set(folder, ["eval_layout_scan.pdf"])
    return path
