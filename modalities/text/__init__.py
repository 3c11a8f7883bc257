"""Text curation: quality and language signals of any text (a page's or a document's Markdown, a
clip's caption) as plain row columns (`signals`), and the stages that compute them on a record
and turn their thresholds into DROPPED rows with reasons (`filters`). Pure functions and batched
stages over records of other modalities; it wires nothing (recipes do)."""
