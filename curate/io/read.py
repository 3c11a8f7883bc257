"""Reading an output directory back: Items in lineage order, for RunResult and `inspect`."""

from __future__ import annotations

from pathlib import Path

from curate.deps import require
from curate.io.rows import LINEAGE_COLUMNS
from curate.outcome import Item, Status


def read_table(out: str | Path, name: str):
    """All committed rows of one output as one Arrow table (shards unified by name)."""
    ds = require("pyarrow.dataset", "reading an output directory")
    d = Path(out) / name
    if not d.exists():
        import pyarrow as pa

        return pa.table({c: [] for c in LINEAGE_COLUMNS})
    return ds.dataset(d, format="parquet").to_table()


def read_items(out: str | Path, name: str) -> list[Item]:
    """Rows of an output as Items sorted by lineage. The value is the payload: the `value`
    column alone, or a dict of the payload columns."""
    rows = read_table(out, name).to_pylist()
    items = []
    for r in sorted(rows, key=lambda r: r["lineage"]):
        status = Status[r["status"].upper()]
        if status is Status.PRESENT:
            payload = {k: v for k, v in r.items() if k not in LINEAGE_COLUMNS}
            value = payload["value"] if set(payload) == {"value"} else payload
            items.append(Item(tuple(r["lineage"]), status, value))
        else:
            items.append(Item(tuple(r["lineage"]), status, None, r["cause"]))
    return items
