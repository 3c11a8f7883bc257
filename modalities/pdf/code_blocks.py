"""Is a block of monospaced text code? The one rule both region makers use (`regions._classify`
and `layout_regions._region`): a code block is fenced with its line breaks, anything else is
text whose lines join into a paragraph and whose line-end hyphens are resolved.

A monospaced font alone is no evidence: a typewritten letter, a plain-text RFC or a scanned book
whose OCR text layer is set in Courier are prose (issue 38: a 19th-century book page came out in
a fence, `five-` and `shift` on two lines). Code is a monospaced block whose lines look like
code (`is_code_line`): a call or an index (`f(x)`, `a[i]`), an operator (`==`, `+=`, `->`,
`&&`, ` = `), a brace, an identifier with an underscore, an HTML tag, a command-line flag, a
path; a line of brackets and symbols only (`{`, `*/`, `});`); a comment or a prompt at the line
start (`#`, `//`, `/*`, `$ ls`, `>>> `); a Python block header (`for v in values:`) or import.
Prose in the monospaced font of a book (tests/test_pdf_code_blocks.py) has none of these.

- a block is code when at least `MIN_BLOCK_SHARE` of its lines are code-like;
- or when its page's monospaced lines are, taken together, at least `MIN_PAGE_SHARE` code-like:
  the page is a listing, and a paragraph of comment in it (a C header's doc comment, a command's
  option list) stays in the fence with the code around it.

A code block keeps its indentation (`indented`): each line's first glyph, over the block's
leftmost, in advances of its monospaced font (leading spaces in the text layer, or the x offset
a typesetter gave the line instead).

Pure functions over strings and numbers: no PyMuPDF here.
"""

from __future__ import annotations

import re

MIN_BLOCK_SHARE = 0.25  # a listing has a code-like line in most; a comment block inside one may have none
MIN_PAGE_SHARE = 0.1  # every page of mupdf_explored's listings: 16% at least; a book's prose: 0%
# anywhere in a line: a call or an index, an operator, a brace, an identifier_with_underscore, NULL,
# an HTML tag, a command-line flag (" -x", " --all"), a path with two slashes
CODE_TOKEN = re.compile(r"\w\(|\w\[|[=!<>+\-*/%&|^]=|==|->|=>|::|&&|\|\||\+\+|\b[A-Za-z]\w*_\w+\b|#include|#define"
                        r"|\bNULL\b|[{}]|\s=\s|</?[a-z][a-z0-9]*[\s>/]|\s--?[A-Za-z]|\w/\w+/\w")
SYMBOLS_ONLY = re.compile(r"^[^\w\s]*[{}\[\]()/\\;<>=|&#$][^\w\s]*$")  # "{", "*/", "});" (not "* * *")
# at the line start: a shebang or a comment, a shell, Python or TeX prompt, an option ("-p", "-- show")
LINE_START = re.compile(r"^(?:#!|#\s*\w|//|/\*|\*/|\$ [a-z]|>>> |% [a-z]|--?[A-Za-z]|-- |usage:)")
PYTHON_BLOCK = re.compile(r"^(?:def|class|if|elif|else|for|while|try|except|finally|with|async def)\b.*:$")
MAX_INDENT = 40  # characters: a line set further right is no indented code line (a right-aligned label)
PYTHON_IMPORT = re.compile(r"^(?:import [\w.]+(?:, [\w.]+)*$|from [\w.]+ import )")


def is_code_line(line: str) -> bool:
    """Whether one line of text looks like code (see the module docstring)."""
    s = line.strip()
    if not s:
        return False
    return bool(SYMBOLS_ONLY.match(s) or LINE_START.match(s) or PYTHON_BLOCK.match(s) or PYTHON_IMPORT.match(s)
                or CODE_TOKEN.search(s))


def code_share(lines: list[str]) -> float:
    """The share of `lines` (blank ones left out) that look like code; 0.0 for none."""
    lines = [ln for ln in lines if ln.strip()]
    return sum(map(is_code_line, lines)) / len(lines) if lines else 0.0


def is_code(lines: list[str], page_share: float = 0.0) -> bool:
    """Whether a block of monospaced `lines` is code, on a page whose monospaced lines are
    `page_share` code-like (`code_share` of them all)."""
    return page_share >= MIN_PAGE_SHARE or code_share(lines) >= MIN_BLOCK_SHARE


def indented(lines: list[str], starts: list[float], step: float) -> list[str]:
    """A code block's `lines` (stripped) with their indentation back: `starts` is where each
    line's first glyph sits (points), `step` the font's advance (points per character)."""
    if step <= 0 or len(starts) != len(lines) or not lines:
        return list(lines)
    left = min(starts)
    return [" " * min(round((x - left) / step), MAX_INDENT) + line for line, x in zip(lines, starts)]
