"""curate's benchmark suite: `python -m benchmarks run [SUITE ...] [--quick]` (see __main__.py)."""
