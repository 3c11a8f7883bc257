"""An input's own page: every row it has in every output, shown as what it is.

- A document (an output of page rows with `markdown`): each page's image, rendered from the
  input PDF, with its layout regions drawn and numbered in reading order (the page row's
  `layout`), beside its Markdown rendered as HTML, with its route, reason and attributes; the
  document's row and its figures.
- A video (an output of clip rows with `start_s` and `end_s`): its clips in time order, each
  with its clip file in a `<video>` element (or a frame of the input at the clip's middle
  where it has none: a DROPPED clip), its caption, scores and decisions, and why a DROPPED or
  FAILED clip is.
- Anything else: each output's rows of the input as cards."""

from __future__ import annotations

from curate.view import media
from curate.view.site import NotFound

PAGE_TEXT = ("markdown",)  # a page row's text columns (the rest are attributes)
CLIP_TEXT = ("caption",)
ROOT_TEXT = ("markdown", "summary", "captions")  # an input's own row: its text is on the page already
HIDDEN = ("layout", "titles", "hyphens", "lineage", "root_key", "parent_id", "entity_id")


def root_kind(site) -> str:
    """What an input of this directory is, for its page's title: document, video or input (from
    the outputs' columns)."""
    cols = site.columns()
    return "video" if {"start_s", "end_s"} <= cols else "document" if "markdown" in cols else "input"


def page(views, key: str):
    """The page of the input with root key `key`."""
    site = views.site
    rows = site.root_rows(key)
    top = [(name, r, _attrs(r, ROOT_TEXT)) for name, rs in rows.items() for r in rs if len(r["lineage"]) == 1]
    children = {name: [r for r in rs if len(r["lineage"]) == 2] for name, rs in rows.items()}
    grandchildren = {name: [r for r in rs if len(r["lineage"]) > 2] for name, rs in rows.items()}
    kind = root_kind(site)
    context = dict(title=f"{kind} {key}", key=key, kind=kind, top=top, hidden=HIDDEN,
                   others={n: rs for n, rs in grandchildren.items() if rs})
    pages_out = next((n for n, rs in children.items() if any("markdown" in r for r in rs)), None)
    clips_out = next((n for n, rs in children.items() if any("start_s" in r and "end_s" in r for r in rs)), None)
    if kind == "document" and pages_out:
        return views._html("document.html", pages=_pages(views, key, children[pages_out], grandchildren),
                           pages_output=pages_out, **context)
    if kind == "video" and clips_out:
        return views._html("video.html", clips=_clips(views, key, clips_out, children[clips_out]),
                           clips_output=clips_out, **context)
    cards = {n: [(r, _attrs(r, ())) for r in rs] for n, rs in children.items() if rs}
    return views._html("root.html", children=cards, **context)


def _pages(views, key: str, rows: list[dict], below: dict[str, list[dict]]) -> list[dict]:
    """Each page row with what its template needs: image URL, its size in points as rendered,
    its layout boxes (in reading order), its attributes and figures."""
    try:
        path = views.site.input_file(key)
    except NotFound as exc:
        path, missing = None, str(exc)
    else:
        missing = None
    sizes = media.page_sizes(path) if path is not None else None
    if path is not None and sizes is None:
        missing = "the input's pages cannot be rendered here (PyMuPDF is not installed, or the file is encrypted)"
    out = []
    for r in sorted(rows, key=lambda r: r["ordinal"]):
        n = r["ordinal"]
        size = sizes[n] if sizes is not None and n < len(sizes) else None
        figures = [(name, f) for name, rs in below.items() for f in rs if f.get("parent_id") == r["entity_id"]]
        out.append({"row": r, "n": n, "size": size,
                    "image": views.links.url("pageimg", key=key, n=n) if size else None,
                    "boxes": _boxes(r.get("layout")), "missing": missing,
                    "attrs": _attrs(r, PAGE_TEXT), "figures": figures})
    return out


def _boxes(layout) -> list[dict]:
    """A page's layout regions as drawable boxes (reading order, kind, x, y, w, h in points)."""
    boxes = []
    for b in layout or ():
        try:
            x0, y0, x1, y1 = (float(b[k]) for k in ("x0", "y0", "x1", "y1"))
        except (KeyError, TypeError, ValueError):
            continue
        boxes.append({"order": b.get("order"), "kind": str(b.get("kind", "")), "x": x0, "y": y0,
                      "w": max(x1 - x0, 0.0), "h": max(y1 - y0, 0.0)})
    return sorted(boxes, key=lambda b: (b["order"] is None, b["order"] or 0))


def _clips(views, key: str, output: str, rows: list[dict]) -> list[dict]:
    """Each clip row in time order, with its preview (clip file or a frame) and attributes."""
    out = []
    for r in sorted(rows, key=lambda r: (r.get("start_s") is None, r.get("start_s") or 0.0, r["ordinal"])):
        files = media.file_columns(views.site, output, r)
        video = next(((c, rel) for c, (rel, k) in files.items() if k == "video"), None)
        frame = None
        if video is None and r.get("start_s") is not None and r.get("end_s") is not None:
            frame = views.links.url("frame", key=key, t=f"{(r['start_s'] + r['end_s']) / 2:.3f}")
        out.append({"row": r, "video": views.links.url("file", o=output, p=video[1]) if video else None,
                    "frame": frame, "scores": r.get("scores") if isinstance(r.get("scores"), dict) else {},
                    "attrs": _attrs(r, CLIP_TEXT + ("scores", "decisions"))})
    return out


def _attrs(row: dict, text: tuple) -> dict:
    """A row's short values for its attribute list (no text, lists or lineage columns)."""
    return {k: v for k, v in row.items() if k not in text and k not in HIDDEN and k not in ("status", "cause")
            and v is not None and not isinstance(v, (list, dict))}
