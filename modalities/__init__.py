"""Per-modality expanders and reducers: `curate.modalities.pdf` (Document -> Page -> Region),
and later `curate.modalities.video`. A modality holds domains, frozen records and batched
stages; it wires nothing (recipes do) and imports only curate's public API."""
