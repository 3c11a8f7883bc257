"""RapidOCR on the CPU: PP-OCRv4 detection and recognition through onnxruntime
(`rapidocr_onnxruntime`; its models ship in the wheel, nothing is downloaded).

`RapidOcrModel` works on plain images (numpy RGB, PIL, or an item carrying one: see `image_of`)
and serves three tasks (`protocols.TextDetection`, `LineDetection`, `LineReading`):

- `detect_text(images)`: detection and recognition in one call: per image, its text boxes
  (`TextBox`: box in pixels, text, score) in RapidOCR's order;
- `detect_lines(images)`: detection only: per image, its text lines (`LineCrop`: box in pixels
  of the image, and the line's straightened, upright pixels in BGR, as the recogniser takes them);
- `read_lines(crops)`: recognition of line crops of any images in one batch (`LineText`).

RapidOCR's per-line 0/180 angle classifier is off (`use_cls: false`): sure of itself over its
threshold, it turned an upright line of the fax letter upside down, the recogniser read that as
blanks under `text_score`, and the line was lost (docs/benchmarks.md). Whether a page or region
is turned is decided once, from all its text, by the orientation classifier
(`curate.models.orientation`) before detection; the lines of an upright image are upright.

Putting boxes in reading order and joining them into text is the PDF modality's
(`curate.modalities.pdf.ocr`). Each model runs onnxruntime with **one intra-op thread**
(`threads=1`): a pool scales by replicas, not by threads, so N replicas use N cores and two
actors never fight over the same cores (onnxruntime's default is one thread per core in every
session). Recognition runs `rec_batch_num` lines per onnxruntime call (RapidOCR pads a batch to
its widest line; one line per call was the fastest here: docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import curate as cu

DEFAULT_REC_BATCH = 1  # lines per recognition call: the fastest with one thread (docs/benchmarks.md)


FLIP_MIN_LINES = 2  # lines needed before a page is voted upside down
FLIP_SAMPLE = 16  # lines asked (the classifier is ~2 ms a line)
FLIP_MEAN = 0.5  # their mean probability of "180" above which the page is turned (the fax: 0.08)


class RapidOcrModel:
    """RapidOCR (PP-OCRv4, onnxruntime, CPU) over images: `detect_text`, `detect_lines`, `read_lines`."""

    requires = ("rapidocr_onnxruntime",)  # checked before a run starts (curate.deps.check_installed)
    # the engine's default worker (curate.defaults.DEFAULT_NUM_CPUS): OCR scales by replicas of one thread
    default_resources: dict = {}

    def __init__(self, model: str | None = None, device: str = "cpu", batch_size: int | None = None,
                 threads: int = 1, text_score: float = 0.5, rec_batch_num: int = DEFAULT_REC_BATCH):
        from curate.deps import require

        if device != "cpu":
            raise ValueError(f"device={device!r}: this backend runs on the CPU; use device: cpu")
        for name, value in (("threads", threads), ("rec_batch_num", rec_batch_num)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r}; give a whole number >= 1 (1: scale by replicas; one line per call)")
        rapidocr = require("rapidocr_onnxruntime", "the RapidOCR backend")
        options = {"intra_op_num_threads": threads, "inter_op_num_threads": 1, "text_score": text_score,
                   "rec_batch_num": rec_batch_num, "use_cls": False}  # why no line classifier: module docstring
        if model:  # a directory holding other PP-OCR ONNX weights: det.onnx, cls.onnx, rec.onnx
            options.update(det_model_path=f"{model}/det.onnx", cls_model_path=f"{model}/cls.onnx",
                           rec_model_path=f"{model}/rec.onnx")
        self.engine = rapidocr.RapidOCR(**options)
        self.model, self.device, self.batch_size = model, device, batch_size

    def detect_text(self, images: list) -> list:
        """Per image item: its text boxes (`TextBox`, [] if it shows none), or an ItemFailure."""
        return per_image(self.read, images)

    def read(self, rgb: Any) -> list[dict]:
        """The text boxes of one RGB numpy image (detection and recognition in one call)."""
        result, _ = self.engine(rgb[:, :, ::-1].copy(), use_cls=False)  # RapidOCR takes numpy arrays as BGR
        return [{"box": bounds(points), "text": text, "score": float(score)} for points, text, score in result or ()]

    def detect_lines(self, images: list) -> list:
        """Per image item: its text lines in detection order (`LineCrop`), [] if it shows none,
        or an ItemFailure."""
        return per_image(self.lines, images)

    def lines(self, rgb: Any) -> list[dict]:
        """The text lines of one RGB numpy image: boxes in its pixels, straightened BGR crops."""
        import numpy as np

        # lines are cut from the image as RapidOCR sizes it (long side <= max_side_len, 2,000 px),
        # as its one-call path cuts them: both read the same pixels
        bgr, ratio_h, ratio_w = self.engine.preprocess(rgb[:, :, ::-1].copy())
        quads = self.engine(bgr, use_cls=False, use_rec=False)[0] or []
        # straightened and upright, as RapidOCR cuts them for its recogniser (BGR)
        crops = self.engine.get_crop_img_list(bgr, [np.asarray(q, dtype=np.float32) for q in quads])
        return [{"box": _scaled(bounds(q), ratio_w, ratio_h), "crop": c} for q, c in zip(quads, crops)]

    def upside_down(self, crops: list) -> bool:
        """Whether line crops (BGR, as `lines` cut them) are upside down by RapidOCR's line
        classifier: at least `FLIP_MIN_LINES` of them, and their mean probability of "180" over
        `FLIP_MEAN`. A vote over the page's lines, asked only when the page-level classifier
        could not tell (one line flipped alone is not turned: module docstring)."""
        sample = crops[:FLIP_SAMPLE]
        if len(sample) < FLIP_MIN_LINES:
            return False
        _, labels, _ = self.engine.text_cls(sample)
        p180 = [float(score) if label == "180" else 1.0 - float(score) for label, score in labels]
        return sum(p180) / len(p180) > FLIP_MEAN

    def read_lines(self, crops: list) -> list[dict]:
        """Per line crop (BGR, as `detect_lines` cut it): its `LineText`. A line scoring under
        `text_score` gets text "" (RapidOCR drops it) and keeps its score."""
        if not crops:
            return []
        results, _ = self.engine.text_rec(crops)
        out = []
        for text, score, *_ in results:
            score = float(score)
            out.append({"text": text if score >= self.engine.text_score else "", "score": score})
        return out


def _scaled(box: tuple[float, float, float, float], sx: float, sy: float) -> tuple[float, float, float, float]:
    return box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy


def bounds(points) -> tuple[float, float, float, float]:
    """The (x0, y0, x1, y1) bounds of a detection quadrilateral."""
    xs, ys = [float(p[0]) for p in points], [float(p[1]) for p in points]
    return min(xs), min(ys), max(xs), max(ys)


def per_image(read, images: list) -> list:
    """`read(rgb)` for each image item's RGB numpy image (`image_of`), in order; an item that is
    no readable image becomes an ItemFailure with its InputError, and the others go on."""
    out = []
    for item in images:
        try:
            out.append(read(image_of(item)))
        except cu.InputError as exc:
            out.append(cu.ItemFailure(exc))
    return out


def image_of(item: Any) -> Any:
    """The RGB numpy image of an image item (an image, a mapping with `image`, or an object with
    `image` or `crop`), or InputError."""
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
