"""The slash commands (``available_commands_update``): a prompt that is one of them is
answered by the front, as an agent message, without a model call.

Each does what a turnstoned request does for the other editors: ``/compact``
(``session/compact``), ``/undo`` and ``/redo`` (``turn/undo`` and ``turn/redo`` of
the session's last turn that can be undone), ``/changes`` (``turn/changes`` of
this connection's last turn that changed files),
``/grants`` and ``/revoke RULE`` (``grant/list``, ``grant/revoke``), ``/mcp``
(``mcpServer/list``), and ``/trust-mcp`` and ``/trust-policies``, which answer the
trust questions ACP has no word for (a project's ``.mcp.json``, its
``.turnstone/policies.toml``: what they would run or allow is shown first, and
``/trust-mcp yes`` trusts exactly the file that was shown).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from turnstoned import protocol as p
from turnstoned.acp import updates

if TYPE_CHECKING:
    from turnstoned.core.engine import Engine

JSON = dict[str, object]


@dataclass
class Context:
    """What a command acts on: the engine, the session, and what the front remembers."""

    engine: Engine
    session_id: str
    cwd: Path
    turns: list[str]  # this connection's turns in the session that changed files, oldest first
    mcp_question: p.McpTrustRequestParams | None = None
    policy_question: p.PolicyTrustRequestParams | None = None
    said: list[str] = field(default_factory=list)

    def say(self, text: str) -> None:
        self.said.append(text)


Run = Callable[[Context, str], Awaitable[None]]


@dataclass(frozen=True)
class Command:
    name: str
    description: str
    hint: str | None
    run: Run

    def wire(self) -> JSON:
        found: JSON = {"name": self.name, "description": self.description}
        if self.hint:
            found["input"] = {"hint": self.hint}
        return found


async def _compact(ctx: Context, arg: str) -> None:
    result = await ctx.engine.compact(ctx.session_id)
    ctx.say(result.text or f"Context {result.status}.")


def _files(files: list[p.ChangedFile]) -> str:
    return "\n".join(f"- {f.kind} `{f.path}`" for f in files) or "- (no files)"


def _undo_text(result: p.TurnUndoResult, verb: str) -> str:
    if result.applied:
        lines = [f"{verb} {len(result.restored)} file(s):", _files(result.restored)]
        if result.kept:
            lines.append("Kept as you left them: " + ", ".join(f"`{k}`" for k in result.kept))
        return "\n".join(lines)
    if result.conflicts:
        lines = [("Nothing was changed: these files were changed since the turn (by you or "
                  "a later turn):")]
        lines += [f"- `{c.path}`\n{updates.fenced(c.diff, 'diff')}" for c in result.conflicts]
        return "\n".join(lines)
    return "Nothing to take back."


async def _undo(ctx: Context, arg: str) -> None:
    result = await ctx.engine.undo(p.TurnUndoParams(session_id=ctx.session_id,
                                                    rewind=arg.strip() == "rewind"))
    ctx.say(_undo_text(result, "Took back the last turn's changes to"))


async def _redo(ctx: Context, arg: str) -> None:
    result = await ctx.engine.redo(p.TurnRedoParams(session_id=ctx.session_id))
    ctx.say(_undo_text(result, "Brought back the changes to"))


async def _changes(ctx: Context, arg: str) -> None:
    if not ctx.turns:
        ctx.say("No turn of this conversation (since it was opened here) changed files.")
        return
    result = await ctx.engine.turn_changes(p.TurnRef(session_id=ctx.session_id,
                                                     turn_id=ctx.turns[-1]))
    lines = ["The last turn changed:"]
    for f in result.files:
        lines.append(f"- {f.kind} `{f.path}`")
        if f.diff:
            lines.append(updates.fenced(f.diff, "diff"))
    if result.note:
        lines.append(result.note)
    ctx.say("\n".join(lines) if result.files else "The last turn changed no files.")


async def _grants(ctx: Context, arg: str) -> None:
    grants = ctx.engine.grant_list(ctx.session_id).grants
    if not grants:
        ctx.say("No standing grants: every call that asks, asks.")
        return
    lines = ["What runs without asking in this session:"]
    lines += [f"- `{g.rule}`: {g.description}" + ("" if g.revocable else " (config.toml)")
              for g in grants]
    lines.append("`/revoke RULE` takes one back.")
    ctx.say("\n".join(lines))


async def _revoke(ctx: Context, arg: str) -> None:
    rule = arg.strip()
    if not rule:
        ctx.say("Name the rule: `/revoke bash:npm test` (`/grants` lists them).")
        return
    ctx.engine.grant_revoke(ctx.session_id, rule)
    ctx.say(f"Revoked `{rule}`: its calls ask again.")


async def _mcp(ctx: Context, arg: str) -> None:
    servers = ctx.engine.mcp_servers()
    if not servers:
        ctx.say("No MCP servers are configured.")
        return
    lines = [f"- **{s.name}** ({s.origin or 'config'}): {s.status}, {s.tools} tools"
             + (f" — {s.error}" if s.error else "") for s in servers]
    ctx.say("\n".join(lines))


def _mcp_question_text(q: p.McpTrustRequestParams) -> str:
    lines = [f"`{q.config_path}` asks to start these MCP servers:"]
    for s in q.servers:
        what = s.url if s.transport == "http" else " ".join([s.command or "", *s.args])
        lines.append(f"- **{s.name}**: `{what}`"
                     + (f" (reads {', '.join(s.variables)})" if s.variables else "")
                     + (f" — {s.problem}" if s.problem else ""))
    lines.append("`/trust-mcp yes` trusts this exact file and starts them; nothing runs before.")
    return "\n".join(lines)


async def _trust_mcp(ctx: Context, arg: str) -> None:
    q = ctx.mcp_question
    if q is None:
        ctx.say("No project MCP servers are waiting for your trust.")
        return
    if arg.strip().lower() not in ("yes", "y"):
        ctx.say(_mcp_question_text(q))
        return
    result = await ctx.engine.mcp_trust(p.McpServerTrustParams(
        config_path=q.config_path, trusted=True, hash=q.hash))
    ctx.mcp_question = None
    ctx.say("Trusted; " + ", ".join(f"{s.name}: {s.status}" for s in result.servers))


def _policy_question_text(q: p.PolicyTrustRequestParams) -> str:
    lines = [f"`{q.config_path}` holds tool policies that would let calls run unasked:"]
    lines += [f"- {x.action} `{x.label}`" + (f" `{x.command}`" if x.command else "")
              + (f" `{x.path}`" if x.path else "") for x in q.policies]
    lines.append("`/trust-policies yes` trusts this exact file; until then its allow rules "
                 "do not apply (its deny and ask rules do).")
    return "\n".join(lines)


async def _trust_policies(ctx: Context, arg: str) -> None:
    q = ctx.policy_question
    if q is None:
        ctx.say("No workspace policies file is waiting for your trust.")
        return
    if arg.strip().lower() not in ("yes", "y"):
        ctx.say(_policy_question_text(q))
        return
    ctx.engine.policy_trust(p.PolicyTrustParams(config_path=q.config_path, trusted=True,
                                                hash=q.hash))
    ctx.policy_question = None
    ctx.say("Trusted: its allow rules apply from the next tool call.")


COMMANDS: dict[str, Command] = {c.name: c for c in (
    Command("compact", "Summarise the older part of the conversation now", None, _compact),
    Command("undo", "Take back the files the last turn changed (rewind: the conversation too)",
            "rewind to make the model forget the turn", _undo),
    Command("redo", "Bring back what the last /undo took back", None, _redo),
    Command("changes", "Show what the last turn changed", None, _changes),
    Command("grants", "List what runs without asking in this session", None, _grants),
    Command("revoke", "Take back a grant: its calls ask again", "rule, e.g. bash:npm test",
            _revoke),
    Command("mcp", "List the MCP servers and their state", None, _mcp),
    Command("trust-mcp", "Review (then `yes`: trust) this project's .mcp.json servers",
            "yes to trust", _trust_mcp),
    Command("trust-policies", "Review (then `yes`: trust) this workspace's policies file",
            "yes to trust", _trust_policies),
)}


def parse(text: str) -> tuple[Command, str] | None:
    """``/name args`` as one of the commands (None: an ordinary prompt)."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    name, _, rest = stripped[1:].partition(" ")
    command = COMMANDS.get(name.strip())
    return (command, rest.strip()) if command else None


def available() -> list[JSON]:
    return [c.wire() for c in COMMANDS.values()]
