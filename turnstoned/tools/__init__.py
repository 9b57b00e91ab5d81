"""The built-in tools: one JSON schema and one module per tool, and their registry.

Every ``*.json`` here is loaded sorted by file name; each must have a module of
the same name (and each module a JSON, except helpers named ``_*`` and the ``SHARED``
contracts). The metadata keys are
understood and stripped before a schema reaches the model. The derived sets of
the seed (TOOLS, INTERACTIVE_TOOLS, COORDINATOR_TOOLS, TASK_AGENT_TOOLS,
TASK_AUTO_TOOLS, BUILTIN_TOOL_NAMES, PRIMARY_KEY_MAP) are module attributes,
computed on first use so that importing this package costs nothing.
"""

from __future__ import annotations

import copy
import functools
import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec

from turnstoned.tools.base import (
    AgentKind,
    PreparedCall,
    ToolContext,
    ToolOutput,
    prepare_error,
)

META_KEYS = frozenset(
    {
        "task_agent",
        "coordinator",
        "interactive",
        "auto_approve",
        "primary_key",
        "kind_variants",
        "cwd_note",
        "workspace_note",
    }
)

_DIR = Path(__file__).parent


class RegistryError(Exception):
    """The tool directory is inconsistent (a JSON without a module, a bad schema, ...)."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    function: dict[str, Any]  # {"name", "description", "parameters"}: metadata stripped
    meta: dict[str, Any]
    module: ModuleType

    @property
    def auto_approve(self) -> bool:
        return bool(self.meta.get("auto_approve"))

    def handle(self) -> BuiltinTool:
        """The tool as the pipeline calls it."""
        return BuiltinTool(self.name, self.module, self.meta.get("primary_key"))

    def in_kind(self, kind: AgentKind) -> bool:
        if kind == "task":
            return bool(self.meta.get("task_agent"))
        coordinator = bool(self.meta.get("coordinator"))
        if kind == "coordinator":
            return coordinator
        return not coordinator or bool(self.meta.get("interactive"))


class BuiltinTool:
    """A ``turnstoned.tools.<name>`` module as a ``ToolHandle``: arguments decoded into its
    ``Args`` (unknown keys ignored, numbers and flags in text accepted)."""

    def __init__(self, name: str, module: ModuleType, primary_key: str | None) -> None:
        self.name, self.module, self.primary_key = name, module, primary_key

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> PreparedCall:
        try:
            decoded = msgspec.convert(args, self.module.Args, strict=False)
        except msgspec.ValidationError as exc:
            return prepare_error(f"Error: invalid arguments for {self.name}: {exc}")
        call: PreparedCall = self.module.prepare(decoded, ctx)
        return call

    async def execute(self, call: PreparedCall, ctx: ToolContext) -> ToolOutput:
        output: ToolOutput = await self.module.execute(call, ctx)
        return output


def _load_one(path: Path) -> ToolSpec:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RegistryError(f"{path.name}: {exc}") from exc
    function = {k: v for k, v in raw.items() if k not in META_KEYS}
    name = function.get("name")
    params = function.get("parameters")
    if not isinstance(name, str) or name != path.stem:
        raise RegistryError(f"{path.name}: `name` must equal the file name")
    if not isinstance(function.get("description"), str):
        raise RegistryError(f"{path.name}: `description` must be a string")
    if not isinstance(params, dict) or params.get("type") != "object":
        raise RegistryError(f"{path.name}: `parameters` must be an object schema")
    required = set(params.get("required", []))
    if not required <= set(params.get("properties", {})):
        raise RegistryError(f"{path.name}: required names a parameter that does not exist")
    unknown = set(function) - {"name", "description", "parameters"}
    if unknown:
        raise RegistryError(f"{path.name}: unknown keys {sorted(unknown)}")
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        raise RegistryError(f"{path.name}: no module {name}.py") from exc
    for attr in ("Args", "prepare", "execute"):
        if not hasattr(module, attr):
            raise RegistryError(f"{name}.py: missing `{attr}`")
    meta = {k: v for k, v in raw.items() if k in META_KEYS}
    return ToolSpec(name=name, function=function, meta=meta, module=module)


# Modules that are not tools: what the engine shares with them (the tool contract, running
# scripts, the coordinator tools' contract). Helpers private to the tools start with `_`.
SHARED = frozenset({"base", "procs", "coordination"})


@functools.cache
def registry() -> dict[str, ToolSpec]:
    """All built-in tools by name, in file-name order."""
    specs = [_load_one(p) for p in sorted(_DIR.glob("*.json"))]
    modules = {
        p.stem for p in _DIR.glob("*.py") if not p.stem.startswith("_") and p.stem not in SHARED
    }
    orphans = modules - {s.name for s in specs}
    if orphans:
        raise RegistryError(f"tool modules without a JSON schema: {sorted(orphans)}")
    return {s.name: s for s in specs}


def _wire(function: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": function}


def _variant(spec: ToolSpec, kind: AgentKind) -> dict[str, Any]:
    variant = (spec.meta.get("kind_variants") or {}).get(kind)
    if not variant:
        return spec.function
    function = copy.deepcopy(spec.function)
    if "description" in variant:
        function["description"] = variant["description"]
    props = function["parameters"].get("properties", {})
    for param, override in (variant.get("parameter_overrides") or {}).items():
        if param in props:
            props[param].update(override)
    return function


def _with_notes(function: dict[str, Any], spec: ToolSpec, cwd: str, workspace: str | None) -> dict[str, Any]:
    notes = []
    if cwd and spec.meta.get("cwd_note"):
        notes.append(spec.meta["cwd_note"].replace("{working_dir}", cwd))
    ws_note = spec.meta.get("workspace_note")
    if ws_note and workspace and workspace != cwd and Path(workspace).is_dir():
        notes.append(ws_note.replace("{workspace_dir}", workspace))
    notes = [n for n in notes if n.strip()]
    if not notes:
        return function
    out = dict(function)
    out["description"] = " ".join([function["description"].rstrip(), *notes])
    return out


def tools_for(kind: AgentKind, cwd: str = "", workspace: str | None = None) -> list[dict[str, Any]]:
    """The wire schemas a session of ``kind`` sees, with variants and notes applied.

    Coordinator sessions never get notes. The returned dicts are fresh copies
    where they differ from the pristine schema; callers must not mutate them.
    """
    out = []
    for spec in registry().values():
        if not spec.in_kind(kind):
            continue
        function = _variant(spec, kind)
        if kind != "coordinator":
            function = _with_notes(function, spec, cwd, workspace)
        out.append(_wire(function))
    return out


def _names(kind: AgentKind) -> list[str]:
    return [s.name for s in registry().values() if s.in_kind(kind)]


_DERIVED: dict[str, Callable[[], Any]] = {
    "TOOLS": lambda: [_wire(s.function) for s in registry().values()],
    "INTERACTIVE_TOOLS": lambda: tools_for("interactive"),
    "COORDINATOR_TOOLS": lambda: tools_for("coordinator"),
    "TASK_AGENT_TOOLS": lambda: tools_for("task"),
    "TASK_AUTO_TOOLS": lambda: frozenset(s.name for s in registry().values() if s.auto_approve),
    "BUILTIN_TOOL_NAMES": lambda: frozenset(registry()),
    "PRIMARY_KEY_MAP": lambda: {
        s.name: s.meta["primary_key"] for s in registry().values() if s.meta.get("primary_key")
    },
}


def __getattr__(name: str) -> Any:
    if name in _DERIVED:
        return _DERIVED[name]()
    raise AttributeError(name)


def tool_names(kind: AgentKind) -> list[str]:
    """Names of the built-in tools a session of ``kind`` may call."""
    return _names(kind)
