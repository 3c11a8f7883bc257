"""Document dedup: curate's MinHash/LSH dedup against planted truth and datatrove's MinHash
dedup on the same corpus and parameters (5-word shingles, 14 bands x 8 rows, seed 1).

    python benchmarks/dedup.py [--quick] [--json PATH]

The corpus: unrelated Markdown documents (a title, paragraphs of sentences over a Zipf
vocabulary) and planted copies of some of them: exact (case and spacing changed), header
changed, paragraphs reordered, 3-20% of words edited (replaced, deleted, inserted), and mixed
(header + reorder + 3-8% edits). The truth: the planted (source, copy) pairs whose Jaccard of
5-word shingle sets (exact, on curate's normalised text) is >= 0.8. Figures:
  - recall: truth pairs that curate puts in one cluster; precision: curate's (duplicate,
    representative) pairs whose two documents are of one planted family;
  - agreement with datatrove: Jaccard of the sets of co-clustered document pairs (and the share
    of truth pairs both systems decide alike), and each
    system's recall and precision; datatrove keeps every band collision (no Jaccard check),
    so curate is also run with the check off (threshold ~0), the same rule; and both again with
    `hash="datatrove"` (datatrove's MinHash math: xxhash64 shingles, its permutations), datatrove
    configured with the same hash (HashConfig xxhash, 64 bits, its default);
  - tokenisation: the share of documents whose 5-word shingle sets are the same from curate's
    normalised words and from datatrove's simplify_text + spaCy tokenizer;
  - signatures docs/s, one process each: curate's `normalise` + `signatures` over the corpus
    (its own scheme, and hash="datatrove") vs
    datatrove's `get_shingles` + `get_signature` per document (its signature stage's work, with
    its default English word tokenizer, spaCy's) on the corpus' first --datatrove-speed-docs;
  - peak RSS (VmHWM) of the driver for `curate.dedup.dedup` over --rss-docs short documents,
    locally, and of the driver and Ray workers on the Ray Data path over --ray-rss-docs.
Needs `pip install -e .[bench]` (datatrove, xxhash, spacy)."""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

THRESHOLD = 0.8
KINDS = ("exact", "header", "reorder", "edit", "mixed")


# ---- the corpus --------------------------------------------------------------------------
def vocabulary(rng: random.Random, n: int = 30_000) -> tuple[list[str], list[float]]:
    words = sorted({"".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 10)))
                    for _ in range(n)})
    return words, [1 / (r + 1) ** 0.8 for r in range(len(words))]


def document(rng, words, weights, paragraphs=(3, 7), sentence=(8, 20)) -> tuple[str, list[str]]:
    title = " ".join(rng.choices(words, weights, k=rng.randint(4, 7))).title()
    paras = []
    for _ in range(rng.randint(*paragraphs)):
        sents = [" ".join(rng.choices(words, weights, k=rng.randint(*sentence))).capitalize() + "."
                 for _ in range(rng.randint(2, 5))]
        paras.append(" ".join(sents))
    return title, paras


def render(title: str, paras: list[str]) -> str:
    return f"# {title}\n\n" + "\n\n".join(paras) + "\n"


def edit(rng, paras: list[str], words, weights, rate: float) -> list[str]:
    out = []
    for p in paras:
        ws = p.split(" ")
        new = []
        for w in ws:
            r = rng.random()
            if r < rate / 3:
                continue  # deleted
            if r < 2 * rate / 3:
                new.append(rng.choices(words, weights)[0])  # replaced
            elif r < rate:
                new += [w, rng.choices(words, weights)[0]]  # inserted after
            else:
                new.append(w)
        out.append(" ".join(new))
    return out


def planted_corpus(n_sources: int, n_copies: int, seed: int = 0):
    """Texts, each text's family (its source's index) and the planted (source, copy, kind)."""
    rng = random.Random(seed)
    words, weights = vocabulary(rng)
    parts = [document(rng, words, weights) for _ in range(n_sources)]
    texts = [render(t, p) for t, p in parts]
    family = list(range(n_sources))
    planted = []
    for _ in range(n_copies):
        s = rng.randrange(n_sources)
        title, paras = parts[s]
        kind = rng.choice(KINDS)
        if kind == "exact":
            text = render(title, paras).upper().replace(" ", "  ")
        elif kind == "header":
            text = render(document(rng, words, weights, (1, 1))[0], paras)
        elif kind == "reorder":
            text = render(title, rng.sample(paras, len(paras)))
        elif kind == "edit":
            text = render(title, edit(rng, paras, words, weights, rng.uniform(0.03, 0.20)))
        else:
            shuffled = rng.sample(paras, len(paras))
            text = render(document(rng, words, weights, (1, 1))[0], edit(rng, shuffled, words, weights,
                                                                            rng.uniform(0.03, 0.08)))
        texts.append(text)
        family.append(s)
        planted.append((s, len(texts) - 1, kind))
    return texts, family, planted


def shingles(text: str, k: int = 5) -> set:
    from curate.dedup.normalize import normalise

    w = normalise(text).split()
    return {tuple(w[i:i + k]) for i in range(max(1, len(w) - k + 1))}


def true_jaccard(a: str, b: str) -> float:
    x, y = shingles(a), shingles(b)
    return len(x & y) / len(x | y) if x | y else 1.0


# ---- output directories ------------------------------------------------------------------
def write_output(out: Path, texts: list[str]) -> None:
    """A curate output directory of one output `documents` (a real local run)."""
    import curate as cu

    pipe = cu.Pipeline(cu.Domain("doc"))
    pipe.output("documents", pipe.source.map(_as_row))
    cu.run(pipe, texts, executor="local", output_dir=out, progress=False, input_batch_size=256)


def _as_row(xs):
    return [{"markdown": x} for x in xs]


# ---- figures -----------------------------------------------------------------------------
def co_pairs(cluster_of: dict[int, int]) -> set[tuple[int, int]]:
    """Pairs (a < b) of documents in one cluster."""
    groups: dict[int, list[int]] = {}
    for d, c in cluster_of.items():
        groups.setdefault(c, []).append(d)
    return {(a, b) for g in groups.values() if len(g) > 1 for i, a in enumerate(sorted(g)) for b in sorted(g)[i + 1:]}


def scores(cluster_of: dict[int, int], truth: list[tuple[int, int]], family: list[int], reps: dict[int, int]):
    recall = sum(cluster_of.get(s) == cluster_of.get(c) for s, c in truth) / max(1, len(truth))
    dup = [(d, r) for d, r in reps.items() if d != r]
    precision = sum(family[d] == family[r] for d, r in dup) / max(1, len(dup))
    return recall, precision, len(dup)


NO_CHECK = 1e-9  # a threshold every band collision passes: datatrove's rule (no Jaccard check)
DT_HASH, DT_HASH_NO_CHECK = "curate, datatrove hashing", "curate, datatrove hashing, no Jaccard check"


def curate_clusters(texts: list[str], workdir: Path, threshold: float = THRESHOLD,
                    hash: str = "curate") -> tuple[dict, dict, float]:
    import shutil

    from curate.dedup import dedup
    from curate.io.read import read_table

    out = workdir / "curate"
    if not out.exists():
        write_output(out, texts)
    shutil.rmtree(out / "documents_dedup", ignore_errors=True)  # each run signs every text (no index)
    t0 = time.perf_counter()
    dedup(out, output="documents", column="markdown", threshold=threshold, method="both", hash=hash)
    wall = time.perf_counter() - t0
    rows = read_table(out, "documents_dedup").to_pylist()
    ids = {r["entity_id"]: int(r["entity_id"]) for r in rows}  # a root's entity id is its input index
    cluster_of = {ids[r["entity_id"]]: ids[r["cluster_id"]] for r in rows}
    return cluster_of, dict(cluster_of), wall


def datatrove_clusters(texts: list[str], workdir: Path) -> tuple[dict, dict, float]:
    """datatrove's signature and bucket stages (its pairs), components over them as its cluster
    stage takes them; the representative: the lowest document of a component (datatrove keeps
    one document per cluster)."""
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupBuckets, MinhashDedupSignature
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.utils.hashing import HashConfig

    src = workdir / "dt_in"
    src.mkdir()
    with open(src / "docs.jsonl", "w") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"id": str(i), "text": t}) + "\n")
    cfg = MinhashConfig(n_grams=5, num_buckets=14, hashes_per_bucket=8, seed=1,
                        hash_config=HashConfig(precision=64, hash_fc="xxhash"))  # curate's hash="datatrove"
    t0 = time.perf_counter()
    LocalPipelineExecutor(pipeline=[JsonlReader(str(src)), MinhashDedupSignature(output_folder=str(workdir / "sig"),
                                                                                  config=cfg)],
                          tasks=1, workers=1, logging_dir=str(workdir / "log1")).run()
    LocalPipelineExecutor(pipeline=[MinhashDedupBuckets(input_folder=str(workdir / "sig"),
                                                        output_folder=str(workdir / "buckets"), config=cfg)],
                          tasks=cfg.num_buckets, workers=1, logging_dir=str(workdir / "log2")).run()
    wall = time.perf_counter() - t0
    import struct

    from curate.dedup.clusters import components

    ii, jj = [], []
    for f in sorted((workdir / "buckets").glob("*.dups")):
        data = f.read_bytes()
        for f1, d1, f2, d2 in struct.iter_unpack("<4I", data):
            if f1 != 0xFFFFFFFF:
                ii.append(d1)
                jj.append(d2)
    labels = components(len(texts), np.array(ii, np.int64), np.array(jj, np.int64))
    cluster_of = {d: int(labels[d]) for d in range(len(texts))}
    return cluster_of, cluster_of, wall


def signature_speed(texts: list[str], datatrove_docs: int) -> dict:
    """Docs/s of each system's signature computation, one process each: curate over all
    `texts`, datatrove over the first `datatrove_docs` of them (its rate is per document)."""
    from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupSignature

    from curate.dedup.minhash import MinHashParams, signatures
    from curate.dedup.normalize import normalise

    t0 = time.perf_counter()
    signatures([normalise(t) for t in texts], MinHashParams())
    ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    signatures([normalise(t) for t in texts], MinHashParams(hash="datatrove"))
    ours_dt = time.perf_counter() - t0
    step = MinhashDedupSignature(output_folder=tempfile.mkdtemp(), config=MinhashConfig(seed=1))
    sample = texts[:datatrove_docs]
    t0 = time.perf_counter()
    for t in sample:
        step.get_signature(step.get_shingles(t))
    theirs = (time.perf_counter() - t0) / len(sample)
    return {"docs": len(texts), "datatrove_docs": len(sample), "curate_docs_per_s": len(texts) / ours,
            "datatrove_docs_per_s": 1 / theirs, "ratio": theirs * len(texts) / ours,
            "curate_datatrove_hash_docs_per_s": len(texts) / ours_dt, "ratio_datatrove_hash": theirs * len(texts) / ours_dt}


def tokenisation(texts: list[str]) -> dict:
    """How many documents have the same 5-word shingle sets from curate's words (normalised
    text split on spaces) and datatrove's (simplify_text, then its spaCy word tokenizer)."""
    from datatrove.utils.text import simplify_text
    from datatrove.utils.word_tokenizers import load_word_tokenizer

    from curate.dedup.normalize import normalise

    tok = load_word_tokenizer("en")
    same = same_words = 0
    for t in texts:
        ours, theirs = normalise(t).split(), tok.word_tokenize(simplify_text(t))
        same_words += ours == theirs
        same += {tuple(ours[i:i + 5]) for i in range(len(ours) - 4)} == {tuple(theirs[i:i + 5])
                                                                          for i in range(len(theirs) - 4)}
    return {"docs": len(texts), "same_shingle_sets": same / len(texts), "same_words": same_words / len(texts)}


# ---- memory ------------------------------------------------------------------------------
RSS_PROBE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[4])
from dedup import peak_kib, ray_workers_peak_kib
from curate.dedup import dedup
t0 = time.perf_counter()
executor = sys.argv[3]
if executor == "ray":
    import ray
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
r = dedup(sys.argv[1], output="documents", column="markdown", executor=executor)
out = {"rows": r.rows, "duplicates": r.duplicates, "seconds": time.perf_counter() - t0, "driver_kib": peak_kib()}
if executor == "ray":
    out["worker_kib"] = ray_workers_peak_kib()
    ray.shutdown()
print("RESULT " + json.dumps(out))
"""


def peak_kib(pid: str = "self") -> int:
    """A process's peak resident memory (VmHWM), KiB."""
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def ray_workers_peak_kib() -> int:
    """The largest peak RSS among this machine's Ray worker processes (`ray::` processes)."""
    import os

    best = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[0]
            if cmd.startswith(b"ray::"):
                best = max(best, peak_kib(pid))
        except OSError:
            continue
    return best


def short_docs(n: int, seed: int = 1) -> list[str]:
    """n short documents (20-60 words), one in ten a near copy of an earlier one."""
    rng = random.Random(seed)
    words, weights = vocabulary(rng, 20_000)
    docs = []
    for i in range(n):
        if i > 10 and rng.random() < 0.1:
            ws = docs[rng.randrange(i)].split()
            ws[rng.randrange(len(ws))] = rng.choice(words)
            docs.append(" ".join(ws))
        else:
            docs.append(" ".join(rng.choices(words, weights, k=rng.randint(20, 60))))
    return docs


def memory(n: int, executor: str, workdir: Path) -> dict:
    out = workdir / f"rss-{executor}-{n}"
    write_output(out, short_docs(n))
    proc = subprocess.run([sys.executable, "-c", RSS_PROBE, str(out), "documents", executor,
                           str(Path(__file__).resolve().parent)], capture_output=True, text=True, check=False)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        return {"docs": n, "executor": executor, "error": proc.stderr[-2000:]}
    return {"docs": n, "executor": executor, **json.loads(line[7:])}


def quality(texts, family, planted, work: Path, with_datatrove: bool = True) -> dict:
    """Recall and precision against the planted truth, and agreement with datatrove."""
    js = [true_jaccard(texts[s], texts[c]) for s, c, _ in planted]
    truth = [(s, c) for (s, c, _), j in zip(planted, js) if j >= THRESHOLD]
    res = {"docs": len(texts), "planted": len(planted), "truth_pairs": len(truth), "threshold": THRESHOLD}
    systems, pairs, found = {}, {}, {}
    runs = [("curate", curate_clusters), ("curate, no Jaccard check", lambda t, w: curate_clusters(t, w, NO_CHECK)),
            (DT_HASH, lambda t, w: curate_clusters(t, w, hash="datatrove")),
            (DT_HASH_NO_CHECK, lambda t, w: curate_clusters(t, w, NO_CHECK, hash="datatrove"))]
    for name, fn in runs + ([("datatrove", datatrove_clusters)] if with_datatrove else []):
        cl, reps, wall = fn(texts, work)
        recall, precision, dups = scores(cl, truth, family, reps)
        systems[name] = {"recall": recall, "precision": precision, "duplicates": dups, "seconds": wall}
        pairs[name] = co_pairs(cl)
        found[name] = cl
    res["systems"] = systems
    for name in [r[0] for r in runs] if with_datatrove else ():
        a, b = pairs[name], pairs["datatrove"]
        only_dt = sorted(b - a)
        res.setdefault("agreement", {})[name] = {
            "jaccard_of_pair_sets": len(a & b) / max(1, len(a | b)), "only_curate": len(a - b), "only_datatrove": len(only_dt),
            "only_datatrove_max_true_jaccard": max((true_jaccard(texts[x], texts[y]) for x, y in only_dt), default=None),
            # on the planted pairs at the threshold: both put the pair in one cluster, or neither does
            "on_truth_pairs": sum((found[name][s] == found[name][c]) == (found["datatrove"][s] == found["datatrove"][c])
                                  for s, c in truth) / max(1, len(truth))}
    if with_datatrove:
        res["tokenisation"] = tokenisation(texts)
    res["by_kind"] = {k: {"planted": sum(p[2] == k for p in planted),
                          "true_jaccard_min": min((j for p, j in zip(planted, js) if p[2] == k), default=None),
                          "at_threshold": sum(p[2] == k and j >= THRESHOLD for p, j in zip(planted, js)),
                          **{f"found_{n}": sum(p[2] == k and found[n][p[0]] == found[n][p[1]] for p in planted)
                             for n in found}} for k in KINDS}
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smaller corpus (1,200 documents), 20,000 for memory")
    ap.add_argument("--parts", default="quality,speed,memory", help="which figures (comma-separated)")
    ap.add_argument("--sources", type=int, default=4_000)
    ap.add_argument("--copies", type=int, default=1_500)
    ap.add_argument("--datatrove-speed-docs", type=int, default=1_000, help="documents datatrove's speed is taken on")
    ap.add_argument("--rss-docs", type=int, default=100_000)
    ap.add_argument("--ray-rss-docs", type=int, default=5_000)
    ap.add_argument("--no-datatrove", action="store_true", help="quality: curate alone (datatrove's ~50 docs/s)")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    if args.quick:
        args.sources, args.copies, args.rss_docs, args.ray_rss_docs = 900, 300, 20_000, 1_000
        args.datatrove_speed_docs = 300
    parts = set(args.parts.split(","))
    texts, family, planted = planted_corpus(args.sources, args.copies)
    res = {"quick": args.quick}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if "quality" in parts:
            res["quality"] = quality(texts, family, planted, work, with_datatrove=not args.no_datatrove)
        if "speed" in parts:
            res["speed"] = signature_speed(texts, args.datatrove_speed_docs)
        if "memory" in parts:
            res["memory"] = [memory(args.rss_docs, "local", work), memory(args.ray_rss_docs, "ray", work)]
    print(json.dumps(res, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
