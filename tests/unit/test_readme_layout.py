"""The README's "Layout" is the package's own summary lines, so it cannot drift.

Each package (its ``__init__``), each module at the package root, and the core
and its approval gate are listed with the first line of their docstring, in
the order the layers stack (see test_layers). ``python -m tests.unit.test_readme_layout``
prints the block to paste.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.unit.test_layers import LAYERS, ROOT

PACKAGE = ROOT / "turnstoned"
BEGIN, END = "<!-- layout: generated from the docstrings -->", "<!-- layout end -->"


def summary(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    return doc.splitlines()[0].replace("``", "`") if doc else ""


def rooms() -> list[tuple[str, Path]]:
    """(shown name, file whose docstring it takes), top layer first, then by name."""
    found = []
    for path in PACKAGE.iterdir():
        if path.name.startswith(("_", ".")):
            continue
        if path.is_dir() and (path / "__init__.py").exists():
            found.append((f"turnstoned/{path.name}/", path / "__init__.py", path.name))
        elif path.suffix == ".py":
            found.append((f"turnstoned/{path.name}", path, path.stem))
    found.sort(key=lambda r: (-LAYERS.get(r[2], 0), r[0]))
    out = []
    for name, path, part in found:
        out.append((name, path))
        if part == "core":
            out.append(("turnstoned/core/approval/", path.parent / "approval" / "__init__.py"))
    return out


def layout() -> str:
    width = max(len(name) for name, _ in rooms()) + 2
    lines = [f"{name:<{width}}{summary(path)}".rstrip() for name, path in rooms()]
    return "\n".join([BEGIN, "```", *lines, "```", END])


def test_every_room_has_a_summary_line() -> None:
    assert [name for name, path in rooms() if not summary(path)] == []


def test_the_readme_layout_is_the_packages_own_summaries() -> None:
    readme = (ROOT / "README.md").read_text()
    start, end = readme.find(BEGIN), readme.find(END)
    assert start >= 0 and end > start, "README.md has no generated layout block"
    assert readme[start:end + len(END)] == layout(), (
        "README's layout is stale; `python -m tests.unit.test_readme_layout` prints it:\n"
        + layout())


if __name__ == "__main__":
    print(layout())
