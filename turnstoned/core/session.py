"""A session: its conversation, tools, grants and the turn that may be running."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from turnstoned import protocol as p
from turnstoned.core import messages as m
from turnstoned.core import prompt, toolset, wire
from turnstoned.core.approval import ApprovalPolicy, modes
from turnstoned.core.results import RepeatDetector
from turnstoned.core.toolset import SearchSettings, Toolset
from turnstoned.llm.types import OnUsage
from turnstoned.tools.base import SessionEnv

if TYPE_CHECKING:
    from turnstoned.store import SessionRow, Store


COORDINATOR_IDENTITY = (
    ("You are turnstoned, coordinating work inside the user's code editor: you do not edit "
     "files or run commands yourself; you split the work into tasks and hand each to a child "
     "session (a workstream: a coding agent with file and shell tools), then follow them up."),
    ("Spawn children with complete instructions (they do not see this conversation), wait for "
     "them, inspect their results, send follow-ups, and keep the task list current. Report "
     "to the user what was done, by whom, and what is left."),
)


@dataclass(slots=True)
class TurnState:
    """The running turn of a session."""

    id: str
    generation: int
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    # Tokens the turn spent: its model calls and its side calls (a compaction's summary).
    usage: p.Usage = field(default_factory=p.Usage)

    def add_usage(self, usage: dict[str, Any]) -> None:
        count_usage(self.usage, usage)


def count_usage(total: p.Usage, usage: dict[str, Any]) -> None:
    """Add a model call's reported token counts (OpenAI's ``usage``) to ``total``."""
    total.prompt_tokens += int(usage.get("prompt_tokens") or 0)
    total.completion_tokens += int(usage.get("completion_tokens") or 0)
    total.total_tokens += int(usage.get("total_tokens") or 0)


class Session:
    def __init__(self, row: SessionRow, store: Store, env: SessionEnv, policy: ApprovalPolicy) -> None:
        self.row = row
        self.id = row.id
        self.kind = row.kind
        self.model = row.model
        self.title = row.title
        self.store = store
        self.env = env
        self.policy = policy
        # What the model reads: after a compaction, its summary and the messages since.
        self.history: list[m.Message] = []
        self.queued: list[m.Message] = []
        self.turn: TurnState | None = None
        self.generation = 0
        self.updated_at = row.updated_at
        self.last_usage: dict[str, Any] | None = None
        self.search = SearchSettings()
        self.repeats = RepeatDetector()
        # Context measurement: chars per token as the server last counted them, and a
        # window smaller than the configured one when the server named it (refusing a prompt).
        self.chars_per_token = 4.0
        self.window_limit: int | None = None
        self.compact_lock = asyncio.Lock()
        self.compact_requested = False  # session/compact while a turn ran: at its next seam
        self.wakes = 0  # turns started by watch reports since the user last spoke
        self.last_status: p.TurnStatus | None = None  # how the last turn ended
        self.last_finish: str | None = None  # the last model reply's finish_reason

    # ----------------------------------------------------------- state

    @property
    def running(self) -> bool:
        return self.turn is not None

    def spend(self) -> OnUsage | None:
        """Where a side call's token counts go: the running turn's tally (None between turns)."""
        return self.turn.add_usage if self.turn else None

    def commit(self, msgs: list[m.Message], folded: list[m.Message] | None = None) -> None:
        """Persist then append: what the store has is what the model will see.

        ``folded`` are queued messages these messages fold in: they leave the store's
        queue in the same transaction.
        """
        if not msgs:
            return
        self.store.append_messages(self.id, [(x.role, x.turn_id, m.encode(x)) for x in msgs],
                                   dequeue=[x.id for x in folded or ()])
        self.history.extend(msgs)
        self.updated_at = time.time()
        if self.title is None:
            first = next((x.text() for x in msgs if x.role == "user" and not x.notice), "")
            if first:
                self.title = " ".join(first.split())[:80]
                self.store.update_session(self.id, title=self.title)

    def queue_input(self, text: str) -> m.Message:
        """Input for the running turn's next seam, kept in the store until it is folded."""
        msg = m.Message(role="user", content=text, id=m.new_id("user"))
        self.store.queue_input(self.id, msg.id, m.encode(msg))
        self.queued.append(msg)
        return msg

    def take_queued(self) -> list[m.Message]:
        """Everything queued (input and notices), oldest first; the queue is then empty.

        Commit the messages that fold them in with ``commit(..., folded=...)``.
        """
        taken = list(self.queued)
        self.queued.clear()
        return taken

    def items(self, before_turn: str | None = None) -> list[p.Item]:
        """The whole conversation as protocol items, for an editor redrawing it (compacted
        messages too, with a ``compacted`` notice where each compaction happened); input
        still queued for the next turn comes last, marked ``queued``. ``before_turn``:
        without that turn's messages (a running turn, replayed otherwise)."""
        bodies, marks = self.store.load_timeline(self.id)
        history = [m.decode(b) for b in bodies]
        if before_turn is not None:
            cut = next((i for i, x in enumerate(history) if x.turn_id == before_turn),
                       len(history))
            history, marks = history[:cut], [(at, body) for at, body in marks if at <= cut]
        notices: dict[int, list[p.Item]] = {}
        for n, (at, body) in enumerate(marks):
            event = msgspec.json.decode(body, type=p.SessionCompacted)
            notices.setdefault(at, []).append(p.NoticeItem(
                id=f"compacted_{n + 1}", kind=m.SUMMARY_NOTICE, text=event.text,
                detail=event.summary or None))
        waiting: list[p.Item] = [p.UserMessageItem(id=q.id, text=q.text(), queued=True)
                                 for q in self.queued if not q.notice]
        return m.to_items(history, notices) + waiting

    def plan(self) -> list[p.PlanStep]:
        """The model's last plan (``update_plan``), as the session keeps it."""
        kept = self.env.persisted.get("plan")
        try:
            return msgspec.convert(kept or [], list[p.PlanStep])
        except msgspec.ValidationError:
            return []

    def info(self) -> p.SessionInfo:
        info = wire.session_info(self.row, self.title, self.updated_at,
                                 "running" if self.running else "idle", self.policy.mode)
        info.model = self.model  # the session's own, as session/setModel left it
        return info

    # ----------------------------------------------------------- tools

    def toolset(self) -> Toolset:
        """The tools for the next model call: what the model is shown is what it may call."""
        return toolset.build(self.kind, self.env, self.search)

    def system_prompt(self, model_name: str) -> str:
        """How to work, the session's facts, then its sections (instructions, skill, MCP);
        compact for a small window."""
        if self.kind == "coordinator":
            lines = list(COORDINATOR_IDENTITY)
        else:
            lines = [prompt.COMPACT if toolset.compact(self.env) else prompt.FULL, ""]
        lines.append(f"Working directory: {self.env.cwd}")
        if self.env.workspace and self.env.workspace != self.env.cwd:
            lines.append(f"Workspace: {self.env.workspace}")
        lines.append(f"Model: {model_name}. Today is {datetime.now().date().isoformat()}.")
        if self.kind != "coordinator":
            lines.append(modes.PROMPTS[self.policy.mode])
        sections = [section(self.env) for section in self.env.services.prompt_sections]
        return "\n\n".join(["\n".join(lines), *(s for s in sections if s)])


def resolve_dir(path: str | None, default: Path) -> Path:
    return Path(path).expanduser().resolve() if path else default
