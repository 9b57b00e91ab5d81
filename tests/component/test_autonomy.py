"""Safe autonomy, tried as a new user would in the default mode (auto), on this kernel's real
sandbox: routine work runs unasked, risky work still asks, a command the sandbox stopped
says so and may ask to leave it; switching modes and plan mode.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.component.test_approval_scenario import User, bash, replies, tool
from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from tests.turnkit import completed_tools, run, start, tool_messages
from turnstoned import protocol as p
from turnstoned import sandbox
from turnstoned.core.engine import Engine

AUTO = '[approvals]\nmode = "auto"\n'
MakeEngine = Callable[[str], Engine]

pytestmark = pytest.mark.skipif(not sandbox.status().available,
                                reason=f"no sandbox here: {sandbox.status().detail}")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nx\n")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def workspace(tmp_path: Path, home: Path) -> Path:
    ws = tmp_path / "project"
    (ws / "src").mkdir(parents=True)
    (ws / "build").mkdir()
    (ws / "README.md").write_text("hello\n")
    (ws / "src" / "app.py").write_text("print('app ran')\n")
    return ws


# The routine session: inspection, test runs and edits, interpreter one-liners and
# scripts included (each of those asked again before approval modes).
ROUTINE = [
    [bash("ls -la"), tool("read_file", path="README.md")],
    [bash("python3 -c 'print(2 + 2)'"), tool("search", query="app")],
    [bash("python3 src/app.py"), bash("git init -q")],
    [tool("edit_file", path="README.md", old_string="hello", new_string="hello there")],
    [bash("python3 -c \"open('out.txt', 'w').write('x')\""), bash("cat out.txt")],
    [tool("write_file", path="src/util.py", content="X = 1\n"), bash("python3 src/util.py")],
    [bash("mkdir -p build/tmp && touch build/tmp/a"), bash("python3 -m py_compile src/util.py")],
    [bash("python3 -c 'import tempfile; tempfile.NamedTemporaryFile()'"), bash("git status")],
    [tool("read_file", path="src/util.py"), bash("wc -l src/*.py")],
    [bash("sh -c 'echo test run; exit 0'"), tool("edit_file", path="src/util.py",
                                                 old_string="X = 1", new_string="X = 2")],
    [bash("python3 src/util.py && echo ok"), bash("find . -name '*.py'")],
    [bash("npx --version || true"), bash("head -3 README.md")],
    [bash("python3 -c 'import sys; print(sys.version)'"), bash("du -sh src")],
]


async def test_routine_work_runs_unasked_in_the_sandbox(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        workspace: Path) -> None:
    engine = make_engine(AUTO)
    user = User()
    sink.answers += [user] * 30
    model.push(*replies(ROUTINE, "r"))
    sid = start(engine, workspace)
    assert engine.get(sid).policy.mode == "auto"
    assert (await run(engine, sink, sid, "tidy the project", timeout=60))["status"] == "completed"
    items = completed_tools(sink)
    calls = sum(len(b) for b in ROUTINE)
    assert len(items) == calls >= 25 and len(user.asked) == 0
    assert all(i["status"] == "completed" for i in items), [
        (i["tool"], i["output"]) for i in items if i["status"] != "completed"]
    commands = [i for i in items if i["tool"] == "bash"]
    assert {i["sandbox"] for i in commands} == {"sandboxed"}
    assert (workspace / "out.txt").read_text() == "x"
    assert (workspace / "src" / "util.py").read_text() == "X = 2\n"
    print(f"\nauto mode: {calls} routine calls, asked {len(user.asked)} times")


async def test_risky_calls_still_ask_and_none_runs(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel, workspace: Path,
        home: Path, tmp_path: Path) -> None:
    engine = make_engine(AUTO)
    sink.answers += [p.ApprovalResponse(decision="deny")] * 10
    outside = tmp_path / "outside.txt"
    (workspace / "build" / "keep").write_text("k")
    risky = [[bash("rm -rf build")], [bash("git push --force origin main")],
             [bash("cat ~/.ssh/id_ed25519")],
             [tool("read_file", path=str(home / ".ssh" / "id_ed25519"))],
             [tool("write_file", path=str(outside), content="x")],
             [bash(f"cp README.md {outside}")], [bash("curl -s https://example.com")]]
    model.push(*replies(risky, "d"))
    await run(engine, sink, start(engine, workspace), "the risky part", timeout=60)
    assert len(sink.approvals) == len(risky)
    assert (workspace / "build" / "keep").exists() and not outside.exists()
    assert all(i["status"] == "declined" for i in completed_tools(sink))
    asked = [item for a in sink.approvals for item in a["items"] if item["needsApproval"]]
    uses = {item["preview"]: item["sandbox"] for item in asked if item["tool"] == "bash"}
    # Once approved, rm -rf would run in the sandbox; the others need what it forbids.
    assert uses["rm -rf build"] == "sandboxed"
    assert {uses[c] for c in uses if c != "rm -rf build"} == {"unsandboxed"}


async def test_a_command_the_sandbox_stopped_says_so_and_may_ask_to_leave_it(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel, workspace: Path,
        tmp_path: Path) -> None:
    """Python's open() is not read by the bash reader: the command runs sandboxed, the
    sandbox refuses the write outside, and the model is told how to escalate."""
    report = tmp_path / "reports" / "r.txt"
    report.parent.mkdir()
    command = f"python3 -c \"open('{report}', 'w').write('done')\""
    engine = make_engine(AUTO)
    model.push(tool_calls([("b1", "bash", json.dumps({"command": command}))]),
               tool_calls([("b2", "bash", json.dumps({
                   "command": command, "escalate": True,
                   "reason": "the report goes to the shared reports folder"}))]),
               text("written"))
    sink.answers.append(p.ApprovalResponse(decision="approve"))
    await run(engine, sink, start(engine, workspace), "write the report", timeout=60)
    first, second = completed_tools(sink)
    assert first["sandbox"] == "sandboxed" and first["autoApproved"]
    told = tool_messages(model.requests[1])[0]["content"]
    assert "[sandbox]" in told and "escalate" in told and str(report.parent) in told
    [asked] = sink.approvals
    item = asked["items"][0]
    assert item["sandbox"] == "escalated" and item["grantRules"] == []
    assert str(report.parent) in item["escalation"]
    assert "shared reports folder" in item["escalation"]
    assert second["sandbox"] == "escalated" and second["status"] == "completed"
    assert report.read_text() == "done"


async def test_inside_the_sandbox_nothing_outside_can_be_reached(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel, workspace: Path,
        home: Path, tmp_path: Path) -> None:
    engine = make_engine(AUTO)
    db = tmp_path / "not-the-workspace.txt"
    db.write_text("original")
    probes = [
        f"python3 -c \"open('{db}', 'w').write('changed')\"",
        f"python3 -c \"print(open('{home}/.ssh/id_ed25519').read())\"",
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', 9))\"",
        # (spelled so that the blocklist, which knows /proc/*/environ, lets it reach the sandbox)
        f"python3 -c \"print(open('/proc/{os.getpid()}/envi' + 'ron').read())\"",  # the daemon's
    ]
    model.push(tool_calls([(f"p{i}", "bash", json.dumps({"command": c}))
                           for i, c in enumerate(probes)]), text("done"))
    await run(engine, sink, start(engine, workspace), "probe", timeout=60)
    items = completed_tools(sink)
    assert sink.approvals == [] and [i["sandbox"] for i in items] == ["sandboxed"] * 4, [(i["sandbox"], i["status"], i["output"][:300]) for i in items]
    assert db.read_text() == "original"
    assert all("[exit code:" in i["output"] for i in items), [i["output"] for i in items]
    assert "OPENSSH" not in json.dumps(items)


async def test_without_a_sandbox_commands_ask_and_edits_still_run(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel, workspace: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TURNSTONED_SANDBOX", "off")
    engine = make_engine(AUTO)
    health = await engine.health()
    assert health.sandbox is not None and not health.sandbox.available
    assert "turned off" in health.sandbox.detail
    sink.answers.append(p.ApprovalResponse(decision="approve"))
    model.push(tool_calls([("b1", "bash", '{"command": "python3 -c \'print(1)\'"}'),
                           ("w1", "write_file", '{"path": "n.txt", "content": "n"}')]),
               text("ok"))
    await run(engine, sink, start(engine, workspace), "go", timeout=60)
    [asked] = sink.approvals
    assert [i["tool"] for i in asked["items"] if i["needsApproval"]] == ["bash"]
    assert completed_tools(sink)[0]["sandbox"] == "unsandboxed"
    assert (workspace / "n.txt").read_text() == "n"


async def test_the_mode_switches_mid_session_and_followers_hear_of_it(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        workspace: Path) -> None:
    engine = make_engine(AUTO)
    sid = start(engine, workspace)
    model.push(tool_calls([("w1", "write_file", '{"path": "a.txt", "content": "a"}')]),
               text("ok"), tool_calls([("w2", "write_file", '{"path": "b.txt", "content": "b"}')]),
               text("ok"))
    await run(engine, sink, sid, "one", timeout=30)
    assert sink.approvals == []
    assert engine.set_mode(sid, "read-only").previous == "auto"
    [changed] = sink.of("session/modeChanged")
    assert changed == {"sessionId": sid, "mode": "read-only", "previous": "auto"}
    sink.answers.append(p.ApprovalResponse(decision="deny"))
    await run(engine, sink, sid, "two", timeout=30)
    assert len(sink.approvals) == 1 and not (workspace / "b.txt").exists()
    assert engine.list_sessions()[0].approval_mode == "read-only"
    assert "Approval mode: read-only" in model.requests[-1]["messages"][0]["content"]


async def test_plan_mode_asks_for_the_plan_and_approving_it_switches_to_auto(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        workspace: Path) -> None:
    engine = make_engine(AUTO)
    sid = engine.start_session(p.SessionStartParams(cwd=str(workspace),
                                                    approval_mode="plan")).id
    plan = "# Rename the greeting\n1. edit README.md\n2. check it"
    model.push(tool_calls([("r1", "read_file", '{"path": "README.md"}')]),
               tool_calls([("pl", "propose_plan", json.dumps({"plan": plan}))]),
               tool_calls([("w1", "write_file", '{"path": "README.md", "content": "hi\\n"}')]),
               text("done"))
    sink.answers.append(p.ApprovalResponse(decision="approve"))
    await run(engine, sink, sid, "plan then do it", timeout=30)
    first = model.requests[0]
    assert "propose_plan" in {t["function"]["name"] for t in first["tools"]}
    assert "Approval mode: plan" in first["messages"][0]["content"]
    [asked] = sink.approvals  # only the plan asked; the edit after it ran in auto mode
    assert asked["items"][0]["tool"] == "propose_plan" and asked["items"][0]["preview"] == plan
    assert sink.of("session/modeChanged")[0]["mode"] == "auto"
    assert engine.get(sid).policy.mode == "auto"
    assert (workspace / "README.md").read_text() == "hi\n"
    later = model.requests[-1]
    assert "propose_plan" not in {t["function"]["name"] for t in later["tools"]}

