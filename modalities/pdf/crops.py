"""Cutting a region's pixels out of a rendered page, sized for the model that reads it.

A layout stage holds the page image; the content step (OCR, a VLM's recognition) needs only each
region's pixels. So the layout stage cuts them (`cut`, `region_crop`), puts them in the region's
`crop`, and the page image goes no further. The rules are mineru-vl-utils' (its
`MinerUClientHelper.prepare_for_extract` and `resize_by_need`), so that a region read from its
crop gives what MinerU's own two-step extraction gives for that block:

1. the box, in pixels, is rounded to whole pixels (PIL's crop);
2. a block that the layout model saw turned (90, 180 or 270 degrees counter-clockwise to read
   upright) is turned upright;
3. a sliver longer than `max_edge_ratio` times its width is centred on white padding up to that
   ratio (a model's patch grid cannot take a 1 x 400 image);
4. a crop whose short side is under `min_edge` pixels is scaled up (bicubic) until it is not.

Coordinates: a region's `bbox` is in points on the unrotated page (records.py); a page image
shows the page as displayed (render.py: a page with /Rotate 90 comes out turned). `displayed`
and `unrotated` move a box between the two (PyMuPDF's rotation_matrix and derotation_matrix),
and a point p of the displayed page is pixel p * scale.

Crops are numpy uint8 arrays (H, W, 3), like page images. numpy and PIL are imported where used,
so importing this module stays light.
"""

from __future__ import annotations

import math

from .records import PageImage, PageRecord, RegionRecord

MIN_EDGE = 28  # pixels: one 28 x 28 vision token of a Qwen2-VL patch merger (MinerU's default)
MAX_EDGE_RATIO = 50.0  # long side / short side beyond which a crop is padded (MinerU's default)
ANGLES = (0, 90, 180, 270)  # counter-clockwise turns that make a block upright
PAD_COLOR = (255, 255, 255)  # white, the colour of paper


Box = tuple[float, float, float, float]


def displayed(bbox: Box, page: PageRecord) -> Box:
    """A box in points on the unrotated page -> on the page as displayed (turned by /Rotate)."""
    x0, y0, x1, y1 = bbox
    w, h = page.width_pt, page.height_pt
    if page.rotation == 90:
        return (h - y1, x0, h - y0, x1)
    if page.rotation == 180:
        return (w - x1, h - y1, w - x0, h - y0)
    if page.rotation == 270:
        return (y0, w - x1, y1, w - x0)
    return (x0, y0, x1, y1)


def unrotated(bbox: Box, page: PageRecord) -> Box:
    """A box in points on the page as displayed -> on the unrotated page (`displayed` undone)."""
    x0, y0, x1, y1 = bbox
    w, h = page.width_pt, page.height_pt
    if page.rotation == 90:
        return (y0, h - x1, y1, h - x0)
    if page.rotation == 180:
        return (w - x1, h - y1, w - x0, h - y0)
    if page.rotation == 270:
        return (w - y1, x0, w - y0, x1)
    return (x0, y0, x1, y1)


def box_pixels(bbox: Box, page: PageImage) -> Box:
    """A box in points on the unrotated page -> pixels of the page's image."""
    return tuple(v * page.scale for v in displayed(bbox, page.page))  # type: ignore[return-value]


def cut(image, box_px: Box, angle: int | None = None, *,
        min_edge: int = MIN_EDGE, max_edge_ratio: float = MAX_EDGE_RATIO):
    """The pixels of `box_px` (x0, y0, x1, y1, in pixels, top-left origin) of `image` (numpy
    (H, W, 3) uint8 or PIL), turned upright by `angle` and sized by the rules above; numpy
    (h, w, 3) uint8. Raises ValueError for a box that covers no whole pixel."""
    import numpy as np
    from PIL import Image

    page = image if isinstance(image, Image.Image) else Image.fromarray(np.ascontiguousarray(image))
    if page.mode != "RGB":
        page = page.convert("RGB")
    crop = page.crop(tuple(box_px))  # PIL rounds the box to whole pixels, as MinerU's client does
    if crop.width < 1 or crop.height < 1:
        raise ValueError(f"box {tuple(round(v, 1) for v in box_px)} covers no whole pixel of a "
                         f"{page.width}x{page.height} image")
    if angle not in (None, *ANGLES):
        raise ValueError(f"angle {angle!r}; one of {ANGLES} (counter-clockwise degrees) or None")
    if angle:
        crop = crop.rotate(angle, expand=True)
    return np.asarray(fit(crop, min_edge=min_edge, max_edge_ratio=max_edge_ratio))


def fit(image, *, min_edge: int = MIN_EDGE, max_edge_ratio: float = MAX_EDGE_RATIO):
    """Pad a sliver to `max_edge_ratio`, then scale up a crop whose short side is under
    `min_edge` (mineru-vl-utils' `resize_by_need`); takes and returns a PIL image. A crop that
    already fits comes back as it is, so fitting twice changes nothing."""
    from PIL import Image

    width, height = image.size
    if max(width, height) / min(width, height) > max_edge_ratio:
        if width > height:
            new_w, new_h = width, math.ceil(width / max_edge_ratio)
        else:
            new_w, new_h = math.ceil(height / max_edge_ratio), height
        padded = Image.new(image.mode, (new_w, new_h), PAD_COLOR)
        padded.paste(image, (int((new_w - width) / 2), int((new_h - height) / 2)))
        image = padded
    if min(image.size) < min_edge:
        factor = min_edge / min(image.size)
        image = image.resize((math.ceil(image.width * factor), math.ceil(image.height * factor)),
                             Image.Resampling.BICUBIC)
    return image


def region_crop(page: PageImage, region: RegionRecord, angle: int | None = None, *,
                min_edge: int = MIN_EDGE, max_edge_ratio: float = MAX_EDGE_RATIO):
    """The crop of `region` (its bbox in points on the unrotated page) from the rendered `page`;
    `angle` turns the crop upright (see `cut`)."""
    return cut(page.image, box_pixels(region.bbox, page), angle, min_edge=min_edge, max_edge_ratio=max_edge_ratio)


def with_crop(page: PageImage, region: RegionRecord, angle: int | None = None, **sizing) -> RegionRecord:
    """`region` carrying its crop from `page` (see `region_crop`)."""
    from dataclasses import replace

    return replace(region, crop=region_crop(page, region, angle, **sizing))
