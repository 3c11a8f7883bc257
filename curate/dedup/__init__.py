"""Corpus-level deduplication of an output directory's output: exact (hash of normalised
text), near-duplicate (MinHash with LSH banding) and, for clips, semantic (embeddings).

    curate dedup OUT --output documents --column markdown [--threshold 0.8] [--method both]
    curate.dedup.dedup(OUT, output="documents", column="markdown")

write `OUT/<output>_dedup/`: one row per PRESENT row of the output, with its cluster, the
representative it duplicates, the similarity and the reason (`curate.dedup.decide`). Heavy
modules (numpy, pyarrow, Ray) are imported when a dedup runs, not with `import curate`."""

from __future__ import annotations


def dedup(out, **options):
    """Deduplicate an output of `out`: see `curate.dedup.run.dedup` for the options."""
    from curate.dedup.run import dedup as run

    return run(out, **options)
