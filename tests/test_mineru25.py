"""MinerU 2.5 (curate.models.mineru25) through mineru-vl-utils' real MinerUClient, on a tiny Qwen2-VL
checkpoint built offline (tests/tiny_vlm.py) and loaded like the real one: crops cut as the client
cuts them; layout (an expand) and content (a map) as two Calls of one cu.Pool, on the local
executor and on Ray; on the transformers engine and against an OpenAI-compatible server
(tests/openai_server.py) through the client's http-client; on vLLM's engine where vllm imports.

Two documents of different page sizes are rendered at MinerU's resolution; their pages share
model batches, and every region must come back to its own page, in reading order, with the bbox
of its own page and the content of its own kind. One page renders empty: it alone FAILS."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tiny_vlm
from curate.modalities.pdf import crops
from curate.modalities.pdf.assemble import region_markdown
from curate.modalities.pdf.records import (
    DEFAULT_DPI,
    REGION_KINDS,
    Document,
    Page,
    PageImage,
    PageRecord,
    Region,
    RegionRecord,
    render_scale,
)
from curate.modalities.pdf import mineru25
from curate.modalities.pdf.mineru25 import MinerU25

import curate as cu

PDFS = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "pdfs"
DOCS = [str(PDFS / "docling_code_and_formula.pdf"), str(PDFS / "pdfjs_vertical_japanese.pdf")]  # 612x792, 249x321 pt
PAGES_PER_DOC = 2
EMPTY = (1, 1)  # (document, page) that renders to an empty image
KINDS = ["header", "title", "text", "table", "formula"]  # the tiny model's layout, as region kinds
CONTENT = {"table": "<table><tr><td>k</td><td>v</td></tr><tr><td>1</td><td>2</td></tr></table>",
           "formula": tiny_vlm.FORMULA}  # every other kind reads tiny_vlm.TEXT


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> str:
    return str(tiny_vlm.build(tmp_path_factory.mktemp("tiny-mineru25")))


@pytest.fixture(scope="module")
def vlm(tiny_model) -> MinerU25:
    return MinerU25(model=tiny_model, device="cpu")


@pytest.fixture(scope="module")
def pages() -> list[PageImage]:
    return [p for doc in render_pages([{"path": DOCS[0]}, {"path": DOCS[1]}]) for p in doc]


# ---- stages of the test pipeline (module level: Ray workers import them from tests/) ----------
def render_pages(docs: list[dict]) -> list[list[PageImage]]:
    """Per document, its first pages rendered at MinerU's resolution (one may render empty)."""
    import pymupdf

    out = []
    for doc in docs:
        with pymupdf.open(doc["path"]) as pdf:
            images = []
            for index in range(min(PAGES_PER_DOC, pdf.page_count)):
                page = pdf[index]  # records.py: the unrotated page's size, its /Rotate; the image as displayed
                box = page.cropbox
                scale = render_scale(box.width, box.height, DEFAULT_DPI)
                record = PageRecord(path=doc["path"], index=index, width_pt=box.width, height_pt=box.height,
                                    rotation=page.rotation, scale=scale)
                pix = page.get_pixmap(matrix=pymupdf.Matrix(scale, scale), alpha=False)
                image = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, 3).copy()
                if index in doc.get("empty", ()):
                    image = image[:0]
                images.append(PageImage(record, image, scale))
        out.append(images)
    return out


def page_text(groups: list[list[RegionRecord]]) -> list[str]:
    return ["\n\n".join(filter(None, map(region_markdown, regions))) for regions in groups]


def join_pages(groups: list[list[str]]) -> list[str]:
    return ["\n\n".join(pages) for pages in groups]


def pipeline(init: dict) -> cu.Pipeline:
    vlm = cu.Pool(MinerU25, init=init)
    pipe = cu.Pipeline(Document)
    pages = pipe.source.expand(cu.stage(render_pages), into=Page)
    regions = pages.expand(vlm.stage("layout", batch_size=4), into=Region)
    read = regions.map(vlm.stage("content_regions", batch_size=16))
    page_md = read.reduce(page_text)
    pipe.output("documents", page_md.reduce(join_pages))
    pipe.output("pages", page_md)
    pipe.output("regions", read)
    return pipe


def inputs() -> list[dict]:
    return [{"path": path, "empty": [EMPTY[1]] if i == EMPTY[0] else []} for i, path in enumerate(DOCS)]


def expected_page_markdown() -> str:
    """The tiny model's page as assemble.py writes it: no header (paratext), a level-2 title."""
    regions = [RegionRecord(k, (0, 0, 1, 1), i, content=CONTENT.get(k, tiny_vlm.TEXT)) for i, k in enumerate(KINDS)]
    return "\n\n".join(filter(None, map(region_markdown, regions)))


def check_run(result: cu.RunResult) -> None:
    """Each region on its own page, in order, with its page's geometry and its kind's content;
    the empty page FAILED alone; both Calls on one pool."""
    page_items = result.items("pages")
    assert [it.lineage for it in page_items] == [(d, p) for d in range(2) for p in range(PAGES_PER_DOC)]
    for it in page_items:
        if it.lineage == EMPTY:
            assert it.status is cu.Status.FAILED and it.cause.kind == "input" and "empty image" in it.cause.message
        else:
            assert it.status is cu.Status.PRESENT and it.value == expected_page_markdown()
    docs = result.values("documents")
    assert docs[0] == "\n\n".join([expected_page_markdown()] * PAGES_PER_DOC)
    assert isinstance(docs[1], cu.Issue) and docs[1].status is cu.Status.SUPPRESSED  # its page failed

    regions = result.items("regions")
    present = [(d, p) for d in range(2) for p in range(PAGES_PER_DOC) if (d, p) != EMPTY]
    assert [it.lineage for it in regions] == [(d, p, k) for d, p in present for k in range(len(KINDS))]
    sizes = {(0, 0): (612.0, 792.0), (0, 1): (595.28, 841.89), (1, 0): (249.45, 321.02)}  # points
    for it in regions:
        region, (d, p, k) = it.value, it.lineage
        assert (region.kind, region.order, region.source) == (KINDS[k], k, "mineru25")
        assert region.content == CONTENT.get(region.kind, tiny_vlm.TEXT) and region.crop is None
        width, height = sizes[d, p]
        box = tiny_vlm.LAYOUT_BLOCKS[k][1]
        want = (box[0] * width / 1000, box[1] * height / 1000, box[2] * width / 1000, box[3] * height / 1000)
        assert region.bbox == pytest.approx(want, abs=0.6), (it.lineage, region.bbox, want)

    (pool,) = [p for p in result.metrics.pools.values() if len(p.calls) == 2]
    assert sorted(pool.calls) == ["MinerU25.content_regions", "MinerU25.layout"]
    assert result.metrics.calls["MinerU25.content_regions"].items == len(regions)


# ---- the tiny checkpoint ----------------------------------------------------------------------
def test_the_tiny_checkpoint_has_the_real_ones_architecture_and_files(tiny_model):
    files = {p.name for p in Path(tiny_model).iterdir()}
    assert {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
            "chat_template.json", "preprocessor_config.json"} <= files
    config = json.loads((Path(tiny_model) / "config.json").read_text())
    assert config["architectures"] == ["Qwen2VLForConditionalGeneration"] and config["model_type"] == "qwen2_vl"
    assert config["hidden_size"] // config["num_attention_heads"] == 64  # the real model's head size
    image = json.loads((Path(tiny_model) / "preprocessor_config.json").read_text())
    assert image["image_processor_type"] == "Qwen2VLImageProcessor" and image["merge_size"] == 2
    assert json.loads((Path(tiny_model) / "tokenizer_config.json").read_text())["tokenizer_class"] == "Qwen2Tokenizer"
    assert (Path(tiny_model) / "model.safetensors").stat().st_size < 8e6


def test_importing_the_backend_loads_no_model_library():
    probe = ("import sys, json; import curate.models.mineru25, curate.modalities.pdf.mineru25, curate.modalities.pdf.crops; "
             "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                       timeout=60, check=True).stdout)
    assert not {"torch", "transformers", "mineru_vl_utils", "mineru", "vllm", "numpy", "PIL"} & set(loaded)


def test_init_errors_say_how_to_fix_them(tmp_path):
    with pytest.raises(cu.CurateError, match="engine 'sglang'; one of transformers, vllm-engine, http-client"):
        MinerU25(model=str(tmp_path), engine="sglang")
    with pytest.raises(cu.CurateError, match="needs server_url"):
        MinerU25(engine="http-client")
    with pytest.raises(cu.CurateError, match="not a local MinerU 2.5 checkpoint.*huggingface-cli download"):
        MinerU25(model="opendatalab/MinerU2.5-2509-1.2B")  # a hub id: nothing downloads
    with pytest.raises(cu.CurateError, match="batch_size=-1"):
        MinerU25(engine="http-client", server_url="http://127.0.0.1:9", batch_size=-1)


# ---- crops, as the client cuts them ----------------------------------------------------------
def test_crops_are_the_clients_own(pages):
    from mineru_vl_utils.mineru_client import DEFAULT_PROMPTS, DEFAULT_SAMPLING_PARAMS, MinerUClientHelper
    from mineru_vl_utils.structs import ContentBlock
    from PIL import Image

    helper = MinerUClientHelper("transformers", DEFAULT_PROMPTS, DEFAULT_SAMPLING_PARAMS, (1036, 1036), 28, 50,
                                False, True, False, False, False, False)
    page = pages[0]
    blocks = [ContentBlock("text", [0.1, 0.1, 0.9, 0.3], angle=0),
              ContentBlock("title", [0.2, 0.35, 0.5, 0.4], angle=90),
              ContentBlock("code", [0.3, 0.45, 0.6, 0.6], angle=180),
              ContentBlock("text", [0.05, 0.62, 0.33, 0.91], angle=270),
              ContentBlock("text", [0.1, 0.95, 0.9, 0.9504]),  # a sliver: padded to 50:1, then scaled up
              ContentBlock("equation", [0.5, 0.5, 0.505, 0.503])]  # tiny: scaled up to 28 px
    theirs, _, _, indices = helper.prepare_for_extract(Image.fromarray(page.image), blocks)
    assert indices == list(range(len(blocks)))
    height, width = page.image.shape[:2]
    for block, their in zip(blocks, theirs, strict=True):
        x0, y0, x1, y1 = block.bbox
        ours = crops.cut(page.image, (x0 * width, y0 * height, x1 * width, y1 * height), block.angle)
        assert ours.dtype == np.uint8 and np.array_equal(ours, np.asarray(their)), block
        assert min(ours.shape[:2]) >= crops.MIN_EDGE and max(ours.shape[:2]) / min(ours.shape[:2]) <= 50
    box_px = (0.1 * width, 0.1 * height, 0.9 * width, 0.3 * height)
    region = RegionRecord("text", tuple(v / page.scale for v in box_px), 0)
    assert np.array_equal(crops.with_crop(page, region).crop, np.asarray(theirs[0]))  # from points, the same
    with pytest.raises(ValueError, match="covers no whole pixel"):
        crops.cut(page.image, (10.2, 10.2, 10.4, 10.4))


# ---- the two tasks, called directly ----------------------------------------------------------
def test_layout_and_content_give_what_the_clients_two_step_extract_gives(vlm, pages):
    from PIL import Image

    page = pages[0]
    (regions,) = vlm.layout([page])
    blocks = vlm.client.two_step_extract(Image.fromarray(page.image))
    assert [r.kind for r in regions] == [mineru25.KIND_OF[b.type] for b in blocks] == KINDS
    height, width = page.image.shape[:2]
    for region, block in zip(regions, blocks, strict=True):
        assert region.bbox == pytest.approx([v * (width if i % 2 == 0 else height) / page.scale
                                             for i, v in enumerate(block.bbox)])
    texts = vlm.content(regions)
    assert texts == [mineru25.plain_content(b.type, b.content) for b in blocks]
    assert texts == [CONTENT.get(k, tiny_vlm.TEXT) for k in KINDS]
    # one item at a time, or mixed with another page's regions in any order: the same answers
    (other,) = vlm.layout([pages[2]])
    mixed = [regions[3], other[0], regions[0], other[4], regions[4]]
    assert vlm.content(mixed) == [texts[3], texts[0], texts[0], texts[4], texts[4]]


def test_a_turned_page_gives_boxes_on_the_unrotated_page(vlm):
    (page,) = render_pages([{"path": str(PDFS / "docling_scanned_fax_letter.pdf")}])[0]  # /Rotate 90
    assert page.page.rotation == 90 and page.image.shape[:2] == page.page.pixel_size  # portrait, as displayed
    (regions,) = vlm.layout([page])
    height, width = page.image.shape[:2]
    for region, (_, box) in zip(regions, tiny_vlm.LAYOUT_BLOCKS, strict=True):
        assert crops.box_pixels(region.bbox, page) == pytest.approx([b / 1000 * (width, height)[i % 2]
                                                                    for i, b in enumerate(box)])
        x0, y0, x1, y1 = region.bbox  # on the landscape page the PDF stores
        assert 0 <= x0 < x1 <= page.page.width_pt and 0 <= y0 < y1 <= page.page.height_pt
        if region.crop is not None:
            assert np.array_equal(crops.region_crop(page, region), region.crop)
    assert regions[1].kind == "title" and regions[1].level == 0  # MinerU's plain "title": level not known


def test_a_bad_item_fails_alone_and_its_batch_goes_on(vlm, pages):
    empty = PageImage(pages[0].page, pages[0].image[:0], pages[0].scale)
    got = vlm.layout([pages[1], empty, "not a page"])
    assert [r.kind for r in got[0]] == KINDS
    for bad, what in ((got[1], "empty image"), (got[2], "takes PageImage")):
        assert isinstance(bad, cu.ItemFailure) and isinstance(bad.cause, cu.InputError) and what in str(bad.cause)
    figure = RegionRecord("figure", (0, 0, 10, 10), 0)  # no crop: MinerU reads no figure without image_analysis
    flat = RegionRecord("text", (0, 0, 10, 10), 1, crop=np.zeros((0, 4, 3), np.uint8))
    got = vlm.content([got[0][2], figure, flat, None])
    assert got[:2] == [tiny_vlm.TEXT, ""]
    assert all(isinstance(g, cu.ItemFailure) and isinstance(g.cause, cu.InputError) for g in got[2:])
    assert vlm.layout([]) == [] and vlm.content([]) == []


def test_random_weights_give_random_text_that_the_client_survives(tmp_path, pages):
    model = MinerU25(model=str(tiny_vlm.build(tmp_path / "random", scripted=False)), device="cpu", max_new_tokens=12)
    (regions,) = model.layout([pages[2]])
    assert isinstance(regions, list) and all(r.kind in REGION_KINDS for r in regions)  # most often none
    crop = crops.cut(pages[2].image, (10, 10, 400, 120))
    texts = model.content([RegionRecord("text", (0, 0, 1, 1), 0, crop=crop), RegionRecord("table", (0, 0, 1, 1), 1, crop=crop)])
    assert all(isinstance(t, str) for t in texts)


def test_content_as_regions_hold_it_and_as_markdown(vlm, pages):
    assert mineru25.plain_content("equation", "\\[\nx^2\n\\]") == "x^2" and mineru25.plain_content("text", None) == ""
    (regions,) = vlm.layout([pages[0]])
    read = vlm.content_regions(regions)
    assert [r.content for r in read] == vlm.content(regions) and all(r.crop is None for r in read)
    assert all(r.seconds > 0 for r in read) and [r.bbox for r in read] == [r.bbox for r in regions]
    (row,) = mineru25.page_markdown([(pages[0].page, read)])
    assert row.route == "layout" and row.regions == len(KINDS) and row.markdown == expected_page_markdown()
    assert "$$\nE = m c^2\n$$" in row.markdown and CONTENT["table"] in row.markdown


# ---- two Calls on one pool, in real runs -------------------------------------------------------
def test_transformers_engine_two_calls_one_pool(tiny_model, executor):
    init = {"model": tiny_model, "engine": "transformers", "device": "cpu", "batch_size": 8}
    check_run(cu.run(pipeline(init), inputs(), executor=executor, input_batch_size=2, inflight=1))


def test_http_engine_against_an_openai_compatible_server(tiny_model):
    from openai_server import OpenAIServer, mineru25_completer

    with OpenAIServer(mineru25_completer(tiny_model), name="tiny-mineru25") as server:
        init = {"engine": "http-client", "server_url": server.url}
        check_run(cu.run(pipeline(init), inputs(), executor="local", input_batch_size=2, inflight=1))
        assert server.requests == 3 + 3 * len(KINDS)  # a layout per good page, then one per region


def test_vllm_engine(tiny_model):
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vllm is not installed (pip install \"curate[vllm]\": a CUDA build, for a GPU machine)")
    import vllm  # noqa: F401  - installed but broken (a CUDA torchvision beside a CPU torch): fail, saying why
    init = {"model": tiny_model, "engine": "vllm-engine",
            "engine_options": {"gpu_memory_utilization": 0.2, "max_model_len": 2048, "enforce_eager": True,
                               "dtype": "bfloat16"}}
    check_run(cu.run(pipeline(init), inputs(), executor="local", input_batch_size=2, inflight=1))


# ---- the bundled recipe ------------------------------------------------------------------------
def test_the_bundled_recipe_runs_by_name_on_the_cpu(tiny_model, tmp_path, capsys):
    import pyarrow.parquet as pq
    from curate.modalities.pdf.assemble import document_markdown
    from curate.modalities.pdf.records import PageMarkdown

    from curate.cli import EXIT_PARTIAL, main
    from curate.recipe import bundled

    assert bundled.find("pdf_to_markdown_mineru25").bundled
    out = tmp_path / "out"
    code = main(["run", "pdf_to_markdown_mineru25", "--input", DOCS[0], "--input", str(PDFS / "docling_not_a_pdf.pdf"),
                 "--output", str(out), "--executor", "local", "--no-progress", "--set", "pools.vlm.num_gpus=0",
                 "--set", "pools.vlm.init.device=cpu", "--set", f"pools.vlm.init.model={tiny_model}"])
    assert code == EXIT_PARTIAL, capsys.readouterr()
    pages = sorted(pq.read_table(out / "pages").to_pylist(), key=lambda r: r["lineage"])
    assert [(p["lineage"], p["status"], p["route"], p["regions"]) for p in pages] == [
        ([0, 0], "present", "layout", len(KINDS)), ([0, 1], "present", "layout", len(KINDS))]
    assert all(p["markdown"] == expected_page_markdown() for p in pages)
    docs = sorted(pq.read_table(out / "documents").to_pylist(), key=lambda r: r["lineage"])
    (want,) = document_markdown([[PageMarkdown(p["markdown"], "layout", p["chars"]) for p in pages]])
    assert docs[0]["status"] == "present" and docs[0]["markdown"] == want.markdown and docs[0]["pages"] == 2
    assert docs[1]["status"] == "failed" and "not a PDF" in docs[1]["cause"]  # a bad document fails alone
