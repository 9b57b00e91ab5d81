"""The LLM judge and smart approvals, the judge served by a scripted model server of its own."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RecordingSink
from tests.fakes.model_server import Response, ScriptedModel, hang, prompt_tokens, text, tool_calls
from tests.turnkit import completed_tools, run, start
from turnstoned import protocol as p
from turnstoned.core.engine import Engine

Rules = dict[str, Response]


def verdict(recommendation: str, confidence: float, risk: str = "low",
            reason: str = "ordinary") -> Response:
    return text(json.dumps({"risk": risk, "recommendation": recommendation,
                            "confidence": confidence, "reason": reason}))


class JudgeServer:
    """A scripted judge: the first rule whose key appears in the call it is shown answers."""

    def __init__(self) -> None:
        self.rules: Rules = {}
        self.server = ScriptedModel(default=self._answer)

    def _answer(self, request: dict[str, Any]) -> Response:
        shown = request["messages"][-1]["content"]
        for needle, response in self.rules.items():
            if needle in shown:
                return response
        return verdict("review", 0.5, "medium", "unsure")


@pytest.fixture
def judge() -> Iterator[JudgeServer]:
    server = JudgeServer()
    with server.server:
        yield server


MakeEngine = Callable[..., Engine]


@pytest.fixture
def judged_engine(make_engine: Callable[[str], Engine], judge: JudgeServer) -> MakeEngine:
    """An engine whose [judge] asks the scripted judge."""
    def make(smart: bool = False, timeout: float = 5.0) -> Engine:
        return make_engine(f'[models.judge]\nbase_url = "{judge.server.base_url}"\n'
                           f'name = "judge"\n\n[judge]\nenabled = true\nmodel = "judge"\n'
                           f'timeout = {timeout}\nsmart_approvals = {str(smart).lower()}\n')
    return make


def bash(call_id: str, command: str) -> tuple[str, str, str]:
    return (call_id, "bash", json.dumps({"command": command}))


async def test_verdicts_follow_a_pending_request(judged_engine: MakeEngine, sink: RecordingSink,
                                                 model: ScriptedModel, judge: JudgeServer,
                                                 tmp_path: Path) -> None:
    judge.rules["touch a.txt"] = verdict("approve", 0.9, reason="creates one file")
    engine = judged_engine()
    model.push(tool_calls([bash("b1", "touch a.txt")]), text("ok"))

    async def answer(params: p.ApprovalRequestParams) -> p.ApprovalResponse:
        await sink.wait_for("approval/verdicts", lambda e: e["cycleId"] == params.cycle_id)
        return p.ApprovalResponse(decision="approve")

    sink.answers.append(answer)
    await run(engine, sink, start(engine, tmp_path), "go")
    request = sink.approvals[0]
    assert request["judgePending"] is True
    assert request["items"][0]["verdict"]["tier"] == "heuristic"
    follow = sink.of("approval/verdicts")[0]
    judged = follow["verdicts"][request["items"][0]["callId"]]
    assert (judged["tier"], judged["recommendation"], judged["rule"]) == ("llm", "approve", "judge")
    assert judged["reason"] == "creates one file" and judged["confidence"] == 0.9
    assert completed_tools(sink)[0]["judgeVerdict"] == judged
    shown = judge.server.requests[0]["messages"][-1]["content"]
    assert "touch a.txt" in shown and "rule_table_verdict" in shown


async def test_smart_approvals_run_a_batch_of_safe_calls_unasked(
        judged_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel, judge: JudgeServer,
        tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("hi\n")
    judge.rules["mkdir -p out"] = verdict("approve", 0.99)
    judge.rules["cp README.md out.md"] = verdict("approve", 0.97)
    judge.rules["touch new.txt"] = verdict("approve", 0.96, "medium")
    engine = judged_engine(smart=True)
    model.push(tool_calls([bash("b1", "mkdir -p out"), bash("b2", "cp README.md out.md"),
                           bash("b3", "touch new.txt")]), text("ok"))
    done = await run(engine, sink, start(engine, tmp_path), "go")
    assert sink.approvals == []
    items = completed_tools(sink)
    assert [i["status"] for i in items] == ["completed"] * 3
    assert all(i["autoApproved"] and i["autoApproveReason"].startswith("smart approval")
               for i in items)
    assert "0.96 or more" in items[0]["autoApproveReason"]
    # The judge's tokens are the turn's spend too (it may be another model, but it is paid).
    assert len(judge.server.requests) == 3
    spent = [*model.requests, *judge.server.requests]
    assert done["usage"]["promptTokens"] == sum(prompt_tokens(r) for r in spent)


async def test_one_low_confidence_call_sends_the_batch_to_the_user(
        judged_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel, judge: JudgeServer,
        tmp_path: Path) -> None:
    judge.rules["mkdir -p out"] = verdict("approve", 0.99)
    judge.rules["touch new.txt"] = verdict("approve", 0.6)
    engine = judged_engine(smart=True)
    model.push(tool_calls([bash("b1", "mkdir -p out"), bash("b2", "touch new.txt")]), text("ok"))
    await run(engine, sink, start(engine, tmp_path), "go")
    assert len(sink.approvals) == 1
    asked = sink.approvals[0]
    assert [i["needsApproval"] for i in asked["items"]] == [True, True]
    assert asked["judgePending"] is False  # the verdicts came with the question
    assert [i["judgeVerdict"]["confidence"] for i in asked["items"]] == [0.99, 0.6]


async def test_a_protected_call_asks_whatever_the_judge_says(
        judged_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel, judge: JudgeServer,
        tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    judge.rules["rm -rf build"] = verdict("approve", 1.0)
    engine = judged_engine(smart=True)
    model.push(tool_calls([bash("b1", "rm -rf build")]), text("ok"))
    await run(engine, sink, start(engine, tmp_path), "clean")
    item = sink.approvals[0]["items"][0]
    assert item["verdict"]["rule"] == "recursive-delete" and item["verdict"]["risk"] == "high"
    assert item["judgeVerdict"]["recommendation"] == "approve"


@pytest.mark.parametrize(("answer", "why"), [
    (hang(30), "no answer within 0.5s"),
    (text("Looks fine to me, go ahead!"), "could not be read"),
    (text('{"risk": "low", "recommendation": "yes please", "confidence": 1}'),
     "could not be read"),
], ids=["slow", "prose", "bad-json"])
async def test_a_failing_judge_fails_closed(answer: Response, why: str, judged_engine: MakeEngine,
                                            sink: RecordingSink, model: ScriptedModel,
                                            judge: JudgeServer, tmp_path: Path) -> None:
    judge.rules["mkdir -p out"] = answer
    engine = judged_engine(smart=True, timeout=0.5)
    model.push(tool_calls([bash("b1", "mkdir -p out")]), text("ok"))
    await run(engine, sink, start(engine, tmp_path), "go")
    assert len(sink.approvals) == 1  # the user decides
    judged = sink.approvals[0]["items"][0]["judgeVerdict"]
    assert judged["tier"] == "llm_fallback" and judged["recommendation"] == "review"
    assert judged["confidence"] == 0.0 and why in judged["reason"]


@pytest.mark.parametrize("tool", ["bash", "write_file"])
async def test_a_call_longer_than_the_judge_saw_is_never_smart_approved(
        judged_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel, judge: JudgeServer,
        tmp_path: Path, tool: str) -> None:
    """A harmless-looking head padded past what the judge is shown hides the real call: the
    judge is told the call is cut, and the batch goes to the user whatever it answers."""
    padding = "# routine formatting of the project files, nothing else\n" * 500  # ~28 k chars
    hidden = "python3 -c \"import os; os.system('touch PWNED')\""
    judge.rules["routine formatting"] = verdict("approve", 0.99)
    engine = judged_engine(smart=True)
    if tool == "bash":
        call = bash("b1", padding + hidden)
    else:
        call = ("w1", "write_file", json.dumps({"path": "run.sh", "content": padding + hidden}))
    model.push(tool_calls([call]), text("ok"))
    sink.answers.append(p.ApprovalResponse(decision="deny"))
    await run(engine, sink, start(engine, tmp_path), "go")
    assert len(sink.approvals) == 1  # asked, not smart-approved
    shown = judge.server.requests[0]["messages"][-1]["content"]
    assert "CUT" in shown and "was not seen" in shown
    assert hidden not in shown
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "run.sh").exists()
