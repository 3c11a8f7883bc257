"""The viewer's URLs, served or exported. Served: `/route?query`. Exported (`curate view OUT
--html DIR`): every page a flat file named by its route and a digest of its query, every image
or clip under `media/`; each link a page renders queues its target, so the export writes the
pages its links reach, and no others.

An export bounds what it writes: tables filter on one facet at a time, in lineage order (a
range filter, a second facet or a sort needs the served site), and show at most
STATIC_TABLE_PAGES pages a view; a link past a bound is not written (the page shows the text
without a link)."""

from __future__ import annotations

import hashlib
from urllib.parse import urlencode

STATIC_TABLE_PAGES = 20  # pages (of tables.PAGE_ROWS rows) an export writes for each table view
MEDIA = {"pageimg": ".png", "timeline": ".png", "frame": ".jpg"}  # binary routes and their files


class Links:
    """URL maker for the pages; in an export it also records which targets to write."""

    def __init__(self, static: bool = False, max_roots: int | None = None):
        self.static = static
        self.max_roots = max_roots
        self.queue: list[tuple[str, dict]] = []
        self._seen: dict[tuple, str] = {}
        self._roots: set[str] = set()

    def url(self, route: str, **params) -> str | None:
        params = {k: str(v) for k, v in params.items() if v is not None}
        if not self.static:
            query = urlencode(sorted(params.items()))
            return f"/{route}" + (f"?{query}" if query else "")
        return self._file(route, params)

    def to(self, route: str, params: dict) -> str | None:
        """`url` with the query as a dict (keys such as `f.status` are not Python names)."""
        return self.url(route, **params)

    def asset(self, name: str) -> str:
        return f"assets/{name}" if self.static else f"/assets/{name}"

    def _file(self, route: str, params: dict) -> str | None:
        if not self._exportable(route, params):
            return None
        key = (route, tuple(sorted(params.items())))
        if key not in self._seen:
            self._seen[key] = static_name(route, params)
            self.queue.append((route, params))
        return self._seen[key]

    def _exportable(self, route: str, params: dict) -> bool:
        if route == "table":  # lineage order only: every sort of every facet would be pages without end
            facets = [k for k in params if k.startswith("f.")]
            ranged = any(k.startswith(("min.", "max.")) for k in params)
            return (len(facets) <= 1 and not ranged and "sort" not in params
                    and int(params.get("page", "0")) < STATIC_TABLE_PAGES)
        if route == "root" and self.max_roots is not None:
            key = params.get("key", "")
            if key not in self._roots and len(self._roots) >= self.max_roots:
                return False
            self._roots.add(key)
        return True


def static_name(route: str, params: dict) -> str:
    """The file an export writes for a route and its query."""
    if route == "" and not params:
        return "index.html"
    if route == "file":
        ext = "." + params.get("p", "").rsplit(".", 1)[-1] if "." in params.get("p", "") else ""
        ext = ext if ext[1:].isalnum() and len(ext) <= 8 else ""
        return f"media/{_digest(route, params)}{ext.lower()}"
    if route in MEDIA:
        return f"media/{_digest(route, params)}{MEDIA[route]}"
    return f"{route or 'index'}-{_digest(route, params)}.html"


def _digest(route: str, params: dict) -> str:
    text = route + "?" + urlencode(sorted(params.items()))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
