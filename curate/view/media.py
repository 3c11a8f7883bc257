"""The viewer's images: a PDF page rendered from its recorded input, a frame of a video, a run's
timeline, and which of a row's columns name payload files. PyMuPDF, PyAV and matplotlib load
here, on first use, and a missing one gives an error page naming its pip line."""

from __future__ import annotations

import io
import threading
from pathlib import Path

from curate.deps import require
from curate.view.site import NotFound

PAGE_PX = 640  # width of a rendered page image: small enough for a page of pages, readable
FRAME_PX = 320  # width of a video frame preview
TEXT_COLUMNS = ("markdown", "caption", "text", "value", "summary")  # a row's text, the first there is
_MUPDF = threading.Lock()  # MuPDF's documents are not thread-safe; the server answers in threads


def page_png(path: Path, ordinal: int, width: int = PAGE_PX) -> bytes:
    """Page `ordinal` (0-based) of the PDF at `path`, rendered `width` pixels wide, as PNG."""
    fitz = _mupdf() or require("pymupdf", "curate view (page images)")
    with _MUPDF:
        doc = fitz.open(str(path))
        try:
            if doc.needs_pass:
                raise NotFound(f"{path.name} is encrypted: its pages are not shown")
            if not 0 <= ordinal < doc.page_count:
                raise NotFound(f"{path.name} has {doc.page_count} pages; no page {ordinal}")
            page = doc[ordinal]
            zoom = width / max(page.rect.width, 1.0)
            return page.get_pixmap(matrix=fitz.Matrix(zoom, zoom), alpha=False).tobytes("png")
        finally:
            doc.close()


def page_sizes(path: Path) -> list[tuple[float, float]] | None:
    """Each page's (width, height) in points as rendered (its /Rotate applied); None when the
    file cannot be opened here (PyMuPDF missing, encrypted, damaged)."""
    fitz = _mupdf()
    if fitz is None:
        return None
    with _MUPDF:
        try:
            doc = fitz.open(str(path))
        except Exception:  # a damaged file: the page shows its rows without images
            return None
        try:
            return None if doc.needs_pass else [(p.rect.width, p.rect.height) for p in doc]
        finally:
            doc.close()


def _mupdf():
    """PyMuPDF by its name (`fitz`, its old name, warns that it is deprecated), or None."""
    try:
        import pymupdf
    except ImportError:
        try:
            import fitz as pymupdf  # PyMuPDF before 1.24.3 has no `pymupdf` module
        except ImportError:
            return None
    return pymupdf


def video_frame(site, key: str, t: str) -> bytes:
    """The frame of the input video of root `key` at `t` seconds, FRAME_PX wide, as JPEG."""
    try:
        at = float(t)
    except ValueError:
        raise NotFound(f"{t!r} is not a time in seconds") from None
    av = require("av", "curate view (video frames)")
    path = site.input_file(key)
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        container.seek(int(max(at, 0.0) / stream.time_base), stream=stream, backward=True)
        image = None
        for frame in container.decode(stream):
            image = frame
            if frame.time is not None and frame.time >= at:
                break
        if image is None:
            raise NotFound(f"{path.name} has no frame at {at} s")
        height = max(2, round(image.height * FRAME_PX / image.width))
        buf = io.BytesIO()
        image.to_image().resize((FRAME_PX, height)).save(buf, format="JPEG", quality=80)
        return buf.getvalue()


def timeline_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def timeline_png(site, run: str) -> bytes:
    """`curate report`'s timeline of `run`: its report.png if written, else drawn now (in a
    temporary directory: the viewer writes nothing into the output directory)."""
    written = site.report_png(run)
    if written is not None:
        return written.read_bytes()
    return _drawn(site, run)


def _drawn(site, run: str) -> bytes:
    import tempfile

    from curate.errors import CurateError
    from curate.report import write_report

    try:
        run, metrics = site.dir.metrics(run)
    except CurateError as exc:
        raise NotFound(str(exc)) from None
    key = (str(site.dir.path), run)
    with _drawn_lock:
        if key not in _DRAWN:
            with tempfile.TemporaryDirectory(prefix="curate-view-") as tmp:
                _DRAWN[key] = Path(write_report(metrics, tmp, title=f"curate run {run}")["png"]).read_bytes()
        return _DRAWN[key]


_drawn_lock = threading.Lock()
_DRAWN: dict[tuple, bytes] = {}  # (output directory, run) -> its timeline drawn by this process


def file_columns(site, output: str, row: dict) -> dict[str, tuple[str, str]]:
    """Columns of `row` that name a payload file of `output` -> (relative path, kind: video,
    image or file)."""
    out = {}
    site.check_output(output)
    for k, v in row.items():
        if not isinstance(v, str) or len(v) > 512 or k in TEXT_COLUMNS or "." not in v.rsplit("/", 1)[-1]:
            continue
        try:
            path = site.resolve_payload(output, v)
        except NotFound:
            continue
        ext = path.suffix.lower()
        kind = "video" if ext in (".mp4", ".webm", ".mov", ".m4v") else "image" if ext in (
            ".png", ".jpg", ".jpeg", ".webp", ".gif") else "file"
        out[k] = (v, kind)
    return out


def preview_column(rows: list[dict | None]) -> str | None:
    """The text column to show for these rows: the first of TEXT_COLUMNS any of them has."""
    for c in TEXT_COLUMNS:
        if any(r is not None and isinstance(r.get(c), str) for r in rows):
            return c
    return None
