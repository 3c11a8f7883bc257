"""A page's figures as rows of the `figures` output: box and caption always, the picture as a PNG
file on request (`pools.layout.init.figure_images=true`), as MinerU writes `images/`."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from curate.cli import EXIT_OK, main
from curate.modalities.pdf.eval_set import write_eval_set
from curate.modalities.pdf.figures import caption_of
from curate.modalities.pdf.layout import Layout
from curate.modalities.pdf.records import PageRecord, RegionRecord

PNG = b"\x89PNG\r\n\x1a\n"


def _region(kind, bbox, content=""):
    return RegionRecord(kind=kind, bbox=bbox, order=0, content=content)


def test_a_figure_takes_the_nearest_caption_over_or_under_it_in_its_column():
    figure = _region("figure", (100, 100, 400, 300))
    below = _region("caption", (100, 305, 400, 320), "Figure 1: Below.")  # 5 pt under it
    above = _region("caption", (100, 80, 400, 90), "Figure 0: Above.")  # 10 pt over it
    aside = _region("caption", (450, 310, 550, 320), "Table 3: Another column's.")
    far = _region("caption", (100, 700, 400, 710), "Figure 9: Far away.")
    assert caption_of(figure, [above, below, aside, far], 792) == "Figure 1: Below."
    assert caption_of(figure, [above, aside, far], 792) == "Figure 0: Above."
    assert caption_of(figure, [_region("caption", (100, 310, 400, 320), "Figure 2: Under, 10 pt."), above], 792) \
        == "Figure 2: Under, 10 pt."  # a tie: the caption under it
    assert caption_of(figure, [aside, far], 792) == ""


def test_bad_options_say_what_to_give():
    with pytest.raises(ValueError, match="figure_images: true"):
        Layout(figure_images="yes")
    with pytest.raises(ValueError, match="figure_dpi: 144"):
        Layout(figure_images=True, figure_dpi=0)


def test_figures_are_rows_and_on_request_png_files_with_their_caption(tmp_path):
    (pdf,) = write_eval_set(tmp_path / "in", ["eval_figure.pdf"])
    out = tmp_path / "out"
    rc = main(["run", "pdf_to_markdown", "--input", str(pdf), "--output", str(out), "--executor", "local",
               "--no-progress", "--set", "pools.layout.init.figure_images=true"])
    assert rc == EXIT_OK
    (row,) = pq.read_table(out / "figures").to_pylist()
    assert row["caption"] == "Figure 1: The two stages of the model." and row["width_px"] > 100
    png = out / "figures" / row["image"]
    assert row["image"].startswith("_files/image/") and "/images/0-0-0.png" in row["image"]
    assert png.read_bytes().startswith(PNG)
    (page,) = pq.read_table(out / "pages").to_pylist()
    assert "![figure]()" in page["markdown"] and "Encoder Pooling Decoder" not in page["markdown"]


def test_without_images_nothing_is_rendered():
    page = PageRecord(path="/nowhere.pdf", index=0, width_pt=600, height_pt=800, text_usable=True)
    (figures,) = Layout(model="rules").figures([(page, [_region("figure", (10, 10, 200, 200))])])  # never opened
    assert [(f.bbox, f.image) for f in figures] == [((10, 10, 200, 200), None)]
