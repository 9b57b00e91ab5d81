"""The approval gate: standing grants cover grantable calls only."""

from __future__ import annotations

import asyncio
from typing import Any

from turnstoned import protocol as p
from turnstoned.core import approvals
from turnstoned.tools.base import PreparedCall


class AnsweringSink:
    def __init__(self, decision: str) -> None:
        self.decision = decision
        self.asked: list[p.ApprovalRequestParams] = []
        self.notes: list[tuple[str, Any]] = []

    def notify(self, method: str, params: p.Wire) -> None:
        self.notes.append((method, params))

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
    verdict = _decide(sink, policy, [_call("c1", "bash"), _call("c2", "write_file", False)])
    assert verdict.approved
    assert policy.grants == {"bash"} and saved == [{"bash"}]
