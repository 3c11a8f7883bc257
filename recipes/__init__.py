"""Recipe files (YAML) shipped with curate, run by name: `curate run NAME --input ... --output ...`.

Each `NAME.yaml` here is package data (pyproject.toml ships `*.yaml`), found with
importlib.resources (`curate.recipe.bundled`), so `curate recipes` lists it from an installed
wheel as from a checkout. A bundled recipe names its stages by installed import paths
(`curate.models.dummy:DummyOcr`, `curate.modalities.pdf.render:render_pages`), gives a one-line
`description:`, and leaves `input:` out or absolute: the user's `--input` says what to read.
Shipped: pdf_to_markdown (CPU: text layer, RapidOCR where needed), pdf_to_markdown_mineru25
(MinerU 2.5 VLM, GPU by default), pdf_to_markdown_mineru4 (MinerU 4, tier set with --set).
"""
