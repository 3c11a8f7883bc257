"""Defaults, each a named constant with the reason for its value."""

DEFAULT_BATCH_SIZE = 1  # a stage sees one item at a time unless it asks for batches
DEFAULT_REPLICAS = 1  # one worker per stage: enough for cheap stages, raise it for models
DEFAULT_NUM_CPUS = 0.25  # fractional, so on a 2-core machine pools never starve their feeders
DEFAULT_RETRIES = 3  # failed attempts of an isolated item before it is FAILED
DEFAULT_INFLIGHT = None  # admit on demand (the budgets below); an int admits that many input windows at once
DEFAULT_READY_BATCHES = 2  # per replica, at the pools admission feeds: one batch to run next, one shipped behind it
DEFAULT_ADMIT_ENTITIES = 500_000  # live entities (every level) that stop admission: ~35 MB of driver tables at ~70 B each
DEFAULT_ADMIT_BYTES = 2 * 2**30  # payload bytes live windows pin (measured by the executor): well inside Ray's object store
DEFAULT_PROBE_GRAINS = 1  # a parent's grains in flight at a nested Call before its first report: a GroupFailure
#                           on its first grain then keeps every sibling out of the stage; 0 turns the cap off
DEFAULT_INPUT_BATCH_SIZE = 16  # roots per input window: large enough to fill model batches
MAX_GENERATION = 2**15 - 1  # a grain retried this often is FAILED even if retries say more
DEFAULT_EXECUTOR = "ray"  # actor pools with payloads in the object store; "local" for debugging
MAX_TIMELINE_EVENTS = 200_000  # batches kept for the run report's timeline: ~20 MB at most
DEFAULT_SHARD_ROWS = 100_000  # rows per flush (all outputs): shards big enough for fast scans
DEFAULT_FLUSH_S = 30.0  # commit at least this often, so a kill loses at most ~30 s of work
DEFAULT_ROW_GROUP_ROWS = 65_536  # Parquet row group: large enough for efficient columnar reads
