"""Per-modality expanders and reducers (`curate.modalities.pdf`, `curate.modalities.video`).

Empty until the PDF and video issues land; the package exists so the install layout is fixed."""
