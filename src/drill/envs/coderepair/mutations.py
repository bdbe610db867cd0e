"""Deterministic AST mutations of a solution: the bugs the agent fixes, and the heuristic's search space.

A mutation is a text edit on the source (character offsets, the old text and the new), found from the AST so
it touches one token or one construct and leaves the rest of the file, comments and docstring included, as it
was. Kinds: comparison and arithmetic operator swaps, and/or swaps, off-by-one integer constants, swapped call
arguments, swapped if/else branches, a dropped negation, a dropped statement and a wrong variable.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

COMPARE_SWAPS = {ast.Lt: (ast.LtE, "<", "<="), ast.LtE: (ast.Lt, "<=", "<"), ast.Gt: (ast.GtE, ">", ">="),
                 ast.GtE: (ast.Gt, ">=", ">"), ast.Eq: (ast.NotEq, "==", "!="), ast.NotEq: (ast.Eq, "!=", "=="),
                 ast.In: (ast.NotIn, "in", "not in"), ast.NotIn: (ast.In, "not in", "in"),
                 ast.Is: (ast.IsNot, "is", "is not"), ast.IsNot: (ast.Is, "is not", "is")}
ARITH_SWAPS = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "+"), ast.Div: ("/", "//"),
               ast.FloorDiv: ("//", "/"), ast.Mod: ("%", "//"), ast.Pow: ("**", "*")}
ARITH_ALL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
             ast.Pow: "**"}
COMPARE_ALL = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


@dataclass(frozen=True)
class Mutation:
    start: int
    end: int
    old: str
    new: str
    kind: str

    def apply(self, source: str) -> str:
        if source[self.start:self.end] != self.old:
            raise ValueError(f"the mutation expects {self.old!r} at {self.start}, found "
                             f"{source[self.start:self.end]!r}")
        return source[: self.start] + self.new + source[self.end:]

    @property
    def key(self) -> tuple[int, int, str]:
        return (self.start, self.end, self.new)


def apply_all(source: str, mutations: list[Mutation]) -> str:
    """Apply non-overlapping mutations (found on the same source), last first so offsets stay valid."""
    for mutation in sorted(mutations, key=lambda m: m.start, reverse=True):
        source = mutation.apply(source)
    return source


class _Offsets:
    def __init__(self, source: str) -> None:
        self.source = source
        self.lines = source.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def at(self, lineno: int, col: int) -> int:
        line = self.lines[lineno - 1]
        return self.starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", "replace"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (self.at(node.lineno, node.col_offset),  # type: ignore[attr-defined]
                self.at(node.end_lineno, node.end_col_offset))  # type: ignore[attr-defined]

    def line_span(self, first: ast.AST, last: ast.AST) -> tuple[int, int]:
        return self.starts[first.lineno - 1], self.starts[last.end_lineno]  # type: ignore[attr-defined]


def _token(offsets: _Offsets, left: ast.AST, right: ast.AST, symbol: str, new: str, kind: str) -> Mutation | None:
    """The edit replacing operator `symbol`, found in the text between two operands, with `new`."""
    start, end = offsets.span(left)[1], offsets.span(right)[0]
    gap = offsets.source[start:end]
    words = symbol.isalpha() or " " in symbol
    hits = [i for i in range(len(gap)) if gap.startswith(symbol, i)
            and (not words or ((i == 0 or not gap[i - 1].isalnum()) and
                               (i + len(symbol) == len(gap) or not gap[i + len(symbol)].isalnum())))]
    if len(hits) != 1 or "#" in gap:
        return None
    at = start + hits[0]
    if symbol in ("*", "/", "<", ">") and offsets.source[at + 1: at + 2] in ("*", "/", "=", "<", ">"):
        return None
    return Mutation(at, at + len(symbol), symbol, new, kind)


def _locals(function: ast.FunctionDef) -> list[str]:
    names = {a.arg for a in function.args.args + function.args.kwonlyargs}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return sorted(names)


def mutations(source: str, region_start: int = 0, entry_point: str | None = None,
              search: bool = False) -> Iterator[Mutation]:
    """Every single mutation of the code at or after `region_start` (the solution, not the prompt's helpers),
    in source order. `search=True` gives the heuristic's wider space: every operator of the same family instead
    of one swap, every other local name for a variable, and an inserted `not` for a dropped one."""
    tree = ast.parse(source)
    offsets = _Offsets(source)
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
                 and (entry_point is None or n.name == entry_point)]
    seen: set[tuple[int, int, str]] = set()
    found: list[Mutation] = []

    def add(mutation: Mutation | None) -> None:
        if mutation is not None and mutation.start >= region_start and mutation.key not in seen \
                and mutation.old != mutation.new:
            seen.add(mutation.key)
            found.append(mutation)

    for function in functions:
        names = _locals(function)
        for node in ast.walk(function):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                for i, op in enumerate(node.ops):
                    swap = COMPARE_SWAPS.get(type(op))
                    if swap is None:
                        continue
                    targets = [s for t, s in COMPARE_ALL.items() if t is not type(op)] \
                        if search and type(op) in COMPARE_ALL else [swap[2]]
                    for new in targets:
                        add(_token(offsets, operands[i], operands[i + 1], swap[1], new, "comparison"))
            elif isinstance(node, (ast.BinOp, ast.AugAssign)):
                op = type(node.op)
                if op not in ARITH_SWAPS:
                    continue
                symbol = ARITH_SWAPS[op][0]
                targets = [s for t, s in ARITH_ALL.items() if t is not op] if search else [ARITH_SWAPS[op][1]]
                left, right = (node.left, node.right) if isinstance(node, ast.BinOp) else (node.target, node.value)
                for new in targets:
                    add(_token(offsets, left, right, symbol, new, "arithmetic"))
            elif isinstance(node, ast.BoolOp):
                symbol, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
                for left, right in zip(node.values, node.values[1:]):
                    add(_token(offsets, left, right, symbol, new, "boolean"))
            elif isinstance(node, ast.Constant) and type(node.value) is int and 0 <= node.value <= 1000:
                start, end = offsets.span(node)
                old = source[start:end]
                if old.isdigit():
                    for value in (node.value + 1, node.value - 1):
                        if value >= 0:
                            add(Mutation(start, end, old, str(value), "off-by-one"))
            elif isinstance(node, ast.Call) and len(node.args) >= 2 and not node.keywords \
                    and not any(isinstance(a, ast.Starred) for a in node.args[:2]):
                (a0, a1), (b0, b1) = offsets.span(node.args[0]), offsets.span(node.args[1])
                first, second = source[a0:a1], source[b0:b1]
                if first != second and "\n" not in source[a0:b1]:
                    add(Mutation(a0, b1, source[a0:b1], second + source[a1:b0] + first, "swapped arguments"))
            elif isinstance(node, ast.IfExp):
                (a0, a1), (b0, b1) = offsets.span(node.body), offsets.span(node.orelse)
                if "\n" not in source[a0:b1]:
                    middle = source[a1:b0]
                    add(Mutation(a0, b1, source[a0:b1], source[b0:b1] + middle + source[a0:a1], "swapped branches"))
            elif isinstance(node, ast.If) and node.orelse and not (
                    len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If)
                    and offsets.lines[node.orelse[0].lineno - 1].lstrip().startswith("elif")):
                body = offsets.line_span(node.body[0], node.body[-1])
                other = offsets.line_span(node.orelse[0], node.orelse[-1])
                body_text, other_text = source[body[0]:body[1]], source[other[0]:other[1]]
                indent = lambda t: len(t) - len(t.lstrip(" "))
                if body[1] <= other[0] and indent(body_text) == indent(other_text) and "#" not in source[body[0]:other[1]]:
                    middle = source[body[1]:other[0]]
                    add(Mutation(body[0], other[1], source[body[0]:other[1]], other_text + middle + body_text,
                                 "swapped branches"))
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
                start, end = offsets.span(node)
                inner = offsets.span(node.operand)
                add(Mutation(start, end, source[start:end], source[inner[0]:inner[1]], "dropped negation"))
            if search and isinstance(node, (ast.If, ast.While, ast.IfExp)) and not (
                    isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)):
                start, end = offsets.span(node.test)
                text = source[start:end]
                if "\n" not in text:
                    wrapped = f"not {text}" if isinstance(node.test, (ast.Name, ast.Call, ast.Attribute,
                                                                       ast.Subscript)) else f"not ({text})"
                    add(Mutation(start, end, text, wrapped, "dropped negation"))
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names:
                start, end = offsets.span(node)
                others = [n for n in names if n != node.id]
                if not search and others:
                    others = [others[sum(map(ord, node.id)) % len(others)]]
                for other in others:
                    add(Mutation(start, end, node.id, other, "wrong variable"))
            if not search:
                for body in (getattr(node, "body", None), getattr(node, "orelse", None)):
                    if not isinstance(body, list):
                        continue
                    code = [b for b in body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
                    if len(code) < 2:  # never the whole body: that would be "write the function", not a bug
                        continue
                    for statement in code:
                        if isinstance(statement, (ast.Assign, ast.AugAssign, ast.Expr, ast.Return)) \
                                and statement.lineno == statement.end_lineno:
                            start, end = offsets.span(statement)
                            add(Mutation(start, end, source[start:end], "pass", "dropped statement"))
    found.sort(key=lambda m: (m.start, m.end, m.new))
    return iter(found)
