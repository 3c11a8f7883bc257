"""A small job for the viewer's tests: documents (text inputs) expand into sections with a route,
a language and a score; sections below a score are DROPPED with a reason; a document whose text
says FAIL is FAILED; the sections reduce back into the document's Markdown. Its text can be
hostile (HTML, script, a javascript: link): the viewer must show it, never run it.

`write(out, docs)` runs it (local executor) into output directory `out` and returns the rows
expected per output and status, so tests assert counts the job itself decided."""

from __future__ import annotations

import curate as cu

Doc = cu.Domain("document")
Section = Doc.child("section")
MIN_SCORE = 0.3  # sections scoring below are DROPPED
ROUTES = ("text_layer", "ocr", "empty")
LANGS = ("en", "fr", "de")


def split(texts: list[str]) -> list:
    out = []
    for t in texts:
        if t.startswith("FAIL"):
            out.append(cu.ItemFailure(cu.InputError(f"{t[:20]!r}: a document marked FAIL; remove the mark")))
        else:
            out.append([p for p in t.split("\n\n")])
    return out


def section_row(parts: list[str]) -> list[dict]:
    rows = []
    for p in parts:
        h = sum(map(ord, p))
        rows.append({"markdown": p, "route": ROUTES[h % 3], "language": LANGS[h % 2 if "Bonjour" not in p else 1],
                     "score": round((h % 97) / 96, 4), "chars": len(p)})
    return rows


def good(rows: list[dict]) -> list:
    return [(r["score"] >= MIN_SCORE, f"score {r['score']} < {MIN_SCORE}") for r in rows]


def join(groups: list[list[dict]]) -> list[dict]:
    return [{"markdown": "\n\n".join(r["markdown"] for r in g), "sections": len(g)} for g in groups]


def pipeline() -> cu.Pipeline:
    pipe = cu.Pipeline(Doc)
    sections = pipe.source.expand(split, into=Section).map(cu.stage(section_row, batch_size=16))
    kept = sections.filter(cu.stage(good, batch_size=16))
    docs = kept.reduce(join)
    pipe.output("documents", docs)
    pipe.output("sections", kept)
    return pipe


def write(out, docs: list[str], keys: list[str] | None = None):
    """Run the job on `docs` into `out`; returns the RunResult."""
    keys = keys or [f"doc{i:04d}" for i in range(len(docs))]
    by_text = dict(zip(docs, keys))
    return cu.run(pipeline(), docs, executor="local", output_dir=out, key=by_text.__getitem__, progress=False)


def kept(text: str) -> str:
    """`text` with trailing spaces (dedup ignores them) until the job keeps its one section."""
    while section_row([text])[0]["score"] < MIN_SCORE:
        text += " "
    return text


def expected(docs: list[str]) -> dict[str, int]:
    """Sections per status the job gives for `docs` (failed documents have none)."""
    counts = {"present": 0, "dropped": 0}
    for t in docs:
        if t.startswith("FAIL"):
            continue
        for r in section_row(t.split("\n\n")):
            counts["present" if r["score"] >= MIN_SCORE else "dropped"] += 1
    return counts
