"""PDF -> Markdown: the Document -> Page -> Region modality (`records`), its expanders and
reducers, and the stages that run the models on its records (`ocr`: RapidOCR; `mineru25`:
MinerU 2.5 on rendered pages; `mineru4`: MinerU 4 on page windows). It holds domains, records
and batched stages and wires nothing: recipes do."""
