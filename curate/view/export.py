"""`curate view OUT --html DIR`: the site as static files, to open without a server (or to copy
elsewhere). It renders the run summary, then every page its links reach (`curate.view.links`
bounds how many), and writes the images and clip files those pages show under `media/`.

The directory is written afresh, but only over an earlier export (it holds MARKER) or an empty
directory, and never inside the output directory itself: the viewer writes nothing there."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from curate.errors import CurateError
from curate.view.links import Links, static_name
from curate.view.site import Site
from curate.view.views import ASSETS, Views

MARKER = ".curate-view"  # names a directory as an export, so that a new export may replace it
DEFAULT_MAX_INPUTS = 200  # inputs (documents, videos) whose own page an export writes


@dataclass(frozen=True)
class Export:
    """What an export wrote."""

    path: Path
    pages: int
    media: int
    missing: int  # images or files a page links to that could not be made (404: not written)
    bytes: int

    def summary(self) -> str:
        return (f"wrote {self.path}: {self.pages} pages, {self.media} media files ({self.bytes / 1e6:.1f} MB)"
                + (f"; {self.missing} images or files could not be made" if self.missing else ""))


def export(out, dest, max_inputs: int = DEFAULT_MAX_INPUTS) -> Export:
    """Write the site of output directory `out` into `dest` (see the module docstring)."""
    site = Site(out)
    dest = _prepare(site, Path(dest))
    links = Links(static=True, max_roots=max_inputs)
    views = Views(site, links)
    links.url("")  # the run summary first: every other page is reached from it
    pages = media = missing = size = 0
    while links.queue:
        route, params = links.queue.pop(0)
        resp = views.get(route, params)
        target = dest / static_name(route, params)
        is_media = target.parent.name == "media"
        if is_media and resp.status != 200:
            missing += 1
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if resp.file is not None:
            shutil.copyfile(resp.file, target)
        else:
            target.write_bytes(resp.body)
        size += target.stat().st_size
        media += is_media
        pages += not is_media
    (dest / "assets").mkdir(exist_ok=True)
    for name in ASSETS:
        shutil.copyfile(Path(__file__).parent / "assets" / name, dest / "assets" / name)
    return Export(dest, pages, media, missing, size)


def _prepare(site: Site, dest: Path) -> Path:
    if site.loc.remote:
        raise CurateError("curate view --html reads a local output directory; copy it here first")
    out = Path(site.loc.path()).resolve()
    dest = dest.resolve()
    if dest == out or out in dest.parents:
        raise CurateError(f"{dest} is inside the output directory {out}: the viewer writes nothing there; "
                          "give a directory outside it")
    if dest.exists():
        if not dest.is_dir():
            raise CurateError(f"{dest} is a file; give a directory for the exported site")
        if any(dest.iterdir()) and not (dest / MARKER).exists():
            raise CurateError(f"{dest} is not empty and holds no earlier export ({MARKER}); give a new or empty "
                              "directory")
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    (dest / MARKER).write_text(f"curate view export of {out}\n")
    return dest
