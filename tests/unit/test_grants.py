"""Grants: what an "always" saves, what a saved rule covers, and what nothing covers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turnstoned.core.approval import grants, intent
from turnstoned.core.pipeline import prepare_one
from turnstoned.llm.types import RawToolCall
from turnstoned.tools import registry
from turnstoned.tools.base import PreparedCall, SessionEnv, ToolContext


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SessionEnv:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    return SessionEnv(session_id="s", kind="interactive", cwd=ws)


def call(env: SessionEnv, tool: str, **args: object) -> PreparedCall:
    prepared = prepare_one(RawToolCall("m1", tool, json.dumps(args)), registry()[tool].handle(),
                           [], ToolContext(env=env))
    prepared.verdict = intent.assess(prepared, env)
    return prepared


@pytest.mark.parametrize(("command", "rules"), [
    ("git status", ["bash:@read-only"]),
    ("ls -la src && cat README.md", ["bash:@read-only"]),
    ("npm test", ["bash:npm test"]),
    ("npm run build -- --prod", ["bash:npm run build"]),
    ("python -m pytest -q tests", ["bash:python -m pytest"]),
    ("python scripts/gen.py --all", ["bash:python scripts/gen.py"]),
    ("./run.sh --fast", ["bash:./run.sh"]),
    ("npm install && npm test", ["bash:npm install", "bash:npm test"]),
    ("make && git status", ["bash:=make", "bash:@read-only"]),
    ("make test", ["bash:make test"]),
    ("git --version", ["bash:=git --version"]),
    ("rm -rf build", []),  # destructive: asks every time
    ("git push --force", []),
    ("python -c 'print(1)'", []),  # inline code: nothing stable to grant
    ("a; b; c; d; e", []),  # too many parts to say in one grant
])
def test_the_rules_an_always_saves(env: SessionEnv, command: str, rules: list[str]) -> None:
    assert grants.rules_for(call(env, "bash", command=command), env) == rules


def test_a_saved_prefix_covers_that_command_only(env: SessionEnv) -> None:
    saved = {"bash:npm test"}
    covered = ["npm test", "npm test -- --watch", "CI=1 npm test", "env CI=1 npm test"]
    # FOO may change what npm runs (npm_config_*, NODE_OPTIONS, ... are read the same way)
    asks = ["npm testx", "npm run test", "npm test; npm publish", "npm test && curl -X POST x",
            "echo $(npm test)", "npm", "FOO=1 npm test", "NODE_OPTIONS=-r./x npm test"]
    for command in covered:
        assert grants.covering(call(env, "bash", command=command), env, saved), command
    for command in asks:
        assert grants.covering(call(env, "bash", command=command), env, saved) is None, command


def test_an_exact_rule_covers_exactly_that_command(env: SessionEnv) -> None:
    saved = {"bash:=make"}
    assert grants.covering(call(env, "bash", command="make"), env, saved) == "bash:=make"
    for command in ("make deploy", "make -j4"):
        assert grants.covering(call(env, "bash", command=command), env, saved) is None
    assert grants.describe("bash:=make") == "the bash command `make` exactly"


def test_the_read_only_rule_covers_reads_inside_the_workspace(env: SessionEnv) -> None:
    saved = {grants.READ_ONLY}
    for command in ("ls src", "cat README.md | grep x", "git log --oneline", "find . -name x"):
        assert grants.covering(call(env, "bash", command=command), env, saved) == grants.READ_ONLY
    for command in ("ls /", "cat ~/.ssh/id_rsa", "echo x > out.txt", "npm test", "cd .. && ls"):
        assert grants.covering(call(env, "bash", command=command), env, saved) is None, command


def test_a_protected_call_is_never_covered(env: SessionEnv) -> None:
    saved = {"bash:git push", "bash:rm", grants.READ_ONLY, grants.WORKSPACE_WRITES}
    configured = frozenset({"bash", "write_file"})
    for command in ("git push --force", "rm -rf build", "cat ~/.ssh/id_rsa"):
        bash = call(env, "bash", command=command)
        assert intent.protected(bash)
        assert grants.covering(bash, env, saved, configured) is None, command
    outside = call(env, "write_file", path="../x.txt", content="x")
    assert not outside.grantable and grants.covering(outside, env, saved, configured) is None
    assert grants.rules_for(outside, env) == []


def test_a_write_grant_covers_the_workspace(env: SessionEnv) -> None:
    write = call(env, "write_file", path="src/a.py", content="x")
    assert grants.rules_for(write, env) == [grants.WORKSPACE_WRITES]
    (env.cwd / "src" / "b.py").write_text("old = 1\n")
    env.read_set.add(str((env.cwd / "src" / "b.py").resolve()))
    edit = call(env, "edit_file", path="src/b.py", old_string="old", new_string="new")
    saved = {grants.WORKSPACE_WRITES}
    assert grants.covering(write, env, saved) == grants.WORKSPACE_WRITES
    assert grants.covering(edit, env, saved) == grants.WORKSPACE_WRITES


def test_a_plain_bash_grant_from_before_is_read_as_read_only(env: SessionEnv) -> None:
    saved = grants.load(["bash", "write_file"])
    assert saved == {grants.READ_ONLY, "write_file"}
    assert grants.covering(call(env, "bash", command="ls"), env, saved)
    assert grants.covering(call(env, "bash", command="npm test"), env, saved) is None
    assert grants.covering(call(env, "bash", command="rm -rf build"), env, saved) is None


def test_bash_in_auto_approve_tools_covers_unprotected_commands(env: SessionEnv) -> None:
    configured = frozenset({"bash"})
    assert grants.covering(call(env, "bash", command="npm test"), env, set(), configured)
    assert grants.covering(call(env, "bash", command="rm -rf build"), env, set(),
                           configured) is None


def test_descriptions_say_what_a_rule_allows() -> None:
    assert "only read" in grants.describe(grants.READ_ONLY)
    assert "`npm test`" in grants.describe("bash:npm test")
    assert "inside the workspace" in grants.describe(grants.WORKSPACE_WRITES)


def test_a_watch_is_rated_as_its_command_and_never_granted(env: SessionEnv) -> None:
    from types import SimpleNamespace

    watch = PreparedCall(header="watch", needs_approval=True, approval_label="watch",
                         tool="watch", data=SimpleNamespace(command="rm -rf build"))
    watch.verdict = intent.assess(watch, env)
    assert watch.verdict.rule == "recursive-delete"
    harmless = PreparedCall(header="watch", needs_approval=True, approval_label="watch",
                            tool="watch", data=SimpleNamespace(command="git status"))
    harmless.verdict = intent.assess(harmless, env)
    assert grants.rules_for(harmless, env) == []
    assert grants.covering(harmless, env, {"watch"}) is None
    assert grants.covering(harmless, env, set(), frozenset({"watch"})) == "watch"
