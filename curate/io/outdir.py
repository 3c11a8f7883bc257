"""An output directory through its life: checked before a run (a directory, not mixed into
without resume, same pipeline and code on resume), its Parquet sink during the run, its
manifest when the run starts and ends, and what `curate inspect` and `curate report` read
afterwards. Nothing else builds paths under `out/_curate/`."""

from __future__ import annotations

import json
import time
from pathlib import Path

from curate.errors import CurateError, plain_text
from curate.io import manifest
from curate.io.commits import META
from curate.io.location import location
from curate.io.parquet import ParquetSink, check_output_dir

TOP_CAUSES = 10  # failure causes `inspect` lists, most frequent first


class OutputDir:
    """`out/`: outputs as `out/<name>/*.parquet`, bookkeeping under `out/_curate/`."""

    def __init__(self, path):
        self.loc = location(path)
        self.path = self.loc.spec  # a Path, or the URL of a prefix on object storage
        self._man: dict | None = None
        self._run: dict = {}

    # ---- one run into the directory -------------------------------------------------------
    def open_run(self, plan, run_id: str, *, resume: bool, allow_changed_code: bool, fingerprints: dict,
                 recipe: str | None, sink_options: dict | None, retry_failed: bool = False) -> ParquetSink:
        """Check the directory for this run (raises, recording nothing, if it is refused) and
        return the run's sink. Its committed roots are `sink.committed_keys`; with
        `retry_failed` (a resume that accepts changed stages), `sink.retry.failed` are the
        failed ones it runs again."""
        resume = resume or retry_failed
        check_output_dir(self.loc, resume)
        changed = manifest.check(self.loc, plan, resume, fingerprints, allow_changed_code or retry_failed)
        self._run = dict(plan=plan, run_id=run_id, resume=resume, fingerprints=fingerprints,
                         changed=changed, recipe=recipe, retry=retry_failed)
        return ParquetSink(self.loc, plan.output_options, run_id, **(sink_options or {}), retry_failed=retry_failed)

    def run_started(self, cluster: dict | None = None, inputs: list[dict] | None = None) -> None:
        """The run's workers are up: record it in the manifest (with which Ray cluster, and the
        file inputs with their roots: `curate.io.files.FileInputs.describe`)."""
        r = self._run
        self._man = manifest.start_run(self.loc, r["run_id"], r["plan"], r["recipe"], r["resume"],
                                       r["fingerprints"], r["changed"], cluster, inputs, retry=r["retry"])

    @property
    def started(self) -> bool:
        return self._man is not None

    def run_finished(self, sink: ParquetSink, metrics, *, status: str, error: str | None,
                     roots_done: int, roots_skipped: int) -> None:
        """Record how a started run ended, with its metrics file."""
        if self._man is None:
            return
        run_id = self._run["run_id"]
        self.loc.mkdirs(f"{META}/{run_id}")
        self.loc.write_json(f"{META}/{run_id}/metrics.json", metrics.to_dict())
        manifest.finish_run(self.loc, self._man, run_id, status=status, counts=sink.counts,
                            totals=sink.total_counts(), roots_done=roots_done, roots_skipped=roots_skipped,
                            retried=sink.retried if sink.retry is not None else None, error=plain_text(error) if error else None)

    # ---- reading it back ------------------------------------------------------------------
    def run_dir(self, run_id: str) -> Path | str:
        """Where a run's metrics and report are: a Path, or a URL."""
        return self.loc.path(f"{META}/{run_id}")

    def manifest(self) -> dict:
        man = manifest.load(self.loc)
        if man is None:
            raise CurateError(f"{self.path} has no {META}/manifest.json: not a curate output directory")
        return man

    def counts(self) -> dict[str, dict[str, int]]:
        """Rows per output and status, from the commit log: right even after a kill."""
        counts = {name: {} for name in self.manifest()["pipeline"]["outputs"]}
        counts.update(manifest.committed_counts(self.loc))
        return counts

    def failed_roots(self) -> set[str]:
        """Root keys whose root-level row is FAILED or SUPPRESSED in some output: what
        `retry_failed` runs again."""
        from curate.io.retry import failed_roots

        return failed_roots(self.loc, self.manifest()["pipeline"]["outputs"])

    def not_present_roots(self, root_domain: str) -> int:
        """Root-level rows that are FAILED or SUPPRESSED, over every run into the directory."""
        man = self.manifest()
        return sum(n for name, c in self.counts().items() if man["pipeline"]["outputs"].get(name) == root_domain
                   for st, n in c.items() if st in ("failed", "suppressed"))

    def top_causes(self, top: int = TOP_CAUSES) -> list[tuple[str, int, str]]:
        """The most frequent failure causes, each with its count and an example row."""
        from curate.io.read import read_table

        found: dict[str, list] = {}
        for name in self.manifest()["pipeline"]["outputs"]:
            t = read_table(self.loc, name, columns=["status", "cause", "root_key", "entity_id"])
            if t.num_rows == 0:
                continue
            for r in t.select(["status", "cause", "root_key", "entity_id"]).to_pylist():
                if r["status"] in ("failed", "suppressed") and r["cause"]:
                    entry = found.setdefault(r["cause"], [0, f"{name} {r['entity_id']} (input {r['root_key']})"])
                    entry[0] += 1
        ranked = sorted(found.items(), key=lambda kv: -kv[1][0])[:top]
        return [(cause, n, ex) for cause, (n, ex) in ranked]

    def row(self, output: str, which: str, version: int | None = None) -> dict:
        """One row of an output: the `which`-th in lineage order, or the row of an entity id, in
        its latest version (`version`: as it was after that one; `curate.rerun.versions`)."""
        from curate.io.read import read_table

        outputs = self.manifest()["pipeline"]["outputs"]
        if output not in outputs:
            raise CurateError(f"{self.path} has no output {output!r}; its outputs are {sorted(outputs)}")
        rows = sorted(read_table(self.loc, output, version=version).to_pylist(), key=lambda r: r["lineage"])
        if which.isdigit():
            if int(which) >= len(rows):
                raise CurateError(f"output {output!r} has {len(rows)} committed rows; give a number below that")
            return rows[int(which)]
        found = next((r for r in rows if r["entity_id"] == which), None)
        if found is None:
            raise CurateError(f"output {output!r} has no row with entity id {which!r}")
        return found

    def last_run(self) -> dict | None:
        runs = self.manifest()["runs"]
        return runs[-1] if runs else None

    def metrics(self, run_id: str | None = None) -> tuple[str, dict]:
        """The id and metrics of a run (default: the latest that recorded metrics)."""
        runs = self.manifest()["runs"]
        if not runs:
            raise CurateError(f"{self.path} holds no curate run to report on")
        if run_id is None:
            run_id = next((r["run"] for r in reversed(runs) if "metrics" in r), runs[-1]["run"])
        path = f"{META}/{run_id}/metrics.json"
        if not self.loc.exists(path):
            status = next((r["status"] for r in runs if r["run"] == run_id), "unknown")
            raise CurateError(f"run {run_id} ({status}) saved no metrics; runs here: "
                              + ", ".join(f"{r['run']} {r['status']}" for r in runs))
        return run_id, json.loads(self.loc.read_text(path))


def new_run_id() -> str:
    import uuid

    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
