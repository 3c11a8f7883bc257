"""Versions of an output directory: what `curate rerun` writes beside the rows of the run.

Version 1 is the directory's own outputs (`OUT/<output>/`), as `curate run` wrote them. A rerun
writes version k (2, 3, ...) to `OUT/_versions/v<k>/`, itself an output directory (its parts,
commit log and manifest, so a killed rerun resumes like a run), holding only the rows the rerun
changed: those of the entities it re-ran, of their descendants, and of their ancestors (a video
whose clips were re-captioned). Each such row keeps its entity id and lineage and carries
`version`. The rows of version k-1 stay as they were.

Reading an output (`curate.io.read.read_table`, and so `curate show`, `eval` and the causes
`curate inspect` lists) gives its latest version by default: each entity's row from the newest version
that has one, in lineage order. `version=k` reads the output as it was after version k
(`version=1`: the run's own rows). Readers of the Parquet files themselves see version 1 in
`OUT/<output>/` (pyarrow, pandas and DuckDB skip the `_`-named directories) and a version's
changed rows in `OUT/_versions/v<k>/<output>/`.

The directory's manifest lists the versions (`reruns`: number, directory, step, overrides,
selection, the run that wrote it, its status and rows)."""

from __future__ import annotations

import time

from curate.errors import CurateError

VERSIONS = "_versions"


def version_dir(k: int) -> str:
    return f"{VERSIONS}/v{k}"


def existing(loc) -> list[int]:
    """The version numbers (>= 2) that have a directory in `loc`, ascending."""
    if not loc.exists(VERSIONS):
        return []
    out = []
    for name in loc.list(VERSIONS, "v*"):
        if name[1:].isdigit() and int(name[1:]) >= 2:
            out.append(int(name[1:]))
    return sorted(out)


def overlay(base, newer: list[tuple[int, object]]):
    """`base` (version 1) with each entity's row replaced by its row in the newest of `newer`
    that has it, with a `version` column, in lineage order."""
    import pyarrow as pa
    import pyarrow.compute as pc

    tables, seen = [], None
    for k, t in reversed([(1, base), *newer]):
        if seen is not None:
            t = t.filter(pc.invert(pc.is_in(t.column("entity_id"), value_set=seen)))
        ids = t.column("entity_id").combine_chunks()
        seen = ids if seen is None else pa.concat_arrays([seen, ids])
        if "version" not in t.column_names:
            t = t.append_column("version", pa.array([k] * t.num_rows, pa.int64()))
        tables.append(t)
    table = pa.concat_tables(tables, promote_options="permissive")
    order = sorted(range(table.num_rows), key=table.column("lineage").to_pylist().__getitem__)
    return table.take(pa.array(order, pa.int64()))


def check_version(loc, version: int | None, made: list[int]) -> None:
    """CurateError unless `version` is None, 1 or one of `made` (the versions `existing` lists)."""
    if version is None:
        return
    known = [1, *made]
    if not isinstance(version, int) or version not in known:
        raise CurateError(f"{loc.spec} has no version {version!r}; its versions: {', '.join(map(str, known))} "
                          "(1: the run's own rows; `curate rerun` writes the others)")


def record_start(loc, entry: dict) -> dict:
    """Add (or, resumed, update) the version's entry in the directory's manifest."""
    from curate.io import manifest

    man = manifest.load(loc)
    versions = [v for v in man.get("reruns", []) if v["version"] != entry["version"]]
    entry = {**entry, "started": _now(), "status": "running"}
    man["reruns"] = sorted([*versions, entry], key=lambda v: v["version"])
    loc.write_json(manifest.MANIFEST, man)
    return entry


def record_end(loc, k: int, **fields) -> None:
    from curate.io import manifest

    man = manifest.load(loc)
    for v in man.get("reruns", []):
        if v["version"] == k:
            v.update(fields, finished=_now())
    loc.write_json(manifest.MANIFEST, man)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
