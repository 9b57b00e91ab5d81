"""The approval gate: standing grants cover grantable calls only."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from turnstoned import protocol as p
from turnstoned.core.approval import gate as approvals
from turnstoned.tools.base import PreparedCall, SessionEnv


class AnsweringSink:
    def __init__(self, decision: str) -> None:
        self.decision = decision
        self.asked: list[p.ApprovalRequestParams] = []
        self.notes: list[tuple[str, Any]] = []

    def notify(self, event: p.Event) -> None:
        self.notes.append((type(event).method, event))

    async def request_approval(self, params: p.ApprovalRequestParams) -> p.ApprovalResponse:
        self.asked.append(params)
        return p.ApprovalResponse(decision=self.decision)  # type: ignore[arg-type]


def _call(call_id: str, label: str, grantable: bool = True) -> PreparedCall:
    return PreparedCall(header=label, needs_approval=True, approval_label=label,
                        grantable=grantable, call_id=call_id, tool=label)


def _decide(sink: AnsweringSink, policy: approvals.ApprovalPolicy,
            calls: list[PreparedCall]) -> approvals.Verdict:
    return asyncio.run(approvals.decide(sink, policy, "s", "t", calls))


def test_a_grant_covers_grantable_calls_without_asking() -> None:
    sink = AnsweringSink("deny")
    verdict = _decide(sink, approvals.ApprovalPolicy(grants={"write_file"}),
                      [_call("c1", "write_file")])
    assert verdict.approved and verdict.decision == "always" and not sink.asked


def test_an_ungrantable_call_asks_even_with_its_label_granted() -> None:
    sink = AnsweringSink("deny")
    verdict = _decide(sink, approvals.ApprovalPolicy(grants={"write_file"},
                                                     configured=frozenset({"write_file"})),
                      [_call("c1", "write_file"), _call("c2", "write_file", grantable=False)])
    assert not verdict.approved and len(sink.asked) == 1


def test_always_on_an_ungrantable_call_saves_no_grant_for_it() -> None:
    saved: list[set[str]] = []
    policy = approvals.ApprovalPolicy(on_grant=lambda g: saved.append(set(g)))
    sink = AnsweringSink("always")
    verdict = _decide(sink, policy, [_call("c1", "web_fetch"), _call("c2", "write_file", False)])
    assert verdict.approved
    assert policy.grants == {"web_fetch"} and saved == [{"web_fetch"}]


def _settle(answer: p.ApprovalResponse, calls: list[PreparedCall], atomic: bool,
            policy: approvals.ApprovalPolicy) -> tuple[approvals.Verdict, dict[str, str]]:
    gate = approvals.Gate(AnsweringSink("deny"), policy, "s", "t",  # type: ignore[arg-type]
                          SessionEnv(session_id="s", kind="interactive", cwd=Path.cwd()), calls)
    verdict = approvals.Verdict()
    per_call = approvals.settle(answer, calls, atomic, gate, verdict)
    return verdict, dict(per_call)


def _answer(decision: str, feedback: str | None = None,
            **calls: tuple[str, str | None]) -> p.ApprovalResponse:
    return p.ApprovalResponse(decision=decision, feedback=feedback, calls={  # type: ignore[arg-type]
        cid: p.CallDecision(decision=d, feedback=f) for cid, (d, f) in calls.items()})  # type: ignore[arg-type]


def test_per_call_always_on_an_ungrantable_call_runs_it_and_grants_nothing() -> None:
    policy = approvals.ApprovalPolicy()
    verdict, per_call = _settle(
        _answer("deny", c1=("always", None), c2=("always", None)),
        [_call("c1", "web_fetch"), _call("c2", "write_file", grantable=False)], False, policy)
    assert verdict.approved and policy.grants == {"web_fetch"}
    assert per_call == {"c1": "always", "c2": "always"}


def test_calls_not_named_take_the_cycle_decision_and_feedback() -> None:
    verdict, _ = _settle(
        _answer("deny", "cycle says no", c1=("approve", "ok, this one")),
        [_call("c1", "bash"), _call("c2", "bash")], False, approvals.ApprovalPolicy())
    assert verdict.denied == {"c2": "Denied by user: cycle says no"}
    assert verdict.notes == ["Feedback from the user on the bash call c1: ok, this one"]


def test_an_answer_naming_unknown_calls_decides_only_its_own() -> None:
    verdict, per_call = _settle(
        _answer("approve", ghost=("deny", None)), [_call("c1", "bash")], False,
        approvals.ApprovalPolicy())
    assert verdict.approved and per_call == {"c1": "approve"}


def test_a_split_answer_to_an_atomic_cycle_denies_all_and_grants_nothing() -> None:
    policy = approvals.ApprovalPolicy()
    verdict, per_call = _settle(
        _answer("always", c2=("deny", None)), [_call("c1", "edit_file"), _call("c2", "edit_file")],
        True, policy)
    assert set(verdict.denied) == {"c1", "c2"} and verdict.decision == "deny"
    assert policy.grants == set() and per_call == {"c1": "deny", "c2": "deny"}
