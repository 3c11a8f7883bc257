"""Output directories for the dedup tests, written by a real (local, threaded) curate run: one
document per input, its payload a dict (`markdown`, `title`) so each becomes a column; and a
generated corpus with planted exact and near copies, and the truth of what was planted."""

from __future__ import annotations

import random

import curate as cu

Doc = cu.Domain("doc")


def as_document(xs):
    return [{"markdown": x["markdown"], "title": x.get("title", "")} for x in xs]


def drop_marked(xs):
    return [(not x["markdown"].startswith("DROP"), "marked to drop") for x in xs]


def write_documents(out, docs: list[str], *, resume: bool = False):
    """Run a one-level pipeline over `docs` into `out`; rows whose text starts with DROP are
    DROPPED by a filter (a dedup must leave them out). With `resume`, the inputs already
    committed are skipped: a longer list extends the directory, as a resumed job does."""
    pipe = cu.Pipeline(Doc)
    kept = pipe.source.filter(drop_marked)
    pipe.output("documents", kept.map(as_document))
    return cu.run(pipe, [{"markdown": d} for d in docs], executor="local", output_dir=out, resume=resume,
                  progress=False)


WORDS = [f"w{i}{c}" for i in range(600) for c in "abc"]


def corpus(n_sources: int, seed: int = 0) -> tuple[list[str], list[tuple[int, int]], set[int]]:
    """`n_sources` unrelated documents, then for some an exact copy (case and spacing changed),
    a near copy (a few words changed) and a far copy (half its words replaced). Returns the
    texts, the planted (source, copy) pairs that must be found, and the far copies' indices."""
    rng = random.Random(seed)
    docs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(250, 350))) for _ in range(n_sources)]
    pairs, far = [], set()
    for s in range(0, n_sources, 3):
        words = docs[s].split()
        docs.append("  ".join(words).upper())  # exact after normalisation
        pairs.append((s, len(docs) - 1))
        edited = list(words)
        for k in rng.sample(range(len(words)), 2):
            edited[k] = rng.choice(WORDS)
        docs.append(" ".join(edited) + " tail")  # near: Jaccard 0.90-0.95
        pairs.append((s, len(docs) - 1))
        half = [w if rng.random() < 0.5 else rng.choice(WORDS) for w in words]
        docs.append(" ".join(half))  # far: Jaccard near 0.05, not a duplicate
        far.add(len(docs) - 1)
    return docs, pairs, far


def text_document(xs):
    """A recipe's stage: an input text as a document row."""
    return [{"markdown": x} for x in xs]


def as_clip(xs):
    return [dict(x) for x in xs]


def write_clips(out, clips: list[dict]):
    """A one-level pipeline whose rows are the given clip dicts (embedding, start_s, end_s)."""
    pipe = cu.Pipeline(cu.Domain("clip"))
    pipe.output("clips", pipe.source.map(as_clip))
    return cu.run(pipe, clips, executor="local", output_dir=out, progress=False)
