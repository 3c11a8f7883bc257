"""Model backends as batched stages for shared pools (`curate.models.ocr`, `curate.models.caption`).

Empty until the model issues land; the package exists so the install layout is fixed."""
