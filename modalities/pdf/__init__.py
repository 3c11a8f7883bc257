"""PDF -> Markdown: the Document -> Page -> Region modality (`records`), its expanders and
reducers. It holds domains, records and batched stages and wires nothing: recipes do."""
