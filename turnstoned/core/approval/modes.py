"""Approval modes: which calls run without asking, and how commands run (sandboxed or not).

The table, for a call that needs approval and that no policy decided:

| the call (its verdict)                      | read-only, plan | auto                  | full-access   |
|---------------------------------------------|-----------------|-----------------------|---------------|
| only reads inside the workspace (not watch) | runs            | runs (sandboxed)      | runs          |
| an edit inside the workspace                | asks            | runs                  | runs          |
| a command (bash, watch)                     | asks            | runs in the sandbox¹  | runs          |
| reaches the network                         | asks            | asks, runs outside    | runs          |
| destructive, credentials, outside the       | asks            | asks                  | asks          |
| workspace (high, critical, ungrantable)     |                 |                       |               |
| reads outside the workspace                 | asks            | asks² (commands run   | asks          |
|                                             |                 | in the sandbox)       |               |
| a request to leave the sandbox (escalate)   | asks            | asks                  | runs          |
| anything else (MCP tools, ...)              | asks            | asks                  | runs          |

¹ without a sandbox on this machine the command asks, as in read-only. A command
that asks runs sandboxed when approved if the sandbox would not stop what it
does; one that needs the network, credentials, a write outside the workspace or
that asked to escalate runs outside it. Full access has no sandbox. Grants
("always") and allow policies still let calls that ask run unasked.
² a sandboxed command reads the system as the sandbox allows (never a credential
store or the home directory); a read tool reading outside the workspace asks.
"""

from __future__ import annotations

from dataclasses import dataclass

from turnstoned import protocol as p
from turnstoned.core.approval import intent
from turnstoned.tools.base import PreparedCall

COMMAND_TOOLS = frozenset({"bash", "watch"})
EDIT_TOOLS = frozenset({"write_file", "edit_file"})
# Verdicts of calls that need the network (the sandbox has none).
NETWORK_RULES = frozenset({"network-read", "http-mutation", "remote-access", "download-exec"})
# Verdicts whose calls the sandbox would stop: they run outside it once approved.
OUTSIDE_RULES = NETWORK_RULES | frozenset({
    "credential-recon", "credential-write", "write-outside-workspace", "system-path-write",
    "persistence-write", "proc-environ-exfil", "sudo-su"})


@dataclass(frozen=True, slots=True)
class Route:
    """What the mode says of one call: run it unasked (with why), or ask; and for a command,
    how it runs once it runs."""

    run: bool
    reason: str
    sandbox: p.SandboxUse | None


def route(mode: p.ApprovalMode, call: PreparedCall, sandbox: bool) -> Route:
    """The mode's answer for ``call``; ``sandbox``: this machine can sandbox commands."""
    command = call.tool in COMMAND_TOOLS
    rule = call.verdict.rule if call.verdict is not None else "default"
    found = {rule, *call.findings}
    leaves = call.escalation is not None or bool(found & OUTSIDE_RULES)
    if not command or mode == "full-access":
        use: p.SandboxUse | None = "unsandboxed" if command else None
    elif call.escalation is not None:
        use = "escalated"
    else:
        use = "sandboxed" if sandbox and mode == "auto" and not leaves else "unsandboxed"
    if intent.protected(call) or (call.escalation is not None and mode != "full-access"):
        return Route(False, "", use)
    if rule == "read-outside-workspace" and use != "sandboxed":
        return Route(False, "", use)  # the daemon (or an unsandboxed command) would read it
    if found & NETWORK_RULES or rule == "mcp-tool":
        return Route(mode == "full-access", "full access", use)
    if rule == "read-only" and call.tool != "watch":  # a watch runs again and again: it asks
        return Route(True, "mode: only reads inside the workspace", use)
    if mode == "full-access":
        return Route(True, "full access", use)
    if mode != "auto":
        return Route(False, "", use)
    if call.tool in EDIT_TOOLS:
        return Route(True, "auto: an edit inside the workspace", use)
    if command and use == "sandboxed":
        return Route(True, "auto: runs in the sandbox", use)
    return Route(False, "", use)


# What the model is told about its mode (the system message).
PROMPTS: dict[str, str] = {
    "read-only": ("Approval mode: read-only. Reads inside the workspace run at once; every edit, "
                  "command that changes anything and network request asks the user first."),
    "auto": ("Approval mode: auto. Reads and edits inside the workspace run at once; commands "
             "run at once in a sandbox that can write only the workspace and a temporary "
             "directory and has no network. Destructive commands, credentials, writes outside "
             "the workspace and network access ask the user. If a command fails because of the "
             "sandbox, run it again with escalate and a reason (the user is asked)."),
    "full-access": ("Approval mode: full access. Tools run at once without a sandbox, except "
                    "destructive commands, credentials and anything outside the workspace, "
                    "which ask the user."),
    "plan": ("Approval mode: plan. First understand the task with read-only tools (read_file, "
             "search, read-only bash); change nothing. Then call propose_plan once with the "
             "complete plan: the steps, the files you will change, how you will check the "
             "result. When the user approves it the session switches to auto mode and you "
             "carry it out; if not, revise it from their feedback and propose it again."),
}
