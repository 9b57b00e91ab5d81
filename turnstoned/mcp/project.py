"""A project's ``.mcp.json`` as untrusted input: read once, hashed, described as written.

Nothing here reads an environment variable or starts a process. A
``ProjectFile`` keeps the exact bytes that were hashed, so what the user trusts
is what is parsed (``config.parse_entries``), never a newer version of the file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import msgspec

from turnstoned.mcp.config import (
    VAR_PATTERN,
    ConfigIssue,
    EntryError,
    ServerSpec,
    check_entry,
    entry_issue,
    servers_table,
)

PROJECT_FILE = ".mcp.json"
MAX_BYTES = 1 << 20  # a project config is a few hundred bytes; refuse to read a huge one


@dataclass(frozen=True, slots=True)
class ProjectFile:
    """One version of a project's ``.mcp.json``: its bytes, their hash, its server table."""

    workspace: Path
    path: Path
    hash: str  # sha256 of the bytes, hex
    table: Mapping[str, Any]
    issues: tuple[ConfigIssue, ...] = ()

    @property
    def origin(self) -> str:
        return project_origin(self.workspace)


class ServerPreview(msgspec.Struct, kw_only=True, frozen=True):
    """One entry exactly as written (see ``protocol.McpServerPreview``)."""

    name: str
    transport: Literal["stdio", "http"] | None = None
    command: str | None = None
    args: list[str] = []
    url: str | None = None
    cwd: str | None = None
    env: list[str] = []
    variables: list[str] = []
    problem: str | None = None


def project_origin(workspace: Path) -> str:
    return f"project:{workspace / PROJECT_FILE}"


def read_project(workspace: Path) -> ProjectFile | None:
    """The workspace's ``.mcp.json`` now, or None when there is none."""
    path = workspace / PROJECT_FILE
    origin = project_origin(workspace)
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as exc:
        issue = ConfigIssue(name="", origin=origin, message=f"{path}: cannot read: {exc}")
        return ProjectFile(workspace=workspace, path=path, hash="", table={}, issues=(issue,))
    digest = hashlib.sha256(data).hexdigest()
    issues: list[ConfigIssue] = []
    if len(data) > MAX_BYTES:
        message = f"{path}: larger than {MAX_BYTES} bytes; not read"
        issues.append(ConfigIssue(name="", origin=origin, message=message))
        table: Mapping[str, Any] = {}
    else:
        table = servers_table(data, path, origin, issues)
    return ProjectFile(workspace=workspace, path=path, hash=digest, table=table,
                       issues=tuple(issues))


def placeholders(project: ProjectFile) -> tuple[list[ServerSpec], list[ConfigIssue]]:
    """Specs that only name the servers (no command, no URL) and the entries' shape problems."""
    specs: list[ServerSpec] = []
    issues: list[ConfigIssue] = []
    for name, raw in project.table.items():
        try:
            kind = check_entry(str(name), raw)
        except EntryError as exc:
            issues.append(entry_issue(str(name), project.origin, str(exc)))
            continue
        specs.append(ServerSpec(name=str(name), type=kind, origin=project.origin))
    return specs, issues


def preview(project: ProjectFile) -> list[ServerPreview]:
    """What each entry would run or reach, unexpanded, and which variables it would read."""
    return [_preview_one(str(name), raw, project.workspace) for name, raw in project.table.items()]


def _preview_one(name: str, raw: Any, workspace: Path) -> ServerPreview:
    problem = None
    kind: Literal["stdio", "http"] | None = None
    try:
        kind = check_entry(name, raw)
    except EntryError as exc:
        problem = str(exc)
    entry = raw if isinstance(raw, Mapping) else {}
    args = entry.get("args")
    env = entry.get("env")
    cwd = _text(entry.get("cwd"))
    return ServerPreview(
        name=name,
        transport=kind,
        command=_text(entry.get("command")),
        args=[str(a) for a in args] if isinstance(args, list) else [],
        url=_text(entry.get("url")),
        cwd=cwd if cwd is not None or kind != "stdio" else str(workspace),
        env=sorted(str(k) for k in env) if isinstance(env, Mapping) else [],
        variables=sorted({m.group(1) for s in _strings(raw) for m in VAR_PATTERN.finditer(s)}),
        problem=problem,
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a JSON value (keys included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
