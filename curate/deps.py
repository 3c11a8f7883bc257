"""Optional dependencies: imported where needed, and a missing one says how to install it."""

from __future__ import annotations

import importlib

from curate.errors import CurateError

EXTRAS = {"ray": "ray", "pyarrow": "parquet", "matplotlib": "report", "yaml": "pyyaml", "pymupdf": "pdf", "fitz": "pdf",
          "rapidocr_onnxruntime": "pdf", "mineru": "mineru", "mineru_vl_utils": "mineru", "transformers": "vlm",
          "torch": "vlm", "vllm": "vllm", "av": "video", "scenedetect": "video", "decord": "video",
          "cv2": "video", "pypdfium2": "mineru", "docvortex": "mineru"}


def require(module: str, what: str):
    """Import `module` or raise a CurateError naming `what` needs it and the pip line."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra = EXTRAS.get(module.split(".")[0], module)
        pkg = extra if module.split(".")[0] == "yaml" else f'"curate[{extra}]"'
        raise CurateError(f"{what} needs {module.split('.')[0]}, which is not installed ({exc}); "
                          f"install it with: pip install {pkg}") from None
