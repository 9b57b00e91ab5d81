"""Trust for project MCP configs: a repository's ``.mcp.json`` runs nothing unasked.

``ProjectTrust`` loads a workspace's ``.mcp.json`` into the manager when a
session opens there. Under ``mode = "ask"`` (the default) its servers are
listed ``untrusted`` until the user trusts that exact content (its sha256):
nothing starts and no ``${VAR}`` is expanded before. The decision is kept per
workspace and hash (``TrustDecisions``): ``deny`` is never asked again for
that hash, a dismissed (or failed, or unanswered-with-an-error) question is
asked again at the next session, and any change to the file is a new hash,
so it asks again. Every (re)connect of a trusted server re-reads the file: a
changed or revoked one turns the servers ``untrusted`` instead of running.

``mode = "trust"`` loads every project config trusted (hash checks still
reload a changed file); ``"never"`` ignores project configs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from turnstoned.mcp.config import parse_entries
from turnstoned.mcp.manager import MCPManager
from turnstoned.mcp.models import ServerStatus
from turnstoned.mcp.project import (
    PROJECT_FILE,
    ProjectFile,
    ServerPreview,
    placeholders,
    preview,
    project_origin,
    read_project,
)
from turnstoned.questions import Answer, TrustQuestions

Mode = Literal["ask", "never", "trust"]
Decision = Literal["trusted", "denied"]


class TrustDecisions(Protocol):
    """Where decisions persist, keyed by workspace and content hash."""

    def decision(self, workspace: str, digest: str) -> Decision | None: ...

    def record(self, workspace: str, config_path: str, digest: str, decision: Decision) -> None: ...

    def revoke(self, workspace: str) -> None:
        """Forget every trusted version of the workspace's config."""

    def ever_trusted(self, workspace: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class Question:
    """What the user is asked about: one version of one project config."""

    workspace: Path
    config_path: Path
    hash: str
    servers: list[ServerPreview]
    previously_trusted: bool


# Returns "trust", "deny" or "dismiss"; anything else (None included) trusts nothing.
Ask = Callable[[Question], Awaitable[str | None]]


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of an explicit trust or revoke."""

    project: ProjectFile
    trusted: bool
    servers: list[ServerStatus]


class TrustError(Exception):
    """An explicit trust/revoke cannot be done; the message says why."""


class ProjectTrust:
    """Project configs of every workspace a session opened in, gated by the user's trust."""

    def __init__(self, manager: MCPManager, decisions: TrustDecisions, *, mode: Mode,
                 ask: Ask | None, settle_timeout: float = 30.0) -> None:
        self.manager = manager
        self.mode = mode
        self._decisions = decisions
        self._ask = ask
        self._settle_timeout = settle_timeout
        self._loaded: dict[Path, tuple[str, Decision | None] | None] = {}
        self.questions = TrustQuestions()

    def open(self, workspace: Path) -> None:
        """A session opened in ``workspace``: load its config, ask about it if undecided."""
        if self.mode == "never":
            return
        project = self._load(workspace.resolve())
        if project is not None and self._decision(project) is None and self.mode == "ask":
            self._question(project)

    async def set_trusted(self, workspace: Path, trusted: bool,
                          expected_hash: str | None = None) -> Outcome:
        """Trust (and start) or revoke the workspace's current config; raises ``TrustError``."""
        if self.mode == "never":
            raise TrustError('project MCP configs are off ([mcp] project_config = "never")')
        if self.mode == "trust" and not trusted:
            raise TrustError('[mcp] project_config = "trust" trusts every project config')
        workspace = workspace.resolve()
        project = read_project(workspace)
        if project is None:
            raise TrustError(f"{workspace} has no .mcp.json")
        if expected_hash is not None and expected_hash != project.hash:
            raise TrustError(f"{project.path} changed since it was shown (hash {project.hash})")
        key = str(workspace)
        if not trusted:
            self._decisions.revoke(key)
        self._decisions.record(key, str(project.path), project.hash,
                               "trusted" if trusted else "denied")
        self._load(workspace)
        names = [s.name for s in self.manager.status() if s.origin == project.origin]
        if trusted:
            try:
                await self.manager.wait_ready(self._settle_timeout, names)
            except TimeoutError:
                pass  # still connecting: mcpServer/statusChanged reports the rest
        servers = [s for s in self.manager.status() if s.origin == project.origin]
        return Outcome(project=project, trusted=trusted, servers=servers)

    async def close(self) -> None:
        """Withdraw pending questions."""
        await self.questions.close()

    # -- loading -------------------------------------------------------------------

    def _decision(self, project: ProjectFile) -> Decision | None:
        if self.mode == "trust":
            return "trusted"
        return self._decisions.decision(str(project.workspace), project.hash)

    def _load(self, workspace: Path) -> ProjectFile | None:
        """Put the workspace's current config into the manager, unless it is there already."""
        project = read_project(workspace)
        state = (project.hash, self._decision(project)) if project is not None else None
        if workspace in self._loaded and self._loaded[workspace] == state:
            return project
        self._loaded[workspace] = state
        origin = project_origin(workspace)
        if project is None or state is None:
            self.manager.replace_servers(origin, [])
        elif state[1] == "trusted":
            # The only place a project entry is expanded: the user trusted these bytes.
            specs, issues = parse_entries(project.table, origin, project_dir=workspace)
            gate = self._gate(workspace, project.hash)
            self.manager.replace_servers(origin, specs, [*project.issues, *issues], gate=gate)
        else:
            specs, issues = placeholders(project)
            self.manager.replace_servers(origin, specs, [*project.issues, *issues],
                                         untrusted=_reason(project, state[1]))
        return project

    def _gate(self, workspace: Path, digest: str) -> Callable[[], str | None]:
        def check() -> str | None:
            project = read_project(workspace)
            if project is not None and project.hash == digest \
                    and self._decision(project) == "trusted":
                return None
            # Refuse this connect; the current file is loaded (and asked about) right after.
            asyncio.get_running_loop().call_soon(self.open, workspace)
            if project is None or project.hash != digest:
                return f"not trusted: {workspace / PROJECT_FILE} changed since it was trusted"
            return _reason(project, self._decision(project))

        return check

    # -- asking --------------------------------------------------------------------

    def _question(self, project: ProjectFile) -> None:
        ask = self._ask
        if ask is None or not project.table:
            return

        async def question() -> str | None:
            return await ask(Question(
                workspace=project.workspace, config_path=project.path, hash=project.hash,
                servers=preview(project),
                previously_trusted=self._decisions.ever_trusted(str(project.workspace))))

        def decided(answer: Answer) -> None:
            self._decisions.record(str(project.workspace), str(project.path), project.hash,
                                   "trusted" if answer == "trust" else "denied")
            self.open(project.workspace)

        self.questions.ask((project.workspace, project.hash), str(project.path), question,
                           decided)


def _reason(project: ProjectFile, decision: Decision | None) -> str:
    if decision == "denied":
        return (f"not trusted: {project.path} (sha256 {project.hash[:12]}) was denied; "
                "mcpServer/trust trusts it")
    return f"not trusted: {project.path} (sha256 {project.hash[:12]}) has not been approved"
