"""The options of a dedup and their checks, without numpy or pyarrow: the recipe checker
(`dedup:` entries) and the command line use them before anything runs."""

from __future__ import annotations

from typing import Any

METHODS = ("exact", "minhash", "both")
DEFAULT_METHOD = "both"  # exact copies labelled as such, near copies found by MinHash
DEFAULT_THRESHOLD = 0.8  # estimated Jaccard of 5-word shingles: the and FineWeb's figure
DEFAULT_SHINGLE = 5  # words per shingle: datatrove's and FineWeb's n-gram size
DEFAULT_BANDS = 14  # 14 bands x 8 rows = 112 permutations, datatrove's defaults: an LSH S-curve
DEFAULT_ROWS = 8  # threshold near (1/14)^(1/8) = 0.72, under the default Jaccard of 0.8
DEFAULT_SEED = 1  # of the permutations: every run of one index must use the same
HASHES = ("curate", "datatrove")  # signature schemes: curate's own, or datatrove's MinHash math
DEFAULT_HASH = "curate"
DEFAULT_EPS = 0.07  # semantic dedup: duplicates where cosine >= 1 - eps (NeMo Curator's default)
# a recipe's `dedup:` entry: the keyword arguments of `curate.dedup.dedup` it may set
ENTRY_KEYS = ("output", "column", "threshold", "method", "shingle", "bands", "rows", "seed", "hash", "embedding",
              "eps")
ENTRY_EXAMPLE = "dedup: [{output: documents, column: markdown, threshold: 0.8}]"


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_args(output: Any, column: Any, threshold: Any, method: Any, embedding: Any, eps: Any) -> list[str]:
    """Every problem with a dedup's arguments, each with its fix."""
    from curate.names import name_problem

    problems = []
    if name_problem(output):
        problems.append(f"output {output!r} {name_problem(output)}; give an output's name, e.g. documents")
    if embedding is None and not column:
        problems.append("no column to deduplicate: give column= (--column), e.g. markdown, or embedding= for clips")
    for name, v in (("column", column), ("embedding", embedding)):
        if v is not None and not isinstance(v, str):
            problems.append(f"{name} {v!r}: give a column's name")
    if method not in METHODS:
        problems.append(f"method {method!r} is not one of {', '.join(METHODS)}")
    if not _number(threshold) or not 0 < threshold <= 1:
        problems.append(f"threshold {threshold!r}: give an estimated Jaccard in (0, 1], e.g. {DEFAULT_THRESHOLD}")
    if not _number(eps) or not 0 <= eps < 1:
        problems.append(f"eps {eps!r}: give a cosine distance in [0, 1), e.g. {DEFAULT_EPS}")
    return problems


def check_entry(entry: Any, outputs) -> list[tuple[tuple, str]]:
    """Problems of one recipe `dedup:` entry as (path inside the entry, message): a mapping of
    ENTRY_KEYS naming one of the recipe's `outputs`."""
    import difflib

    if not isinstance(entry, dict):
        return [((), f"a dedup entry is a mapping, not {type(entry).__name__}; e.g. {ENTRY_EXAMPLE}")]
    found = []
    for k in entry:
        if k not in ENTRY_KEYS:
            close = difflib.get_close_matches(str(k), ENTRY_KEYS, 1)
            hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(ENTRY_KEYS)}"
            found.append(((k,), f"dedup: unknown key {k!r}; {hint}"))
    if "output" not in entry:
        found.append(((), f"dedup: no output; name the output to deduplicate, e.g. {ENTRY_EXAMPLE}"))
    elif outputs is not None and entry["output"] not in outputs:
        found.append((("output",), f"dedup: output {entry['output']!r} is not one of the recipe's outputs "
                                   f"({', '.join(sorted(outputs))})"))
    for k in ("shingle", "bands", "rows", "seed"):
        v = entry.get(k)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < (0 if k == "seed" else 1)):
            found.append(((k,), f"dedup: {k} {v!r}: give a whole number >= {0 if k == 'seed' else 1}"))
    if "hash" in entry and entry["hash"] not in HASHES:
        found.append((("hash",), f"dedup: hash {entry['hash']!r} is not one of {', '.join(HASHES)}"))
    if "output" in entry:
        args = check_args(entry["output"], entry.get("column"), entry.get("threshold", DEFAULT_THRESHOLD),
                          entry.get("method", DEFAULT_METHOD), entry.get("embedding"), entry.get("eps", DEFAULT_EPS))
        found += [((), f"dedup: {p}") for p in args if not p.startswith("output ")]
    return found
