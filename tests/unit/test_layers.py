"""The package's import rules hold, for every import: at the top, inside functions and under
TYPE_CHECKING (docs/architecture.md).

Layers, each importing only from its own layer or below: cli > daemon, acp > core > tools >
leaf packages > shared leaves > protocol. Only daemon/ imports pygls and lsprotocol, only
llm/ the openai SDK, only mcp/ the MCP SDK; nothing outside tools/ imports a ``tools._*``
helper; no module of core but the facade imports ``Engine``; modules and packages import
each other in no circle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "turnstoned"

LEAF_PACKAGES = ("mcp", "net", "store", "llm", "skills", "search", "condition", "shell", "guard",
                 "sandbox", "checkpoint")
SHARED_LEAVES = ("config", "paths", "places", "envscrub", "scopes", "questions", "schema",
                 "bindings")
LAYERS = {
    "cli": 7, "client": 7, "__main__": 7,
    "daemon": 6, "acp": 6,  # the two fronts over the engine
    "core": 5,
    "tools": 4,
    **dict.fromkeys(LEAF_PACKAGES, 3),
    **dict.fromkeys(SHARED_LEAVES, 2),
    "protocol": 1,
    "": 0,  # the package itself (its version)
}
NAMES = {7: "cli", 6: "daemon", 5: "core", 4: "tools", 3: "a leaf package",
         2: "a shared leaf", 1: "protocol", 0: "the package"}
# Third-party packages only one part of the house may import.
OWNERS = {"pygls": "daemon", "lsprotocol": "daemon", "openai": "llm", "mcp": "mcp",
          "mcp_types": "mcp"}
FACADE = "turnstoned.core.engine"


def layer_name(part: str) -> str:
    """How a rule names a part: a front by its own name, the others by their layer's."""
    return part if LAYERS.get(part) == 6 else NAMES[LAYERS.get(part, 0)]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def part_of(module: str) -> str:
    """The room of the house a module belongs to: its top package or shared leaf."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def imports(module: str, source: str, is_package: bool,
            known: set[str]) -> Iterator[tuple[str, int]]:
    """Every module ``source`` imports (``from pkg import submodule`` names the submodule),
    with its line."""
    base = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                prefix = base[: len(base) - node.level + 1]
                target = ".".join(prefix + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known]
            if len(subs) < len(node.names):
                yield target, node.lineno
            for sub in subs:
                yield sub, node.lineno


def violations(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """Every broken rule in ``sources`` (module name -> (its text, whether it is a package's
    ``__init__``)), one line each."""
    known = set(sources)
    found: list[str] = []
    graph: dict[str, set[str]] = {m: set() for m in sources}
    for module, (source, is_package) in sorted(sources.items()):
        mine = part_of(module)
        for target, line in imports(module, source, is_package, known):
            where = f"{module}:{line} imports {target}"
            top = target.split(".")[0]
            if top in OWNERS and OWNERS[top] != mine:
                found.append(f"{where}: only {OWNERS[top]}/ may import {top}")
            if not target.startswith("turnstoned"):
                continue
            theirs = part_of(target)
            if target in known:
                graph[module].add(target)
            if LAYERS.get(theirs, 0) > LAYERS.get(mine, 0):
                found.append(f"{where}: {layer_name(mine)} may not import "
                             f"{layer_name(theirs)}")
            private = target.split(".")
            if (len(private) > 2 and private[1] == "tools" and private[2].startswith("_")
                    and mine != "tools"):
                found.append(f"{where}: a tools helper is private to tools/")
            if target == FACADE and mine == "core" and module != FACADE:
                found.append(f"{where}: only the facade holds the engine")
    found += [f"import circle: {' -> '.join(c)}" for c in circles(graph)]
    parts: dict[str, set[str]] = {}
    for module, targets in graph.items():
        parts.setdefault(part_of(module), set()).update(
            part_of(t) for t in targets if part_of(t) != part_of(module))
    found += [f"package circle: {' -> '.join(c)}" for c in circles(parts)]
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle for each strongly connected group of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                out.append([*sorted(group), min(group)])

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def package_sources() -> dict[str, tuple[str, bool]]:
    return {module_name(p): (p.read_text(), p.name == "__init__.py")
            for p in sorted(PACKAGE.rglob("*.py"))}


def test_the_package_keeps_its_import_rules() -> None:
    assert violations(package_sources()) == []


VIOLATIONS = [
    ("turnstoned.tools.read_file", "from turnstoned.core import engine",
     "tools may not import core"),
    ("turnstoned.core.turn", "def f():\n    from turnstoned.daemon import rpc",
     "core may not import daemon"),
    ("turnstoned.shell.read",
     "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from turnstoned.tools.base import X",
     "a leaf package may not import tools"),
    ("turnstoned.core.turn", "import pygls.server", "only daemon/ may import pygls"),
    ("turnstoned.net.fetch", "import openai", "only llm/ may import openai"),
    ("turnstoned.tools.bash", "from mcp import ClientSession", "only mcp/ may import mcp"),
    ("turnstoned.core.watches", "from turnstoned.tools._shells import Shells",
     "a tools helper is private to tools/"),
    ("turnstoned.core.agent", "from turnstoned.core.engine import Engine",
     "only the facade holds the engine"),
    ("turnstoned.config", "from turnstoned.store import Store",
     "a shared leaf may not import a leaf package"),
    ("turnstoned.acp.sink", "from turnstoned.cli import attach", "acp may not import cli"),
    ("turnstoned.acp.rpc", "import pygls.protocol", "only daemon/ may import pygls"),
]


@pytest.mark.parametrize(("module", "source", "rule"), VIOLATIONS)
def test_a_violating_import_is_reported(module: str, source: str, rule: str) -> None:
    sources = package_sources()
    text, is_package = sources[module]
    sources[module] = (text + "\n" + source + "\n", is_package)
    assert any(rule in v for v in violations(sources)), violations(sources)


def test_an_import_circle_is_reported() -> None:
    sources = package_sources()
    text, is_package = sources["turnstoned.core.wire"]
    sources["turnstoned.core.wire"] = (text + "\nfrom turnstoned.core import sessions\n",
                                       is_package)
    found = violations(sources)
    assert any(v.startswith("import circle:") and "turnstoned.core.wire" in v for v in found)


def test_a_package_circle_is_reported() -> None:
    sources = package_sources()
    text, is_package = sources["turnstoned.search.bm25"]
    sources["turnstoned.search.bm25"] = (text + "\nfrom turnstoned.skills import catalog\n",
                                         is_package)
    assert any(v.startswith("package circle:") for v in violations(sources))


def client_graph(root: Path, pattern: str, resolve: object) -> dict[str, set[str]]:
    import re

    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".lua", ".ts") or "node_modules" in path.parts:
            continue
        name = str(path.relative_to(root))
        graph[name] = set()
        for spec in re.findall(pattern, path.read_text()):
            target = resolve(path, spec)  # type: ignore[operator]
            if target is not None and target != name:
                graph[name].add(target)
    return graph


def test_the_clients_modules_import_each_other_in_no_circle() -> None:
    neovim = ROOT / "clients" / "neovim" / "lua"

    def lua(path: Path, spec: str) -> str | None:
        found = neovim / (spec.replace(".", "/") + ".lua")
        found = found if found.exists() else neovim / spec.replace(".", "/") / "init.lua"
        return str(found.relative_to(neovim)) if found.exists() else None

    vscode = ROOT / "clients" / "vscode" / "src"

    def ts(path: Path, spec: str) -> str | None:
        found = (path.parent / spec).resolve().with_suffix(".ts")
        return str(found.relative_to(vscode)) if found.exists() else None

    assert circles(client_graph(neovim, r"require[( ]'(turnstoned[\w.]*)'", lua)) == []
    assert circles(client_graph(vscode, r"from \"(\.{1,2}/[^\"]+)\"", ts)) == []
