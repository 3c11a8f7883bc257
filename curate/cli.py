"""`curate run | validate | recipes | inspect | show | report | eval | dedup | rerun | view`.

RECIPE is a recipe file, or the name of a recipe: bundled in `curate.recipes` or found on
CURATE_RECIPES_PATH (`curate recipes` lists them; see `curate.recipe.bundled`).

Exit codes: 0 success; 1 error (invalid recipe, refused or crashed run); 2 bad command
line; 3 partial failure (the run finished, but some inputs FAILED or were SUPPRESSED);
4 the Ray cluster was lost mid-run (what finished is committed, `--resume` continues); 130
interrupted (Ctrl-C: what finished is committed, `--resume` continues); 141 the reader of
stdout went away (`curate inspect OUT | head`): the rest of the output is dropped quietly."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from curate.ctrl_c import EXIT_INTERRUPTED, CommandCtrlC
from curate.errors import ClusterLostError, CurateError
from curate.io.commits import META
from curate.io.outdir import OutputDir
from curate.io.remote import is_url

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_PARTIAL, EXIT_CLUSTER_LOST = 0, 1, 2, 3, 4
EXIT_BROKEN_PIPE = 128 + 13  # what a shell reports for a command ended by SIGPIPE (`yes | head`)


def main(argv: list[str] | None = None) -> int:
    """Run one `curate` command; returns its exit code (see the module docstring)."""
    args = _parser().parse_args(argv)
    ctrl_c = CommandCtrlC()
    if argv is None:  # this process is the command (not a caller's main([...])): its Ctrl-C is ours
        ctrl_c.install()
    try:
        code = args.func(args)
        sys.stdout.flush()  # a reader that went away shows here, not as an error at interpreter exit
        return code
    except BrokenPipeError:
        return _stdout_closed()
    except ClusterLostError as exc:
        print(f"curate {args.command}: {exc}", file=sys.stderr)
        print(f"continue with: curate run {' '.join(_resume_argv(argv))}", file=sys.stderr)
        # Leave at once: Ray's exit handler would wait for the vanished cluster (Ray's core ends a
        # process whose cluster is gone about 60 s later, with a log line and this exit code lost).
        # Everything this run wrote is on disk and the manifest says "interrupted".
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_CLUSTER_LOST)
    except CurateError as exc:  # a problem the user must fix: no traceback
        print(f"curate {args.command}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt as exc:
        ctrl_c.done()  # while the KeyboardInterrupt is still being handled (see CommandCtrlC)
        from curate.run import RunInterrupted

        print(f"curate {args.command}: {str(exc) or 'interrupted'}", file=sys.stderr)
        if isinstance(exc, RunInterrupted):
            print(f"continue with: curate run {' '.join(_resume_argv(argv))}", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        ctrl_c.done()


def _stdout_closed() -> int:
    """The reader of stdout closed it (`| head`): stop quietly. Python's own advice: point
    stdout at devnull, so that the flush at interpreter exit does not raise a second time."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE


def _resume_argv(argv: list[str] | None) -> list[str]:
    """The command line of an interrupted run, with --resume."""
    import shlex

    args = list(sys.argv[1:] if argv is None else argv)[1:]
    return [shlex.quote(a) for a in args] + ([] if "--resume" in args else ["--resume"])


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="curate", description="Hierarchical data preparation: run recipes, "
                                "inspect and report their output.")
    sub = p.add_subparsers(dest="command", required=True)
    recipe_help = "a recipe file, or the name of a recipe (`curate recipes` lists them)"
    r = sub.add_parser("run", help="run a recipe into an output directory")
    r.add_argument("recipe", help=recipe_help)
    r.add_argument("--input", action="append", default=[],
                   help="input file, glob or directory, or their URLs (s3://bucket/pdfs/*.pdf, s3://bucket/pdfs/) "
                        "(repeatable; a directory: its files with the recipe's extensions, recursively); replaces "
                        "the recipe's input (needed if it has none)")
    r.add_argument("--output", help="output directory, or a prefix on object storage such as s3://bucket/out "
                   "(default: the recipe's run.output_dir)")
    r.add_argument("--address", help="Ray cluster: auto or HOST:PORT (default: a local Ray)")
    r.add_argument("--executor", choices=["ray", "local"], help="default: the recipe's, else ray")
    r.add_argument("--resume", action="store_true", help="continue a killed run: skip committed inputs")
    r.add_argument("--allow-changed-code", action="store_true",
                   help="with --resume: accept stages whose code or init changed since the directory was started")
    r.add_argument("--retry-failed", action="store_true",
                   help="resume, and run again the committed inputs that FAILED or were SUPPRESSED (also a file at "
                        "the same path with new content), replacing their rows; accepts changed stages")
    r.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE", help="override a recipe field")
    r.add_argument("--no-progress", action="store_true", help="no progress display")
    r.set_defaults(func=cmd_run)
    v = sub.add_parser("validate", help="check a recipe and its pipeline without running anything")
    v.add_argument("recipe", help=recipe_help)
    v.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE",
                   help="override a recipe field, as `curate run --set` does")
    v.set_defaults(func=cmd_validate)
    ls = sub.add_parser("recipes", help="list the recipes runnable by name, with their descriptions")
    ls.set_defaults(func=cmd_recipes)
    i = sub.add_parser("inspect", help="rows per output and status, top failure causes")
    i.add_argument("out", help="the output directory (or s3:// prefix) of a `curate run`")
    i.set_defaults(func=cmd_inspect)
    sh = sub.add_parser("show", help="print one row of an output: its lineage, status and a column's text")
    sh.add_argument("out", help="the output directory (or s3:// prefix) of a `curate run`")
    sh.add_argument("output", help="the output's name, e.g. documents")
    sh.add_argument("row", nargs="?", default="0", help="a row number in lineage order (default 0) or an entity id")
    sh.add_argument("--column", help="the column to print in full (default: the row's longest text)")
    sh.add_argument("--version", type=int, help="as it was after this version (1: the run's own rows; default: "
                                                "the latest, see `curate rerun`)")
    sh.set_defaults(func=cmd_show)
    rp = sub.add_parser("report", help="write report.png and summary.md for a run")
    rp.add_argument("out", help="the output directory (or s3:// prefix) of a `curate run`")
    rp.add_argument("--run", help="run id (default: the latest)")
    rp.set_defaults(func=cmd_report)
    _eval_parser(sub)
    from curate.dedup.cli import add_parser as _dedup_parser  # `curate dedup`: its own module

    _dedup_parser(sub)
    from curate.rerun.cli import add_parser as _rerun_parser  # `curate rerun`: its own module

    _rerun_parser(sub)
    from curate.view.cli import add_parser as _view_parser  # `curate view`: its own module

    _view_parser(sub)
    return p


def _eval_parser(sub) -> None:
    """`curate eval`'s arguments."""
    ev = sub.add_parser("eval", help="pass rates of olmOCR-Bench-style unit tests (JSONL) on runs' pages, by kind")
    ev.add_argument("outs", nargs="+", metavar="OUT",
                    help="output directory of a PDF recipe's run (several: side by side)")
    ev.add_argument("--tests", action="append", required=True, metavar="FILE.jsonl",
                    help="unit tests, one JSON object a line (repeatable)")
    ev.add_argument("--output", default="pages", help="the output holding one row per page (default: pages)")
    ev.add_argument("--failures", action="store_true", help="also list each failed test and why, per run")
    ev.add_argument("--json", metavar="PATH", help="write every test's outcome per run to PATH")
    ev.add_argument("--math", choices=("auto", "katex", "tex"), default="auto",
                    help="how math tests compare formulas: katex renders both in chromium (olmOCR-Bench's "
                         "check; scripts/setup-katex), tex compares normalised TeX; auto (default): katex "
                         "where chromium and KaTeX are installed, else tex, saying so")
    ev.set_defaults(func=cmd_eval)


def _load(args, input_given: bool = False):
    """The recipe a file path or a name means, and how it was found by name (None: a path)."""
    from curate.recipe import bundled, load_recipe

    path, found = bundled.resolve(args.recipe)
    return load_recipe(path, args.set, input_optional=True, input_given=input_given), found


def cmd_validate(args) -> int:
    from curate.core.plan import compile_plan
    from curate.recipe import bundled

    recipe, found = _load(args)
    plan = compile_plan(recipe.pipeline)
    where = f" ({found.path})" if found else ""
    from curate.rerun.build import compile_entries

    reruns = compile_entries(recipe.data)  # each rerun: entry builds as a recipe of its own
    print(f"{args.recipe}{where}: ok ({len(plan.calls)} calls on {len(plan.pools)} pools; outputs "
          f"{', '.join(plan.outputs)}" + (f"; rerun steps {', '.join(reruns)}" if reruns else "") + ")")
    _warn_missing_modules(recipe, plan)
    needed = bundled.input_needed(recipe, found, args.recipe)
    if needed:  # fine for a recipe meant for --input: a note, not an error
        print(f"curate validate: note: {needed}", file=sys.stderr)
        return EXIT_OK
    try:  # the data may not be there yet where the recipe is checked: a warning, not an error
        recipe.inputs()
    except CurateError as exc:
        print(f"curate validate: warning: {exc}", file=sys.stderr)
    return EXIT_OK


def _warn_missing_modules(recipe, plan) -> None:
    """A recipe may be checked where it will not run (a GPU recipe on a laptop): a warning."""
    from curate.defaults import DEFAULT_EXECUTOR
    from curate.deps import MissingDependencyError, check_installed, plan_needs

    try:
        check_installed(plan_needs(plan, executor=recipe.run_options.get("executor", DEFAULT_EXECUTOR),
                                       output_dir=True))
    except MissingDependencyError as exc:
        print(f"curate validate: warning: {exc}", file=sys.stderr)


def cmd_recipes(args) -> int:
    from curate.recipe import bundled

    for d in bundled.missing_dirs():
        print(f"curate recipes: warning: {d} (on {bundled.ENV_VAR}) is not a directory", file=sys.stderr)
    for line in bundled.listing():
        print(line)
    return EXIT_OK


def cmd_run(args) -> int:
    import curate as cu
    from curate.io.files import FileInputs
    from curate.recipe import bundled

    recipe, found = _load(args, input_given=bool(args.input))
    needed = None if args.input else bundled.input_needed(recipe, found, args.recipe)
    if needed:
        raise CurateError(needed)
    opts = dict(recipe.run_options)
    out = args.output or opts.pop("output_dir", None)
    opts.pop("output_dir", None)
    resume = args.resume or opts.pop("resume", False)  # the recipe's run: options, the flags over them
    progress = opts.pop("progress", True) and not args.no_progress
    if not out:
        raise CurateError("no output directory: pass --output DIR or set run.output_dir in the recipe")
    if recipe.dedup and is_url(out):  # before the run, not after it
        from curate.dedup.run import NOT_ON_STORAGE

        raise CurateError(f"recipe {recipe.name!r} has dedup: steps, and " + NOT_ON_STORAGE.format(out=out)
                          + "; or run it with --output DIR")
    if args.address:
        opts["address"] = args.address
    if args.executor:
        opts["executor"] = args.executor
    if opts.get("executor") == "local":
        opts.pop("address", None)
    if args.input:
        inputs, key = _cli_inputs(args.input, recipe.extensions), None  # the files key themselves
    else:  # a recipe's glob lists its files (a FileInputs, keyed as recipe.key keys them)
        inputs = recipe.inputs()
        key = None if isinstance(inputs, FileInputs) else recipe.key
    res = cu.run(recipe.pipeline, inputs, key=key, output_dir=out, resume=resume,
                 allow_changed_code=args.allow_changed_code, retry_failed=args.retry_failed, progress=progress,
                 recipe=recipe.text, **opts)
    print(f"wrote {out}: run {res.run_id}")
    if args.retry_failed:
        _retry_note(OutputDir(out).last_run() or {})
    for name, counts in res.counts.items():
        print(f"  {name}: " + ", ".join(f"{n} {st}" for st, n in sorted(counts.items())))
    print(res.metrics.summary())
    for done in recipe.run_dedup(out, address=opts.get("address")):  # the recipe's `dedup:` steps
        print(done.summary())
    bad = OutputDir(out).not_present_roots(recipe.pipeline.root.name)
    if bad:  # over the whole directory: a resumed run reports the failures of the runs before it
        print(f"{bad} inputs FAILED or were SUPPRESSED: `curate inspect {out}` lists the causes; once fixed, "
              "--retry-failed runs them again", file=sys.stderr)
        return EXIT_PARTIAL
    return EXIT_OK


def _retry_note(run: dict) -> None:
    """What a --retry-failed run replaced, and the stages it ran with changed code."""
    print(f"  retried {run.get('roots_retried', 0)} failed input(s): their new rows replace the old ones")
    if run.get("changed_code"):
        print(f"note: stage(s) {', '.join(run['changed_code'])} changed since the directory was started; the "
              "retried inputs ran the new code, the other committed rows keep the old results", file=sys.stderr)


def _cli_inputs(specs: list[str], extensions: tuple[str, ...]):
    """--input paths, globs and directories, expanded now (a directory: recursively, to the
    files with the recipe's `extensions`), each file keyed relative to its input's root
    (`curate.io.files`). Nothing to read (an empty glob, a missing path, a directory without
    such files) is an error before the run starts; the files found are counted on stderr."""
    from curate.io.files import expand

    files = expand(specs, Path.cwd(), extensions)
    for g in files.groups:
        print(f"curate run: --input {g.spec}: {len(g.paths)} file(s), keyed relative to {g.root}", file=sys.stderr)
    return files


def cmd_inspect(args) -> int:
    d = OutputDir(args.out)
    counts, causes, last = d.counts(), d.top_causes(), d.last_run()
    if last is not None and last["status"] != "completed":
        state = "was interrupted" if last["status"] in ("running", "interrupted") else "failed"
        print(f"the last run ({last['run']}) {state}" + (f": {last['error']}" if last.get("error") else "")
              + "; `curate run ... --resume` continues it\n")
    if not any(counts.values()):
        print("no rows committed yet")
    for name, c in counts.items():
        print(f"{name}: " + (", ".join(f"{n} {st}" for st, n in sorted(c.items())) or "no rows"))
    for v in d.manifest().get("reruns", []):  # versions beside the rows above (curate.rerun.versions)
        rows = "; ".join(f"{name} {sum(c.values())}" for name, c in (v.get("rows") or {}).items())
        print(f"version {v['version']} ({v['dir']}): rerun --step {v['step']}"
              + (f" --where {v['where']!r}" if v.get("where") else "") + f", {v['status']}"
              + (f", rows replaced: {rows}" if rows else ""))
    failed = d.failed_roots()
    if failed:
        print(f"\n{len(failed)} input(s) FAILED or were SUPPRESSED; after fixing the cause, "
              "`curate run ... --retry-failed` runs them again and replaces their rows")
    if causes:
        print(f"\ntop failure causes (of {sum(n for _, n, _ in causes)} rows shown):")
        for cause, n, example in causes:
            print(f"  {n:>6}  {cause}\n          e.g. {example}")
    return EXIT_OK


def cmd_show(args) -> int:
    d = OutputDir(args.out)
    row = d.row(args.output, args.row, version=args.version)
    texts = {k: v for k, v in row.items() if isinstance(v, str) and k not in ("root_key", "entity_id", "parent_id",
                                                                             "status", "cause", "cause_kind")}
    column = args.column or max(texts, key=lambda k: len(texts[k]), default=None)
    if column is not None and column not in row:
        raise CurateError(f"output {args.output!r} has no column {column!r}; its columns are {sorted(row)}")
    print(f"{args.output} {row['entity_id']} (lineage {row['lineage']}): {row['status']}"
          + (f", {row['cause']}" if row.get("cause") else ""))
    for k, v in row.items():
        if k != column and k not in ("entity_id", "lineage", "status", "cause") and v is not None:
            shown = v if not isinstance(v, str) or len(v) <= 80 else v[:77] + "..."
            print(f"  {k}: {shown}")
    if column is not None and row.get(column) is not None:
        print(f"--- {column} ---")
        print(row[column])
    return EXIT_OK


def _eval_pages(out: str, output: str) -> dict:
    """The pages of run directory `out` for `curate eval`; an error naming the fix when the
    directory holds no such output."""
    from curate.io.read import read_table
    from curate.modalities.pdf.eval import pages_from_rows

    from curate.io.location import location

    if not location(out).is_dir(output):
        raise CurateError(f"{out}: no output {output!r} here; give the output directory of a PDF recipe's run "
                          f"(`curate run pdf_to_markdown --output {out}`), or name the output with --output")
    cols = ["root_key", "ordinal", "status", "markdown"]
    return pages_from_rows(read_table(out, output).select(cols).to_pylist())


def cmd_report(args) -> int:
    from curate.report import write_report

    d = OutputDir(args.out)
    run, metrics = d.metrics(args.run)
    report = dict(title=f"curate run {run}", counts=d.counts(), causes=d.top_causes())
    if not d.loc.remote:
        written = write_report(metrics, d.run_dir(run), **report)
    else:  # drawn here, then each file put next to the run's metrics
        import tempfile

        with tempfile.TemporaryDirectory(prefix="curate-report-") as tmp:
            written = {}
            for kind, p in write_report(metrics, tmp, **report).items():
                rel = f"{META}/{run}/{Path(p).name}"
                d.loc.write_bytes(rel, Path(p).read_bytes())
                written[kind] = d.loc.show(rel)
    for kind, p in written.items():
        print(f"{kind}: {p}")
    return EXIT_OK


def cmd_eval(args) -> int:
    """Each run's pages against the tests; a table of pass rates by kind, a column per run."""
    import json

    from curate.modalities.pdf import eval as ev
    from curate.modalities.pdf.eval_math import math_check

    skipped: dict = {}
    tests = [t for f in args.tests for t in ev.load_tests(f, skipped)]
    if skipped:
        print("skipped (kinds curate eval does not run): " + ", ".join(f"{n} {k}" for k, n in skipped.items()),
              file=sys.stderr)
    math = math_check(args.math) if any(t["type"] == "math" for t in tests) else None
    columns = {}
    try:
        for out in args.outs:
            name = out if out not in columns else f"{out} ({len(columns)})"
            columns[name] = ev.evaluate(tests, _eval_pages(out, args.output), math)
    finally:
        if math is not None:
            math.close()
    print(f"{len(tests)} tests from {', '.join(args.tests)}")
    if math is not None:
        print(math.description)
    print(ev.table(columns))
    if args.failures:
        for name, outcomes in columns.items():
            failed = [o for o in outcomes if not o.passed]
            print(f"\n{name}: {len(failed)} failed")
            for o in failed:
                print(f"  {o.kind:<9}{o.id}: {o.why}")
    if args.json:
        from dataclasses import asdict

        Path(args.json).write_text(json.dumps({n: [asdict(o) for o in v] for n, v in columns.items()}, indent=1))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
