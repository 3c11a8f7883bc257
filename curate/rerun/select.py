"""`--where`: which rows of an output a rerun touches, written as a comparison of its columns.

The expression is Python's syntax for a condition over column names, evaluated by Arrow on the
output's table (nothing is executed): comparisons (`<`, `<=`, `==`, `!=`, `>=`, `>`) between a
column and a number, text, True/False or None (`x == None`, `x is None`, `x is not None`),
`in` / `not in` a list, combined with `and`, `or`, `not` and parentheses, e.g.
`ocr_confidence < 0.8 and route == 'ocr'`, `language not in ['en', 'de']`. A null value does not
satisfy a comparison (SQL's rule), so `x < 0.8` leaves out rows without an `x`."""

from __future__ import annotations

import ast

from curate.errors import CurateError

EXAMPLE = "--where \"ocr_confidence < 0.8 and route == 'ocr'\""


class SelectorError(CurateError):
    """A `--where` expression that cannot be evaluated on the output's columns."""


def compile_where(text: str, columns) -> object:
    """The pyarrow compute expression of `text` over `columns` (the output's column names)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise SelectorError(f"--where {text!r} is not a condition ({exc.msg}); write e.g. {EXAMPLE}") from None
    return _Build(text, set(columns)).expr(tree.body)


def selected_ids(table, text: str | None) -> set[str]:
    """The entity ids of the rows of `table` that the condition picks (every row without one)."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    if text is None:
        return set(table.column("entity_id").to_pylist())
    expr = compile_where(text, table.column_names)
    try:
        picked = ds.dataset(table).to_table(columns=["entity_id"], filter=expr)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise SelectorError(f"--where {text!r} cannot be evaluated on this output's columns: {exc}; compare "
                            "columns with values of their type (numbers with numbers, text with quoted text)") from None
    return set(picked.column("entity_id").to_pylist())


_COMPARE = {ast.Lt: "__lt__", ast.LtE: "__le__", ast.Eq: "__eq__", ast.NotEq: "__ne__", ast.Gt: "__gt__",
            ast.GtE: "__ge__"}


class _Build:
    def __init__(self, text: str, columns: set[str]):
        self.text, self.columns = text, columns

    def bad(self, node, why: str) -> SelectorError:
        part = ast.get_source_segment(self.text.strip(), node) or ast.dump(node)
        return SelectorError(f"--where {self.text!r}: {why} ({part!r}); write e.g. {EXAMPLE}")

    def expr(self, node):
        if isinstance(node, ast.BoolOp):
            parts = [self.expr(v) for v in node.values]
            out = parts[0]
            for p in parts[1:]:
                out = (out & p) if isinstance(node.op, ast.And) else (out | p)
            return out
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return ~self.expr(node.operand)
        if isinstance(node, ast.Compare):
            out, left = None, node.left
            for op, right in zip(node.ops, node.comparators):
                one = self.compare(left, op, right)
                out = one if out is None else out & one
                left = right
            return out
        if isinstance(node, ast.Name):  # a bool column alone
            return self.field(node)
        raise self.bad(node, "not a comparison of a column with a value")

    def field(self, node):
        import pyarrow.dataset as ds

        if node.id not in self.columns:
            near = sorted(c for c in self.columns if not c.startswith("_"))
            raise self.bad(node, f"no column {node.id!r} in this output; its columns: {', '.join(near)}")
        return ds.field(node.id)

    def value(self, node):
        try:
            v = ast.literal_eval(node)
        except ValueError:
            raise self.bad(node, "a value must be a number, quoted text, True, False, None or a list of those") from None
        return v

    def compare(self, left, op, right):
        if not isinstance(left, ast.Name) and isinstance(right, ast.Name):  # `0.8 > x`: the column on the right
            left, op, right = right, _flipped(op), left
        if not isinstance(left, ast.Name):
            raise self.bad(left, "compare a column (a name) with a value")
        col, val = self.field(left), right
        if isinstance(op, (ast.Is, ast.IsNot)) or (isinstance(op, (ast.Eq, ast.NotEq)) and _is_none(val)):
            if not _is_none(val):
                raise self.bad(val, "`is` compares with None only")
            return col.is_null() if isinstance(op, (ast.Is, ast.Eq)) else ~col.is_null()
        if isinstance(op, (ast.In, ast.NotIn)):
            values = self.value(val)
            if not isinstance(values, (list, tuple, set)):
                raise self.bad(val, "`in` needs a list of values")
            hit = col.isin(list(values))
            return hit if isinstance(op, ast.In) else ~hit
        if type(op) not in _COMPARE:
            raise self.bad(val, "not a comparison curate knows")
        return getattr(col, _COMPARE[type(op)])(self.value(val))


def _is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _flipped(op):
    return {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE}.get(type(op), type(op))()
