"""A session tried as a new user would: routine work asks rarely, dangerous calls always ask.

A scripted model does ~30 inspection and edit calls inside a git workspace, then a few
dangerous ones; the user answers "always" to routine requests and denies the rest.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RecordingSink
from tests.fakes.model_server import Response, ScriptedModel, text, tool_calls
from tests.turnkit import completed_tools, run, start, tool_messages
from turnstoned import protocol as p
from turnstoned.core.engine import Engine

Call = tuple[str, str, str]


def bash(command: str) -> tuple[str, dict[str, Any]]:
    return ("bash", {"command": command})


def tool(name: str, **args: Any) -> tuple[str, dict[str, Any]]:
    return (name, args)


ROUTINE: list[list[tuple[str, dict[str, Any]]]] = [
    [bash("ls -la"), tool("read_file", path="README.md")],
    [bash("git status"), tool("search", query="TODO")],
    [bash("cat src/app.py"), tool("read_file", path="src/app.py")],
    [bash("grep -rn 'def ' src")],
    [tool("edit_file", path="src/app.py", old_string="return 1", new_string="return 2")],
    [bash("git diff"), tool("write_file", path="src/new.py", content="X = 1\n")],
    [bash("find . -name '*.py'"), tool("read_file", path="src/new.py")],
    [tool("edit_file", path="src/new.py", old_string="X = 1", new_string="X = 2")],
    [bash("wc -l src/*.py"), bash("git log --oneline -3")],
    [tool("write_file", path="notes/todo.md", content="- tidy\n")],
    [tool("diff_file", path_a="src/app.py", path_b="src/new.py"), bash("head -5 README.md")],
    [bash("ls src | sort"), tool("edit_file", path="README.md", old_string="hello",
                                 new_string="hello there")],
    [bash("git status --short"), tool("read_file", path="notes/todo.md")],
    [tool("write_file", path="src/util.py", content="def helper():\n    return 3\n")],
    [bash("cat src/util.py | grep def"), tool("search", query="def", path="src")],
    [bash("du -sh src"), tool("edit_file", path="src/util.py", old_string="return 3",
                              new_string="return 4")],
    [bash("git diff --stat"), bash("stat README.md"), tool("read_file", path="src/util.py")],
]


def replies(batches: list[list[tuple[str, dict[str, Any]]]], tag: str) -> list[Response]:
    out = []
    for n, batch in enumerate(batches):
        out.append(tool_calls([(f"{tag}{n}_{i}", name, json.dumps(args))
                               for i, (name, args) in enumerate(batch)]))
    return [*out, text("done")]


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
    (ws / "build" / "tmp").mkdir(parents=True)
    (ws / "README.md").write_text("hello\nTODO: more\n")
    (ws / "src" / "app.py").write_text("def main():\n    return 1\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "start"]):
        subprocess.run(git + args, cwd=ws, check=True, timeout=30)
    return ws


MakeEngine = Callable[[str], Engine]


class User:
    """Answers "always" to routine requests; denies anything rated high or critical, or a
    call it wants to fix (it edits those)."""

    def __init__(self, edits: dict[str, dict[str, Any]] | None = None) -> None:
        self.asked: list[p.ApprovalRequestParams] = []
        self.edits = edits or {}

    async def __call__(self, params: p.ApprovalRequestParams) -> p.ApprovalResponse:
        self.asked.append(params)
        calls: dict[str, p.CallDecision] = {}
        for item in params.items:
            if not item.needs_approval:
                continue
            assert item.verdict is not None  # every question arrives rated
            if item.preview in self.edits:
                calls[item.call_id] = p.CallDecision(decision="approve",
                                                     arguments=self.edits[item.preview])
            elif item.verdict.risk in ("high", "critical"):
                calls[item.call_id] = p.CallDecision(decision="deny", feedback="too risky")
            else:
                calls[item.call_id] = p.CallDecision(decision="always")
        return p.ApprovalResponse(decision="deny", calls=calls)


POLICY = '[[policies]]\nlabel = "bash"\ncommand = "curl *"\naction = "deny"\n'


async def test_routine_work_asks_at_most_twice_and_danger_always_asks(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel, workspace: Path,
        home: Path, tmp_path: Path) -> None:
    engine = make_engine(POLICY)
    user = User(edits={"echo hello > greeting.txt": {"command": "echo edited > greeting.txt"}})
    sink.answers += [user] * 20
    sid = start(engine, workspace)
    model.push(*replies(ROUTINE, "r"))
    assert (await run(engine, sink, sid, "tidy the project"))["status"] == "completed"
    routine_calls = sum(len(b) for b in ROUTINE)
    routine_asks = len(user.asked)
    items = completed_tools(sink)
    assert len(items) == routine_calls and all(i["status"] == "completed" for i in items), [
        (i["tool"], i["output"]) for i in items if i["status"] != "completed"]
    assert routine_calls >= 30 and routine_asks <= 2
    assert (workspace / "src" / "util.py").read_text() == "def helper():\n    return 4\n"

    outside = tmp_path / "outside" / "x.txt"
    dangerous = [[bash("rm -rf build")], [bash("git push --force origin main")],
                 [tool("read_file", path=str(home / ".ssh" / "id_ed25519"))],
                 [tool("write_file", path=str(outside), content="x")],
                 [bash("curl -s https://example.com/i.sh -o i.sh")],
                 [bash("echo hello > greeting.txt")]]
    model.push(*replies(dangerous, "d"))
    await run(engine, sink, sid, "now the risky part")
    danger_asks = user.asked[routine_asks:]
    asked_previews = [next(i for i in a.items if i.needs_approval) for a in danger_asks]
    rated = {(i.tool, i.preview or i.header): (i.verdict.risk, i.verdict.rule)  # type: ignore[union-attr]
             for i in asked_previews}
    assert rated[("bash", "rm -rf build")] == ("high", "recursive-delete")
    assert rated[("bash", "git push --force origin main")] == ("high", "destructive-git")
    assert [r for (t, _), r in rated.items() if t == "read_file"] == [("high",
                                                                       "credential-recon")]
    assert [r for (t, _), r in rated.items() if t == "write_file"] == [
        ("high", "write-outside-workspace")]
    assert all(i.verdict and i.verdict.reason for i in asked_previews)
    assert all(i.grant_rules == [] for i in asked_previews if i.verdict
               and i.verdict.risk == "high")  # "always" would save nothing for these
    # The policy-denied curl never reached the user; the edited command ran edited.
    assert not any("curl" in i.preview for i in asked_previews)
    assert len(danger_asks) == 5
    assert (workspace / "build").is_dir() and not outside.exists()
    assert (workspace / "greeting.txt").read_text() == "edited\n"
    results = [m["content"] for m in tool_messages(model.requests[-1])][-6:]
    assert results[4].startswith("Blocked by tool policy")
    print(f"\nscenario: {routine_calls} routine calls, asked {routine_asks} times; "
          f"{len(dangerous)} dangerous calls: {len(danger_asks)} asked "
          f"(4 rated high and denied, 1 edited), 1 denied by policy unasked")


JUDGE = text(json.dumps({"risk": "low", "recommendation": "approve", "confidence": 0.99,
                         "reason": "harmless"}))


async def test_with_smart_approvals_mkdir_runs_unasked_and_rm_rf_still_asks(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        workspace: Path) -> None:
    with ScriptedModel(default=lambda request: JUDGE) as judge:
        engine = make_engine(f'[models.judge]\nbase_url = "{judge.base_url}"\nname = "j"\n\n'
                             '[judge]\nsmart_approvals = true\nmodel = "judge"\n')
        user = User()
        sink.answers += [user] * 4
        model.push(*replies([[bash("mkdir -p out")], [bash("rm -rf build")]], "s"))
        await run(engine, sink, start(engine, workspace), "look, then clean")
        assert len(judge.requests) == 2  # the judge was asked about both
    assert [[i.preview for i in a.items if i.needs_approval] for a in user.asked] == [
        ["rm -rf build"]]
    made = completed_tools(sink)[0]
    assert made["autoApproved"] and made["autoApproveReason"].startswith("smart approval")
    assert (workspace / "build").is_dir()
