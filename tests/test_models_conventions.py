"""The model conventions (curate.models docstring) on the stand-ins of curate.models.dummy: each
satisfies its task's Protocol (list in, list out, in order, deterministic, an ItemFailure for a
bad item), and one shared Pool serves two task methods as two Calls of a real run (local and Ray)."""

from __future__ import annotations

import numpy as np
import pytest
from curate.models import dummy, protocols
from curate.models.dummy import DummyCaption, DummyLayout, DummyOcr, DummyStack
from curate.models.protocols import TASKS, Caption, Layout, Ocr
from PIL import Image

import curate as cu

SINGLE = {DummyLayout: "layout", DummyOcr: "ocr", DummyCaption: "caption"}  # class -> its one task


def _image(seed: int, height: int = 48, width: int = 32) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


def _items(task: str) -> list:
    """A batch of good items of each form the task's protocol allows."""
    if task == "caption":
        return [{"frames": [_image(i), _image(i + 1)], "prompt": "Describe the clip.", "id": f"clip{i}"}
                for i in range(3)] + [{"frames": [_image(9)], "prompt": "What moves?"}]
    return [_image(0), Image.fromarray(_image(1)), {"image": _image(2), "id": "page2"}, _image(3, 20, 90)]


def _bad(task: str):
    if task == "caption":
        return {"frames": [], "prompt": "Describe the clip."}
    return np.zeros((0, 32, 3), dtype=np.uint8)  # an empty image


# ---- the protocols --------------------------------------------------------------------------------
@pytest.mark.parametrize("cls, protocol", [(DummyLayout, Layout), (DummyOcr, Ocr), (DummyCaption, Caption),
                                           (DummyStack, Layout), (DummyStack, Ocr), (DummyStack, Caption)])
def test_each_stand_in_satisfies_its_protocol(cls, protocol):
    assert isinstance(cls(), protocol)
    assert set(TASKS) == {"layout", "ocr", "caption"} and TASKS[protocol.__name__.lower()] is protocol


def test_a_single_task_class_is_also_a_stage_and_the_stack_names_its_task():
    for cls, task in SINGLE.items():
        assert cls.__call__ is getattr(cls, task)  # usable as cu.stage(cls)
        assert not isinstance(cls(), tuple(p for t, p in TASKS.items() if t != task))
    assert not callable(DummyStack())  # a pool Call must say which task it runs


@pytest.mark.parametrize("task", list(TASKS))
def test_list_in_list_out_in_order_and_deterministic(task):
    model = DummyStack(model="/models/none", device="cpu", batch_size=4)
    run = getattr(model, task)
    items = _items(task)
    got = run(items)
    assert isinstance(got, list) and len(got) == len(items)
    assert run(items) == got and getattr(DummyStack(), task)(items) == got  # same input, same output
    assert [run([x])[0] for x in items] == got  # whatever the batch composition
    assert run(items[::-1]) == got[::-1]
    assert len(set(map(repr, got))) == len(got)  # each result tells its item apart
    assert run([]) == []


@pytest.mark.parametrize("task", list(TASKS))
def test_a_bad_item_is_an_item_failure_with_an_input_error_and_its_batch_goes_on(task):
    run = getattr(DummyStack(), task)
    items = _items(task)
    got = run([items[0], _bad(task), items[1]])
    assert got[0] == run([items[0]])[0] and got[2] == run([items[1]])[0]
    assert isinstance(got[1], cu.ItemFailure) and isinstance(got[1].cause, cu.InputError)
    assert "empty" in str(got[1].cause) or "non-empty" in str(got[1].cause)
    for wrong in (None, 3, {"prompt": "x"} if task == "caption" else {"kind": "text"}):
        (fail,) = run([wrong])
        assert isinstance(fail, cu.ItemFailure) and isinstance(fail.cause, cu.InputError), wrong


def test_results_have_the_documented_shapes():
    page = _image(5, height=200, width=100)
    regions = DummyLayout(max_regions=6).layout([{"image": page, "id": "doc#0"}])[0]
    assert 1 <= len(regions) <= 6 and [r["order"] for r in regions] == list(range(len(regions)))
    assert regions[0]["kind"] == "title" and {r["kind"] for r in regions[1:]} <= {"text"}
    for r in regions:
        x0, y0, x1, y1 = r["bbox"]
        assert all(isinstance(v, int) for v in r["bbox"]) and 0 <= x0 < x1 <= 100 and 0 <= y0 < y1 <= 200
        assert r["id"] == f"doc#0/{r['order']}"
    assert [r["bbox"][1] for r in regions] == sorted(r["bbox"][1] for r in regions)  # top to bottom
    text = DummyOcr().ocr([{"image": page, "id": "doc#0/1"}, page])
    assert text[0].startswith("ocr:doc#0/1:") and text[1].startswith("ocr:100x200:")
    assert text[0].split(":")[-1] == text[1].split(":")[-1]  # the same pixels, the same digest
    clip = DummyCaption().caption([{"frames": [page] * 3, "prompt": "Say what happens.", "id": "v#2"}])[0]
    assert clip.startswith("caption:v#2:3 frames:")
    # numpy and PIL images of the same pixels are the same item
    assert DummyOcr().ocr([page]) == DummyOcr().ocr([Image.fromarray(page)])


def test_init_takes_the_real_backends_hints_and_records_them():
    for cls in (*SINGLE, DummyStack):
        m = cls(model="weights/v1", device="cuda:0", batch_size=16)
        assert (m.model, m.device, m.batch_size) == ("weights/v1", "cuda:0", 16)
    with pytest.raises(ValueError, match="max_regions"):
        DummyLayout(max_regions=0)


def test_identity_only_items_derive_from_the_identity():
    layout, ocr = DummyLayout(max_regions=3), DummyOcr()
    regions = layout.layout(["scans/a.pdf"])[0]
    assert [r["id"] for r in regions] == [f"scans/a.pdf/{i}" for i in range(len(regions))]
    assert regions[0]["bbox"][2] <= dummy.NOMINAL_PAGE[0] and regions[-1]["bbox"][3] <= dummy.NOMINAL_PAGE[1]
    assert [t.split(":")[1] for t in ocr.ocr(regions)] == [r["id"] for r in regions]


# ---- a shared Pool serving two Calls, in a real run --------------------------------------------------
def join_lines(groups: list[list[str]]) -> list[str]:
    return ["\n".join(g) for g in groups]


def test_one_shared_pool_serves_layout_and_ocr_as_two_calls(executor):
    Page = cu.Domain("page")
    Region = Page.child("region")
    stack = cu.Pool(DummyStack, init={"model": "none", "device": "cpu", "max_regions": 5}, replicas=2)
    pipe = cu.Pipeline(Page)
    regions = pipe.source.expand(stack.stage("layout", batch_size=3), into=Region)
    text = regions.map(stack.stage("ocr", batch_size=4))
    pages = text.reduce(join_lines)
    pipe.output("pages", pages)
    pipe.output("regions", text)
    inputs = [{"image": _image(i, 40 + i, 30), "id": f"p{i}"} for i in range(7)]
    inputs[4] = {"image": np.zeros((0, 30, 3), np.uint8), "id": "p4"}  # a bad page
    result = cu.run(pipe, inputs, executor=executor, input_batch_size=3, inflight=2)

    expected = DummyStack(max_regions=5).layout(inputs)
    values = result.values("pages")
    for i, (value, page_regions) in enumerate(zip(values, expected)):
        if i == 4:
            assert isinstance(value, cu.Issue) and value.status is cu.Status.FAILED
            assert value.cause.kind == "input" and "empty" in value.cause.message
            continue
        lines = value.split("\n")
        assert len(lines) == len(page_regions)
        assert [ln.split(":")[1] for ln in lines] == [f"p{i}/{k}" for k in range(len(page_regions))]
    items = result.items("regions")
    assert [it.lineage for it in items] == [(i, k) for i, rs in enumerate(expected) if i != 4 for k in range(len(rs))]
    assert all(it.value.split(":")[1] == f"p{it.lineage[0]}/{it.lineage[1]}" for it in items)
    assert sorted(result.metrics.calls) == ["DummyStack.layout", "DummyStack.ocr", "join_lines"]
    (pool,) = [p for p in result.metrics.pools.values() if len(p.calls) == 2]
    assert pool.replicas == 2 and sorted(pool.calls) == ["DummyStack.layout", "DummyStack.ocr"]


def test_the_protocols_module_documents_every_task():
    doc = protocols.__doc__
    assert all(w in doc for w in ("(H, W, 3)", "uint8", "PIL", "image", "frames", "prompt", "ItemFailure"))
    for task, proto in TASKS.items():
        assert getattr(proto, task).__doc__, task


# ---- the real backends: their tasks, what they need -------------------------------------------------
def test_each_backend_serves_its_tasks_protocols_and_declares_what_it_needs():
    """Read from the classes (no model loads): every task a backend serves has a documented protocol,
    the PDF stage classes forward their backend's needs, and MinerU 2.5 sizes its worker per engine."""
    from curate.modalities.pdf.mineru4 import MinerU4
    from curate.modalities.pdf.mineru25 import MinerU25
    from curate.modalities.pdf.ocr import RapidOcr
    from curate.models.mineru4 import MinerU4Model
    from curate.models.mineru25 import MinerU25Model
    from curate.models.rapidocr import RapidOcrModel

    from curate.defaults import DEFAULT_NUM_CPUS
    from curate.resources import Resources

    served = {RapidOcrModel: ("detect_text", "detect_lines", "read_lines"),
              MinerU25Model: ("layout_blocks", "read_blocks"), MinerU4Model: ("parse",)}
    for cls, tasks in served.items():
        for task in tasks:
            assert issubclass(cls, protocols.PROTOCOLS[task]) and getattr(protocols.PROTOCOLS[task], task).__doc__
    assert set(protocols.TASKS.items()) <= set(protocols.PROTOCOLS.items())
    for stage, model in ((RapidOcr, RapidOcrModel), (MinerU25, MinerU25Model), (MinerU4, MinerU4Model)):
        for init in ({}, {"engine": "vllm-engine"}):
            assert Resources.declared(stage, init) == Resources.declared(model, init), stage
    assert MinerU25.requires({"engine": "http-client"}) == ("mineru_vl_utils",)
    assert Resources.declared(MinerU25, {"engine": "vllm-engine"}).num_gpus == 1
    for init in ({}, {"engine": "transformers"}, {"engine": "http-client"}):  # what tests and --set get today
        assert Resources.declared(MinerU25, init) == Resources.declared(RapidOcr, {}) == Resources()
    assert Resources().num_cpus == DEFAULT_NUM_CPUS and Resources().num_gpus == 0
