"""The long-tailed 1 -> M -> 1 workload the benchmarks share: page counts per document."""

from __future__ import annotations

import random


def long_tail_page_counts(n_docs: int = 300, total: int = 3216, longest: int = 400,
                          n_longest: int = 3, seed: int = 7) -> list[int]:
    """Pareto-shaped page counts: `n_longest` documents of `longest` pages, the rest drawn from a
    Pareto law and scaled so the counts add up to `total`. Deterministic for a seed."""
    rng = random.Random(seed)
    rest = n_docs - n_longest
    budget = total - n_longest * longest
    raw = [rng.paretovariate(1.2) for _ in range(rest)]
    scale = (budget - rest) / sum(raw)
    counts = [1 + min(longest - 1, int(r * scale)) for r in raw]
    i = 0
    while sum(counts) != budget:  # fix rounding, one page at a time, deterministically
        step = 1 if sum(counts) < budget else -1
        if 1 <= counts[i % rest] + step <= longest:
            counts[i % rest] += step
        i += 1
    counts[:0] = [longest] * n_longest
    rng.shuffle(counts)
    return counts
