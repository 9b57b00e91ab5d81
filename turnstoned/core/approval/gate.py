"""Phase 2: deciding whether a batch of prepared calls may run.

Every call that needs approval is rated first (``intent``: risk, recommendation,
rule, reason). Then, call by call: a tool policy that denies it denies it (the
user never hears of it); one that allows it runs it; ``skip_permissions`` runs
the rest; an ``ask`` policy keeps a call asking; a standing grant (``grants``)
runs a call it covers. A protected call (rated high or critical, or outside the
workspace, or on credentials) is covered by no grant and no allow policy.

What is left goes to the LLM judge when one is configured (``judge``); with
smart approvals a batch the judge fully clears runs unasked. Otherwise one
approval cycle is published to the editor as the request
``item/tool/requestApproval`` (with ``judgePending`` while the judge works;
``approval/verdicts`` follows). Its answer decides the cycle, and may decide
single calls (``calls``); calls it does not name take the cycle's decision. A
cycle whose calls change the same file is ``atomic``: an answer that approves
part of it runs none of it. An answer may edit a call's arguments: see ``edits``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from turnstoned import protocol as p
from turnstoned.core.approval import edits, grants, intent, modes, policies
from turnstoned.core.approval.types import ApprovalPolicy, Gate, Reprepare, Verdict
from turnstoned.core.events import EventSink
from turnstoned.tools.base import PreparedCall, SessionEnv

if TYPE_CHECKING:
    from turnstoned.core.approval.judge import Judge

log = logging.getLogger(__name__)

ATOMIC_SPLIT = ("Denied: these calls change the same file and must be approved together; the "
                "user approved only some of them, so none ran.")
def pending(calls: list[PreparedCall]) -> list[PreparedCall]:
    return [c for c in calls if c.needs_approval and not c.error]


def is_atomic(gated: list[PreparedCall]) -> bool:
    """Two asked-about calls change the same file: deciding them one by one is unsafe."""
    paths = [c.file_change.path for c in gated if c.file_change is not None]
    return len(paths) != len(set(paths))


async def decide(sink: EventSink, policy: ApprovalPolicy, session_id: str, turn_id: str,
                 calls: list[PreparedCall], env: SessionEnv | None = None,
                 reprepare: Reprepare | None = None) -> Verdict:
    """The decision for the batch. Cancellation withdraws the question and propagates."""
    env = env or SessionEnv(session_id=session_id, kind="interactive", cwd=Path(os.getcwd()))
    return await run_gate(Gate(sink, policy, session_id, turn_id, env, calls, reprepare))


async def run_gate(gate: Gate) -> Verdict:
    """Rate, screen (policies, grants), judge and ask, in that order (see the module doc)."""
    gated = pending(gate.calls)
    if not gated:
        return Verdict()
    for call in gated:
        call.verdict = intent.rate(call, gate.env)
    verdict = Verdict()
    asked, notes = screen(gate, gated, verdict)
    if not asked:  # decided without asking: by grants ("always"), or policies and skipping
        granted = any((c.auto_approved or "").startswith("grant") for c in gated)
        verdict.decision = "always" if granted else "auto"
        return verdict
    judge = gate.policy.judge
    ratings = judge.rate_all(gate.session_id, asked, gate.env) if judge else None
    try:
        if judge is not None and ratings is not None and judge.settings.smart:
            reason = await _smart(judge, ratings, asked)
            if reason is not None:
                for call in asked:
                    call.auto_approved = reason
                return verdict
        answered = await cycle(gate, asked, notes, ratings, verdict)
    finally:
        if ratings is not None and not ratings.done():
            ratings.cancel()
    if answered.edits and gate.reprepare is not None:
        again = edits.apply_edits(gate, answered)
        if again:
            await _ask_again(gate, answered, again)
    return answered


async def _ask_again(gate: Gate, verdict: Verdict, calls: list[PreparedCall]) -> None:
    """Edited calls that need more than the user was shown are asked about as themselves;
    after ``edits.MAX_ROUNDS`` such questions they are denied."""
    if gate.round >= edits.MAX_ROUNDS:
        for call in calls:
            verdict.denied[call.call_id] = (
                "Denied: the user edited this call several times and the last edit still "
                "needed a new approval.")
        return
    second = await run_gate(dataclasses.replace(gate, calls=calls, round=gate.round + 1))
    verdict.denied.update(second.denied)
    verdict.notes.extend(second.notes)
    verdict.replaced.update(second.replaced)


async def _smart(judge: Judge, ratings: asyncio.Task[dict[str, p.Verdict]],
                 asked: list[PreparedCall]) -> str | None:
    """Wait for the judge (bounded by its timeout per call), then ask whether the batch
    qualifies; any failure sends the batch to the user."""
    try:
        await asyncio.wait_for(asyncio.shield(ratings), judge.settings.timeout + 5)
    except TimeoutError:
        return None
    return judge.smart_approval(asked)


def screen(gate: Gate, gated: list[PreparedCall],
           verdict: Verdict) -> tuple[list[PreparedCall], dict[str, str]]:
    """Policies, skip-permissions and grants, call by call; returns the calls still to ask
    about and, by call id, the ``ask`` policy that keeps one asking."""
    rules, policy = gate.policy.policies(), gate.policy
    asked: list[PreparedCall] = []
    notes: dict[str, str] = {}
    for call in gated:
        if not policy.skip_permissions:
            call.sandbox = modes.route(policy.mode, call, policy.sandbox).sandbox
        elif call.tool in modes.COMMAND_TOOLS:
            call.sandbox = "unsandboxed"
        match = policies.decide(rules, call, gate.env)
        action = match.rule.action if match else None
        if match is not None and action == "deny":
            verdict.denied[call.call_id] = f"Blocked by tool policy: {match.describe()}"
        elif match is not None and action == "allow":
            call.auto_approved = f"policy: {match.describe()}"
        elif policy.skip_permissions:
            call.auto_approved = "skip permissions"
        elif match is not None and action == "ask":
            notes[call.call_id] = match.describe()
            asked.append(call)
        elif (by_mode := modes.route(policy.mode, call, policy.sandbox)).run:
            call.auto_approved = by_mode.reason
        else:
            grant = grants.covering(call, gate.env, policy.grants, policy.configured)
            if grant is not None:
                call.auto_approved = f"grant: {grant}"
            else:
                asked.append(call)
    # A call that changes a file an asked-about call changes is decided with it.
    shared = {c.file_change.path for c in asked if c.file_change is not None}
    for call in gated:
        if call.auto_approved and call.file_change and call.file_change.path in shared:
            call.auto_approved = None
            asked.append(call)
    order = {c.call_id: i for i, c in enumerate(gated)}
    return sorted(asked, key=lambda c: order[c.call_id]), notes


def _items(gate: Gate, asked: list[PreparedCall], notes: dict[str, str],
           denied: dict[str, str]) -> list[p.ApprovalRequestItem]:
    asking = {c.call_id for c in asked}
    return [
        p.ApprovalRequestItem(
            call_id=c.call_id, tool=c.tool, header=c.header, preview=c.preview,
            needs_approval=c.call_id in asking, approval_label=c.label,
            error=c.error or denied.get(c.call_id), file_change=c.file_change_info(),
            verdict=c.verdict, judge_verdict=c.judge_verdict,
            auto_approved=c.auto_approved is not None, auto_approve_reason=c.auto_approved,
            grant_rules=grants.rules_for(c, gate.env) if c.call_id in asking else [],
            policy=notes.get(c.call_id), sandbox=c.sandbox, escalation=c.escalation,
        )
        for c in gate.calls
    ]


async def cycle(gate: Gate, asked: list[PreparedCall], notes: dict[str, str],
                ratings: asyncio.Task[dict[str, p.Verdict]] | None, verdict: Verdict) -> Verdict:
    """Ask the editor about ``asked``; the answer is folded into ``verdict``."""
    sink, policy = gate.sink, gate.policy
    cycle_id = uuid.uuid4().hex
    call_ids = [c.call_id for c in gate.calls]
    waiting = [True]

    def resolved(decision: p.ResolvedDecision, per_call: dict[str, p.Decision] | None = None) -> None:
        sink.notify(p.ApprovalResolved(
            session_id=gate.session_id, turn_id=gate.turn_id, cycle_id=cycle_id,
            call_ids=call_ids, decision=decision, calls=per_call or {}))

    def verdicts_arrived(task: asyncio.Task[dict[str, p.Verdict]]) -> None:
        if waiting[0] and not task.cancelled() and task.exception() is None:
            sink.notify(p.ApprovalVerdicts(session_id=gate.session_id, turn_id=gate.turn_id,
                                           cycle_id=cycle_id, verdicts=task.result()))

    atomic = is_atomic(asked)
    judging = ratings is not None and not ratings.done()
    ask = sink.request_approval(p.ApprovalRequestParams(
        session_id=gate.session_id, turn_id=gate.turn_id, cycle_id=cycle_id,
        items=_items(gate, asked, notes, verdict.denied), atomic=atomic, judge_pending=judging))
    if judging and ratings is not None:
        ratings.add_done_callback(verdicts_arrived)
    policy.awaiting.update((c.call_id, c) for c in asked)
    try:
        answer = await (asyncio.wait_for(ask, policy.timeout) if policy.timeout > 0 else ask)
    except TimeoutError:
        resolved("timeout")
        return _deny_all(verdict, asked, f"Approval timed out after {policy.timeout:g}s",
                         "timeout", cycle_id)
    except asyncio.CancelledError:
        resolved("cancelled")
        raise
    except Exception as exc:  # noqa: BLE001 (the client failed to answer in any way: fail closed)
        resolved("deny")
        return _deny_all(verdict, asked, f"The editor could not be asked for approval ({exc})",
                         "deny", cycle_id)
    finally:
        waiting[0] = False
        for c in asked:
            policy.awaiting.pop(c.call_id, None)
    per_call = settle(answer, asked, atomic, gate, verdict)
    verdict.cycle_id = cycle_id
    resolved(verdict.decision, per_call)
    return verdict


def _deny_all(verdict: Verdict, asked: list[PreparedCall], reason: str,
              decision: p.ResolvedDecision, cycle_id: str) -> Verdict:
    """Nobody answered (a timeout, an editor that could not be asked): the calls do not
    run, and the model reads that the user did not see them, not that the user said no."""
    text = (f"Not run: {reason}; the user did not see this call. Say in your answer what "
            "you wanted to do, so they can approve it.")
    verdict.decision, verdict.cycle_id = decision, cycle_id
    verdict.denied.update((c.call_id, text) for c in asked)
    return verdict


Chosen = dict[str, tuple[p.Decision, str | None, bool]]


def settle(answer: p.ApprovalResponse, asked: list[PreparedCall], atomic: bool, gate: Gate,
           verdict: Verdict) -> dict[str, p.Decision]:
    """Apply an editor's answer to the asked-about calls (into ``verdict``); returns, when
    the answer decided calls one by one, what each call got."""
    cycle_feedback = (answer.feedback or "").strip() or None
    chosen: Chosen = {}
    for c in asked:
        entry = answer.calls.get(c.call_id)
        if entry is None:
            chosen[c.call_id] = (answer.decision, cycle_feedback, False)
        else:
            chosen[c.call_id] = (entry.decision, (entry.feedback or "").strip() or None, True)
            if entry.arguments is not None and entry.decision != "deny":
                verdict.edits[c.call_id] = (entry.arguments, entry.decision)
    unknown = set(answer.calls) - set(chosen)
    if unknown:
        log.warning("approval answer names calls not in its cycle: %s", sorted(unknown))
    runs = {cid: decision != "deny" for cid, (decision, _, _) in chosen.items()}
    if atomic and len(set(runs.values())) > 1:
        _split_atomic(verdict, asked, chosen)
        return {cid: "deny" for cid in chosen}
    verdict.decision = answer.decision
    _apply(verdict, asked, chosen, cycle_feedback, gate)
    return {cid: decision for cid, (decision, _, _) in chosen.items()} if answer.calls else {}


def _apply(verdict: Verdict, asked: list[PreparedCall], chosen: Chosen,
           cycle_feedback: str | None, gate: Gate) -> None:
    policy = gate.policy
    cycle_feedback_used = granted = False
    for c in asked:
        decision, feedback, own = chosen[c.call_id]
        if decision == "deny":
            verdict.denied[c.call_id] = denial_text(feedback)
            cycle_feedback_used |= not own
            continue
        if decision == "always" and c.call_id not in verdict.edits:
            rules = grants.rules_for(c, gate.env)
            policy.grants.update(rules)
            granted |= bool(rules)
        if own and feedback:
            verdict.notes.append(f"Feedback from the user on the {c.tool} call "
                                 f"{c.model_id or c.call_id}: {feedback}")
    if cycle_feedback and not cycle_feedback_used:
        verdict.notes.insert(0, f"Feedback from the user on the approved tool calls: "
                                f"{cycle_feedback}")
    if granted:
        policy.on_grant(policy.grants)


def _split_atomic(verdict: Verdict, asked: list[PreparedCall], chosen: Chosen) -> None:
    """A split answer to an atomic cycle runs nothing (and grants and edits nothing)."""
    verdict.decision = "deny"
    verdict.edits.clear()
    for c in asked:
        feedback = chosen[c.call_id][1]
        verdict.denied[c.call_id] = ATOMIC_SPLIT + (f" User feedback: {feedback}" if feedback
                                                    else "")


def denial_text(feedback: str | None) -> str:
    return f"Denied by user: {feedback}" if feedback else "Denied by user"
