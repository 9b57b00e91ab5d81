"""Evaluating a checked condition: a tree walker with size and time limits on every step."""

from __future__ import annotations

import ast
import json
import time
from collections.abc import Callable
from typing import Any, ClassVar

from turnstoned.condition.language import (
    CONSTANTS,
    DEADLINE,
    MAX_INT_BITS,
    MAX_WEIGHT,
    METHODS,
    SEQUENCES,
    TYPES,
    Condition,
    ConditionError,
    describe,
)


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
            raise ConditionError(f"{describe(node)} is not allowed in a condition")
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
        if isinstance(op, ast.Add) and type(left) is type(right) and isinstance(left, SEQUENCES):
            self._within(self.weight(left) + self.weight(right))
            return left + right
        if isinstance(op, ast.Mult):
            seq, count = (left, right) if isinstance(left, SEQUENCES) else (right, left)
            if isinstance(seq, SEQUENCES) and isinstance(count, int):
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
        if not isinstance(value, SEQUENCES + (dict,)):
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
            if not isinstance(key, CONSTANTS):
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
            if not isinstance(key, CONSTANTS):
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
        elif name == "join" and args and isinstance(args[0], SEQUENCES):
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
        if not isinstance(right, SEQUENCES + (dict,)):
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
    if not isinstance(value, SEQUENCES + (dict,)):
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
