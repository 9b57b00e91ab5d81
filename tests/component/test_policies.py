"""Tool policies through whole turns: config and workspace files, trust, and what they decide."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from tests.turnkit import completed_tools, run, start, tool_messages
from turnstoned import protocol as p
from turnstoned.core.engine import Engine
from turnstoned.core.errors import EngineError

MakeEngine = Callable[[str], Engine]


def bash(call_id: str, command: str) -> tuple[str, str, str]:
    return (call_id, "bash", json.dumps({"command": command}))


def workspace_policies(folder: Path, body: str) -> Path:
    path = folder / ".turnstone" / "policies.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return path


async def test_a_denied_call_never_reaches_the_user(make_engine: MakeEngine, sink: RecordingSink,
                                                    model: ScriptedModel, tmp_path: Path) -> None:
    engine = make_engine('[[policies]]\nlabel = "bash"\ncommand = "git push*"\naction = "deny"\n'
                         'reason = "pushes go through review"\n')
    model.push(tool_calls([bash("b1", "git push origin main")]),
               tool_calls([bash("b2", "git push --force"), bash("b3", "touch made.txt")]),
               text("ok"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "push")
    assert len(sink.approvals) == 1  # only the second batch asked anybody
    first = tool_messages(model.requests[1])[0]["content"]
    assert first.startswith("Blocked by tool policy: deny label='bash' command='git push*'")
    assert "pushes go through review" in first
    # In a batch with a call that asks, the denied one is not asked about.
    items = {i["preview"]: i for i in sink.approvals[0]["items"]}
    assert not items["git push --force"]["needsApproval"]
    assert items["git push --force"]["error"].startswith("Blocked by tool policy")
    assert items["touch made.txt"]["needsApproval"]
    statuses = {json.loads(i["arguments"])["command"]: i["status"] for i in completed_tools(sink)}
    assert statuses == {"git push origin main": "declined", "git push --force": "declined",
                        "touch made.txt": "completed"}


async def test_an_untrusted_workspace_policy_cannot_allow(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    workspace_policies(tmp_path, '[[policies]]\nlabel = "bash"\ncommand = "touch *"\n'
                                 'action = "allow"\n\n[[policies]]\nlabel = "bash"\n'
                                 'command = "curl*"\naction = "deny"\n')
    engine = make_engine("")
    model.push(tool_calls([bash("b1", "touch a.txt"), bash("b2", "curl -s https://example.com")]),
               text("ok"))
    sid = start(engine, tmp_path)
    question = await sink.wait_for("policy/requestTrust")  # asked, and dismissed
    assert question["workspace"] == str(tmp_path.resolve())
    assert [x["action"] for x in question["policies"]] == ["deny", "allow"]
    await run(engine, sink, sid, "go")
    asked = [i for i in sink.approvals[0]["items"] if i["needsApproval"]]
    assert [i["preview"] for i in asked] == ["touch a.txt"]  # allow ignored: it asks
    curl = tool_messages(model.requests[1])[1]["content"]
    assert curl.startswith("Blocked by tool policy")  # deny applies untrusted

    listed = engine.policy_list(sid)
    allow = next(x for x in listed.policies if x.action == "allow")
    assert not allow.active and "not trusted" in allow.note
    assert listed.workspace_file is not None and listed.workspace_file.decision is None


async def test_a_trusted_workspace_policy_allows_but_never_a_protected_call(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    path = workspace_policies(tmp_path, '[[policies]]\nlabel = "bash"\naction = "allow"\n')
    engine = make_engine("")
    sink.policy_answers.append(p.McpTrustResponse(decision="trust"))
    (tmp_path / "build").mkdir()
    model.push(tool_calls([bash("b1", "touch a.txt")]),
               tool_calls([bash("b2", "rm -rf build")]), text("ok"))
    sid = start(engine, tmp_path)
    await sink.wait_for("policy/requestTrust")
    listed = engine.policy_list(sid)
    assert listed.workspace_file is not None
    assert listed.workspace_file.decision == "trusted"
    assert listed.workspace_file.path == str(path.resolve())
    await run(engine, sink, sid, "go")
    assert len(sink.approvals) == 1  # touch ran unasked; rm -rf asks even so
    asked = sink.approvals[0]["items"][0]
    assert asked["preview"] == "rm -rf build" and asked["verdict"]["rule"] == "recursive-delete"
    touched = completed_tools(sink)[0]
    assert touched["autoApproved"] and touched["autoApproveReason"].startswith("policy: allow")

    # An edit is new content: its allow rules are off again until trusted.
    path.write_text('[[policies]]\nlabel = "*"\naction = "allow"\n')
    assert not next(x for x in engine.policy_list(sid).policies if x.source == "workspace").active
    result = engine.policy_trust(p.PolicyTrustParams(workspace=str(tmp_path), trusted=True))
    assert result.trusted and result.policies[0].active
    revoked = engine.policy_trust(p.PolicyTrustParams(config_path=str(path), trusted=False))
    assert not revoked.policies[0].active
    with pytest.raises(EngineError) as stale:
        engine.policy_trust(p.PolicyTrustParams(workspace=str(tmp_path), trusted=True,
                                                hash="0" * 64))
    assert stale.value.kind == "invalidParams"


async def test_an_ask_policy_keeps_asking_despite_a_grant(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    engine = make_engine('[[policies]]\nlabel = "write_file"\npath = "*.lock"\naction = "ask"\n'
                         'priority = 5\n')
    sink.answers.append(p.ApprovalResponse(decision="always"))
    write = [("w1", "write_file", json.dumps({"path": "a.txt", "content": "A"}))]
    model.push(tool_calls(write),
               tool_calls([("w2", "write_file", json.dumps({"path": "b.txt", "content": "B"}))]),
               tool_calls([("w3", "write_file", json.dumps({"path": "deps.lock", "content": "x"}))]),
               text("ok"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "write")
    assert len(sink.approvals) == 2  # b.txt ran on the grant; deps.lock asked
    lock = sink.approvals[1]["items"][0]
    assert lock["policy"].startswith("ask label='write_file' path='*.lock'")
    assert sink.approvals[0]["items"][0]["grantRules"] == ["write@workspace"]


async def test_a_config_policy_allows_and_policy_list_says_why(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    engine = make_engine('[[policies]]\nlabel = "bash"\ncommand = "touch *"\naction = "allow"\n'
                         '\n[[policies]]\nlabel = "bash"\ncommand = "touch secret*"\n'
                         'action = "deny"\npriority = 10\n')
    model.push(tool_calls([bash("b1", "touch ok.txt"), bash("b2", "touch secret.txt")]),
               text("ok"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "go")
    assert sink.approvals == [] and (tmp_path / "ok.txt").exists()
    assert not (tmp_path / "secret.txt").exists()
    listed = engine.policy_list(sid)
    assert [(x.action, x.priority, x.source) for x in listed.policies] == [
        ("deny", 10, "config"), ("allow", 0, "config")]
    assert listed.workspace_file is None


async def test_the_trust_question_shows_exactly_the_file_whose_hash_it_records(
        tmp_path: Path) -> None:
    """A swap between the read that hashed the file and the question (a race at session
    start) must not show one content and trust another."""
    from turnstoned.core.approval.policy_files import POLICY_FILE, PolicyBook
    from turnstoned.store import Store
    from turnstoned.store.trust import TrustStore

    ws = tmp_path / "ws"
    (ws / ".turnstone").mkdir(parents=True)
    shown = '[[policies]]\nlabel = "bash"\ncommand = "ls*"\naction = "allow"\n'
    hidden = '[[policies]]\nlabel = "bash"\ncommand = "*"\naction = "allow"\n'
    (ws / POLICY_FILE).write_text(shown)
    asked: list[p.PolicyTrustRequestParams] = []

    async def ask(question: p.PolicyTrustRequestParams) -> str:
        asked.append(question)
        return "trust"

    book = PolicyBook([], "config.toml", TrustStore(Store(tmp_path / "db.sqlite3"),
                                                    "policies"), ask)
    book.open(ws)  # hashes the file; the question is asked in the background
    (ws / POLICY_FILE).write_text(hidden)  # swapped before the question is built
    await book.questions.settle(5)
    assert [x.command for x in asked[0].policies] == ["ls*"]
    assert [x.rule.command for x in book.policies(ws)[0] if x.active] == []  # the swapped-in file was never shown, so it is not trusted
    (ws / POLICY_FILE).write_text(shown)
    assert [x.rule.command for x in book.policies(ws)[0] if x.active] == ["ls*"]
