"""Domain objects in their protocol shapes: what the facade returns and events carry.

The rule (docs/architecture.md, "Wire and domain"): core builds protocol structs only
for what crosses its edge, here or where it emits an event; its own state is
domain objects (rows, records, MCP statuses), converted in this module.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import msgspec

from turnstoned import protocol as p
from turnstoned.core.approval import ApprovalPolicy, grants

if TYPE_CHECKING:
    from turnstoned.mcp.manager import MCPManager
    from turnstoned.mcp.models import CatalogChange, ServerStatus
    from turnstoned.mcp.trust import Question
    from turnstoned.sandbox import Status
    from turnstoned.store import SessionRow
    from turnstoned.store.previews import PreviewRecord
    from turnstoned.store.watches import Watch


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="seconds")


def session_info(row: SessionRow, title: str | None, updated_at: float,
                 status: p.SessionStatus, mode: p.ApprovalMode) -> p.SessionInfo:
    return p.SessionInfo(
        session_id=row.id, title=title, cwd=row.cwd, kind=row.kind, model=row.model,
        created_at=iso(row.created_at), updated_at=iso(updated_at),
        status="closed" if row.closed else status, parent_session_id=row.parent_id,
        approval_mode=mode,
    )


# ---------------------------------------------------------------- MCP


def trust_request(question: Question) -> p.McpTrustRequestParams:
    return p.McpTrustRequestParams(
        workspace=str(question.workspace), config_path=str(question.config_path),
        hash=question.hash, previously_trusted=question.previously_trusted,
        servers=[p.McpServerPreview(**msgspec.structs.asdict(s)) for s in question.servers])


def server_info(status: ServerStatus) -> p.McpServerInfo:
    return p.McpServerInfo(
        name=status.name, status=status.status, tools=status.tools,
        resources=status.resources, prompts=status.prompts, error=status.error,
        origin=status.origin, needs_auth=status.needs_auth, logged_in=status.logged_in)


def status_changed(status: ServerStatus) -> p.McpServerStatusChanged:
    return p.McpServerStatusChanged(**msgspec.structs.asdict(server_info(status)))


def change_info(change: CatalogChange) -> p.McpChange:
    return p.McpChange(server=change.server, added=list(change.added),
                       removed=list(change.removed), error=change.error)


def mcp_health(manager: MCPManager | None) -> p.McpHealth:
    if manager is None:
        return p.McpHealth()
    servers = [s for s in manager.status() if s.name]
    return p.McpHealth(
        servers=len(servers), connected=sum(1 for s in servers if s.status == "connected"),
        tools=len(manager.tools()),
        resources=len(manager.resources()) + len(manager.resource_templates()),
        prompts=len(manager.prompts()))


# ---------------------------------------------------------------- approvals


def grant_list(policy: ApprovalPolicy) -> p.GrantListResult:
    listed = [p.GrantInfo(rule=rule, description=grants.describe(rule), source="session",
                          revocable=True) for rule in sorted(policy.grants)]
    listed += [p.GrantInfo(rule=rule, description=grants.describe(rule), source="config",
                           revocable=False) for rule in sorted(policy.configured)]
    return p.GrantListResult(grants=listed)


# ---------------------------------------------------------------- previews and watches


def preview_open(session_id: str, call_id: str, record: PreviewRecord,
                 csp: str) -> p.PreviewOpen:
    return p.PreviewOpen(
        session_id=session_id, call_id=call_id, preview_id=record.id,
        kind=record.kind,  # type: ignore[arg-type]
        title=record.title, source=record.source, content_type=record.content_type,
        size=record.size, csp=csp)


def sandbox_health(status: Status) -> p.SandboxHealth:
    return p.SandboxHealth(available=status.available, detail=status.detail)


def watch_info(w: Watch) -> p.WatchInfo:
    return p.WatchInfo(
        watch_id=w.id, session_id=w.session_id, name=w.name, command=w.command,
        interval_seconds=w.interval, stop_on=w.stop_on, max_polls=w.max_polls,
        poll_count=w.poll_count, active=w.active, ended=w.ended,
        next_poll_at=iso(w.next_poll) if w.active else None,
        last_poll_at=iso(w.last_poll) if w.last_poll else None, last_exit_code=w.last_exit_code,
        created_at=iso(w.created_at))
