"""`curate view OUT [--port N] [--host H] [--html DIR]`."""

from __future__ import annotations


def add_parser(sub) -> None:
    from curate.view.export import DEFAULT_MAX_INPUTS
    from curate.view.server import DEFAULT_HOST, DEFAULT_PORT

    v = sub.add_parser("view", help="look at an output directory in a browser: run summary, tables with filters, "
                                    "documents page by page, videos clip by clip, dedup clusters")
    v.add_argument("out", help="the output directory")
    v.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to serve on (default {DEFAULT_PORT}; "
                                                                     "0: any free port)")
    v.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST}: this machine "
                                                        "only)")
    v.add_argument("--html", metavar="DIR", help="write the site as static files into DIR instead of serving it")
    v.add_argument("--max-inputs", type=int, default=DEFAULT_MAX_INPUTS,
                   help=f"with --html: inputs whose own page is written (default {DEFAULT_MAX_INPUTS})")
    v.set_defaults(func=cmd_view)


def cmd_view(args) -> int:
    if args.html:
        from curate.view.export import export

        print(export(args.out, args.html, max_inputs=args.max_inputs).summary())
        return 0
    from curate.view.server import serve

    serve(args.out, host=args.host, port=args.port)
    return 0
