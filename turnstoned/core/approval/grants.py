"""Standing grants ("always"): rules narrow enough to give, readable before they are given.

A grant is a rule string:

- ``bash:<words>`` — bash commands whose every part starts with those words
  (``bash:git status``, ``bash:npm run build``); never all of bash;
- ``bash:@read-only`` — bash commands whose every part only reads files inside the
  workspace (``ls``, ``cat``, ``grep``, ``git log``, ...);
- ``write@workspace`` — ``write_file``/``edit_file`` changes inside the workspace;
- any other approval label (``web_fetch``, ``mcp__github__create_issue``,
  ``read_outside_workspace``, ...) — calls under that label.

No grant covers a ``protected`` call (rated high or critical, or outside the
workspace, or on a credential store: see ``intent.protected``): it asks every
time. Before this scheme a session saved plain labels; a saved ``bash`` is
read as ``bash:@read-only`` (it never silently allowed more, and now it allows
less), other plain labels keep their meaning within the same limits. In
``[tools] auto_approve_tools`` (the user's own config) a plain ``bash`` means
every bash command that is not protected.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from turnstoned.core.approval import intent
from turnstoned.shell.options import unaccounted
from turnstoned.shell.read import Command, read_script
from turnstoned.shell.read_only import command_read_only
from turnstoned.tools.base import PreparedCall, SessionEnv

READ_ONLY = "bash:@read-only"
WORKSPACE_WRITES = "write@workspace"
WRITE_LABELS = frozenset({"write_file", "overwrite_file", "append_file", "edit_file"})
MAX_RULES = 4  # a command made of more distinct parts than this is not granted
MAX_EXACT = 6  # words of a command granted exactly
_LEGACY = {"bash": READ_ONLY}

# Programs whose first operand is a subcommand that says what they do (`git status`).
_SUBCOMMANDS = frozenset({
    "git", "npm", "yarn", "pnpm", "npx", "pnpx", "bunx", "cargo", "go", "docker", "podman",
    "kubectl", "helm", "pip", "pip3", "uv", "uvx", "poetry", "pipenv", "make", "gradle", "mvn",
    "dotnet", "rustup", "brew", "apt", "apt-get", "gh", "terraform", "systemctl", "bundle",
    "rake", "mix", "deno", "bun", "composer", "conda", "just", "tox", "nox", "hatch", "pdm",
    "rye", "swift", "zig", "flutter", "dart", "nx", "turbo", "cmake", "ctest", "bazel",
})  # fmt: skip
_RUNNERS = frozenset({"run", "exec", "x", "test", "script"})  # `npm run build`: three words
_INTERPRETERS = frozenset({"python", "python3", "node", "ruby", "perl", "php", "bash", "sh",
                           "zsh", "deno", "bun", "Rscript", "julia"})


def load(saved: Iterable[str]) -> set[str]:
    """Grants as a session saved them, older plain labels read in today's terms."""
    return {_LEGACY.get(rule, rule) for rule in saved}


def leading_words(command: Command) -> list[str] | None:
    """The words a grant for this command names (None: it cannot be granted)."""
    words = command.words
    if not words or any(w.dynamic or w.glob for w in words[:3]) or unaccounted(command):
        return None  # the grant's words would not say what the command does
    texts = [w.text for w in words]
    program = command.program
    operands = [t for t in texts[1:] if not t.startswith("-")]
    if program in _INTERPRETERS:
        if "-m" in texts[1:-1]:
            return [texts[0], "-m", texts[texts.index("-m", 1) + 1]]
        if any(t in ("-c", "-e", "--eval") for t in texts[1:]) or not operands:
            return None  # inline code changes every time: nothing to grant
        return [texts[0], operands[0]]
    if program in _SUBCOMMANDS:
        if not texts[1:2] or texts[1].startswith("-"):
            # No subcommand (`make`, `git --version`): the grant is for exactly this command.
            return ["=", *texts] if len(texts) <= MAX_EXACT and not any(
                w.dynamic or w.glob for w in words) else None
        if texts[1] in _RUNNERS and texts[2:3] and not texts[2].startswith("-"):
            return texts[:3]
        return texts[:2]
    return texts[:1]


def bash_rule(words: list[str]) -> str:
    """``bash:git status`` (these leading words), ``bash:=make`` (exactly these words)."""
    if words[:1] == ["="]:
        return "bash:=" + shlex.join(words[1:])
    return "bash:" + shlex.join(words)


def _rule_words(rule: str) -> tuple[list[str], bool]:
    """The words of a ``bash:`` rule and whether they must match exactly."""
    body = rule[len("bash:"):]
    if body.startswith("="):
        return shlex.split(body[1:]), True
    return shlex.split(body), False


def rules_for(call: PreparedCall, env: SessionEnv) -> list[str]:
    """The rules an "always" for ``call`` saves (none for a protected call, nor for a
    request to leave the sandbox: each is its own question)."""
    if intent.protected(call) or call.tool == "watch" or call.escalation is not None:
        return []  # a watch is a command run again and again, each one asked about
    if call.tool == "bash":
        return _bash_rules(call, env)
    if call.label in WRITE_LABELS:
        return [WORKSPACE_WRITES]
    return [call.label]


def _bash_rules(call: PreparedCall, env: SessionEnv) -> list[str]:
    commands = _script(call, env)
    if commands is None:
        return []
    where = intent.where(env)
    rules: list[str] = []
    for command in commands:
        reads, outside = command_read_only(command, where)
        if reads and not outside:
            rule = READ_ONLY
        else:
            words = leading_words(command)
            if words is None:
                return []
            rule = bash_rule(words)
        if rule not in rules:
            rules.append(rule)
    return rules if 0 < len(rules) <= MAX_RULES else []


def _script(call: PreparedCall, env: SessionEnv) -> list[Command] | None:
    """The commands of a bash call, or None when they cannot be read completely."""
    command = getattr(call.data, "command", None)
    if not isinstance(command, str):
        return None
    where = intent.where(env)
    script = read_script(command, where.cwd, where.home)
    if script.error or not script.commands:
        return None
    return script.commands


def covering(call: PreparedCall, env: SessionEnv, grants: set[str],
             configured: frozenset[str] = frozenset()) -> str | None:
    """The grant that lets ``call`` run unasked, or None."""
    if intent.protected(call) or call.escalation is not None:
        return None
    if call.tool == "bash":
        if "bash" in configured:
            return "bash (auto_approve_tools)"
        return _bash_covering(call, env, grants | configured)
    if call.label in WRITE_LABELS and WORKSPACE_WRITES in grants | configured:
        return WORKSPACE_WRITES
    if call.tool == "watch":
        return call.label if call.label in configured else None
    if call.label in grants | configured:
        return call.label
    return None


def _bash_covering(call: PreparedCall, env: SessionEnv, grants: set[str]) -> str | None:
    commands = _script(call, env)
    if commands is None:
        return None
    rules = [g for g in grants if g.startswith("bash:") and g != READ_ONLY]
    where = intent.where(env)
    used: list[str] = []
    for command in commands:
        reads, outside = command_read_only(command, where)
        if reads and not outside and READ_ONLY in grants:
            used.append(READ_ONLY)
            continue
        match = next((r for r in rules if _matches(r, command)), None)
        if match is None:
            return None
        used.append(match)
    return ", ".join(dict.fromkeys(used))


def _matches(rule: str, command: Command) -> bool:
    words, exact = _rule_words(rule)
    texts = [w.text for w in command.words]
    if any(w.dynamic or w.glob for w in command.words[:len(words)]) or unaccounted(command):
        return False
    return texts == words if exact else texts[:len(words)] == words


def describe(rule: str) -> str:
    """What a grant lets run, in words."""
    if rule == READ_ONLY:
        return ("bash commands that only read files inside the workspace (ls, cat, grep, find, "
                "git status/log/diff, ...)")
    if rule.startswith("bash:="):
        return f"the bash command `{rule[6:]}` exactly"
    if rule.startswith("bash:"):
        return f"bash commands starting with `{rule[5:]}`, unless rated high or critical"
    if rule == WORKSPACE_WRITES:
        return "changes to files inside the workspace (write_file, edit_file)"
    return f"{rule} calls, except outside the workspace, on credentials or rated high"
