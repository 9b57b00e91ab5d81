"""Who shares what: the memory scopes, a session's project, and what an editor may see.

The one place for these rules: the ``memory`` tool, the skill catalog and the
engine's ``memory/list``, ``memory/delete`` and ``skill/list`` all ask here. A
leaf: it knows paths and the OS user, nothing of sessions' storage.

========== =================================== ===========================
scope      shared by                           key
========== =================================== ===========================
global     every session                       ``""``
workstream one session                         the session id
user       the OS user's sessions              the OS user name
coordinator the OS user's coordinator sessions the OS user name
project    sessions in one workspace           the project root path
========== =================================== ===========================

The project root is the session's workspace folder, else the nearest
directory at or above its cwd that holds ``.git``.
"""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass
from pathlib import Path

from turnstoned.protocol import MemoryScope

SCOPES: tuple[MemoryScope, ...] = ("global", "workstream", "user", "coordinator", "project")
KIND_SCOPES: dict[str, tuple[MemoryScope, ...]] = {
    "interactive": ("global", "workstream", "user", "project"),
    "coordinator": ("global", "coordinator", "user", "project"),
}
# What an editor sees without naming a session: the scopes that do not depend on one.
SESSIONLESS_SCOPES: tuple[MemoryScope, ...] = ("global", "user", "coordinator")
SESSION_SCOPES = frozenset({"workstream", "project"})  # meaningless without a session


class ScopeError(ValueError):
    """A scope that does not exist, or that this session cannot use; the text says why."""


@dataclass(frozen=True, slots=True)
class ScopeRef:
    """One concrete place a memory can live."""

    scope: MemoryScope
    key: str


def os_user() -> str:
    """The OS user name (the uid when the system cannot name it)."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return f"uid{os.getuid()}"


def project_root(cwd: Path, workspace: Path | None) -> Path | None:
    """The workspace folder, else the nearest directory at or above ``cwd`` holding ``.git``."""
    if workspace is not None:
        return workspace
    for directory in (cwd, *cwd.parents):
        if (directory / ".git").exists():
            return directory
    return None


@dataclass(frozen=True, slots=True)
class Scopes:
    """The memory scopes one session may use, and the key of each."""

    kind: str
    session_id: str
    user: str
    project: str | None

    @classmethod
    def for_session(cls, session_id: str, kind: str, cwd: Path,
                    workspace: Path | None) -> Scopes:
        root = project_root(cwd, workspace)
        return cls(kind=kind, session_id=session_id, user=os_user(),
                   project=str(root) if root is not None else None)

    def allowed(self) -> tuple[MemoryScope, ...]:
        """The scopes this session's kind may name."""
        return KIND_SCOPES.get(self.kind, KIND_SCOPES["interactive"])

    def default(self) -> MemoryScope:
        """Where an unscoped save/get/delete goes."""
        if self.project is not None:
            return "project"
        return "coordinator" if self.kind == "coordinator" else "global"

    def ref(self, scope: str | None) -> ScopeRef:
        """The one place ``scope`` (None: the default) means; ``ScopeError`` if unusable."""
        name = self.default() if scope is None else scope
        known = next((s for s in SCOPES if s == name), None)
        if known is None:
            raise ScopeError(f"Error: invalid scope '{name}'. Valid: {', '.join(self.allowed())}")
        if known not in self.allowed():
            raise ScopeError(f"Error: scope '{name}' is unavailable to {self.kind} sessions. "
                             f"Available: {', '.join(self.allowed())}")
        if known == "project" and self.project is None:
            raise ScopeError("Error: scope 'project' is unavailable: this session has no "
                             "workspace folder and its directory is not inside a git repository.")
        return ScopeRef(known, self.key(known))

    def key(self, scope: MemoryScope) -> str:
        if scope == "workstream":
            return self.session_id
        if scope in ("user", "coordinator"):
            return self.user
        if scope == "project":
            return self.project or ""
        return ""

    def visible(self) -> list[ScopeRef]:
        """Every place this session can see, in display order (the search/list union)."""
        return [ScopeRef(s, self.key(s)) for s in self.allowed()
                if s != "project" or self.project is not None]

    def for_editor(self, scope: MemoryScope | None) -> list[ScopeRef]:
        """What an editor naming this session (and maybe ``scope``) may list or delete.

        Beyond what the session itself sees: an editor may name a scope the session's
        kind does not use (a coordinator memory from an interactive session), except
        a project the session has none of.
        """
        refs = self.visible()
        if scope is not None and scope not in self.allowed() and scope != "project":
            refs.append(ScopeRef(scope, self.key(scope)))
        return [r for r in refs if scope is None or r.scope == scope]


def sessionless_refs(scope: MemoryScope | None = None) -> list[ScopeRef]:
    """The session-independent scopes (or the one named), for editors that name no session;
    ``ScopeError`` when ``scope`` needs a session."""
    if scope in SESSION_SCOPES:
        raise ScopeError(f"scope {scope!r} belongs to a session: pass sessionId")
    user = os_user()
    return [ScopeRef(s, user if s in ("user", "coordinator") else "")
            for s in SESSIONLESS_SCOPES if scope is None or s == scope]
