"""Tool policies: allow, deny or ask, by glob patterns over labels, command words and paths.

Policies come from the user's config.toml (``[[policies]]``) and from a
workspace's ``.turnstone/policies.toml``. A workspace file is the repository's
word, not the user's: it may always deny or ask, but its ``allow`` rules count
only once the user trusted that exact content (the sha256 of its bytes, kept
with the project MCP decisions; see ``workspace``). Matching, for one call:
the highest priority first, on a tie deny before ask before allow, config
before workspace; the first policy that matches decides. ``allow`` never
applies to a protected call (``intent.protected``): it asks anyway.

A ``command`` pattern is matched against each part of a bash command (its
words joined by spaces): ``deny``/``ask`` match when any part matches,
``allow`` only when every part does. ``path`` patterns work the same way over
the paths a call reads or writes.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
from dataclasses import dataclass, field
from typing import Literal

from turnstoned import protocol as p
from turnstoned.config import PolicyRule
from turnstoned.core.approval import intent
from turnstoned.shell.access import absolutes, read_words, write_targets
from turnstoned.shell.read import read_script
from turnstoned.tools.base import PreparedCall, SessionEnv

Source = Literal["config", "workspace"]
_SEVERITY = {"deny": 0, "ask": 1, "allow": 2}


@dataclass(frozen=True, slots=True)
class Policy:
    rule: PolicyRule
    source: Source
    origin: str  # the file it came from
    index: int  # its position there (1-based)
    active: bool = True  # False: a workspace allow that is not trusted
    note: str = ""  # why it is inactive

    def describe(self) -> str:
        r = self.rule
        parts = [f"{r.action} label={r.label!r}"]
        if r.command is not None:
            parts.append(f"command={r.command!r}")
        if r.path is not None:
            parts.append(f"path={r.path!r}")
        where = f"{os.path.basename(self.origin)} #{self.index}"
        reason = f": {r.reason}" if r.reason else ""
        return f"{' '.join(parts)} ({self.source} {where}){reason}"

    def info(self) -> p.PolicyInfo:
        r = self.rule
        return p.PolicyInfo(action=r.action, label=r.label, command=r.command, path=r.path,
                            priority=r.priority, reason=r.reason, source=self.source,
                            origin=self.origin, index=self.index, active=self.active,
                            note=self.note)


@dataclass(slots=True)
class Subject:
    """What policies look at in one call."""

    label: str
    tool: str
    commands: list[str] = field(default_factory=list)  # each part of a bash command
    paths: list[str] = field(default_factory=list)  # absolute, symlinks resolved


def ordered(policies: list[Policy]) -> list[Policy]:
    """In the order they are tried."""
    return sorted(policies, key=lambda x: (-x.rule.priority, _SEVERITY[x.rule.action],
                                           x.source != "config", x.index))


def subject(call: PreparedCall, env: SessionEnv) -> Subject:
    found = Subject(label=call.label, tool=call.tool)
    where = intent.where(env)
    if call.tool == "bash":
        command = getattr(call.data, "command", "")
        script = read_script(command if isinstance(command, str) else "", where.cwd,
                             where.home)
        for c in script.commands:
            found.commands.append(" ".join(w.text if not w.dynamic else w.pattern
                                           for w in c.words))
            here = where.at(c.cwd)
            for word in absolutes(read_words(c) + write_targets(c), here):
                if not word.dynamic:
                    found.paths.append(os.path.realpath(word.text))
    elif call.file_change is not None:
        found.paths.append(call.file_change.path)
    else:
        args = intent.arguments(call)
        for key in ("path", "path_a", "path_b"):
            value = args.get(key)
            if isinstance(value, str) and value:
                found.paths.append(os.path.realpath(env.resolve(value)))
    return found


def _path_matches(pattern: str, path: str, workspace: str) -> bool:
    if pattern.startswith("~"):
        pattern = os.path.expanduser(pattern)
    if pattern.startswith("/"):
        return fnmatch.fnmatchcase(path, pattern)
    if path != workspace and not path.startswith(workspace.rstrip("/") + "/"):
        return False
    relative = posixpath.relpath(path, workspace)
    return fnmatch.fnmatchcase(relative, pattern) or fnmatch.fnmatchcase(
        posixpath.basename(path), pattern)


def matches(policy: Policy, found: Subject, workspace: str) -> bool:
    r = policy.rule
    every = r.action == "allow"
    if not (fnmatch.fnmatchcase(found.label, r.label) or fnmatch.fnmatchcase(found.tool, r.label)):
        return False
    checks = []
    if r.command is not None:
        checks.append([fnmatch.fnmatchcase(c, r.command) for c in found.commands])
    if r.path is not None:
        checks.append([_path_matches(r.path, x, workspace) for x in found.paths])
    return all(bool(hits) and (all(hits) if every else any(hits)) for hits in checks)


def decide(policies: list[Policy], call: PreparedCall, env: SessionEnv) -> Policy | None:
    """The policy that decides ``call`` (None: no policy says anything about it)."""
    if not policies:
        return None
    found = subject(call, env)
    workspace = intent.where(env).workspace
    protected = intent.protected(call)
    for policy in ordered(policies):
        if not policy.active or (policy.rule.action == "allow" and protected):
            continue
        if matches(policy, found, workspace):
            return policy
    return None
