"""The stop condition of a watch: a small expression language, interpreted, never ``eval``'d.

A condition is one Python-syntax expression over the names ``output`` (the
command's output), ``data`` (``output`` parsed as JSON, or None), ``exit_code``,
``prev_output`` (None on the first poll) and ``changed``. It is parsed with
``ast`` and checked against a whitelist before it is ever run; then a tree
walker evaluates it. There is no way to name an attribute that starts with an
underscore, to call anything but the listed functions and methods, to build a
function, a comprehension, a format string, or to bind a name.

The language: literals (strings, numbers, True/False/None, lists, tuples,
dicts), ``and``/``or``/``not``, comparisons (``== != < <= > >= in not in is
is not``), arithmetic (``+ - * / // % **``), ``x if c else y``, subscripts and
slices, the functions ``len str int float bool abs min max any all isinstance
sorted`` and a few methods of strings, dicts and lists (``METHODS``).

Limits keep one evaluation small and short: the source length, the number and
nesting of syntax nodes, the size of every value made on the way (strings,
lists and the numbers' bits are checked *before* an operation builds them) and
a deadline checked between steps. Each node runs at most once (there are no
loops), so the deadline is reached within one step of being passed.
"""

from __future__ import annotations

import ast
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

MAX_SOURCE = 1000  # characters of the expression
MAX_NODES = 200  # syntax nodes
MAX_DEPTH = 24  # nesting of syntax nodes
MAX_WEIGHT = 262_144  # characters + items of any one value (four times a watch's output cap)
MAX_INT_BITS = 4096
DEADLINE = 0.25  # seconds for one evaluation

NAMES = ("output", "data", "exit_code", "prev_output", "changed")
TYPES: dict[str, type] = {"str": str, "int": int, "float": float, "bool": bool,
                          "list": list, "tuple": tuple, "dict": dict}
_FUNCTIONS = ("len", "str", "int", "float", "bool", "abs", "min", "max", "any", "all",
              "isinstance", "sorted")
METHODS: dict[type, frozenset[str]] = {
    str: frozenset({"lower", "upper", "casefold", "strip", "lstrip", "rstrip", "startswith",
                    "endswith", "split", "rsplit", "splitlines", "count", "find", "rfind",
                    "replace", "join", "isdigit", "isalpha", "isalnum", "isspace"}),
    dict: frozenset({"get", "keys", "values", "items"}),
    list: frozenset({"count", "index"}),
    tuple: frozenset({"count", "index"}),
}
_METHOD_NAMES = frozenset().union(*METHODS.values())

_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_CMPOPS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn, ast.Is,
           ast.IsNot)
_PLAIN = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub,
          ast.UAdd, ast.BinOp, ast.Compare, ast.IfExp, ast.Subscript, ast.Slice, ast.List,
          ast.Tuple, ast.Dict, ast.Load, *_BINOPS, *_CMPOPS)
_CONSTANTS = (str, int, float, bool, type(None))
_SEQUENCES = (str, list, tuple)


class ConditionError(Exception):
    """The condition is not allowed, or failed while it ran; the message says why."""


@dataclass(frozen=True, slots=True)
class Condition:
    """A checked condition, ready to evaluate any number of times."""

    source: str
    tree: ast.Expression
    names: frozenset[str]  # the names it reads (``data`` is parsed only when read)


# ---------------------------------------------------------------- checking


def compile_condition(source: str) -> Condition:
    """Parse and check ``source``; ``ConditionError`` says what is not allowed."""
    text = source.strip()
    if not text:
        raise ConditionError("the condition is empty")
    if len(text) > MAX_SOURCE:
        raise ConditionError(f"the condition is longer than {MAX_SOURCE} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ConditionError(f"not a valid expression: {exc.msg}") from exc
    except ValueError as exc:  # e.g. a NUL character
        raise ConditionError(f"not a valid expression: {exc}") from exc
    except (RecursionError, MemoryError) as exc:
        raise ConditionError("the condition is nested too deeply") from exc
    _Checker().check(tree)
    names = frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in NAMES)
    return Condition(text, tree, names)


class _Checker:
    """Walks the tree once: every node must be of an allowed form, the tree small and shallow."""

    def __init__(self) -> None:
        self.nodes = 0

    def check(self, node: ast.AST, depth: int = 0) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ConditionError(f"the condition has more than {MAX_NODES} parts")
        if depth > MAX_DEPTH:
            raise ConditionError(f"the condition is nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, _CONSTANTS):
                raise ConditionError(f"{type(node.value).__name__} literals are not supported")
            return
        if isinstance(node, ast.Name):
            self._name(node)
            return
        if isinstance(node, ast.Call):
            self._call(node, depth)
            return
        if isinstance(node, ast.Attribute):
            raise ConditionError(f"attribute access ({node.attr!r}) is only allowed to call one "
                                 "of the listed methods")
        if not isinstance(node, _PLAIN):
            raise ConditionError(f"{_describe(node)} is not allowed in a condition")
        for child in ast.iter_child_nodes(node):
            self.check(child, depth + 1)

    def _name(self, node: ast.Name) -> None:
        if node.id in NAMES:
            return
        if node.id in _FUNCTIONS or node.id in TYPES:
            raise ConditionError(f"{node.id!r} can only be called")
        raise ConditionError(f"unknown name {node.id!r}; the names are {', '.join(NAMES)}")

    def _call(self, node: ast.Call, depth: int) -> None:
        if node.keywords:
            raise ConditionError("keyword arguments are not supported")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise ConditionError("* arguments are not supported")
        func = node.func
        if isinstance(func, ast.Name):
            if func.id not in _FUNCTIONS:
                raise ConditionError(f"{func.id!r} is not a function you can call; the functions "
                                     f"are {', '.join(_FUNCTIONS)}")
            args = node.args
            if func.id == "isinstance":
                if len(args) != 2:
                    raise ConditionError("isinstance takes a value and a type")
                self._type_spec(args[1])
                args = args[:1]
        elif isinstance(func, ast.Attribute):
            if func.attr.startswith("_") or func.attr not in _METHOD_NAMES:
                raise ConditionError(f"method {func.attr!r} is not allowed; the methods are "
                                     f"{', '.join(sorted(_METHOD_NAMES))}")
            self.nodes += 1
            self.check(func.value, depth + 2)
            args = node.args
        else:
            raise ConditionError("only the listed functions and methods can be called")
        for arg in args:
            self.check(arg, depth + 1)

    def _type_spec(self, node: ast.AST) -> None:
        names = node.elts if isinstance(node, ast.Tuple) else [node]
        for n in names:
            self.nodes += 1
            if not (isinstance(n, ast.Name) and n.id in TYPES):
                raise ConditionError(f"isinstance checks against {', '.join(TYPES)}")


def _describe(node: ast.AST) -> str:
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


# ---------------------------------------------------------------- running


def evaluate(cond: Condition, output: str, exit_code: int, prev_output: str | None) -> bool:
    """Whether the condition holds for one poll; ``ConditionError`` if it cannot be decided."""
    data = parse_data(output) if "data" in cond.names else None
    env: dict[str, Any] = {"output": output, "data": data, "exit_code": exit_code,
                           "prev_output": prev_output, "changed": output != prev_output}
    runner = _Runner(env)
    try:
        return bool(runner.run(cond.tree.body))
    except ConditionError:
        raise
    except (ArithmeticError, LookupError, TypeError, ValueError) as exc:
        raise ConditionError(f"{type(exc).__name__}: {exc}") from exc
    except (RecursionError, MemoryError) as exc:
        raise ConditionError("the values are too deeply nested or too large") from exc


def parse_data(output: str) -> Any:
    """``output`` as JSON, or None when it is not JSON (or too deep or too big a number)."""
    try:
        return json.loads(output)
    except (ValueError, RecursionError):
        return None


class _Runner:
    """Evaluates a checked tree, with size and time limits on every step."""

    def __init__(self, env: dict[str, Any]) -> None:
        self.env = env
        self.deadline = time.monotonic() + DEADLINE
        self._weights: dict[int, int] = {}
        self._alive: list[Any] = []  # keeps weighed objects alive, so ids stay unique

    def run(self, node: ast.AST) -> Any:
        if time.monotonic() > self.deadline:
            raise ConditionError(f"the condition took longer than {DEADLINE:g}s")
        handler = self._HANDLERS.get(type(node))
        if handler is None:  # the checker lets nothing else through
            raise ConditionError(f"{_describe(node)} is not allowed in a condition")
        return handler(self, node)

    # ----------------------------------------------------------- sizes

    def weight(self, value: Any) -> int:
        """Characters plus items, counting shared parts every time they appear (capped)."""
        if isinstance(value, str):
            return len(value) + 1
        if isinstance(value, int | float | bool) or value is None:
            return 1
        key = id(value)
        if key in self._weights:
            return self._weights[key]
        total = 1
        items = value.items() if isinstance(value, dict) else value
        for item in items:
            total += self.weight(item)
            if total > MAX_WEIGHT:
                break
        self._weights[key] = total
        self._alive.append(value)
        return total

    def admit(self, value: Any) -> Any:
        if self.weight(value) > MAX_WEIGHT:
            raise ConditionError(f"a value grew past {MAX_WEIGHT} characters or items")
        return value

    def _within(self, size: int) -> None:
        if size > MAX_WEIGHT:
            raise ConditionError(f"a value would grow past {MAX_WEIGHT} characters or items")

    # ----------------------------------------------------------- nodes

    def _constant(self, node: ast.Constant) -> Any:
        return node.value

    def _name(self, node: ast.Name) -> Any:
        return self.env[node.id]

    def _boolop(self, node: ast.BoolOp) -> Any:
        value: Any = None
        for operand in node.values:
            value = self.run(operand)
            if isinstance(node.op, ast.And) != bool(value):
                return value
        return value

    def _unary(self, node: ast.UnaryOp) -> Any:
        value = self.run(node.operand)
        if isinstance(node.op, ast.Not):
            return not value
        _number(value, "unary minus" if isinstance(node.op, ast.USub) else "unary plus")
        return -value if isinstance(node.op, ast.USub) else +value

    def _binop(self, node: ast.BinOp) -> Any:
        left, right = self.run(node.left), self.run(node.right)
        op = node.op
        if _is_number(left) and _is_number(right):
            return _arith(op, left, right)
        if isinstance(op, ast.Add) and type(left) is type(right) and isinstance(left, _SEQUENCES):
            self._within(self.weight(left) + self.weight(right))
            return left + right
        if isinstance(op, ast.Mult):
            seq, count = (left, right) if isinstance(left, _SEQUENCES) else (right, left)
            if isinstance(seq, _SEQUENCES) and isinstance(count, int):
                self._within(self.weight(seq) * max(count, 0))
                return seq * count
        raise ConditionError(f"unsupported operand types for {type(op).__name__}: "
                             f"{type(left).__name__} and {type(right).__name__}")

    def _compare(self, node: ast.Compare) -> Any:
        left = self.run(node.left)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self.run(comparator)
            if not _compare(op, left, right):
                return False
            left = right
        return True

    def _ifexp(self, node: ast.IfExp) -> Any:
        return self.run(node.body) if self.run(node.test) else self.run(node.orelse)

    def _subscript(self, node: ast.Subscript) -> Any:
        value = self.run(node.value)
        if not isinstance(value, _SEQUENCES + (dict,)):
            raise ConditionError(f"{type(value).__name__} cannot be indexed")
        if isinstance(node.slice, ast.Slice):
            if isinstance(value, dict):
                raise ConditionError("a dict cannot be sliced")
            parts = [None if p is None else self.run(p)
                     for p in (node.slice.lower, node.slice.upper, node.slice.step)]
            if any(p is not None and not isinstance(p, int) for p in parts):
                raise ConditionError("slice bounds must be integers")
            return value[slice(*parts)]
        key = self.run(node.slice)
        if isinstance(value, dict):
            if not isinstance(key, _CONSTANTS):
                raise ConditionError(f"a {type(key).__name__} cannot be a dict key")
            return value[key]
        if not isinstance(key, int):
            raise ConditionError(f"{type(value).__name__} indices must be integers")
        return value[key]

    def _list(self, node: ast.List) -> Any:
        return self.admit([self.run(e) for e in node.elts])

    def _tuple(self, node: ast.Tuple) -> Any:
        return self.admit(tuple(self.run(e) for e in node.elts))

    def _dict(self, node: ast.Dict) -> Any:
        out = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                raise ConditionError("** in a dict literal is not supported")
            key = self.run(k)
            if not isinstance(key, _CONSTANTS):
                raise ConditionError(f"a {type(key).__name__} cannot be a dict key")
            out[key] = self.run(v)
        return self.admit(out)

    def _call(self, node: ast.Call) -> Any:
        func = node.func
        if isinstance(func, ast.Attribute):
            receiver = self.run(func.value)
            return self._method(receiver, func.attr, [self.run(a) for a in node.args])
        assert isinstance(func, ast.Name)
        if func.id == "isinstance":
            spec = node.args[1]
            names = spec.elts if isinstance(spec, ast.Tuple) else [spec]
            types = tuple(TYPES[n.id] for n in names if isinstance(n, ast.Name))
            return isinstance(self.run(node.args[0]), types)
        args = [self.run(a) for a in node.args]
        return self.admit(_FUNCTION_IMPLS[func.id](self, args))

    def _method(self, receiver: Any, name: str, args: list[Any]) -> Any:
        allowed = METHODS.get(type(receiver), frozenset())
        if name not in allowed:
            raise ConditionError(f"{type(receiver).__name__} has no allowed method {name!r}")
        if isinstance(receiver, str):
            self._check_str_method(receiver, name, args)
        result = getattr(type(receiver), name)(receiver, *args)
        if isinstance(receiver, dict) and name in ("keys", "values", "items"):
            result = list(result)
        return self.admit(result)

    def _check_str_method(self, text: str, name: str, args: list[Any]) -> None:
        """Refuse a string method whose result would be too big, before it runs."""
        if name == "replace" and len(args) >= 2 and all(isinstance(a, str) for a in args[:2]):
            old, new = args[0], args[1]
            hits = text.count(old) if old else len(text) + 1
            self._within(len(text) + hits * max(len(new) - len(old), 0))
        elif name == "join" and args and isinstance(args[0], _SEQUENCES):
            self._within(self.weight(args[0]) + len(text) * len(args[0]))

    _HANDLERS: ClassVar[dict[type, Callable[[_Runner, Any], Any]]] = {
        ast.Constant: _constant, ast.Name: _name, ast.BoolOp: _boolop, ast.UnaryOp: _unary,
        ast.BinOp: _binop, ast.Compare: _compare, ast.IfExp: _ifexp, ast.Subscript: _subscript,
        ast.List: _list, ast.Tuple: _tuple, ast.Dict: _dict, ast.Call: _call,
    }


# ---------------------------------------------------------------- operations


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float)


def _number(value: Any, what: str) -> None:
    if not _is_number(value):
        raise ConditionError(f"{what} needs a number, not {type(value).__name__}")


def _int_bits(value: float) -> int:
    return abs(int(value)).bit_length() if isinstance(value, int) else 0


def _arith(op: ast.operator, left: Any, right: Any) -> Any:
    """Arithmetic on numbers, refusing integers that would pass ``MAX_INT_BITS``."""
    both_int = isinstance(left, int) and isinstance(right, int)
    if (isinstance(op, ast.Pow) and both_int and right > 0 and abs(left) > 1
            and _int_bits(left) * right > MAX_INT_BITS):
        raise ConditionError(f"the power would pass {MAX_INT_BITS} bits")
    if isinstance(op, ast.Mult) and both_int and _int_bits(left) + _int_bits(right) > MAX_INT_BITS:
        raise ConditionError(f"the product would pass {MAX_INT_BITS} bits")
    if isinstance(op, ast.Add):
        result = left + right
    elif isinstance(op, ast.Sub):
        result = left - right
    elif isinstance(op, ast.Mult):
        result = left * right
    elif isinstance(op, ast.Div):
        result = left / right
    elif isinstance(op, ast.FloorDiv):
        result = left // right
    elif isinstance(op, ast.Mod):
        result = left % right
    else:
        result = left ** right
    if isinstance(result, complex):
        raise ConditionError("the result is a complex number")
    return result


def _compare(op: ast.cmpop, left: Any, right: Any) -> bool:
    if isinstance(op, ast.In | ast.NotIn):
        if not isinstance(right, _SEQUENCES + (dict,)):
            raise ConditionError(f"'in' needs a string, list, tuple or dict, not "
                                 f"{type(right).__name__}")
        if isinstance(right, str) and not isinstance(left, str):
            raise ConditionError("'in <string>' needs a string on the left")
        found = left in right
        return found if isinstance(op, ast.In) else not found
    table: dict[type, Callable[[Any, Any], bool]] = {
        ast.Eq: lambda a, b: bool(a == b), ast.NotEq: lambda a, b: bool(a != b),
        ast.Lt: lambda a, b: bool(a < b), ast.LtE: lambda a, b: bool(a <= b),
        ast.Gt: lambda a, b: bool(a > b), ast.GtE: lambda a, b: bool(a >= b),
        ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
    }
    return table[type(op)](left, right)


def _iterable(value: Any, fn: str) -> Any:
    if not isinstance(value, _SEQUENCES + (dict,)):
        raise ConditionError(f"{fn}() needs a string, list, tuple or dict, not "
                             f"{type(value).__name__}")
    return value


def _one(args: list[Any], fn: str) -> Any:
    if len(args) != 1:
        raise ConditionError(f"{fn}() takes one argument")
    return args[0]


def _str(runner: _Runner, args: list[Any]) -> str:
    if not args:
        return ""
    value = _one(args, "str")
    if not isinstance(value, str):
        runner.admit(value)  # its text is at most a few times its weight
    return str(value)


def _int(runner: _Runner, args: list[Any]) -> int:
    value = _one(args, "int")
    if not isinstance(value, str | int | float):
        raise ConditionError(f"int() needs a string or a number, not {type(value).__name__}")
    return int(value)


def _float(runner: _Runner, args: list[Any]) -> float:
    value = _one(args, "float")
    if not isinstance(value, str | int | float):
        raise ConditionError(f"float() needs a string or a number, not {type(value).__name__}")
    return float(value)


def _abs(runner: _Runner, args: list[Any]) -> Any:
    value = _one(args, "abs")
    _number(value, "abs()")
    return abs(value)


def _extreme(pick: Callable[..., Any], name: str) -> Callable[[_Runner, list[Any]], Any]:
    def fn(runner: _Runner, args: list[Any]) -> Any:
        if not args:
            raise ConditionError(f"{name}() needs at least one argument")
        if len(args) == 1:
            return pick(_iterable(args[0], name))
        return pick(args)
    return fn


_FUNCTION_IMPLS: dict[str, Callable[[_Runner, list[Any]], Any]] = {
    "len": lambda r, a: len(_iterable(_one(a, "len"), "len")),
    "str": _str,
    "int": _int,
    "float": _float,
    "bool": lambda r, a: bool(a[0]) if a else False,
    "abs": _abs,
    "min": _extreme(min, "min"),
    "max": _extreme(max, "max"),
    "any": lambda r, a: any(_iterable(_one(a, "any"), "any")),
    "all": lambda r, a: all(_iterable(_one(a, "all"), "all")),
    "sorted": lambda r, a: sorted(_iterable(_one(a, "sorted"), "sorted")),
}
