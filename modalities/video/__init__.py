"""Video captioning: the Video -> Clip -> Frame modality (`records`), its probe, splitter,
filters, sampler and reducers. It holds domains, records and batched stages and wires nothing."""
