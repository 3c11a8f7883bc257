"""What the viewer reads of an output directory: its manifest, outputs and dedup outputs, rows
by output, by entity and by input, and the files it may serve.

Every value read here is data, not trusted: names and paths come from Parquet rows a run wrote
from its inputs. A file is served only if it resolves (symbolic links followed) inside the
output directory, or is the recorded input of a root: a path under an input root the manifest
names, whose content still has the hash in the root's key."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from curate.errors import CurateError
from curate.io.commits import META
from curate.io.outdir import OutputDir
from curate.view.tables import LightTable

DEDUP_SUFFIX = "_dedup"  # curate.dedup.run.SUFFIX (not imported: it pulls numpy)


class NotFound(CurateError):
    """A page, row or file the output directory does not have (HTTP 404)."""


class Site:
    """One output directory, read for the viewer; safe to share between request threads."""

    def __init__(self, out):
        self.dir = OutputDir(out)
        self.loc = self.dir.loc
        self.dir.manifest()  # a CurateError naming the directory if it is not an output directory
        self._tables: dict[str, LightTable] = {}
        self._lock = threading.Lock()
        self._digests: dict[tuple, str] = {}
        self._columns: set[str] | None = None

    # ---- what is there ---------------------------------------------------------------------
    def manifest(self) -> dict:
        return self.dir.manifest()

    def outputs(self) -> dict[str, str]:
        """Output name -> its domain (the level its rows are at), in the pipeline's order."""
        return dict(self.manifest()["pipeline"]["outputs"])

    def dedup_outputs(self) -> list[str]:
        """The `<output>_dedup` directories `curate dedup` wrote beside the outputs."""
        if self.loc.remote:
            return []
        outs = self.outputs()
        return sorted(n for n in self.loc.list("", f"*{DEDUP_SUFFIX}")
                      if n[: -len(DEDUP_SUFFIX)] in outs and self.loc.is_dir(n))

    def check_output(self, name: str, dedup: bool = False) -> str:
        known = self.dedup_outputs() if dedup else list(self.outputs())
        if name not in known:
            raise NotFound(f"no output {name!r} here; the outputs are {', '.join(known) or 'none'}")
        return name

    def columns(self) -> set[str]:
        """Every column of every output (read once: what kind of input the directory holds)."""
        if self._columns is None:
            from curate.view.tables import output_columns

            self._columns = {c for name in self.outputs() if self.loc.exists(name)
                             for c in output_columns(self.loc, name)}
        return self._columns

    def table(self, name: str) -> LightTable:
        with self._lock:
            if name not in self._tables:
                self._tables[name] = LightTable(self.loc, name)
            return self._tables[name]

    # ---- rows --------------------------------------------------------------------------------
    def row(self, output: str, entity_id: str) -> dict:
        """One row, every column, in its latest version."""
        import pyarrow.dataset as ds

        from curate.io.read import read_table

        rows = read_table(self.loc, output, where=ds.field("entity_id") == entity_id).to_pylist()
        if not rows:
            raise NotFound(f"output {output!r} has no row with entity id {entity_id!r}")
        return rows[0]

    def root_rows(self, root_key: str) -> dict[str, list[dict]]:
        """Output -> the rows of one input (every column), in lineage order; outputs without any
        left out. NotFound if no output has a row of it."""
        import pyarrow.dataset as ds

        from curate.io.read import read_table

        found = {}
        for name in self.outputs():
            if not self.loc.exists(name):
                continue
            t = read_table(self.loc, name, where=ds.field("root_key") == root_key)
            if t.num_rows:
                found[name] = sorted(t.to_pylist(), key=lambda r: r["lineage"])
        if not found:
            raise NotFound(f"no output has rows of the input {root_key!r}")
        return found

    def dedup_rows(self, name: str, cluster: str | None = None) -> list[dict]:
        """A dedup output's rows (of one cluster, when given)."""
        import pyarrow.dataset as ds
        import pyarrow.parquet as pq

        self.check_output(name, dedup=True)
        files = self.loc.arrow_paths(name)
        if not files:
            return []
        where = ds.field("cluster_id") == cluster if cluster is not None else None
        t = ds.dataset(files, format="parquet", schema=pq.read_schema(files[0])).to_table(filter=where)
        return t.to_pylist()

    # ---- files -------------------------------------------------------------------------------
    def payload_file(self, output: str, rel: str) -> Path:
        """A file a row names (a column of an output's files, relative to `OUT/<output>/`), if it
        resolves inside the output directory; NotFound otherwise."""
        return self.resolve_payload(self.check_output(output), rel)

    def resolve_payload(self, output: str, rel: str) -> Path:
        """`payload_file` for an output already checked (`check_output`): a row's columns are
        resolved against one output, which is checked once."""
        if self.loc.remote:
            raise NotFound("the viewer serves payload files of a local output directory only")
        if not isinstance(rel, str) or not rel or "\x00" in rel or os.path.isabs(rel):
            raise NotFound(f"{rel!r} is not a file of output {output!r}")
        base = Path(self.loc.path()).resolve()
        path = (Path(self.loc.path(output)) / rel).resolve()
        if base not in path.parents or META in path.relative_to(base).parts[:1] or not path.is_file():
            raise NotFound(f"{rel!r} is not a file of output {output!r}")
        return path

    def input_file(self, root_key: str) -> Path:
        """The input file a root was read from: under an input root the manifest's runs name,
        resolving inside that root, with the content hash of its key. NotFound otherwise."""
        from curate.io.sources import file_digest

        if not isinstance(root_key, str) or "@" not in root_key or "\x00" in root_key:
            raise NotFound(f"{root_key!r} is not the key of a file input")
        rel, _, want = root_key.rpartition("@")
        if not rel or os.path.isabs(rel):
            raise NotFound(f"{root_key!r} is not the key of a file input")
        for root in self._input_roots():
            base = Path(root).resolve()
            path = (base / rel).resolve()
            if base not in path.parents or not path.is_file():
                continue
            st = path.stat()
            stamp = (str(path), st.st_mtime_ns, st.st_size)
            if stamp not in self._digests:
                self._digests[stamp] = file_digest(str(path))
            if self._digests[stamp] == want:
                return path
        raise NotFound(f"the input file of {root_key!r} is not under the recorded input roots, or it changed "
                       "since the run read it")

    def _input_roots(self) -> list[str]:
        from curate.io.remote import is_url

        roots = []
        for run in reversed(self.manifest().get("runs", [])):
            for i in run.get("inputs") or ():
                root = i.get("root")
                if isinstance(root, str) and root not in roots and not is_url(root):
                    roots.append(root)
        return roots

    def report_png(self, run: str) -> Path | None:
        """`curate report`'s timeline of a run, if it was written."""
        runs = [r["run"] for r in self.manifest().get("runs", [])]
        if run not in runs or self.loc.remote:
            return None
        path = Path(self.loc.path(f"{META}/{run}/report.png"))
        return path if path.is_file() else None
