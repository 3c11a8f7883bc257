"""The document -> page domains and near-free stages that the hand-driven scheduler tests share:
a document is its page count, `split` gives its pages' ordinals, `ident` passes values through,
`collect` turns each parent's children into a list."""

from __future__ import annotations

import curate as cu

Doc = cu.Domain("doc")
Page = Doc.child("page")


def split(docs):
    return [list(range(n)) for n in docs]


def ident(xs):
    return xs


def collect(xs):
    return [list(x) for x in xs]
