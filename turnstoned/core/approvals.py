"""Phase 2: deciding whether a batch of prepared calls may run.

Order of gates: nothing pending → run; blanket skip-permissions → run; every
pending label already granted ("always", or ``tools.auto_approve_tools``) and
every pending call grantable → run; otherwise one approval cycle is published
to the editor as the request ``item/tool/requestApproval``. Its answer decides
the cycle, and may decide single calls (``calls``); calls it does not name take
the cycle's decision. A cycle whose calls change the same file is ``atomic``:
an answer that approves part of it runs none of it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from turnstoned import protocol as p
from turnstoned.core.events import EventSink
from turnstoned.tools.base import PreparedCall

log = logging.getLogger(__name__)

ATOMIC_SPLIT = ("Denied: these calls change the same file and must be approved together; the "
                "user approved only some of them, so none ran.")


@dataclass(slots=True)
class Verdict:
    """What the gate decided for one batch."""

    decision: p.ResolvedDecision = "auto"  # the cycle's
    cycle_id: str | None = None
    denied: dict[str, str] = field(default_factory=dict)  # call id -> the result the model reads
    notes: list[str] = field(default_factory=list)  # user feedback the model reads after results

    @property
    def approved(self) -> bool:
        """Every call may run."""
        return not self.denied


@dataclass(slots=True)
class ApprovalPolicy:
    """What a session's gate knows: blanket skip, standing grants, timeout, open questions."""

    skip_permissions: bool = False
    grants: set[str] = field(default_factory=set)
    configured: frozenset[str] = frozenset()
    timeout: float = 0.0  # seconds; 0 = wait as long as it takes
    on_grant: Callable[[set[str]], None] = lambda grants: None
    # Calls whose approval is being asked right now, by call id.
    awaiting: dict[str, PreparedCall] = field(default_factory=dict)


def pending(calls: Iterable[PreparedCall]) -> list[PreparedCall]:
    return [c for c in calls if c.needs_approval and not c.error]


def is_atomic(gated: list[PreparedCall]) -> bool:
    """Two asked-about calls change the same file: deciding them one by one is unsafe."""
    paths = [c.file_change.path for c in gated if c.file_change is not None]
    return len(paths) != len(set(paths))


def _request(session_id: str, turn_id: str, cycle_id: str, calls: list[PreparedCall],
             atomic: bool) -> p.ApprovalRequestParams:
    items = [
        p.ApprovalRequestItem(
            call_id=c.call_id, tool=c.tool, header=c.header, preview=c.preview,
            needs_approval=c.needs_approval and not c.error, approval_label=c.label, error=c.error,
            file_change=c.file_change_info(),
        )
        for c in calls
    ]
    return p.ApprovalRequestParams(session_id=session_id, turn_id=turn_id, cycle_id=cycle_id,
                                   items=items, atomic=atomic)


def _deny_all(gated: list[PreparedCall], reason: str, decision: p.ResolvedDecision,
              cycle_id: str) -> Verdict:
    text = denial_text(reason)
    return Verdict(decision, cycle_id, {c.call_id: text for c in gated})


async def decide(sink: EventSink, policy: ApprovalPolicy, session_id: str, turn_id: str,
                 calls: list[PreparedCall]) -> Verdict:
    """The decision for the batch. Cancellation withdraws the question and propagates."""
    gated = pending(calls)
    if not gated:
        return Verdict()
    if policy.skip_permissions:
        return Verdict("auto")
    labels = {c.label for c in gated}
    if all(c.grantable for c in gated) and labels <= (policy.grants | policy.configured):
        return Verdict("always")
    cycle_id = uuid.uuid4().hex
    call_ids = [c.call_id for c in calls]

    def resolved(decision: p.ResolvedDecision, per_call: dict[str, p.Decision] | None = None) -> None:
        sink.notify(p.ApprovalResolved(
            session_id=session_id, turn_id=turn_id, cycle_id=cycle_id, call_ids=call_ids,
            decision=decision, calls=per_call or {}))

    atomic = is_atomic(gated)
    ask = sink.request_approval(_request(session_id, turn_id, cycle_id, calls, atomic))
    policy.awaiting.update((c.call_id, c) for c in gated)
    try:
        if policy.timeout > 0:
            answer = await asyncio.wait_for(ask, policy.timeout)
        else:
            answer = await ask
    except TimeoutError:
        resolved("timeout")
        return _deny_all(gated, f"Approval timed out after {policy.timeout:g}s", "timeout", cycle_id)
    except asyncio.CancelledError:
        resolved("cancelled")
        raise
    except Exception as exc:  # the client failed to answer: fail closed
        resolved("deny")
        return _deny_all(gated, f"The editor could not be asked for approval ({exc})", "deny",
                         cycle_id)
    finally:
        for c in gated:
            policy.awaiting.pop(c.call_id, None)
    verdict, per_call = settle(answer, gated, atomic, policy)
    verdict.cycle_id = cycle_id
    resolved(verdict.decision, per_call)
    return verdict


def settle(answer: p.ApprovalResponse, gated: list[PreparedCall], atomic: bool,
           policy: ApprovalPolicy) -> tuple[Verdict, dict[str, p.Decision]]:
    """Apply an editor's answer to the asked-about calls; returns the verdict and, when the
    answer decided calls one by one, what each call got."""
    cycle_feedback = (answer.feedback or "").strip() or None
    chosen: dict[str, tuple[p.Decision, str | None, bool]] = {}
    for c in gated:
        entry = answer.calls.get(c.call_id)
        if entry is None:
            chosen[c.call_id] = (answer.decision, cycle_feedback, False)
        else:
            chosen[c.call_id] = (entry.decision, (entry.feedback or "").strip() or None, True)
    unknown = set(answer.calls) - set(chosen)
    if unknown:
        log.warning("approval answer names calls not in its cycle: %s", sorted(unknown))
    runs = {cid: decision != "deny" for cid, (decision, _, _) in chosen.items()}
    if atomic and len(set(runs.values())) > 1:
        return _split_atomic(gated, chosen), {cid: "deny" for cid in chosen}
    verdict = Verdict(answer.decision)
    cycle_feedback_used = False
    for c in gated:
        decision, feedback, own = chosen[c.call_id]
        if decision == "deny":
            verdict.denied[c.call_id] = denial_text(feedback)
            cycle_feedback_used |= not own
            continue
        if decision == "always" and c.grantable:
            policy.grants.add(c.label)
        if own and feedback:
            verdict.notes.append(f"Feedback from the user on the {c.tool} call "
                                 f"{c.model_id or c.call_id}: {feedback}")
    if cycle_feedback and not cycle_feedback_used:
        verdict.notes.insert(0, f"Feedback from the user on the approved tool calls: "
                                f"{cycle_feedback}")
    if any(decision == "always" for decision, _, _ in chosen.values()):
        policy.on_grant(policy.grants)
    per_call = {cid: decision for cid, (decision, _, _) in chosen.items()} if answer.calls else {}
    return verdict, per_call


def _split_atomic(gated: list[PreparedCall],
                  chosen: dict[str, tuple[p.Decision, str | None, bool]]) -> Verdict:
    """A split answer to an atomic cycle runs nothing (and grants nothing)."""
    verdict = Verdict("deny")
    for c in gated:
        feedback = chosen[c.call_id][1]
        verdict.denied[c.call_id] = ATOMIC_SPLIT + (f" User feedback: {feedback}" if feedback else "")
    return verdict


def denial_text(feedback: str | None) -> str:
    return f"Denied by user: {feedback}" if feedback else "Denied by user"
