"""`curate view`: a read-only web site over an output directory, served on 127.0.0.1 or
exported as static files.

- `site`: what is read (manifest, rows, the files that may be served), `tables`: an output as
  a filtered, sorted, paged table, `views` and `roots`: the pages, `media`: page images, video
  frames, the timeline, `render`: escaping and Markdown, `links`: URLs served or exported,
  `server` and `export`: the two ways out. Templates and the stylesheet are bundled.

    from curate.view import start
    server = start("out/pdfs")   # a background thread; server.url
"""

from __future__ import annotations


def start(out, host: str = "127.0.0.1", port: int = 0):
    """A server for output directory `out` answering in a background thread (see `server.start`)."""
    from curate.view.server import start as _start

    return _start(out, host, port)


def export(out, dest, max_inputs: int | None = None):
    """Write the site of `out` as static files into `dest` (see `export.export`)."""
    from curate.view.export import DEFAULT_MAX_INPUTS, export as _export

    return _export(out, dest, DEFAULT_MAX_INPUTS if max_inputs is None else max_inputs)
