"""Per-modality dataflow: `curate.modalities.pdf` (Document -> Page -> Region),
`curate.modalities.video` (Video -> Clip -> Frame), and `curate.modalities.text` (the language
and quality signals of any record's text, and their filter). A modality holds domains, frozen records,
its expanders and reducers, and the stage classes that adapt its records to the model backends
of `curate.models` (which it may import; they never import it). It wires nothing (recipes do),
imports only curate's public API, and never imports ray."""
