"""Approval cycles as ``session/request_permission``: one question per asked-about call.

An engine cycle (one model batch) may ask about several calls; ACP asks about one
tool call at a time, so the calls are asked in turn and the answers go back as
per-call decisions. An *atomic* cycle (two calls change the same file) is asked
once, for all of its calls together, and its answer decides them all.

Options, by id and kind:

- ``allow_once``: approve this call;
- ``allow_always``: approve it with decision ``always``, so the engine saves the
  call's ``grantRules``, exactly what the LSP daemon's "always" saves (the
  option is offered only when the call has rules: a protected call saves none);
- ``reject_once``: deny it (the model reads "Denied by user");
- ``reject_always``: deny it, and deny later calls of this session whose rules
  are all among the rejected ones without asking again, for as long as this
  ACP connection lives. turnstoned has no standing denial of its own: a
  ``deny`` tool policy is the lasting form (docs/acp.md).

The verdict (risk, recommendation, rule, reason), how a command runs (sandboxed,
unsandboxed, escalated with what the sandbox stopped), the judge's verdict, an
``ask`` policy and the rules "always" would save are in the question's title and
content; an edit shows its whole old and new text (``fileChange/read``'s).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from turnstoned import protocol as p
from turnstoned.acp import updates
from turnstoned.acp.rpc import Peer, RemoteError
from turnstoned.acp.wire import PermissionResponse
from turnstoned.core.errors import EngineError

log = logging.getLogger(__name__)

JSON = dict[str, Any]
ReadChange = Callable[[str, str], Awaitable[p.FileChangeReadResult]]

ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE, REJECT_ALWAYS = (
    "allow_once", "allow_always", "reject_once", "reject_always")
DECISIONS: dict[str, p.Decision] = {ALLOW_ONCE: "approve", ALLOW_ALWAYS: "always",
                                    REJECT_ONCE: "deny", REJECT_ALWAYS: "deny"}
DISMISSED = "The user dismissed the question."
REMEMBERED = "Denied: the user asked not to be asked about this again ({rules})."
SANDBOX = {"sandboxed": "Runs in the sandbox (writes only the workspace, no network).",
           "unsandboxed": "Runs outside the sandbox.",
           "escalated": "Asks to run outside the sandbox."}


def options(item: p.ApprovalRequestItem) -> list[JSON]:
    rules = ", ".join(item.grant_rules)
    found = [{"optionId": ALLOW_ONCE, "name": "Allow once", "kind": "allow_once"}]
    if item.grant_rules:
        found.append({"optionId": ALLOW_ALWAYS, "name": f"Always allow ({rules})",
                      "kind": "allow_always"})
    found.append({"optionId": REJECT_ONCE, "name": "Reject", "kind": "reject_once"})
    if item.grant_rules:
        found.append({"optionId": REJECT_ALWAYS, "name": f"Reject, and do not ask again ({rules})",
                      "kind": "reject_always"})
    return found


def title(item: p.ApprovalRequestItem) -> str:
    head = item.header.strip() or item.tool
    return f"{head} — {item.verdict.risk} risk" if item.verdict is not None else head


def explanation(item: p.ApprovalRequestItem) -> str:
    """The verdict and what approving means, as markdown."""
    lines = []
    verdict = item.verdict
    if verdict is not None:
        lines.append(f"**{verdict.risk} risk**, {verdict.recommendation} "
                     f"(rule `{verdict.rule}`): {verdict.reason}")
    if item.judge_verdict is not None:
        judge = item.judge_verdict
        lines.append(f"Judge: **{judge.risk} risk**, {judge.recommendation} "
                     f"({judge.confidence:.0%}): {judge.reason}")
    if item.sandbox is not None:
        lines.append(SANDBOX[item.sandbox])
    if item.escalation:
        lines.append(f"Why it leaves the sandbox: {item.escalation}")
    if item.policy:
        lines.append(f"Asked because of the tool policy: {item.policy}")
    if item.grant_rules:
        lines.append("“Always allow” saves "
                     + ", ".join(f"`{rule}`" for rule in item.grant_rules)
                     + " for this session, inside its workspace.")
    else:
        lines.append("“Always” is not offered: this call asks every time.")
    return "\n\n".join(lines)


class Permissions:
    """Asks the client about the engine's approval cycles."""

    def __init__(self, peer: Peer, read_change: ReadChange) -> None:
        self.peer = peer
        self.read_change = read_change
        self.rejected: dict[str, set[str]] = {}  # session -> rules rejected "always"
        # The whole (old, new) text of a change shown while it was asked (the final diff).
        self.texts: dict[str, tuple[str | None, str]] = {}

    async def ask(self, params: p.ApprovalRequestParams) -> p.ApprovalResponse:
        asked = [i for i in params.items if i.needs_approval and not i.error]
        if not asked:
            return p.ApprovalResponse(decision="approve")
        if params.atomic:
            decision, feedback = await self._ask(params, asked)
            return p.ApprovalResponse(decision=decision, feedback=feedback)
        calls: dict[str, p.CallDecision] = {}
        for item in asked:
            decision, feedback = await self._ask(params, [item])
            calls[item.call_id] = p.CallDecision(decision=decision, feedback=feedback)
        if len(calls) == 1:
            only = next(iter(calls.values()))
            return p.ApprovalResponse(decision=only.decision, feedback=only.feedback)
        runs = any(c.decision != "deny" for c in calls.values())
        return p.ApprovalResponse(decision="approve" if runs else "deny", calls=calls)

    async def _ask(self, params: p.ApprovalRequestParams, items: list[p.ApprovalRequestItem]
                   ) -> tuple[p.Decision, str | None]:
        """One question about ``items`` (several only for an atomic cycle)."""
        session = params.session_id
        rejected = self.rejected.get(session, set())
        rules = {rule for item in items for rule in item.grant_rules}
        if rules and all(item.grant_rules for item in items) and rules <= rejected:
            return "deny", REMEMBERED.format(rules=", ".join(sorted(rules)))
        request = {"sessionId": session, "toolCall": await self._tool_call(params, items),
                   "options": options(items[0]) if len(items) == 1 else _together()}
        try:
            raw = await self.peer.call("session/request_permission", request)
            answer = msgspec.convert(raw, PermissionResponse)
        except (RemoteError, msgspec.ValidationError, ConnectionError) as exc:
            log.info("permission request not answered (%s): denied", exc)
            return "deny", None
        if answer.outcome.outcome == "cancelled":
            return "deny", DISMISSED
        chosen = answer.outcome.option_id or ""
        decision = DECISIONS.get(chosen, "deny")  # an unknown option runs nothing
        if chosen == REJECT_ALWAYS and rules:
            self.rejected.setdefault(session, set()).update(rules)
        return decision, None

    async def _tool_call(self, params: p.ApprovalRequestParams,
                         items: list[p.ApprovalRequestItem]) -> JSON:
        """The ToolCallUpdate the question shows: the first call, with every call's text."""
        first = items[0]
        content: list[JSON] = []
        for item in items:
            if len(items) > 1:
                content.append(updates.text_content(f"**{title(item)}**"))
            content.append(updates.text_content(explanation(item)))
            content.extend(await self._shown(params.session_id, item))
        head = title(first) if len(items) == 1 else (
            f"{len(items)} calls that change the same file (answered together)")
        found: JSON = {"toolCallId": first.call_id, "title": head, "status": "pending",
                       "kind": _kind(first), "content": content,
                       "_meta": {"turnstoned": {"cycleId": params.cycle_id,
                                                "callIds": [i.call_id for i in items],
                                                "items": msgspec.to_builtins(items)}}}
        if first.file_change is not None:
            found["locations"] = [{"path": first.file_change.path}]
        return found

    async def _shown(self, session_id: str, item: p.ApprovalRequestItem) -> list[JSON]:
        """What the call would do: its diff (whole texts), plan or command."""
        change = item.file_change
        if change is not None:
            try:
                texts = await self.read_change(session_id, item.call_id)
            except (EngineError, OSError) as exc:
                log.info("no whole texts for %s: %s", item.call_id, exc)
                return updates.hunk_diffs(change)
            old = None if change.kind == "create" else texts.old_text
            self.texts[item.call_id] = (old, texts.new_text)
            return [updates.diff_content(change.path, old, texts.new_text)]
        if item.tool == "propose_plan":
            return [updates.text_content(item.preview)] if item.preview else []
        if item.preview:
            return [updates.text_content(updates.fenced(item.preview))]
        return []

    def forget(self, session_id: str) -> None:
        self.rejected.pop(session_id, None)


def _kind(item: p.ApprovalRequestItem) -> str:
    if item.file_change is not None and item.file_change.kind == "delete":
        return "delete"
    return updates.KINDS.get(item.tool, "other")


def _together() -> list[JSON]:
    """An atomic cycle: its calls are approved or rejected together, never saved."""
    return [{"optionId": ALLOW_ONCE, "name": "Allow all of them", "kind": "allow_once"},
            {"optionId": REJECT_ONCE, "name": "Reject all of them", "kind": "reject_once"}]
