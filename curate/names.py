"""Plain names: what may name an output (a directory under the output directory), a payload
column written as files, and a file extension; and the lineage columns every row carries.
Declarations refuse other names at plan time; the writers check the resolved paths again."""

from __future__ import annotations

import re
import unicodedata

LINEAGE_COLUMNS = ("root_key", "entity_id", "parent_id", "ordinal", "lineage", "status", "cause_kind", "cause")
FILES_DIR = "_files"  # payload files of an output: out/<name>/_files/<column>/<digest><ext>

MAX_NAME = 100  # characters of an output name or a files column
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_NAME_CHAR = re.compile(r"[A-Za-z0-9_.-]")
_EXT_PART = re.compile(r"[A-Za-z0-9]{1,16}")
MAX_EXT_PARTS = 4  # ".tar.gz" has 2


def name_problem(name) -> str | None:
    """Why `name` cannot name an output directory or a payload column, or None when it can:
    one path component that starts with a letter or digit, then letters, digits, '_', '-',
    '.', at most MAX_NAME characters. A leading '_' is curate's (`_curate/`, `_files/`), a
    leading '.' a hidden file (and '.', '..' leave the directory)."""
    if not isinstance(name, str):
        return f"is not text (it is of type {type(name).__name__})"
    if not name:
        return "is empty"
    for sep in ("/", "\\"):
        if sep in name:
            return f"has {sep!r}, a path separator: it must be one plain name, not a path"
    if name[0] == "_":
        return "starts with '_', which is reserved for curate's own files (out/_curate/, _files/)"
    if name[0] == ".":
        return "starts with '.', which makes a hidden file ('.' and '..' even leave the directory)"
    if len(name) > MAX_NAME:
        return f"is {len(name)} characters long; at most {MAX_NAME} are allowed"
    bad = next((c for c in name if not _NAME_CHAR.fullmatch(c)), None)
    if bad is not None or not _NAME.fullmatch(name):
        return f"has the character {bad!r}; only letters, digits, '_', '-' and '.' are allowed"
    return None


def suggest_name(name, default: str) -> str:
    """A plain name close to `name` (for the fix of a problem): a path's last part, with
    other characters replaced by '_'; or `default`."""
    last = next((p for p in reversed(re.split(r"[/\\]", str(name))) if p.strip("._-")), "")
    text = re.sub(r"[^A-Za-z0-9_.-]+", "_", last).strip("._-")[:MAX_NAME].rstrip("._-")
    return text if text and name_problem(text) is None else default


def plain_extension(ext) -> str | None:
    """`ext` with a leading dot if it is a plain file extension ('.jpg', 'jpg', '.tar.gz':
    dot-separated letters and digits, 1-16 per part, at most MAX_EXT_PARTS parts); else None."""
    if not isinstance(ext, str):
        return None
    body = ext[1:] if ext.startswith(".") else ext
    parts = body.split(".")
    if not body or len(parts) > MAX_EXT_PARTS or not all(_EXT_PART.fullmatch(p) for p in parts):
        return None
    return "." + body


TEMPLATE_FIELDS = ("name", "key", "ordinal", "lineage")  # besides the row's own payload fields
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def file_spec(spec) -> tuple[str, str | None] | None:
    """(extension with its dot, name template or None) of a `files=` value: an extension
    ('.jpg'), or a mapping {"ext": ".md", "name": "{key}/{route}/{key}"}; None if it is neither."""
    if isinstance(spec, str):
        ext = plain_extension(spec)
        return (ext, None) if ext else None
    if isinstance(spec, dict) and set(spec) <= {"ext", "name"} and "ext" in spec:
        ext = plain_extension(spec["ext"])
        name = spec.get("name")
        if ext is None or (name is not None and template_problem(name) is not None):
            return None
        return ext, name
    return None


def template_problem(template) -> str | None:
    """Why a file name template is not safe, or None: '/'-separated parts, each a plain name
    once its {placeholders} are filled (every filled value is made a plain name too)."""
    if not isinstance(template, str) or not template:
        return "is not a non-empty text"
    for part in template.split("/"):
        why = name_problem(_PLACEHOLDER.sub("x", part))
        if why is not None:
            return f"has the part {part!r}, which {why}"
    return None


MAX_FILE_NAME_BYTES = 255  # one path component, in UTF-8 bytes: NAME_MAX of ext4, XFS, btrfs, APFS
MAX_FIELD_BYTES = 120  # one filled template value: two of them and an extension fit in one name
TMP_SUFFIX = ".tmp"  # a payload file is written as <name>.tmp, then renamed: its name needs room for it
_UNSAFE_IN_NAME = frozenset('/\\<>:"|?*')  # separators, and what Windows reserves in a file name
_REPLACED = "\x00"  # marks a dropped character while a name is cleaned (NUL never survives it)


def file_part(text, default: str) -> str:
    """`text` as one safe component of a file name (a filled template value): in NFC, with
    Unicode letters, digits, marks and punctuation kept (`Résumé — 論文 (v2) #1` stays
    readable), and only what is unsafe in a path replaced by one '_' per run: separators,
    <>:"|?*, control and format characters (NUL, bidi overrides), lone surrogates, whitespace.
    Leading and trailing '.', '_', '-' go (no hidden file, no '..', no option-like name); then
    it is cut to MAX_NAME characters and MAX_FIELD_BYTES bytes on a character boundary.
    `default` if nothing is left."""
    text = unicodedata.normalize("NFC", str(text))
    kept = "".join(_REPLACED if ch in _UNSAFE_IN_NAME or ch.isspace() or unicodedata.category(ch)[0] in "CZ"
                   else ch for ch in text)
    kept = re.sub(f"{_REPLACED}+", "_", kept).strip("._-")
    kept = cut_bytes(kept[:MAX_NAME], MAX_FIELD_BYTES).rstrip("._-")
    return kept or default


def cut_bytes(text: str, limit: int) -> str:
    """`text` cut to at most `limit` bytes of UTF-8, on a character boundary."""
    data = text.encode("utf-8", "surrogatepass")
    return text if len(data) <= limit else data[:limit].decode("utf-8", "ignore")


def fill_template(template: str, fields: dict, ext: str = "") -> str:
    """The relative path a template names for one row, the file's extension `ext` added: each
    placeholder replaced by its field made a safe name part (`file_part`; a missing field by
    'none'), so no value can add a separator or leave the directory; and each part cut to fit
    MAX_FILE_NAME_BYTES (the last one with `ext` and TMP_SUFFIX)."""
    filled = _PLACEHOLDER.sub(lambda m: file_part(fields.get(m.group(1), "none"), "none"), template).split("/")
    room = MAX_FILE_NAME_BYTES - len((ext + TMP_SUFFIX).encode())
    parts = [cut_bytes(p, MAX_FILE_NAME_BYTES).rstrip("._-") or "none" for p in filled[:-1]]
    return "/".join(parts + [(cut_bytes(filled[-1], room).rstrip("._-") or "none") + ext])
