"""The approval mode table: each mode against each class of verdict, with and without a
sandbox on the machine, and how a command runs when it runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from turnstoned.core.approval import grants, intent, modes
from turnstoned.core.pipeline import prepare_one
from turnstoned.llm.types import RawToolCall
from turnstoned.store import Store
from turnstoned.tools import registry
from turnstoned.tools.base import PreparedCall, Services, SessionEnv, ToolContext

RUN, ASK = True, False


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SessionEnv:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("KEY")
    monkeypatch.setenv("HOME", str(home))
    ws = tmp_path / "ws"
    (ws / "build").mkdir(parents=True)
    (ws / "a.txt").write_text("a\n")
    env = SessionEnv(session_id="s", kind="interactive", cwd=ws,
                     services=Services(store=Store(tmp_path / "db.sqlite3")))
    env.read_set.add(str((ws / "a.txt").resolve()))  # edit_file edits what it read
    return env


def call(env: SessionEnv, tool: str, **args: Any) -> PreparedCall:
    prepared = prepare_one(RawToolCall("m1", tool, json.dumps(args)), registry()[tool].handle(),
                           [], ToolContext(env=env))
    prepared.verdict = intent.rate(prepared, env)
    return prepared


# (tool, arguments) -> the answer in read-only, auto with a sandbox, auto without one,
# full-access; and how a command runs in those modes.
TABLE: list[tuple[str, dict[str, Any], tuple[bool, bool, bool, bool], tuple[str | None, ...]]] = [
    ("bash", {"command": "ls -la"}, (RUN, RUN, RUN, RUN),
     ("unsandboxed", "sandboxed", "unsandboxed", "unsandboxed")),
    ("bash", {"command": "python3 -c 'print(1)'"}, (ASK, RUN, ASK, RUN),
     ("unsandboxed", "sandboxed", "unsandboxed", "unsandboxed")),
    ("bash", {"command": "npm test"}, (ASK, RUN, ASK, RUN),
     ("unsandboxed", "sandboxed", "unsandboxed", "unsandboxed")),
    ("bash", {"command": "curl https://example.com"}, (ASK, ASK, ASK, RUN),
     ("unsandboxed", "unsandboxed", "unsandboxed", "unsandboxed")),
    ("bash", {"command": "git push origin main"}, (ASK, ASK, ASK, RUN),
     ("unsandboxed", "unsandboxed", "unsandboxed", "unsandboxed")),
    ("bash", {"command": "rm -rf build"}, (ASK, ASK, ASK, ASK),
     ("unsandboxed", "sandboxed", "unsandboxed", "unsandboxed")),
    ("bash", {"command": "git push --force"}, (ASK, ASK, ASK, ASK),
     ("unsandboxed", "unsandboxed", "unsandboxed", "unsandboxed")),
    ("bash", {"command": "cat ~/.ssh/id_rsa"}, (ASK, ASK, ASK, ASK),
     ("unsandboxed", "unsandboxed", "unsandboxed", "unsandboxed")),
    ("bash", {"command": "cp a.txt /tmp/elsewhere.txt"}, (ASK, ASK, ASK, ASK),
     ("unsandboxed", "unsandboxed", "unsandboxed", "unsandboxed")),
    ("bash", {"command": "cat /etc/hostname"}, (ASK, RUN, ASK, ASK),
     ("unsandboxed", "sandboxed", "unsandboxed", "unsandboxed")),
    ("bash", {"command": "npm install", "escalate": True, "reason": "needs the registry"},
     (ASK, ASK, ASK, RUN), ("escalated", "escalated", "escalated", "unsandboxed")),
    ("watch", {"action": "create", "command": "ls", "name": "w", "poll_every": "30s"},
     (ASK, RUN, ASK, RUN),
     ("unsandboxed", "sandboxed", "unsandboxed", "unsandboxed")),
    ("write_file", {"path": "new.txt", "content": "x"}, (ASK, RUN, RUN, RUN), (None,) * 4),
    ("edit_file", {"path": "a.txt", "old_string": "a", "new_string": "b"}, (ASK, RUN, RUN, RUN),
     (None,) * 4),
    ("write_file", {"path": "/tmp/turnstoned-mode-test.txt", "content": "x"},
     (ASK, ASK, ASK, ASK), (None,) * 4),
    ("read_file", {"path": "/etc/hostname"}, (ASK, ASK, ASK, ASK), (None,) * 4),
    ("read_file", {"path": "~/.ssh/id_rsa"}, (ASK, ASK, ASK, ASK), (None,) * 4),
]
MODES = [("read-only", False), ("auto", True), ("auto", False), ("full-access", False)]


@pytest.mark.parametrize(("tool", "args", "answers", "uses"), TABLE,
                         ids=[f"{t}:{json.dumps(a)[:40]}" for t, a, _, _ in TABLE])
def test_each_mode_against_each_kind_of_call(env: SessionEnv, tool: str, args: dict[str, Any],
                                             answers: tuple[bool, ...],
                                             uses: tuple[str | None, ...]) -> None:
    prepared = call(env, tool, **args)
    assert prepared.needs_approval and not prepared.error, prepared.error
    got = [modes.route(mode, prepared, sandbox) for mode, sandbox in MODES]
    assert tuple(r.run for r in got) == answers, [(m, r) for m, r in zip(MODES, got, strict=True)]
    assert tuple(r.sandbox for r in got) == uses
    assert all(r.reason for r in got if r.run)


@pytest.mark.parametrize(("tool", "args", "answers", "uses"), TABLE,
                         ids=[f"{t}:{json.dumps(a)[:40]}" for t, a, _, _ in TABLE])
def test_plan_mode_asks_like_read_only(env: SessionEnv, tool: str, args: dict[str, Any],
                                       answers: tuple[bool, ...],
                                       uses: tuple[str | None, ...]) -> None:
    prepared = call(env, tool, **args)
    for sandbox in (False, True):
        assert modes.route("plan", prepared, sandbox) == modes.route("read-only", prepared,
                                                                    sandbox)


def test_a_web_tool_asks_unless_full_access(env: SessionEnv) -> None:
    fetch = PreparedCall(header="⚙ web_fetch: https://example.com", needs_approval=True,
                         approval_label="web_fetch")
    fetch.tool, fetch.arguments = "web_fetch", '{"url": "https://example.com"}'
    fetch.verdict = intent.rate(fetch, env)
    assert fetch.verdict.rule == "network-read"
    assert [modes.route(m, fetch, s).run for m, s in MODES] == [ASK, ASK, ASK, RUN]


def test_an_escalation_is_never_granted(env: SessionEnv) -> None:
    prepared = call(env, "bash", command="npm test", escalate=True, reason="network")
    assert prepared.escalation is not None and "network" in prepared.escalation
    assert grants.rules_for(prepared, env) == []
    assert grants.covering(prepared, env, {"bash:npm test"}) is None
    plain = call(env, "bash", command="npm test")
    assert grants.covering(plain, env, {"bash:npm test"}) == "bash:npm test"


def test_every_mode_has_a_prompt_for_the_model() -> None:
    assert set(modes.PROMPTS) == {"read-only", "auto", "full-access", "plan"}
