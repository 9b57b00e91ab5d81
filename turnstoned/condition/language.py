"""The condition language's names, limits and allowed shapes, shared by the checker and
the runner."""

from __future__ import annotations

import ast
from dataclasses import dataclass

MAX_SOURCE = 1000  # characters of the expression
MAX_NODES = 200  # syntax nodes
MAX_DEPTH = 24  # nesting of syntax nodes
MAX_WEIGHT = 262_144  # characters + items of any one value (four times a watch's output cap)
MAX_INT_BITS = 4096
DEADLINE = 0.25  # seconds for one evaluation

NAMES = ("output", "data", "exit_code", "prev_output", "changed")
TYPES: dict[str, type] = {"str": str, "int": int, "float": float, "bool": bool,
                          "list": list, "tuple": tuple, "dict": dict}
FUNCTIONS = ("len", "str", "int", "float", "bool", "abs", "min", "max", "any", "all",
             "isinstance", "sorted")
METHODS: dict[type, frozenset[str]] = {
    str: frozenset({"lower", "upper", "casefold", "strip", "lstrip", "rstrip", "startswith",
                    "endswith", "split", "rsplit", "splitlines", "count", "find", "rfind",
                    "replace", "join", "isdigit", "isalpha", "isalnum", "isspace"}),
    dict: frozenset({"get", "keys", "values", "items"}),
    list: frozenset({"count", "index"}),
    tuple: frozenset({"count", "index"}),
}
METHOD_NAMES = frozenset().union(*METHODS.values())

BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
CMPOPS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn, ast.Is,
          ast.IsNot)
PLAIN = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub,
         ast.UAdd, ast.BinOp, ast.Compare, ast.IfExp, ast.Subscript, ast.Slice, ast.List,
         ast.Tuple, ast.Dict, ast.Load, *BINOPS, *CMPOPS)
CONSTANTS = (str, int, float, bool, type(None))
SEQUENCES = (str, list, tuple)


class ConditionError(Exception):
    """The condition is not allowed, or failed while it ran; the message says why."""


@dataclass(frozen=True, slots=True)
class Condition:
    """A checked condition, ready to evaluate any number of times."""

    source: str
    tree: ast.Expression
    names: frozenset[str]  # the names it reads (``data`` is parsed only when read)


def describe(node: ast.AST) -> str:
    """How a refused syntax node is named in an error."""
    kinds = {ast.Lambda: "a lambda", ast.NamedExpr: "an assignment (:=)",
             ast.JoinedStr: "an f-string", ast.FormattedValue: "an f-string",
             ast.ListComp: "a comprehension", ast.SetComp: "a comprehension",
             ast.DictComp: "a comprehension", ast.GeneratorExp: "a generator",
             ast.Starred: "unpacking (*)", ast.Set: "a set literal",
             ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield"}
    for kind, text in kinds.items():
        if isinstance(node, kind):
            return text
    if isinstance(node, ast.operator | ast.unaryop):
        return f"the operator {type(node).__name__}"
    return type(node).__name__
