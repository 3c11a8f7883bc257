"""Video captioning: the Video -> Clip -> Frame modality (`records`), its probe, splitter,
filters, sampler, captioner stage (`captions`, over the Qwen2.5-VL backend of curate.models)
and reducers. It holds domains, records and batched stages and wires nothing (recipes do)."""
