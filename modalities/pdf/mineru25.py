"""MinerU 2.5 on PDF pages: rendered pages to regions in reading order, regions to their content,
on one model (`curate.models.mineru25`), so one shared pool serves both Calls.

- `layout(pages)`: an expand, PageImage -> its regions in reading order (`RegionRecord`: bbox in
  points on the unrotated page, kind one of REGION_KINDS, a title's level where MinerU knows it),
  each region that MinerU reads carrying its crop, cut from the full-resolution page image by
  MinerU's own rules (`curate.modalities.pdf.crops`).
- `content(regions)`: a map over region crops, batched across pages and documents: the text of
  each (a table as HTML, a formula as LaTeX, "" for a figure when `image_analysis` is off).
  `content_regions(regions)` is the same Call returning the regions with their content and
  without their crops (what the recipe uses: the pixels go no further than the model).

`page_markdown` writes a page's Markdown row from its regions (assemble.py's writer), for
`recipes/pdf_to_markdown_mineru25.yaml`. Engines, the checkpoint and what MinerU's own
two-step extraction does differently: `curate.models.mineru25`.
"""

from __future__ import annotations

import dataclasses
import time

from curate.modalities.pdf import crops
from curate.modalities.pdf.records import PageImage, RegionRecord
from curate.models.mineru25 import MinerU25Model, plain_content, reading_plan

import curate as cu

__all__ = ["MinerU25", "page_markdown", "plain_content", "KIND_OF"]

SOURCE = "mineru25"  # RegionRecord.source of what this backend found

# MinerU 2.5 block type (mineru_vl_utils.structs.BlockType) -> region kind (records.REGION_KINDS)
KIND_OF = {
    "text": "text", "ref_text": "text", "index": "text", "phonetic": "text", "formula_number": "text",
    "title": "title", "doc_title": "title", "paragraph_title": "title", "list_item": "list",
    "table": "table", "image": "figure", "chart": "figure", "unknown": "figure",
    "caption": "caption", "table_caption": "caption", "image_caption": "caption", "code_caption": "caption",
    "equation": "formula", "code": "code", "algorithm": "code",
    "footnote": "footnote", "table_footnote": "footnote", "image_footnote": "footnote", "page_footnote": "footnote",
    "header": "header", "footer": "footer", "page_number": "page_number", "aside_text": "aside",
}
TITLE_LEVEL = {"doc_title": 1, "paragraph_title": 2}  # a plain "title" has no known level (0)
# region kind -> the block type whose prompt and post-processing its content gets (text by default)
BLOCK_OF = {"title": "title", "list": "list_item", "table": "table", "figure": "image", "caption": "caption",
            "formula": "equation", "code": "code", "footnote": "footnote", "header": "header",
            "footer": "footer", "page_number": "page_number", "aside": "aside_text"}


class MinerU25:
    """MinerU 2.5 layout and content recognition on PDF records; meant for a shared pool:
    `vlm = cu.Pool(MinerU25, init={"model": path}, num_gpus=1)`, then `vlm.stage("layout")`
    (an expand into regions) and `vlm.stage("content_regions", batch_size=64)` (a map over them).
    Its arguments are the model's (`MinerU25Model`)."""

    requires = staticmethod(MinerU25Model.requires)
    default_resources = staticmethod(MinerU25Model.default_resources)

    def __init__(self, model: str | None = None, engine: str = "transformers", server_url: str | None = None,
                 device: str = "cuda", batch_size: int | None = None, max_new_tokens: int | None = None,
                 dtype: str = "auto", model_name: str | None = None, image_analysis: bool = False,
                 max_concurrency: int = 100, http_timeout: int = 600, engine_options: dict | None = None):
        self.vlm = MinerU25Model(model, engine, server_url, device, batch_size, max_new_tokens, dtype, model_name,
                                 image_analysis, max_concurrency, http_timeout, engine_options)
        self.engine, self.model, self.device = self.vlm.engine, self.vlm.model, self.vlm.device
        self.batch_size, self.image_analysis, self.client = self.vlm.batch_size, self.vlm.image_analysis, self.vlm.client

    def layout(self, pages: list) -> list:
        """Per page: its regions in reading order, those to read with their crop; or an ItemFailure."""
        checked = [_guard(_page_image, page) for page in pages]
        good = [page for page in checked if not isinstance(page, cu.ItemFailure)]
        if not good:
            return checked
        start = time.perf_counter()
        found = iter(self.vlm.layout_blocks([page.image for page in good]))
        share = (time.perf_counter() - start) / len(good)
        out = []
        for page in checked:
            blocks = page if isinstance(page, cu.ItemFailure) else next(found)
            out.append(blocks if isinstance(blocks, cu.ItemFailure) else self._regions(page, blocks, share))
        return out

    def content(self, regions: list) -> list:
        """Per region: its content (text; a table as HTML; a formula as LaTeX; "" where MinerU reads
        nothing, as a figure without image_analysis), or an ItemFailure."""
        crops_of = [_guard(_crop, region) for region in regions]
        results = ["" if crop is None else crop for crop in crops_of]  # no crop: MinerU reads nothing there
        todo = [(i, {"image": crop, "type": BLOCK_OF.get(regions[i].kind, "text")}) for i, crop in enumerate(crops_of)
                if crop is not None and not isinstance(crop, cu.ItemFailure)]
        if todo:
            for (i, _), text in zip(todo, self.vlm.read_blocks([item for _, item in todo]), strict=True):
                results[i] = text
        return results

    def content_regions(self, regions: list) -> list:
        """Per region: the region with its `content`, its crop dropped (the pixels end here) and
        its share of the reading time added to `seconds`; or an ItemFailure. The recipe's Call."""
        start = time.perf_counter()
        texts = self.content(regions)
        read = sum(1 for r in regions if getattr(r, "crop", None) is not None)
        share = (time.perf_counter() - start) / max(read, 1)
        out = []
        for region, text in zip(regions, texts, strict=True):
            if not isinstance(text, cu.ItemFailure):
                spent = share if region.crop is not None else 0.0
                text = dataclasses.replace(region, content=text, crop=None, seconds=region.seconds + spent)
            out.append(text)
        return out

    def _regions(self, page: PageImage, blocks: list, seconds: float) -> list[RegionRecord]:
        """The page's blocks as regions: bbox from [0, 1] of the image to points on the unrotated
        page, a crop for each block MinerU would read, the page's layout time shared out."""
        height, width = page.image.shape[:2]
        plan = reading_plan(blocks, self.image_analysis)
        regions = []
        for order, (block, read) in enumerate(plan):
            x0, y0, x1, y1 = block.bbox
            box_px = (x0 * width, y0 * height, x1 * width, y1 * height)  # as the client cuts it
            crop = None
            if read:
                try:
                    crop = crops.cut(page.image, box_px, block.angle, **self.vlm.sizing)
                except ValueError:  # under a pixel: the client skips it too
                    crop = None
            bbox = crops.unrotated(tuple(v / page.scale for v in box_px), page.page)
            regions.append(RegionRecord(kind=KIND_OF.get(block.type, "unknown"), bbox=bbox, order=order,
                                        source=SOURCE, crop=crop, level=TITLE_LEVEL.get(block.type, 0),
                                        seconds=seconds / len(plan)))
        return regions


def page_markdown(items: list) -> list:
    """Map over zipped (page record, its regions): the page's Markdown row (`PageMarkdown`, route
    "layout"), by `curate.modalities.pdf.assemble.page_markdown`, which takes a text-layer and an
    OCR branch: here the regions are the layout model's, and the OCR branch is empty."""
    from curate.modalities.pdf.assemble import page_markdown as assemble_page

    return assemble_page([(page, list(regions), []) for page, regions in items])


page_markdown.requires = ("pycld2",)  # the page's language (assemble); checked before a run starts


def _guard(check, item):
    """`check(item)`, or the ItemFailure of the InputError it raised."""
    try:
        return check(item)
    except cu.InputError as exc:
        return cu.ItemFailure(exc)


def _page_image(page) -> PageImage:
    """The page itself, or an InputError saying what is wrong with the item."""
    if not isinstance(page, PageImage):
        raise cu.InputError(f"layout takes PageImage items (a rendered page); got {type(page).__name__}: "
                            "render the pages first (the render stage of curate.modalities.pdf)")
    height, width = page.image.shape[:2]
    if not height or not width:
        raise cu.InputError(f"page {page.page.index} of {page.page.path} rendered to an empty image "
                            f"({width}x{height} px); check the page's size and the render scale")
    return page


def _crop(region):
    """The region's crop; None when MinerU reads nothing there; InputError when unusable."""
    if not isinstance(region, RegionRecord):
        raise cu.InputError(f"content takes RegionRecord items (from layout); got {type(region).__name__}")
    if region.crop is None:
        return None
    shape = getattr(region.crop, "shape", None)
    if not shape or len(shape) != 3 or shape[2] != 3 or not shape[0] or not shape[1]:
        raise cu.InputError(f"region {region.order} ({region.kind}) has a crop of shape {shape}, not a "
                            "non-empty HxWx3 image; cut it with curate.modalities.pdf.crops")
    return region.crop
