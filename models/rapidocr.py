"""RapidOCR on the CPU: PP-OCRv4 detection and recognition through onnxruntime
(`rapidocr_onnxruntime`; its models ship in the wheel, nothing is downloaded). The expensive
route of PDF -> Markdown, for pages whose text layer is missing or garbage.

One `RapidOcr` per actor, and each runs onnxruntime with **one intra-op thread** (`threads=1`):
a pool scales by replicas, not by threads, so N replicas use N cores, the scheduler sees how
busy each one is, and two actors never fight over the same cores (onnxruntime's default is one
thread per core in every session, which oversubscribes a machine as soon as there are two
actors). Give the pool `replicas` = the cores you want OCR to use.

Tasks (models/__init__.py conventions):

- `ocr(images)`: the `Ocr` protocol, image items -> text. An item is a numpy RGB image, a PIL
  image, a mapping with `image`, or a record with `image` (a `PageImage`) or `crop` (a
  `RegionRecord` cut by `Render.crops`).
- `ocr_regions(regions)`: regions with a `crop` -> the same regions with `content` (the text),
  `source` "rapidocr", `score` (mean recognition confidence), `crop` dropped and the OCR time
  added to `seconds`: detection and recognition in one call per region.
- The same work in two Calls on one pool, as the PDF recipe runs it: `detect_lines(regions)`
  (an expand: region -> its text lines, each with its straightened pixels) and
  `read_lines(lines)` (a map: line -> its text and score). Recognition is about three quarters
  of RapidOCR's time on a scanned page (on the four scans of ../shared/data/pdfs: 12.5 s of
  detection, 41 s of recognition for 504 lines), so reading lines as their own items lets one
  page's lines spread over every OCR actor, and batches mix the lines of different pages and
  documents. `join_lines` (the reduce: a region's lines -> `RegionText`) and `with_text` (the
  region with that text) finish the route and give what `ocr_regions` gives.

Recognition runs `rec_batch_num` lines per onnxruntime call (RapidOCR pads a batch to its
widest line). One line per call (the default here; RapidOCR's own is 6) was the fastest on this
2-core machine with one thread: 184 lines of three scanned pages took 10.8 s at 1, 13.4 s at 3
and 16.6 s at 6.

Text comes in reading order: the boxes are put in columns and bands (`order.reading_order`),
boxes that share a line are joined with spaces, lines with a newline, and a vertical gap larger
than `PARAGRAPH_GAP` line heights (or a new column) starts a paragraph (a blank line). An empty
or unreadable image is an ItemFailure with an InputError; a page with no text gives "".
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from curate.modalities.pdf.order import reading_order
from curate.modalities.pdf.records import RegionRecord, RegionText, TextLine

import curate as cu

PARAGRAPH_GAP = 0.8  # a gap between lines above this many line heights starts a paragraph
LINE_OVERLAP = 0.5  # boxes whose heights overlap by this share of the smaller one share a line
SOURCE = "rapidocr"


class RapidOcr:
    """RapidOCR (PP-OCRv4, onnxruntime, CPU): `ocr` (image -> text), `ocr_regions` (region -> region)."""

    requires = ("rapidocr_onnxruntime",)  # checked before a run starts (curate.deps.check_installed)

    def __init__(self, model: str | None = None, device: str = "cpu", batch_size: int | None = None,
                 threads: int = 1, text_score: float = 0.5, rec_batch_num: int = 1):
        from curate.deps import require

        if device != "cpu":
            raise ValueError(f"device={device!r}: this backend runs on the CPU; use device: cpu")
        for name, value in (("threads", threads), ("rec_batch_num", rec_batch_num)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r}; give a whole number >= 1 (1: scale by replicas; one line per call)")
        rapidocr = require("rapidocr_onnxruntime", "the RapidOCR backend")
        options = {"intra_op_num_threads": threads, "inter_op_num_threads": 1, "text_score": text_score,
                   "rec_batch_num": rec_batch_num}
        if model:  # a directory holding other PP-OCR ONNX weights: det.onnx, cls.onnx, rec.onnx
            options.update(det_model_path=f"{model}/det.onnx", cls_model_path=f"{model}/cls.onnx",
                           rec_model_path=f"{model}/rec.onnx")
        self.engine = rapidocr.RapidOCR(**options)
        self.model, self.device, self.batch_size = model, device, batch_size

    def ocr(self, images: list) -> list:
        """Per image item: its text in reading order ("" if it shows none), or an ItemFailure."""
        out = []
        for item in images:
            try:
                out.append(self._read(_image_of(item))[0])
            except cu.InputError as exc:
                out.append(cu.ItemFailure(exc))
        return out

    __call__ = ocr

    def ocr_regions(self, regions: list) -> list:
        """Per region with a crop: the region with its text as content, or an ItemFailure."""
        out = []
        for region in regions:
            try:
                start = time.perf_counter()
                text, score = self._read(_image_of(region))
                out.append(replace(region, content=text, source=SOURCE, score=score, crop=None,
                                   seconds=region.seconds + time.perf_counter() - start))
            except cu.InputError as exc:
                out.append(cu.ItemFailure(exc))
        return out

    def detect_lines(self, regions: list) -> list:
        """Expand: per region with a crop, its text lines in detection order (`TextLine`s with their
        pixels; the detection time shared out over them), [] if it shows none, or an ItemFailure."""
        import numpy as np

        out = []
        for region in regions:
            try:
                rgb = _image_of(region)
            except cu.InputError as exc:
                out.append(cu.ItemFailure(exc))
                continue
            start = time.perf_counter()
            # lines are cut from the image as RapidOCR sizes it (long side <= max_side_len, 2,000 px):
            # its angle classifier, trained on such crops, turned a sharper 200 dpi fax line upside down
            bgr, ratio_h, ratio_w = self.engine.preprocess(rgb[:, :, ::-1].copy())
            quads = self.engine(bgr, use_cls=False, use_rec=False)[0] or []
            # straightened and upright, as RapidOCR cuts them for its recogniser (BGR)
            crops = self.engine.get_crop_img_list(bgr, [np.asarray(q, dtype=np.float32) for q in quads])
            share = (time.perf_counter() - start) / max(len(quads), 1)
            out.append([TextLine(box=_scaled(_bounds(q), ratio_w, ratio_h), crop=c, seconds=share)
                        for q, c in zip(quads, crops)])
        return out

    def read_lines(self, lines: list[TextLine]) -> list[TextLine]:
        """Map: per line (of any region, page or document), the line with its text and score and
        without its pixels. A line scoring under `text_score` gets text "" (RapidOCR drops it)."""
        if not lines:
            return []
        start = time.perf_counter()
        crops = [line.crop for line in lines]
        if self.engine.use_cls:
            crops, _, _ = self.engine.text_cls(crops)
        results, _ = self.engine.text_rec(crops)
        share = (time.perf_counter() - start) / len(lines)
        out = []
        for line, (text, score, *_) in zip(lines, results, strict=True):
            score = float(score)
            out.append(replace(line, crop=None, text=text if score >= self.engine.text_score else "", score=score,
                               seconds=line.seconds + share))
        return out

    def _read(self, rgb: Any) -> tuple[str, float | None]:
        result, _ = self.engine(rgb[:, :, ::-1].copy())  # RapidOCR takes numpy arrays as BGR
        if not result:
            return "", None
        boxes = [_bounds(points) for points, _, _ in result]
        texts = [text for _, text, _ in result]
        return lines_to_text(boxes, texts), float(statistics.fmean(float(s) for _, _, s in result))


def join_lines(groups: list[list[TextLine]]) -> list[RegionText]:
    """Reduce: per region, its read lines as text in reading order (`RegionText`)."""
    out = []
    for lines in groups:
        kept = [line for line in lines if line.text]
        text = lines_to_text([line.box for line in kept], [line.text for line in kept])
        score = float(statistics.fmean(line.score for line in kept)) if kept else None
        out.append(RegionText(text=text, score=score, lines=len(kept), seconds=sum(line.seconds for line in lines)))
    return out


def with_text(items: list[tuple[RegionRecord, RegionText]]) -> list[RegionRecord]:
    """Per (region, its RegionText): the region with that text as content, as `ocr_regions` gives it."""
    return [replace(region, content=read.text, source=SOURCE, score=read.score, crop=None,
                    seconds=region.seconds + read.seconds) for region, read in items]


def _scaled(box: tuple[float, float, float, float], sx: float, sy: float) -> tuple[float, float, float, float]:
    return box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy


def lines_to_text(boxes: list[tuple[float, float, float, float]], texts: list[str]) -> str:
    """OCR boxes and their texts as text in reading order (see the module docstring)."""
    lines: list[tuple[list[float], list[str]]] = []  # (bounds of the line, its texts)
    for i in reading_order(boxes):
        x0, y0, x1, y1 = boxes[i]
        if lines:
            (lx0, ly0, lx1, ly1), words = lines[-1]
            shared = min(ly1, y1) - max(ly0, y0)
            if x0 >= lx1 - 1 and shared >= LINE_OVERLAP * max(min(ly1 - ly0, y1 - y0), 1e-6):
                lines[-1] = ([lx0, min(ly0, y0), x1, max(ly1, y1)], words + [texts[i]])
                continue
        lines.append(([x0, y0, x1, y1], [texts[i]]))
    if not lines:
        return ""
    height = statistics.median(b[3] - b[1] for b, _ in lines)
    out = [" ".join(lines[0][1])]
    for (prev, _), (box, words) in itertools.pairwise(lines):
        gap = box[1] - prev[3]
        out.append(("\n\n" if gap > PARAGRAPH_GAP * height or box[1] < prev[1] else "\n") + " ".join(words))
    return "".join(out).strip()


def _bounds(points) -> tuple[float, float, float, float]:
    xs, ys = [float(p[0]) for p in points], [float(p[1]) for p in points]
    return min(xs), min(ys), max(xs), max(ys)


def _image_of(item: Any) -> Any:
    """The RGB numpy image of an image item, or InputError."""
    import numpy as np

    image = item
    if isinstance(item, Mapping):
        image = item.get("image")
    elif hasattr(item, "shape") or _is_pil(item):
        pass
    elif hasattr(item, "image"):
        image = item.image
    elif hasattr(item, "crop"):
        image = item.crop
    if _is_pil(image):
        image = np.asarray(image.convert("RGB"))
    shape = getattr(image, "shape", None)
    if shape is None or len(shape) != 3 or shape[2] != 3 or getattr(image, "dtype", None) != np.uint8:
        raise cu.InputError(f"expected an RGB image (numpy HxWx3 uint8, a PIL image, or a record with image/crop); "
                            f"got {type(item).__name__} with image {type(image).__name__} {shape}: render the page first")
    if not shape[0] or not shape[1]:
        raise cu.InputError(f"the image is empty ({shape[1]}x{shape[0]} pixels); skip empty pages and regions before OCR")
    return image


def _is_pil(obj: Any) -> bool:
    return hasattr(obj, "convert") and hasattr(obj, "getbands")
