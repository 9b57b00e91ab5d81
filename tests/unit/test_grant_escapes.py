"""Commands that once ran unasked under a standing grant, each with its side effect.

After "always" on `git status` (saved as `bash:@read-only`) or a prefix grant such as
`bash:npm test`, none of these may run unasked, and none may be rated read-only: the
reader accounts for every word that changes what runs (an environment variable, a
here-document's substitutions, a subscript bash evaluates, a function shadowing a
program, an option naming a program or a file) or the command is not what its words say.
"""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path

import pytest

from turnstoned.core.approval import grants, intent
from turnstoned.core.pipeline import prepare_one
from turnstoned.llm.types import RawToolCall
from turnstoned.tools import registry
from turnstoned.tools.base import PreparedCall, SessionEnv, ToolContext

GRANTS = {grants.READ_ONLY, "bash:npm test", "bash:go test", "bash:cargo build", "bash:sort",
          "bash:git diff", "bash:make test", "bash:python -m pytest"}

ESCAPES = [
    # the environment decides what runs
    ("GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch ../X;false' "
     "git status"),
    "GIT_CONFIG_PARAMETERS=\"'core.fsmonitor=touch ../X'\" git status",
    "GIT_EXTERNAL_DIFF='touch ../X' git diff",
    "LD_PRELOAD=./evil.so ls",
    "BASH_ENV=./evil.sh ls",
    "PATH=.:$PATH ls",
    "PATH=.:$PATH; ls",
    "export GIT_EXTERNAL_DIFF=./x; git diff",
    "env LD_PRELOAD=./evil.so cat README.md",
    "set -a; BASH_ENV=./x; ls",
    "FOO=1 npm test",
    # here-documents expand their substitutions before the command runs
    "cat <<EOF\n$(touch ../X)\nEOF",
    "cat <<EOF\n`touch ../X`\nEOF",
    "npm test <<EOF\nhello $(touch ../X)\nEOF",
    # subscripts bash evaluates again
    "test -v 'a[$(touch ../X)]'",
    "[[ a -eq 'x[$(touch ../X)]' ]]",
    "printf -v 'a[$(touch ../X)]' x",
    # functions shadowing programs
    "function ls { touch ../X; }; ls",
    "ls() { touch ../X; }; ls",
    "function npm { touch ../X; }; npm test",
    # a program from the workspace
    "./ls",
    # options that run a program or write a file
    "go test -exec ../evil ./...",
    "go test -toolexec=../evil ./...",
    "cargo build --config 'build.rustc-wrapper=\"../evil\"'",
    "sort -o../X README.md",
    "sort --output=../X README.md",
    "git -c core.pager='touch ../X' diff",
    "make test SHELL=../evil",
    "python -m pytest -p evil_plugin",
]

OUTSIDE = [
    "CDPATH=~ cd .ssh && cat id_rsa",
    "grep -R BEGIN .",
    "cat link/id_rsa",
    "cat */id_rsa",
]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SessionEnv:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("KEY")
    monkeypatch.setenv("HOME", str(home))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("hello\n")
    (ws / "link").symlink_to(home / ".ssh")
    return SessionEnv(session_id="s", kind="interactive", cwd=ws)


def call(env: SessionEnv, command: str) -> PreparedCall:
    prepared = prepare_one(RawToolCall("m1", "bash", json.dumps({"command": command})),
                           registry()["bash"].handle(), [], ToolContext(env=env))
    prepared.verdict = intent.assess(prepared, env)
    return prepared


@pytest.mark.parametrize("command", ESCAPES)
def test_no_grant_covers_a_command_its_words_do_not_account_for(env: SessionEnv,
                                                               command: str) -> None:
    prepared = call(env, command)
    assert grants.covering(prepared, env, set(GRANTS)) is None
    assert prepared.verdict is not None and prepared.verdict.rule != "read-only", prepared.verdict
    assert grants.READ_ONLY not in grants.rules_for(prepared, env)


@pytest.mark.parametrize("command", OUTSIDE)
def test_reads_that_lead_out_of_the_workspace_are_not_covered(env: SessionEnv,
                                                            command: str) -> None:
    prepared = call(env, command)
    assert grants.covering(prepared, env, {grants.READ_ONLY}) is None
    assert prepared.verdict is not None and prepared.verdict.rule != "read-only", prepared.verdict


def test_a_read_in_another_users_home_is_a_credential_read(env: SessionEnv) -> None:
    account = pwd.getpwuid(os.getuid())
    prepared = call(env, f"cat ~{account.pw_name}/.ssh/id_rsa")
    assert grants.covering(prepared, env, {grants.READ_ONLY}) is None
    assert prepared.verdict is not None
    assert prepared.verdict.rule in ("credential-recon", "read-outside-workspace")
    assert account.pw_dir in prepared.verdict.reason


@pytest.mark.parametrize(("command", "rule"), [
    ("LD_PRELOAD=./evil.so ls", "env-override"),
    ("GIT_EXTERNAL_DIFF=./x git diff", "env-override"),
    ("go test -exec ../evil ./...", "exec-option"),
    ("cargo build --config x=y", "exec-option"),
    ("test -v 'a[$(touch x)]'", "dynamic-command"),
    ("function ls { echo; }; ls", "shadowed-program"),
])
def test_a_rating_says_what_the_command_can_do(env: SessionEnv, command: str, rule: str) -> None:
    verdict = call(env, command).verdict
    assert verdict is not None and verdict.rule == rule
    assert verdict.risk in (("high",) if rule != "shadowed-program" else ("medium",))


@pytest.mark.parametrize("command", [
    "git status", "ls -la", "cat README.md", "CI=1 ls", "LANG=C sort README.md",
    "NO_COLOR=1 git diff", "x=1; cat README.md", "cat <<'EOF'\n$(not run)\nEOF",
    "grep -r hello .", "cat *.md", "test -f README.md", "/bin/ls",
])
def test_what_only_reads_is_still_read_only(env: SessionEnv, command: str) -> None:
    prepared = call(env, command)
    assert grants.covering(prepared, env, {grants.READ_ONLY}) == grants.READ_ONLY, prepared.verdict


@pytest.mark.parametrize("command", ["npm test", "CI=1 npm test", "env CI=1 npm test",
                                     "npm test -- --watch"])
def test_prefix_grants_still_cover_their_commands(env: SessionEnv, command: str) -> None:
    assert grants.covering(call(env, command), env, {"bash:npm test"}) == "bash:npm test"
