"""HTML from hostile text: Jinja2 with autoescaping on for every template, and Markdown through
markdown-it-py whose raw HTML passes through a whitelist: the tags of a table (curate writes a
table with merged cells as HTML inside its Markdown) with their `rowspan` and `colspan`, and
nothing else (a `<script>` or an `<img onerror>` in a PDF's text is shown as text). Links are
limited to http(s), mailto and in-page anchors, and images are shown as their alt text (no
request leaves the page for a URL found in the data). The pages also carry a Content-Security-Policy that
allows no script at all: escaping is the first wall, the policy the second."""

from __future__ import annotations

import json
import math
from functools import lru_cache
from html.parser import HTMLParser

from curate.deps import require

# No script runs on any page (there is none), no request leaves the site; the server's header also
# says that nothing may embed it (a <meta> policy cannot: an exported page carries the rest).
CSP_META = ("default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'self'; "
            "form-action 'self'; base-uri 'none'")
CSP = CSP_META + "; frame-ancestors 'none'"
SAFE_SCHEMES = ("http:", "https:", "mailto:", "#")
SHORT_TEXT = 120  # characters of a text cell shown in a table; the row's page shows all of it
TABLE_TAGS = {"table", "thead", "tbody", "tfoot", "tr", "th", "td", "caption", "br"}
SPAN_ATTRS = {"rowspan", "colspan"}  # kept when their value is a number


@lru_cache(maxsize=1)
def _markdown():
    markdown_it = require("markdown_it", "curate view (rendering Markdown)")
    md = markdown_it.MarkdownIt("commonmark", {"html": True, "linkify": False, "typographer": False})
    md.enable("table")
    md.enable("strikethrough")
    md.validateLink = lambda url: url.strip().lower().startswith(SAFE_SCHEMES)

    def image(renderer, tokens, idx, options, env):  # the alt text, escaped: no fetch of the data's URLs
        alt = renderer.renderInlineAsText(tokens[idx].children or [], options, env)
        return f'<span class="img-alt">[image: {_escape(alt)}]</span>'

    def html(renderer, tokens, idx, options, env):  # raw HTML: table tags only, the rest as text
        return sanitize(tokens[idx].content)

    md.add_render_rule("image", image)
    md.add_render_rule("html_block", html)
    md.add_render_rule("html_inline", html)
    return md


class _Whitelist(HTMLParser):
    """Re-emits TABLE_TAGS (with numeric spans) and escapes everything else, tags included."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in TABLE_TAGS:
            self.out.append(_escape(self.get_starttag_text() or ""))
            return
        kept = "".join(f' {k}="{int(v)}"' for k, v in attrs if k in SPAN_ATTRS and (v or "").isdigit() and len(v) < 4)
        self.out.append(f"<{tag}{kept}>")

    def handle_startendtag(self, tag, attrs):
        self.out.append("<br>" if tag == "br" else _escape(self.get_starttag_text() or ""))

    def handle_endtag(self, tag):
        self.out.append(f"</{tag}>" if tag in TABLE_TAGS and tag != "br" else _escape(f"</{tag}>"))

    def handle_data(self, data):
        self.out.append(_escape(data))

    def handle_comment(self, data):
        self.out.append(_escape(f"<!--{data}-->"))

    def handle_decl(self, decl):
        self.out.append(_escape(f"<!{decl}>"))

    def handle_pi(self, data):
        self.out.append(_escape(f"<?{data}>"))

    def unknown_decl(self, data):
        self.out.append(_escape(f"<![{data}]>"))


def sanitize(html: str) -> str:
    """`html` with only TABLE_TAGS left as markup (see the module docstring)."""
    parser = _Whitelist()
    parser.feed(html)
    parser.close()
    rest = parser.rawdata  # an unfinished tag at the end ("<scr"): text
    return "".join(parser.out) + (_escape(rest) if rest else "")


def markdown_html(text: str | None) -> str:
    """`text` as HTML (see the module docstring): safe to insert unescaped. A table column's
    alignment becomes a class (`ta-right`): the policy allows no inline style."""
    md = _markdown()
    env: dict = {}
    tokens = md.parse(text or "", env)
    for t in tokens:
        style = t.attrs.pop("style", None) if t.type in ("th_open", "td_open") else None
        if isinstance(style, str) and style.startswith("text-align:"):
            t.attrs["class"] = "ta-" + style.split(":", 1)[1].strip()
    return md.renderer.render(tokens, md.options, env)


def _escape(text: str) -> str:
    from markupsafe import escape

    return str(escape(text))


def environment():
    """The Jinja2 environment of the viewer's templates (bundled in the package)."""
    jinja2 = require("jinja2", "curate view")
    env = jinja2.Environment(loader=jinja2.PackageLoader("curate.view", "templates"),
                             autoescape=True,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters.update(markdown=lambda t: _safe(markdown_html(t)), cell=cell,
                       short=short, number=number)
    env.globals.update(CSP=CSP_META)
    return env


def _safe(html: str):
    from markupsafe import Markup

    return Markup(html)


def cell(value) -> str:
    """A table cell's text: numbers rounded, lists and dicts as short JSON, text cut."""
    if value is None:
        return ""
    if isinstance(value, float):
        return number(value)
    if isinstance(value, (list, tuple, dict)):
        return short(json.dumps(value, default=str, ensure_ascii=False))
    return short(str(value))


def short(text: str, n: int = SHORT_TEXT) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def number(x) -> str:
    if x is None:
        return ""
    if isinstance(x, bool) or not isinstance(x, float):
        return str(x)
    if math.isnan(x):
        return "nan"
    return f"{x:.4g}" if abs(x) < 1e6 else f"{x:,.0f}"
