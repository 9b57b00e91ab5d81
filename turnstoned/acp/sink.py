"""The engine's EventSink for an ACP client: engine events as ``session/update``s.

| engine event | ACP |
|---|---|
| ``item/agentMessage/delta``, ``item/reasoning/delta`` | ``agent_message_chunk``, ``agent_thought_chunk`` (``messageId``: the item's id) |
| ``item/started`` of a tool call | ``tool_call`` (kind, title, locations, raw input; a proposed plan: ``plan``) |
| ``approval/resolved`` that runs calls | ``tool_call_update`` ``in_progress`` |
| ``item/toolCall/outputDelta`` | ``tool_call_update`` with the output so far (its tail, at most every ``OUTPUT_EVERY`` s) |
| ``item/completed`` of a tool call | ``tool_call_update``: status, output, ``diff`` of an edit; after ``tasks``, the coordinator's task list as ``plan`` |
| ``session/usage`` | ``usage_update`` |
| ``session/modeChanged`` | ``current_mode_update`` and ``config_option_update`` |
| ``session/notice``, ``session/compacted`` | ``notice`` / ``compaction_update`` when the client has them |
| ``turn/completed`` | the answer to ``session/prompt`` (``agent``) |
| ``item/tool/requestApproval`` | ``session/request_permission`` (``permission``) |
| ``mcpServer/requestTrust``, ``policy/requestTrust`` | an agent message naming ``/trust-mcp`` / ``/trust-policies`` (``commands``) |

An event ACP has no word for (turn/started, notices, compactions, previews, MCP
server states, the judge's verdicts, trust questions) also goes out as
``_turnstoned/<method>`` with its turnstoned protocol v1 params, to a client that
asked for them (``clientCapabilities._meta.turnstoned.notifications: true``).
Sessions the client did not open (a coordinator's children) get only those
extension notifications; their approvals are asked under the session the client
knows that spawned them.

An edit's diff carries whole texts: those shown while it was asked, else the file
read just before the call ran (at ``item/started``, before anything executes) and
after it completed; failing that (a large or binary file) the hunks of its
unified diff.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from turnstoned import protocol as p
from turnstoned.acp import updates
from turnstoned.acp.permission import Permissions
from turnstoned.acp.rpc import Peer
from turnstoned.acp.wire import ClientCapabilities

log = logging.getLogger(__name__)

JSON = dict[str, Any]
SNAPSHOT_LIMIT = 4 << 20  # bytes of a file read for an edit's whole-text diff
OUTPUT_EVERY = 0.1  # seconds between two updates of a command's streamed output
EXTENSION = "_turnstoned/"
# Notices for the user that a client without ``session.notices`` gets as an agent message.
TOLD_NOTICES = ("notify", "watch", "outputGuard", "checkpointsOff", "backgroundShell/exited")
Question = p.McpTrustRequestParams | p.PolicyTrustRequestParams


@dataclass
class Tail:
    """The end of a command's streamed output (what each update resends), and its length."""

    text: str = ""
    total: int = 0
    timer: asyncio.TimerHandle | None = None

    def add(self, chunk: str) -> None:
        self.total += len(chunk)
        self.text = (self.text + chunk)[-updates.OUTPUT_TAIL:]

    def shown(self) -> str:
        if self.total > len(self.text):
            return f"... {self.total - len(self.text)} chars above ...\n{self.text}"
        return self.text


@dataclass
class View:
    """What the front keeps of one session the client opened."""

    session_id: str
    cwd: Path
    turns: dict[str, asyncio.Future[p.TurnCompleted]] = field(default_factory=dict)
    sent: dict[str, int] = field(default_factory=dict)  # message item -> chars sent
    calls: dict[str, p.ToolCallItem] = field(default_factory=dict)  # open tool calls
    tails: dict[str, Tail] = field(default_factory=dict)
    before: dict[str, str | None] = field(default_factory=dict)  # call -> old text
    changed_turns: list[str] = field(default_factory=list)  # turns that changed files
    finish_reasons: dict[str, str] = field(default_factory=dict)  # turn -> last model finish
    told: set[str] = field(default_factory=set)  # trust questions this session was told of

    def waiter(self, turn_id: str) -> asyncio.Future[p.TurnCompleted]:
        found = self.turns.get(turn_id)
        if found is None:
            found = self.turns[turn_id] = asyncio.get_running_loop().create_future()
        return found


def read_text(path: str) -> str | None:
    """A file's text as an editor shows it; None when it cannot be had whole."""
    try:
        if os.path.getsize(path) > SNAPSHOT_LIMIT:
            return None
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8-sig", errors="replace")


def _within(path: Path, root: str) -> bool:
    try:
        return path.resolve().is_relative_to(Path(root).resolve())
    except (OSError, ValueError):
        return False


class AcpSink:
    """Routes the engine's events to the ACP client."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        self.views: dict[str, View] = {}
        self.client = ClientCapabilities()
        self.permissions: Permissions | None = None
        self.parent_of: Callable[[str], str | None] = lambda session_id: None
        self.tasks_of: Callable[[str], list[Any]] = lambda session_id: []
        self.config_options: Callable[[str], list[JSON]] = lambda mode: []
        # How the session's last model reply ended (its finish_reason), for the stopReason.
        self.finish_of: Callable[[str], str | None] = lambda session_id: None
        self.questions: dict[str, Question] = {}  # config path -> the open trust question
        self._notices = itertools.count(1)
        self._handlers: dict[type, Callable[[Any, View], None]] = {
            p.ItemStarted: self._started, p.ItemCompleted: self._completed,
            p.AgentMessageDelta: self._message, p.ReasoningDelta: self._thought,
            p.ToolOutputDelta: self._output, p.ApprovalResolved: self._resolved,
            p.TurnCompleted: self._turn_completed, p.SessionUsage: self._usage,
            p.SessionModeChanged: self._mode, p.SessionNotice: self._notice,
            p.SessionCompacted: self._compacted,
        }
        # Projected events ACP has a word for; every other one goes out as an extension.
        self._projected = (p.ItemStarted, p.ItemCompleted, p.AgentMessageDelta,
                           p.ReasoningDelta, p.ToolOutputDelta, p.ApprovalResolved,
                           p.TurnCompleted, p.SessionUsage, p.SessionModeChanged)

    # ----------------------------------------------------------- views

    def open(self, session_id: str, cwd: Path) -> View:
        view = self.views.get(session_id)
        if view is None:
            view = self.views[session_id] = View(session_id=session_id, cwd=cwd)
        return view

    def close(self, session_id: str) -> None:
        view = self.views.pop(session_id, None)
        if view is None:
            return
        for tail in view.tails.values():
            if tail.timer is not None:
                tail.timer.cancel()
        if self.permissions is not None:
            self.permissions.forget(session_id)

    def announce(self, view: View, available: list[JSON]) -> None:
        """What a freshly opened session is told: the slash commands, and the trust
        questions open about its workspace."""
        self.update(view.session_id, {"sessionUpdate": "available_commands_update",
                                      "availableCommands": available})
        for question in list(self.questions.values()):
            self._tell(question, view)

    def update(self, session_id: str, update: JSON) -> None:
        self.peer.notify("session/update", {"sessionId": session_id, "update": update})

    def extension(self, event: p.Event) -> None:
        """The event as ``_turnstoned/<method>``, to a client that asked for them."""
        if self.client.wants_extensions():
            self.peer.notify(EXTENSION + type(event).method, msgspec.to_builtins(event))

    def has(self, capability: str) -> bool:
        """The client declared ``session.<capability>`` (notices, compaction)."""
        session = self.client.session
        return session is not None and getattr(session, capability) is not None

    def known(self, session_id: str) -> View | None:
        """The view of ``session_id``, or of the nearest session the client opened that
        spawned it (None: nobody here knows it)."""
        seen: set[str] = set()
        current: str | None = session_id
        while current is not None and current not in seen:
            if current in self.views:
                return self.views[current]
            seen.add(current)
            current = self.parent_of(current)
        return None

    # ----------------------------------------------------------- the EventSink

    def notify(self, event: p.Event) -> None:
        if not isinstance(event, self._projected):
            self.extension(event)
        view = self.views.get(getattr(event, "session_id", None) or "")
        handler = self._handlers.get(type(event))
        if view is None or handler is None:
            return
        try:
            handler(event, view)
        except Exception:  # one bad event must not stop the others
            log.exception("projecting %s", type(event).method)

    async def request_approval(self, params: p.ApprovalRequestParams) -> p.ApprovalResponse:
        view = self.known(params.session_id)
        if view is None or self.permissions is None:
            return p.ApprovalResponse(decision="deny", feedback="No editor follows this session.")
        if view.session_id != params.session_id:  # a child session: asked under its parent
            params = msgspec.structs.replace(params, session_id=view.session_id, items=[
                msgspec.structs.replace(i, header=f"[{params.session_id[:8]}] {i.header}")
                for i in params.items])
        return await self.permissions.ask(params)

    async def request_mcp_trust(self, params: p.McpTrustRequestParams
                                ) -> p.McpTrustResponse | None:
        """ACP has no such question: the sessions in that workspace are told, and
        ``/trust-mcp`` answers it. Nothing is trusted meanwhile (asked again next time)."""
        self._question(params)
        return None

    async def request_policy_trust(self, params: p.PolicyTrustRequestParams
                                   ) -> p.McpTrustResponse | None:
        self._question(params)
        return None

    def _question(self, params: Question) -> None:
        self.extension(params)
        self.questions[params.config_path] = params
        for view in list(self.views.values()):
            self._tell(params, view)

    def _tell(self, question: Question, view: View) -> None:
        if question.config_path in view.told or not _within(view.cwd, question.workspace):
            return
        view.told.add(question.config_path)
        if isinstance(question, p.McpTrustRequestParams):
            names = ", ".join(s.name for s in question.servers)
            text = (f"This workspace's `{question.config_path}` lists MCP servers ({names}) "
                    "that do not run until you trust the file: `/trust-mcp` shows what "
                    "they would run.")
        else:
            text = (f"This workspace's `{question.config_path}` has tool policies whose allow "
                    "rules apply only once you trust the file: `/trust-policies` shows them.")
        self.update(view.session_id, updates.chunk("agent_message_chunk", text + "\n\n"))

    def questions_for(self, cwd: Path) -> tuple[p.McpTrustRequestParams | None,
                                                 p.PolicyTrustRequestParams | None]:
        """The open trust questions about the workspace ``cwd`` is in."""
        mcp = next((q for q in self.questions.values()
                    if isinstance(q, p.McpTrustRequestParams) and _within(cwd, q.workspace)),
                   None)
        policy = next((q for q in self.questions.values()
                       if isinstance(q, p.PolicyTrustRequestParams)
                       and _within(cwd, q.workspace)), None)
        return mcp, policy

    def answered(self, question: Question) -> None:
        self.questions.pop(question.config_path, None)

    # ----------------------------------------------------------- items

    def _started(self, event: p.ItemStarted, view: View) -> None:
        item = event.item
        if not isinstance(item, p.ToolCallItem) or event.parent_call_id is not None:
            return
        view.calls[item.call_id] = item
        change = item.file_change
        if change is not None:  # nothing has run yet: the text before the call
            view.before[item.call_id] = None if change.kind == "create" else read_text(change.path)
        self.update(view.session_id, updates.tool_call(item, view.cwd))
        if item.tool == "propose_plan" and (entries := updates.plan_entries(item)):
            self.update(view.session_id, {"sessionUpdate": "plan", "entries": entries})

    def _completed(self, event: p.ItemCompleted, view: View) -> None:
        item = event.item
        if isinstance(item, p.AgentMessageItem | p.ReasoningItem):
            sent = view.sent.pop(item.id, 0)
            if len(item.text) > sent and event.parent_call_id is None:
                kind = "agent_message_chunk" if isinstance(item, p.AgentMessageItem) \
                    else "agent_thought_chunk"
                self.update(view.session_id, updates.chunk(kind, item.text[sent:], item.id))
            return
        if not isinstance(item, p.ToolCallItem) or event.parent_call_id is not None:
            return
        view.calls.pop(item.call_id, None)
        tail = view.tails.pop(item.call_id, None)
        if tail is not None and tail.timer is not None:
            tail.timer.cancel()
        self.update(view.session_id, updates.finished(item, view.cwd, self._diffs(item, view)))
        if item.tool == "tasks" and item.status == "completed":
            entries = updates.task_entries(self.tasks_of(view.session_id))
            self.update(view.session_id, {"sessionUpdate": "plan", "entries": entries})

    def _diffs(self, item: p.ToolCallItem, view: View) -> list[JSON] | None:
        change = item.file_change
        before = view.before.pop(item.call_id, None)
        shown = self.permissions.texts.pop(item.call_id, None) if self.permissions else None
        if change is None:
            return None
        if item.status == "completed":
            old = shown[0] if shown else before
            if change.kind == "delete":
                return [updates.diff_content(change.path, old, "")] if old is not None \
                    else updates.hunk_diffs(change)
            new = read_text(change.path)
            if new is not None and (old is not None or change.kind == "create"):
                return [updates.diff_content(change.path, old, new)]
        elif shown:
            return [updates.diff_content(change.path, *shown)]
        return updates.hunk_diffs(change)

    def _message(self, event: p.AgentMessageDelta, view: View) -> None:
        self._chunk("agent_message_chunk", event, view)

    def _thought(self, event: p.ReasoningDelta, view: View) -> None:
        self._chunk("agent_thought_chunk", event, view)

    def _chunk(self, kind: str, event: p.ItemDelta, view: View) -> None:
        if event.parent_call_id is not None:
            return  # a task agent's text: its call's result says what it found
        view.sent[event.item_id] = view.sent.get(event.item_id, 0) + len(event.delta)
        self.update(view.session_id, updates.chunk(kind, event.delta, event.item_id))

    def _output(self, event: p.ToolOutputDelta, view: View) -> None:
        if event.call_id not in view.calls or event.parent_call_id is not None:
            return
        tail = view.tails.get(event.call_id)
        first = tail is None
        if tail is None:
            tail = view.tails[event.call_id] = Tail()
        tail.add(event.chunk)
        if first:
            self._send_output(view, event.call_id)
        elif tail.timer is None:
            tail.timer = asyncio.get_running_loop().call_later(
                OUTPUT_EVERY, self._send_output, view, event.call_id)

    def _send_output(self, view: View, call_id: str) -> None:
        tail = view.tails.get(call_id)
        if tail is None or call_id not in view.calls:
            return
        tail.timer = None
        self.update(view.session_id, updates.tool_call_update(
            call_id, status="in_progress",
            content=[updates.text_content(updates.fenced(tail.shown()))]))

    def _resolved(self, event: p.ApprovalResolved, view: View) -> None:
        for call_id in event.call_ids:
            decision = event.calls.get(call_id, event.decision)
            if call_id in view.calls and decision in ("approve", "always"):
                self.update(view.session_id,
                            updates.tool_call_update(call_id, status="in_progress"))

    # ----------------------------------------------------------- session events

    def _turn_completed(self, event: p.TurnCompleted, view: View) -> None:
        if event.checkpoint is not None and event.checkpoint.files:
            view.changed_turns.append(event.turn_id)
        finish = self.finish_of(view.session_id)
        if finish is not None:
            view.finish_reasons[event.turn_id] = finish
        waiter = view.turns.pop(event.turn_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(event)

    def _usage(self, event: p.SessionUsage, view: View) -> None:
        self.update(view.session_id, {"sessionUpdate": "usage_update",
                                      "used": event.context_tokens, "size": event.context_window})

    def _mode(self, event: p.SessionModeChanged, view: View) -> None:
        self.update(view.session_id, {"sessionUpdate": "current_mode_update",
                                      "currentModeId": event.mode})
        if options := self.config_options(event.mode):
            self.update(view.session_id, {"sessionUpdate": "config_option_update",
                                          "configOptions": options})

    def _notice(self, event: p.SessionNotice, view: View) -> None:
        if self.has("notices"):
            severity = "warning" if event.kind == "outputGuard" else "info"
            title = (event.text.splitlines() or [""])[0][:200] or event.kind
            self.update(view.session_id, {"sessionUpdate": "notice", "severity": severity,
                                          "title": title, "description": event.text})
        elif event.kind in TOLD_NOTICES:  # a message of its own, set apart as a quote
            quoted = "\n".join(f"> {line}" for line in event.text.splitlines())
            self.update(view.session_id, updates.chunk(
                "agent_message_chunk", f"\n\n{quoted}\n\n",
                f"notice_{next(self._notices)}"))

    def _compacted(self, event: p.SessionCompacted, view: View) -> None:
        if self.has("compaction"):
            summary = [{"type": "text", "text": event.summary}] if event.summary else []
            self.update(view.session_id, {
                "sessionUpdate": "compaction_update",
                "compactionId": f"{event.turn_id or 'manual'}-{event.context_tokens_before}",
                "status": "completed", "summary": summary})
        elif self.has("notices"):
            self.update(view.session_id, {"sessionUpdate": "notice", "severity": "info",
                                          "title": event.text[:200] or "context compacted"})
