"""File inputs given as paths, globs or directories: expanded before a run starts, each file
with the input root its key is relative to.

A file's root key is `<its path relative to its input root>@<16 hex of its sha256>`
(`sources.keyed_path`), where the input root is
- for a glob, the deepest directory before its first wildcard part, made absolute
  (`in2/*.pdf` run in /w and `/w/in2/*.pdf` run anywhere both have the root /w/in2);
- for a directory, the directory itself (its files are found recursively, see `dir_files`);
- for a file, its parent directory (the key is `name@hash`).
So a key depends neither on the working directory nor on how a glob was spelled, and a
resumed run skips what an earlier run committed. A URL input (`s3://b/pdfs/*.pdf`, a prefix,
an object) is listed by `curate.io.listing`, with the same roots and error behaviour; its
objects' hashes come from the store's listing (ETag and size), so no object is read to key it.
`check_resume` refuses a resume whose inputs are rooted elsewhere (the same content under
another key), before anything starts."""

from __future__ import annotations

import os
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from curate.errors import RootKeyError
from curate.io import sources
from curate.io.remote import is_url

WILDCARDS = "*?["  # what makes an input a glob (as in the standard glob)
CONFLICTS_SHOWN = 3  # files named in a refused resume's error: enough to see the pattern


def is_glob(spec: str) -> bool:
    """Whether an input is a glob pattern rather than a path."""
    return any(ch in spec for ch in WILDCARDS)


def glob_root(pattern: str, base_dir: str | os.PathLike = ".") -> str:
    """The absolute directory before the first wildcard part of `pattern` (relative patterns
    start at `base_dir`): `docs/**/*.pdf` -> BASE/docs, `*.pdf` -> BASE."""
    parts = pattern.split(os.sep)
    fixed = parts[:next(i for i, p in enumerate(parts) if is_glob(p))] if is_glob(pattern) else parts[:-1]
    prefix = os.sep.join(fixed) or (os.sep if os.path.isabs(pattern) else ".")
    return os.path.abspath(os.path.join(os.fspath(base_dir), prefix))


def dir_files(directory: str, extensions: Sequence[str] = ()) -> list[str]:
    """The regular files under `directory`, recursively, sorted by path: those whose name ends
    with one of `extensions` (any case), or every one if none are given. Hidden names (a
    leading `.`) are skipped, and a link back to a directory already walked is not followed
    (the loop-safe walk of `sources.glob`)."""
    ends = tuple(e.lower() for e in extensions)
    found = (os.path.join(directory, m) for m in sources.below(directory))
    return sorted(f for f in found if os.path.isfile(f) and (not ends or f.lower().endswith(ends)))


@dataclass
class Group:
    """The files one input (a glob, a directory or a file) names, sorted, and their root."""

    spec: str  # the input as given
    kind: str  # glob | directory | file
    root: str  # absolute: keys are relative to it
    paths: list[str]  # absolute
    digests: array = field(default_factory=lambda: array("Q"))  # content hashes, once computed (0: not yet)

    def absolute(self) -> str:
        """The input spelled absolutely, with the same root: what a resume elsewhere can pass."""
        if is_url(self.spec):
            return self.spec
        if self.kind != "glob":
            return self.paths[0] if self.kind == "file" else self.root
        parts = self.spec.split(os.sep)
        first = next(i for i, p in enumerate(parts) if is_glob(p))
        return os.path.join(self.root, *parts[first:])

    def describe(self) -> dict:
        """What the manifest records of this input."""
        return {"input": self.spec, "kind": self.kind, "root": self.root, "files": len(self.paths),
                "absolute": self.absolute()}


def expand(specs: Sequence[str], base_dir: str | os.PathLike = ".", extensions: Sequence[str] = ()) -> FileInputs:
    """The files that `specs` (paths, globs, directories; relative ones start at `base_dir`)
    name, in input order, each group sorted. A glob that matches no file, a path that does not
    exist and a directory with no file to read raise one SourceError naming every such input."""
    groups, problems = [], []
    for spec in specs:
        try:
            groups.append(_group(os.fspath(spec), os.fspath(base_dir), extensions))
        except sources.SourceError as exc:
            problems.append(str(exc))
    problems += _named_twice(groups)
    if problems:
        raise sources.SourceError("; ".join(problems))
    return FileInputs(groups)


def _named_twice(groups: list[Group]) -> list[str]:
    """A file two inputs name would get a key under each root and be read twice: refused."""
    first: dict[str, str] = {}
    out = []
    for g in groups:
        for p in g.paths:
            other = first.setdefault(p, g.spec)
            if other != g.spec and len(out) < CONFLICTS_SHOWN:
                out.append(f"{p} is named by input {other!r} and by input {g.spec!r}; give each file once")
    return out


def _group(spec: str, base_dir: str, extensions: Sequence[str]) -> Group:
    if is_url(spec):
        from curate.io import listing

        kind, root, urls, digests = listing.expand(spec, extensions)
        return Group(spec, kind, root, urls, array("Q", (int(d, 16) for d in digests)))
    if is_glob(spec):
        files = sorted(os.path.abspath(p) for p in sources.glob(spec, base_dir))
        return Group(spec, "glob", glob_root(spec, base_dir), files)
    full = os.path.abspath(os.path.join(base_dir, spec))
    if os.path.isdir(full):
        files = dir_files(full, extensions)
        if not files:
            wanted = f"named *{', *'.join(extensions)}" if extensions else "that is not hidden"
            raise sources.SourceError(f"input directory {spec!r} ({full}) holds no file {wanted} (searched "
                                      "recursively); check the directory, or give the files or a glob")
        return Group(spec, "directory", full, files)
    if not os.path.exists(full):
        raise sources.SourceError(f"input {spec!r} does not exist ({full}); check the path (relative paths "
                                  "start at the working directory), or quote a glob so the shell leaves it")
    return Group(spec, "file", os.path.dirname(full), [full])


class FileInputs(Sequence):
    """The files of several inputs, in order; `key(path)` is each one's root key. Holds the
    path strings and 8 bytes a file for its content hash, computed once (by `key` or
    `check_resume`)."""

    def __init__(self, groups: list[Group]):
        self.groups = groups
        self._ends: list[int] = []  # cumulative file counts: a flat index -> its group
        for g in groups:
            self._ends.append((self._ends[-1] if self._ends else 0) + len(g.paths))

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def __getitem__(self, i: int) -> str:  # type: ignore[override]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        g = bisect_right(self._ends, i)
        return self.groups[g].paths[i - (self._ends[g - 1] if g else 0)]

    def __iter__(self) -> Iterator[str]:
        for g in self.groups:
            yield from g.paths

    def key(self, path: str) -> str:
        """`<path relative to its input's root>@<content hash>`; a path of no input: `name@hash`."""
        for g in self.groups:
            i = bisect_left(g.paths, path)
            if i < len(g.paths) and g.paths[i] == path:
                if is_url(path):  # hashed from the listing, at expansion
                    from curate.io.listing import relative

                    return f"{relative(path, g.root)}@{g.digests[i]:016x}"
                return sources.keyed_path(path, g.root, _digest(g, i))
        return sources.path_key(path, os.path.dirname(os.path.abspath(path)))

    def describe(self) -> list[dict]:
        """Each input's spec, kind, root and file count, for the manifest."""
        return [g.describe() for g in self.groups]


def _digest(g: Group, i: int) -> str:
    """File `i` of `g`'s content hash, computed once; an unreadable file is looked at again."""
    if not g.digests:
        g.digests = array("Q", bytes(8 * len(g.paths)))
    if g.digests[i]:
        return f"{g.digests[i]:016x}"
    d = sources.file_digest(g.paths[i])
    if d != sources.MISSING and int(d, 16):
        g.digests[i] = int(d, 16)
    return d


def check_resume(files: FileInputs, key, committed: set[str], runs: list[dict]) -> None:
    """Refuse a resume whose inputs resolve differently from the runs before it: a file whose
    key is not committed while a committed key that no current input has holds the same
    content (a file seen under another root, or renamed). Resuming would write it twice."""
    if not committed:
        return
    current = {key(p) for p in files}
    by_hash = {}
    for k in committed - current:
        name, _, h = k.rpartition("@")
        if name and h != sources.MISSING:
            by_hash.setdefault(h, k)
    clashes = [(k, by_hash[h]) for k in sorted(current - committed)
               if (h := k.rpartition("@")[2]) in by_hash]
    if clashes:
        raise RootKeyError(_clash_message(clashes, files, runs))


def _clash_message(clashes: list[tuple[str, str]], files: FileInputs, runs: list[dict]) -> str:
    shown = "; ".join(f"{new!r} was committed as {old!r}" for new, old in clashes[:CONFLICTS_SHOWN])
    more = f" (and {len(clashes) - CONFLICTS_SHOWN} more)" if len(clashes) > CONFLICTS_SHOWN else ""
    before = next((r["inputs"] for r in reversed(runs) if r.get("inputs")), None)
    now = ", ".join(g.root for g in files.groups)
    if before:
        roots = ", ".join(i["root"] for i in before)
        again = " ".join(f"--input {_quote(i['absolute'])}" for i in before)
        where = (f"the run being resumed read its inputs with root(s) {roots}, this one with {now}; resume "
                 f"with that run's inputs, spelled to work from anywhere: {again} --resume")
    else:
        where = (f"this run's input root(s): {now}; resume with the inputs (and the working directory) "
                 "that wrote the directory")
    return (f"resuming would process {len(clashes)} file(s) again under new keys: {shown}{more}. Keys are "
            f"paths relative to each input's root plus a content hash; {where}, or use a new output "
            "directory (a file renamed since: also a new directory)")


def _quote(s: str) -> str:
    import shlex

    return shlex.quote(s)
