"""The viewer's pages: each route takes the request's query (a dict of str) and gives a Response.
The run summary, an output's table, one row, a dedup output's clusters and one cluster are
here; an input's own page (a document, a video) is in `curate.view.roots`."""

from __future__ import annotations

import json
import mimetypes
from dataclasses import dataclass
from pathlib import Path

from curate.errors import CurateError
from curate.view import media, roots
from curate.view.links import Links
from curate.view.render import environment
from curate.view.site import NotFound, Site
from curate.view.tables import Query

ASSETS = {"view.css": "text/css; charset=utf-8"}  # the bundled files /assets/ serves, and no other
CAUSES_SHOWN = 10
CLUSTERS_PAGE = 50  # clusters listed on one page of a dedup output


@dataclass
class Response:
    status: int
    content_type: str
    body: bytes = b""
    file: Path | None = None  # served from disk (a clip, an asset) instead of `body`


class Views:
    """Every page of one output directory's site."""

    def __init__(self, site: Site, links: Links):
        self.site, self.links = site, links
        self.env = environment()
        self.routes = {"": self.summary, "table": self.table, "row": self.row, "root": self.root,
                       "dedup": self.dedup, "cluster": self.cluster, "pageimg": self.page_image,
                       "frame": self.frame, "file": self.file, "timeline": self.timeline}

    def get(self, route: str, params: dict[str, str]) -> Response:
        """The page of `route` (a path without its leading '/'); a 404 page for anything the
        output directory does not have."""
        if route.startswith("assets/"):
            return self.asset(route[len("assets/"):])
        handler = self.routes.get(route)
        try:
            if handler is None:
                raise NotFound(f"no page /{route} here")
            return handler(params)
        except NotFound as exc:
            return self._html("error.html", status=404, title="not found", message=str(exc))
        except CurateError as exc:  # e.g. a library the page needs is not installed
            return self._html("error.html", status=500, title="error", message=str(exc))

    def _html(self, template: str, status: int = 200, **context) -> Response:
        context.setdefault("out", str(self.site.dir.path))
        context.setdefault("nav", self._nav())
        html = self.env.get_template(template).render(links=self.links, **context)
        return Response(status, "text/html; charset=utf-8", html.encode())

    def _nav(self) -> list[tuple[str, str | None]]:
        """The header's links: each output's table, each dedup output's clusters."""
        try:
            return ([(n, self.links.url("table", o=n)) for n in self.site.outputs()]
                    + [(n, self.links.url("dedup", o=n)) for n in self.site.dedup_outputs()])
        except CurateError:  # a manifest that cannot be read: the page says why, without links
            return []

    # ---- pages ------------------------------------------------------------------------------
    def summary(self, params) -> Response:
        site = self.site
        man = site.manifest()
        counts = site.dir.counts()
        causes = site.dir.top_causes(CAUSES_SHOWN)
        runs = man.get("runs", [])
        report = _report(site, runs)
        dedups = [(name, _dedup_counts(site.dedup_rows(name))) for name in site.dedup_outputs()]
        return self._html("summary.html", title="run summary", outputs=site.outputs(), counts=counts,
                          causes=[(c, n, _example_link(self.links, ex)) for c, n, ex in causes], runs=runs,
                          reruns=man.get("reruns", []), report=report, dedups=dedups,
                          recipe=_recipe_name(man.get("recipe")), statuses=_statuses(counts))

    def table(self, params) -> Response:
        output = self.site.check_output(params.get("o", ""))
        query = Query.from_params(params)
        page = self.site.table(output).page(query)
        heavy = self.site.table(output).heavy
        return self._html("table.html", title=output, output=output, page=page, query=query, heavy=heavy,
                          domain=self.site.outputs()[output])

    def row(self, params) -> Response:
        output = self.site.check_output(params.get("o", ""))
        row = self.site.row(output, params.get("id", ""))
        fields = {k: v for k, v in row.items() if k not in ("markdown", "caption")}
        texts = {k: row[k] for k in ("markdown", "caption") if isinstance(row.get(k), str)}
        files = media.file_columns(self.site, output, row)
        return self._html("row.html", title=f"{output} {row['entity_id']}", output=output, row=row,
                          fields=fields, texts=texts, files=files,
                          as_json=lambda v: json.dumps(v, default=str, ensure_ascii=False, indent=1))

    def root(self, params) -> Response:
        return roots.page(self, params.get("key", ""))

    def dedup(self, params) -> Response:
        name = self.site.check_output(params.get("o", ""), dedup=True)
        rows = self.site.dedup_rows(name)
        clusters = _clusters(rows)
        page = int(params["page"]) if params.get("page", "").isdigit() else 0
        shown = clusters[page * CLUSTERS_PAGE:(page + 1) * CLUSTERS_PAGE]
        pages = max(1, -(-len(clusters) // CLUSTERS_PAGE))
        return self._html("dedup.html", title=name, name=name, clusters=shown, page=page, pages=pages,
                          totals=_dedup_counts(rows))

    def cluster(self, params) -> Response:
        name = self.site.check_output(params.get("o", ""), dedup=True)
        cluster_id = params.get("c", "")
        members = self.site.dedup_rows(name, cluster_id)
        if not members:
            raise NotFound(f"dedup output {name!r} has no cluster {cluster_id!r}")
        source = name[: -len("_dedup")]
        members.sort(key=lambda r: (not r.get("keep"), r["entity_id"]))
        texts = []
        for m in members:
            try:
                texts.append(self.site.row(source, m["entity_id"]))
            except NotFound:
                texts.append(None)
        return self._html("cluster.html", title=f"cluster {cluster_id}", name=name, source=source,
                          cluster_id=cluster_id, members=list(zip(members, texts)),
                          preview=media.preview_column(texts))

    # ---- bytes ------------------------------------------------------------------------------
    def page_image(self, params) -> Response:
        n = params.get("n", "")
        if not n.isdigit():
            raise NotFound(f"page {n!r}: give the page's number (its ordinal)")
        png = media.page_png(self.site.input_file(params.get("key", "")), int(n))
        return Response(200, "image/png", png)

    def frame(self, params) -> Response:
        return Response(200, "image/jpeg", media.video_frame(self.site, params.get("key", ""), params.get("t", "")))

    def file(self, params) -> Response:
        path = self.site.payload_file(params.get("o", ""), params.get("p", ""))
        ctype = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        return Response(200, ctype, file=path)

    def timeline(self, params) -> Response:
        return Response(200, "image/png", media.timeline_png(self.site, params.get("run", "")))

    def asset(self, name: str) -> Response:
        if name not in ASSETS:
            return self._html("error.html", status=404, title="not found", message=f"no asset {name!r}")
        return Response(200, ASSETS[name], file=Path(__file__).parent / "assets" / name)


def _statuses(counts: dict) -> list[str]:
    order = ["present", "dropped", "failed", "suppressed"]
    seen = {st for c in counts.values() for st in c}
    return [s for s in order if s in seen] + sorted(seen - set(order))


def _example_link(links: Links, example: str) -> tuple[str, str | None]:
    """`top_causes`' example text ("<output> <entity id> (input <key>)") and the row's link."""
    output, _, rest = example.partition(" ")
    entity = rest.split(" (input ", 1)[0]
    return example, links.url("row", o=output, id=entity)


def _recipe_name(text: str | None) -> str | None:
    if not text:
        return None
    for line in text.splitlines():
        if line.startswith("name:"):
            return line.split(":", 1)[1].strip().strip("'\"")
    return None


def _report(site: Site, runs: list[dict]) -> dict | None:
    """The latest run with metrics: its id and its report's text (Markdown, no timeline)."""
    try:
        run, metrics = site.dir.metrics()
    except CurateError:
        return None
    from curate.report import summary_markdown

    text = summary_markdown(metrics, title=f"run {run}")
    text = text.split("\n## Timeline", 1)[0].split("\n", 1)[1]  # the title is the page's own
    return {"run": run, "markdown": text, "timeline": media.timeline_available()}


def _clusters(rows: list[dict]) -> list[dict]:
    """The clusters with more than one member, largest first: id, size, representative."""
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["cluster_id"], []).append(r)
    out = [{"id": cid, "size": len(ms), "kept": next((m["entity_id"] for m in ms if m.get("keep")), None),
            "method": ", ".join(sorted({str(m.get("method")) for m in ms if not m.get("keep")}))}
           for cid, ms in by.items() if len(ms) > 1]
    return sorted(out, key=lambda c: (-c["size"], c["id"]))


def _dedup_counts(rows: list[dict]) -> dict:
    clusters = {r["cluster_id"] for r in rows}
    dups = sum(1 for r in rows if not r.get("keep"))
    return {"rows": len(rows), "clusters": len(clusters), "duplicates": dups,
            "with_duplicates": len({r["cluster_id"] for r in rows if not r.get("keep")})}
