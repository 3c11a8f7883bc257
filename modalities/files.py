"""What every modality checks on an input path before it opens the file: that it is a regular
file with something in it, or an `InputError` that names the path, what it is instead and the fix.

A path can be many things that are not a file to read: missing, a dangling symlink, a symlink
loop (x.pdf -> y.pdf -> x.pdf: `os.path.exists` just says False, so "no such file" would send
the user looking for a file that is there), a directory, a named pipe or a device (opening a
FIFO blocks until something writes to it: the stage would hang), unreadable, or empty. Only
`os.stat` and `os.readlink` are used before the verdict, so no check can block.

An input given as a URL (`s3://b/k.pdf`) is checked on this node's copy of the object
(`cu.local_copy`: downloaded on first use, an InputError naming the URL if it cannot be read);
the stages then open `cu.local_copy(path)`, and every message names the URL.
"""

from __future__ import annotations

import errno
import os
import stat

import curate as cu

MAX_LINK_HOPS = 8  # links followed to show a loop (the OS gives up at 40)


def check_file(path: str, kind: str, name_glob: str) -> os.stat_result:
    """The `os.stat` of `path` if it is a regular, non-empty file; else an InputError naming it.
    `kind` is what the file should be ("PDF", "video"), `name_glob` how such files are named
    ("*.pdf"), for the fix of a directory. A URL: the stat of its local copy."""
    local = cu.local_copy(path)
    if local != path:  # an object of a store: a regular file once copied; it can only be empty
        st = os.stat(local)
        if st.st_size == 0:
            raise cu.InputError(f"{path}: the object is empty (0 bytes); upload the {kind} again")
        return st
    try:
        st = os.stat(path)
    except OSError as exc:
        raise cu.InputError(_unreachable(path, exc)) from None
    if stat.S_ISDIR(st.st_mode):
        raise cu.InputError(f"{path}: is a directory, not a {kind}; give the files inside it, "
                            f"e.g. --input '{os.path.join(path, name_glob)}'")
    if not stat.S_ISREG(st.st_mode):
        raise cu.InputError(f"{path}: not a regular file but {_special(st.st_mode)}, which is not read (opening it "
                            f"could wait forever for data); give the {kind} file itself")
    if st.st_size == 0:
        raise cu.InputError(f"{path}: the file is empty (0 bytes); download or export it again")
    return st


def _unreachable(path: str, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return (f"{path}: a symlink loop ({_chain(path)}): the link never reaches a file; replace the link with "
                "the file it should point to, or leave it out of the input")
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        if os.path.islink(path):
            return (f"{path}: a dangling symlink: it points to {os.readlink(path)!r}, which does not exist; fix the "
                    "link, or leave it out of the input")
        return (f"{path}: no such file; check the path (a relative path is relative to the working directory, or "
                "to the recipe's directory for a recipe's own input)")
    if exc.errno == errno.ENAMETOOLONG:
        return f"{path}: the path is too long for this file system; move or rename the file"
    return f"{path}: cannot be read ({exc.strerror or exc}); fix its permissions"


def _chain(path: str) -> str:
    """'x.pdf -> y.pdf -> x.pdf': the links of a loop, as written in them."""
    hops, seen, at = [os.path.basename(path) or path], {os.path.abspath(path)}, path
    for _ in range(MAX_LINK_HOPS):
        try:
            target = os.readlink(at)
        except OSError:
            break
        hops.append(target)
        at = os.path.join(os.path.dirname(at), target)
        if os.path.abspath(at) in seen:
            break
        seen.add(os.path.abspath(at))
    else:
        hops.append("...")
    return " -> ".join(hops)


def _special(mode: int) -> str:
    kinds = [(stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")]
    return next((name for test, name in kinds if test(mode)), "a special file")
