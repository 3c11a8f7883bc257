"""`curate rerun OUT --step STEP [--set K=V] [--where COND]`: the command's arguments and what it
prints (`curate.cli` registers it)."""

from __future__ import annotations


def add_parser(sub) -> None:
    """`curate rerun`'s arguments."""
    r = sub.add_parser("rerun", help="run one step again (and what follows it) on an output's committed rows, "
                                     "writing a new version beside the old")
    r.add_argument("out", help="the output directory (or s3:// prefix) of a `curate run`")
    r.add_argument("--step", help="the rerun entry of the recipe that wrote OUT, e.g. captions (see its rerun:)")
    r.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE",
                   help="override a field of that recipe, e.g. pools.captioner.init.model=DIR")
    r.add_argument("--where", metavar="COND", help="pick only the rows where COND holds, e.g. "
                   "\"ocr_confidence < 0.8\" (columns of the entry's select: output; default: every PRESENT row)")
    r.add_argument("--resume", action="store_true", help="continue the latest rerun, killed before it ended")
    r.add_argument("--address", help="Ray cluster: auto or HOST:PORT (default: a local Ray)")
    r.add_argument("--executor", choices=["ray", "local"], help="default: the recipe's, else ray")
    r.add_argument("--no-progress", action="store_true", help="no progress display")
    r.set_defaults(func=cmd_rerun)


def cmd_rerun(args) -> int:
    from curate.rerun import rerun

    opts = {k: v for k, v in (("address", args.address), ("executor", args.executor)) if v}
    if opts.get("executor") == "local":
        opts.pop("address", None)
    res = rerun(args.out, args.step, args.set, args.where, resume=args.resume, progress=not args.no_progress, **opts)
    print(res.summary())
    print(res.run.metrics.summary())
    return 0
