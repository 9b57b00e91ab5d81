"""Checking a condition before it ever runs: parse it, then walk it against the whitelist."""

from __future__ import annotations

import ast

from turnstoned.condition.language import (
    CONSTANTS,
    FUNCTIONS,
    MAX_DEPTH,
    MAX_NODES,
    MAX_SOURCE,
    METHOD_NAMES,
    NAMES,
    PLAIN,
    TYPES,
    Condition,
    ConditionError,
    describe,
)


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
            if not isinstance(node.value, CONSTANTS):
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
        if not isinstance(node, PLAIN):
            raise ConditionError(f"{describe(node)} is not allowed in a condition")
        for child in ast.iter_child_nodes(node):
            self.check(child, depth + 1)

    def _name(self, node: ast.Name) -> None:
        if node.id in NAMES:
            return
        if node.id in FUNCTIONS or node.id in TYPES:
            raise ConditionError(f"{node.id!r} can only be called")
        raise ConditionError(f"unknown name {node.id!r}; the names are {', '.join(NAMES)}")

    def _call(self, node: ast.Call, depth: int) -> None:
        if node.keywords:
            raise ConditionError("keyword arguments are not supported")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise ConditionError("* arguments are not supported")
        func = node.func
        if isinstance(func, ast.Name):
            if func.id not in FUNCTIONS:
                raise ConditionError(f"{func.id!r} is not a function you can call; the functions "
                                     f"are {', '.join(FUNCTIONS)}")
            args = node.args
            if func.id == "isinstance":
                if len(args) != 2:
                    raise ConditionError("isinstance takes a value and a type")
                self._type_spec(args[1])
                args = args[:1]
        elif isinstance(func, ast.Attribute):
            if func.attr.startswith("_") or func.attr not in METHOD_NAMES:
                raise ConditionError(f"method {func.attr!r} is not allowed; the methods are "
                                     f"{', '.join(sorted(METHOD_NAMES))}")
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
