"""Intent verdicts: the rule table every gated tool call is rated by before approval.

``RULES`` is ordered from critical to low and the first rule a call matches is
its verdict; a call no rule matches is ``medium``/``review`` (rule
``default``). Bash commands are read as the shell would read them
(``intent_bash``); file tools are judged by where their paths really lead
(``tools._paths``). A verdict never blocks by itself: it rides on the approval
item and the tool card, decides whether a grant or a workspace policy may
cover the call (``protected``) and feeds smart approvals.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from turnstoned import protocol as p
from turnstoned.core.approval import intent_bash
from turnstoned.places import credential_roots
from turnstoned.shell import where as ip
from turnstoned.shell.read import Word
from turnstoned.shell.where import Where
from turnstoned.tools.base import PreparedCall, SessionEnv


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    risk: p.Risk
    recommendation: p.Recommendation
    confidence: float
    summary: str


RULES: tuple[Rule, ...] = (
    Rule("rm-root", "critical", "deny", 0.95, "deletes the root, the home directory or a "
         "system tree"),
    Rule("disk-wipe", "critical", "deny", 0.95, "formats or overwrites a disk"),
    Rule("fork-bomb", "critical", "deny", 0.95, "starts processes until the machine stops"),
    Rule("kill-all", "critical", "deny", 0.95, "signals every process"),
    Rule("download-exec", "critical", "deny", 0.95, "runs code downloaded from the network"),
    Rule("pipe-to-shell", "critical", "deny", 0.9, "runs piped or decoded text as a program"),
    Rule("chmod-777-root", "critical", "deny", 0.9, "changes permissions of a system tree"),
    Rule("proc-environ-exfil", "critical", "deny", 0.95, "reads a process's environment"),
    Rule("system-path-write", "critical", "deny", 0.9, "writes into a system directory"),
    Rule("sudo-su", "high", "review", 0.85, "runs with another user's privileges"),
    Rule("destructive-git", "high", "review", 0.85, "discards work or rewrites history"),
    Rule("recursive-delete", "high", "review", 0.8, "deletes recursively or forcibly"),
    Rule("sql-destructive", "high", "review", 0.8, "drops or empties database tables"),
    Rule("credential-recon", "high", "review", 0.85, "reads credentials"),
    Rule("credential-write", "high", "review", 0.85, "writes into a credential store"),
    Rule("persistence-write", "high", "review", 0.8, "changes what runs later"),
    Rule("write-outside-workspace", "high", "review", 0.8, "writes outside the workspace"),
    Rule("http-mutation", "high", "review", 0.75, "sends data to a server"),
    Rule("remote-access", "high", "review", 0.75, "connects to another machine"),
    Rule("dynamic-command", "high", "review", 0.7, "runs a program only known at run time"),
    Rule("env-override", "high", "review", 0.75, "changes what a program runs through its "
         "environment"),
    Rule("exec-option", "high", "review", 0.7, "runs a program or writes a file an option "
         "names"),
    Rule("kill-processes", "high", "review", 0.7, "kills processes by name"),
    Rule("unparsed", "medium", "review", 0.5, "could not be read completely"),
    Rule("shadowed-program", "medium", "review", 0.6, "runs a function the script defines "
         "in place of a program"),
    Rule("read-outside-workspace", "medium", "review", 0.6, "reads outside the workspace"),
    Rule("mcp-tool", "medium", "review", 0.5, "an MCP server's tool: it does what the "
         "server says"),
    Rule("network-read", "medium", "review", 0.6, "sends a request to the network"),
    Rule("workspace-edit", "medium", "review", 0.6, "changes a file inside the workspace"),
    Rule("read-only", "low", "approve", 0.9, "only reads inside the workspace"),
)
DEFAULT = Rule("default", "medium", "review", 0.5, "no rule matched")
RULES_BY_ID = {r.id: r for r in RULES}
RANK: dict[str, int] = {"low": 0, "medium": 1, "high": 2, "critical": 3}

_WRITE_TOOLS = frozenset({"write_file", "edit_file"})
_COMMAND_TOOLS = frozenset({"bash", "watch"})  # a watch runs its shell command again and again
_READ_TOOLS = {"read_file": ("path",), "search": ("path",), "diff_file": ("path_a", "path_b")}
_NETWORK_TOOLS = frozenset({"web_fetch", "web_search", "open_preview"})


def verdict_of(hits: dict[str, str]) -> p.Verdict:
    """The first rule of the table among ``hits`` (rule id -> reason), or the default."""
    for rule in RULES:
        if rule.id in hits:
            return p.Verdict(risk=rule.risk, recommendation=rule.recommendation, rule=rule.id,
                             reason=hits[rule.id], confidence=rule.confidence)
    return p.Verdict(risk=DEFAULT.risk, recommendation=DEFAULT.recommendation, rule=DEFAULT.id,
                     reason="no rule of the table matched", confidence=DEFAULT.confidence)


def where(env: SessionEnv) -> Where:
    return Where(cwd=os.path.realpath(env.cwd), workspace=env.workspace_root(),
                 home=os.path.expanduser("~"), credentials=credential_roots())


def assess(call: PreparedCall, env: SessionEnv) -> p.Verdict:
    """The rule table's verdict for one prepared call."""
    return verdict_of(findings(call, env))


def rate(call: PreparedCall, env: SessionEnv) -> p.Verdict:
    """``assess``, also keeping on the call every rule it matched (a destructive ``git push``
    also needs the network: the approval mode asks about both)."""
    hits = findings(call, env)
    call.findings = tuple(hits)
    return verdict_of(hits)


def findings(call: PreparedCall, env: SessionEnv) -> dict[str, str]:
    """Every rule the call matches (rule id -> reason)."""
    args = arguments(call)
    here = where(env)
    if call.tool in _COMMAND_TOOLS:
        command = getattr(call.data, "command", None) or str(args.get("command") or "")
        return intent_bash.findings(command, here)
    if call.tool in _WRITE_TOOLS:
        target = call.file_change.path if call.file_change else str(args.get("path") or "")
        return _write_findings(target, here)
    if call.tool in _READ_TOOLS:
        paths = [str(args[k]) for k in _READ_TOOLS[call.tool] if isinstance(args.get(k), str)]
        return _read_findings(paths or ["."], here)
    if call.label.startswith(("mcp__", "mcp_resource__")) or call.tool in ("read_resource",
                                                                           "use_prompt"):
        return {"mcp-tool": f"{call.label}: what it does is up to its MCP server"}
    if call.tool in _NETWORK_TOOLS:
        target = str(args.get("url") or args.get("target") or args.get("query") or "")
        if call.tool == "open_preview" and not target.startswith(("http://", "https://")):
            return _read_findings([target], here)
        return {"network-read": f"{call.tool} sends a request for {target[:120]!r}"}
    return {}


def arguments(call: PreparedCall) -> dict[str, Any]:
    """The call's arguments as an object ({} when they are not one)."""
    try:
        value = json.loads(call.arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _word(path: str, here: Where) -> Word:
    absolute = os.path.join(here.cwd or "/", os.path.expanduser(path))
    return Word(text=absolute, pattern=absolute, dynamic=False, glob=False)


def _write_findings(path: str, here: Where) -> dict[str, str]:
    word = _word(path, here)
    if ip.is_system(word):
        return {"system-path-write": f"writes into a system directory ({word.text})"}
    if ip.is_credential_word(word, here):
        return {"credential-write": f"writes into a credential store ({word.text})"}
    if ip.is_startup(word, here):
        return {"persistence-write": f"changes what runs later ({word.text})"}
    if not ip.inside(word, here):
        return {"write-outside-workspace": f"writes outside the workspace ({word.text})"}
    return {"workspace-edit": f"changes {os.path.relpath(ip.real(word.text), here.workspace)} "
                              "inside the workspace"}


def _read_findings(paths: list[str], here: Where) -> dict[str, str]:
    hits: dict[str, str] = {}
    for path in paths:
        word = _word(path, here)
        if ip.proc_environ(word):
            hits.setdefault("proc-environ-exfil", f"reads a process's environment ({word.text})")
        elif ip.is_credential_word(word, here):
            hits.setdefault("credential-recon", f"reads {word.text} (a credential store)")
        elif not ip.inside(word, here):
            hits.setdefault("read-outside-workspace", f"reads {word.text} outside the workspace")
    return hits or {"read-only": "only reads inside the workspace"}


def protected(call: PreparedCall) -> bool:
    """No grant and no workspace policy covers this call: it asks every time (unless the
    session skips permissions). Destructive, credential-touching and high-risk calls, and
    calls the tool itself marks ungrantable (outside the workspace, credential stores)."""
    verdict = call.verdict
    return not call.grantable or (verdict is not None and RANK[verdict.risk] >= RANK["high"])


def raise_to(judged: p.Verdict, heuristic: p.Verdict) -> p.Verdict:
    """The judge's verdict, never below a heuristic critical or deny."""
    if heuristic.risk != "critical" and heuristic.recommendation != "deny":
        return judged
    risk = heuristic.risk if RANK[heuristic.risk] > RANK[judged.risk] else judged.risk
    recommendation = "deny" if heuristic.recommendation == "deny" else judged.recommendation
    if risk == judged.risk and recommendation == judged.recommendation:
        return judged
    reason = f"{judged.reason} (held at {risk}/{recommendation}: rule {heuristic.rule})"
    return p.Verdict(risk=risk, recommendation=recommendation, rule=judged.rule, reason=reason,
                     tier=judged.tier, confidence=judged.confidence)
