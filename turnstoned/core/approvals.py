"""Phase 2: deciding whether a batch of prepared calls may run.

Order of gates: nothing pending → run; blanket skip-permissions → run; every
pending label already granted ("always", or ``tools.auto_approve_tools``) and
every pending call grantable → run; otherwise one approval cycle is published to the editor as the request
``item/tool/requestApproval`` and its answer decides the whole batch.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from turnstoned import protocol as p
from turnstoned.core.events import EventSink
from turnstoned.tools.base import PreparedCall


@dataclass(slots=True)
class Verdict:
    approved: bool
    feedback: str | None = None
    decision: str = "auto"  # approve | deny | always | timeout | auto
    cycle_id: str | None = None


@dataclass(slots=True)
class ApprovalPolicy:
    """What a session's gate knows: blanket skip, standing grants, timeout."""

    skip_permissions: bool = False
    grants: set[str] = field(default_factory=set)
    configured: frozenset[str] = frozenset()
    timeout: float = 0.0  # seconds; 0 = wait as long as it takes
    on_grant: Callable[[set[str]], None] = lambda grants: None


def pending(calls: Iterable[PreparedCall]) -> list[PreparedCall]:
    return [c for c in calls if c.needs_approval and not c.error]


def _request(session_id: str, turn_id: str, cycle_id: str,
             calls: list[PreparedCall]) -> p.ApprovalRequestParams:
    items = [
        p.ApprovalRequestItem(
            call_id=c.call_id, tool=c.tool, header=c.header, preview=c.preview,
            needs_approval=c.needs_approval and not c.error, approval_label=c.label, error=c.error,
        )
        for c in calls
    ]
    return p.ApprovalRequestParams(session_id=session_id, turn_id=turn_id, cycle_id=cycle_id,
                                   items=items)


async def decide(sink: EventSink, policy: ApprovalPolicy, session_id: str, turn_id: str,
                 calls: list[PreparedCall]) -> Verdict:
    """One decision for the batch. Cancellation withdraws the question and propagates."""
    gated = pending(calls)
    if not gated:
        return Verdict(True)
    if policy.skip_permissions:
        return Verdict(True, decision="auto")
    labels = {c.label for c in gated}
    if all(c.grantable for c in gated) and labels <= (policy.grants | policy.configured):
        return Verdict(True, decision="always")
    cycle_id = uuid.uuid4().hex
    call_ids = [c.call_id for c in calls]

    def resolved(decision: str) -> None:
        sink.notify("approval/resolved", p.ApprovalResolved(
            session_id=session_id, turn_id=turn_id, cycle_id=cycle_id, call_ids=call_ids,
            decision=decision,  # type: ignore[arg-type]
        ))

    ask = sink.request_approval(_request(session_id, turn_id, cycle_id, calls))
    try:
        if policy.timeout > 0:
            answer = await asyncio.wait_for(ask, policy.timeout)
        else:
            answer = await ask
    except TimeoutError:
        resolved("timeout")
        return Verdict(False, f"Approval timed out after {policy.timeout:g}s", "timeout", cycle_id)
    except asyncio.CancelledError:
        resolved("cancelled")
        raise
    except Exception as exc:  # the client failed to answer: fail closed
        resolved("deny")
        return Verdict(False, f"The editor could not be asked for approval ({exc})", "deny", cycle_id)
    feedback = (answer.feedback or "").strip() or None
    if answer.decision == "always":
        policy.grants |= {c.label for c in gated if c.grantable}
        policy.on_grant(policy.grants)
    resolved(answer.decision)
    return Verdict(answer.decision in ("approve", "always"), feedback, answer.decision, cycle_id)


def denial_text(feedback: str | None) -> str:
    return f"Denied by user: {feedback}" if feedback else "Denied by user"
