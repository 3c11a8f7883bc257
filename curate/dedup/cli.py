"""`curate dedup OUT --output documents --column markdown [--threshold 0.8]`: the command's
arguments and what it prints (`curate.cli` registers it)."""

from __future__ import annotations

from curate.dedup.options import DEFAULT_BANDS, DEFAULT_HASH, DEFAULT_ROWS, DEFAULT_SEED, DEFAULT_SHINGLE, HASHES


def add_parser(sub) -> None:
    """`curate dedup`'s arguments."""
    from curate.dedup.options import DEFAULT_EPS, DEFAULT_METHOD, DEFAULT_THRESHOLD, METHODS

    d = sub.add_parser("dedup", help="mark exact and near-duplicate rows of an output (writes OUT/<output>_dedup/)")
    d.add_argument("out", help="the output directory of a `curate run`")
    d.add_argument("--output", required=True, help="the output to deduplicate, e.g. documents or clips")
    d.add_argument("--column", help="its text column, e.g. markdown")
    d.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                   help=f"estimated Jaccard at which two texts are near-duplicates (default {DEFAULT_THRESHOLD})")
    d.add_argument("--method", choices=METHODS, default=DEFAULT_METHOD,
                   help=f"exact (normalised text hash), minhash (near-duplicates) or both (default {DEFAULT_METHOD})")
    d.add_argument("--shingle", type=int, default=DEFAULT_SHINGLE, help=f"words per shingle (default {DEFAULT_SHINGLE})")
    d.add_argument("--bands", type=int, default=DEFAULT_BANDS, help=f"LSH bands (default {DEFAULT_BANDS})")
    d.add_argument("--rows", type=int, default=DEFAULT_ROWS,
                   help=f"permutations per band (default {DEFAULT_ROWS}; bands x rows permutations in all)")
    d.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"of the permutations (default {DEFAULT_SEED})")
    d.add_argument("--hash", choices=HASHES, default=DEFAULT_HASH,
                   help=f"MinHash signature scheme: curate's own, or datatrove's math, for the pairs datatrove's "
                        f"MinHash dedup finds (default {DEFAULT_HASH}; an index keeps the one it was built with)")
    d.add_argument("--address", help="Ray cluster (auto or HOST:PORT): run the steps on Ray Data there")
    d.add_argument("--executor", choices=["local", "ray"], default=None,
                   help="local (numpy here, the default) or ray (Ray Data; a local Ray without --address)")
    d.add_argument("--embedding", metavar="COLUMN", help="semantic dedup of this vector column (clips)")
    d.add_argument("--eps", type=float, default=DEFAULT_EPS,
                   help=f"semantic: duplicates where cosine >= 1 - eps (default {DEFAULT_EPS})")
    d.set_defaults(func=cmd_dedup)


def cmd_dedup(args) -> int:
    from curate.dedup.run import dedup

    res = dedup(args.out, output=args.output, column=args.column, threshold=args.threshold, method=args.method,
                shingle=args.shingle, bands=args.bands, rows=args.rows, seed=args.seed, hash=args.hash,
                executor=args.executor or ("ray" if args.address else "local"), address=args.address,
                embedding=args.embedding, eps=args.eps)
    print(res.summary())
    return 0
