"""Model backends as batched stages for shared pools (installed as `curate.models`).

One file per backend, named after it (`rapidocr.py`, `mineru.py`, `qwen_vl.py`; a large one
keeps its engines beside it, `qwen_vl_engines.py`, and `_transformers.py` has the transformers
loading the Qwen-VL-family backends share); the task signatures are in `protocols.py`, and
`dummy.py` has a deterministic CPU stand-in for every task. The conventions every backend follows:

1. **One model class = one actor.** A `cu.Pool(cls, init=...)` or a class stage builds it once
   per worker; the model loads once there and serves every batch that worker gets.
2. **Heavy imports and model loading happen in `__init__`**, never at module level: importing
   `curate.models.x` stays cheap on the driver (tests/test_import_light.py checks this).
   `init` takes the same hints everywhere: `model` (a path or hub id), `device`, `batch_size`.
3. **Methods are named after tasks** (`layout`, `ocr`, `caption`, `embed`, ...), each
   `list -> list`: one result per item, in the items' order (`protocols.py` says what an item
   and a result of each task are). A class with a single task may alias it as `__call__`.
4. **A bad item is not an exception.** Put `cu.ItemFailure(cu.InputError("what is wrong; how to
   fix it"))` in its place and go on with the batch: only that item FAILS, without retries,
   and its batch-mates are not re-run. Raise only for what may pass (out of memory, a lost
   device): the engine retries and isolates the item.
5. **One pool, several Calls.** A class with several tasks serves each as its own Call of one
   shared pool, each with its own queue and batch size:
       stack = cu.Pool(DummyStack, init={"model": path, "device": "cuda"}, num_gpus=1)
       regions = pages.expand(stack.stage("layout", batch_size=8), into=Region)
       text = crops.map(stack.stage("ocr", batch_size=64))
6. **The class writes no files.** It returns values; outputs go through the run's sink.
7. **A missing optional dependency says how to get it:** in `__init__`,
   `vllm = curate.deps.require("vllm", "the Qwen2.5-VL caption backend")` raises a CurateError
   naming the extra that installs it (add the module to `curate.deps.EXTRAS` and the extra to
   pyproject.toml).
8. **Imports:** only curate's public API (`curate`, `curate.deps`, `curate.errors`) and
   `curate.models` / `curate.modalities`; never `ray`, never curate's internals (`curate.core`,
   `curate.executors`, `curate.io`, ...). Recipes and examples do the wiring
   (tests/test_import_light.py checks this too).
"""
