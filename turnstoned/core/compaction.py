"""Context compaction: the older part of a session's context becomes a summary.

Before each model call the runner asks whether the prompt it is about to send
would fill ``[session] compact_at`` of the context window (tokens are the
server's count of the last prompt, carried forward with the chars-per-token
ratio that count showed; four chars a token before any count). If so, the
messages before a cut are summarised by the session's model in a side call
without tools (see ``summary``) and the model's view becomes the summary
followed by the messages after the cut. The cut keeps the last
``keep_recent_turns`` turns within ``keep_recent_tokens``, and never goes past
the current round (the last assistant message with tool calls, its results and
whatever followed), so a call is never separated from its result. A server
that refuses a prompt as too long gets one compacted retry, and the session
learns the window the server named. When the summary cannot be written, the
older messages are dropped from the view with a note saying so.

The messages stay in the store: ``session/resume`` shows the whole history with
a ``compacted`` notice where it happened, and ``recall`` finds them (marked
compacted). The store keeps the summary and where the view starts, so a resumed
session sends what the live one did.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

import msgspec

from turnstoned import protocol as p
from turnstoned.config import Config, ModelSettings, SessionConfig
from turnstoned.core import messages as m
from turnstoned.core.events import EventSink
from turnstoned.core.results import Budget, GuardSettings, guard_output
from turnstoned.core.session import Session, count_usage
from turnstoned.core.summary import SummaryFailed, dropped_message, summarise, summary_message
from turnstoned.llm.types import ModelError
from turnstoned.tools.base import ToolOutput

log = logging.getLogger(__name__)

T = TypeVar("T")
CallTrigger = Literal["auto", "overflow"]  # why a model call's prompt is compacted
_FRAMING_TOKENS = 200  # the words around a summary in the message that carries it


@dataclass(frozen=True, slots=True)
class Limits:
    """A session's context sizes in tokens, and its chars-per-token ratio."""

    window: int  # the configured window, or the smaller one the server named
    trigger: int  # compact when the next prompt reaches this (0: never on its own)
    keep_turns: int
    keep_tokens: int
    summary_tokens: int
    reply_tokens: int  # room left for the reply when tool results are fitted
    chars_per_token: float

    def chars(self, tokens: int) -> int:
        return int(tokens * self.chars_per_token)


def limits(cfg: SessionConfig, model: ModelSettings, session: Session) -> Limits:
    window = min(model.context_window, session.window_limit or model.context_window)
    summary = min(cfg.summary_tokens or min(2048, window // 8), window // 4)
    return Limits(window=window, trigger=int(window * cfg.compact_at),
                  keep_turns=cfg.keep_recent_turns, keep_tokens=cfg.keep_recent_tokens or window // 4,
                  summary_tokens=summary, reply_tokens=min(model.max_tokens or window // 8, window // 4),
                  chars_per_token=session.chars_per_token)


def outgoing(session: Session, model_name: str, history: list[m.Message]) -> list[dict[str, Any]]:
    """The chat messages a model call sends for ``history``."""
    return [{"role": "system", "content": session.system_prompt(model_name)}, *m.to_openai(history)]


IMAGE_CHARS = 4_000  # what a picture costs a prompt, about (its data URL is not its size)


def prompt_chars(messages: list[dict[str, Any]], schemas: list[dict[str, Any]]) -> int:
    """The prompt's size in characters, a picture counted as ``IMAGE_CHARS``."""
    pictures = 0
    counted = messages
    if any(isinstance(msg.get("content"), list) for msg in messages):
        counted = []
        for msg in messages:
            content = msg.get("content")
            if isinstance(content, list):
                kept = [x for x in content if not (isinstance(x, dict)
                                                   and x.get("type") == "image_url")]
                pictures += len(content) - len(kept)
                msg = {**msg, "content": kept}
            counted.append(msg)
    return (len(json.dumps(counted, ensure_ascii=False)) + pictures * IMAGE_CHARS
            + (len(json.dumps(schemas)) if schemas else 0))


def message_chars(msg: m.Message) -> int:
    """About what a message adds to a prompt (its text, its calls, the JSON around them)."""
    return len(msg.text()) + sum(len(c.name) + len(c.arguments) + 60 for c in msg.tool_calls) + 40


def round_start(history: list[m.Message]) -> int:
    """Where the current round begins: the last assistant message with tool calls when only
    its results and user input follow it, else the user input after the last reply.
    Compaction keeps everything from here."""
    i = len(history)
    while i > 0 and history[i - 1].role in ("user", "tool") and history[i - 1].notice != m.SUMMARY_NOTICE:
        i -= 1
    if i > 0 and history[i - 1].role == "assistant" and history[i - 1].tool_calls:
        i -= 1
    return i


def choose_cut(history: list[m.Message], lim: Limits) -> int:
    """How many leading messages of the view to summarise (0: nothing worth it).

    The kept part starts at the ``keep_turns``-th last turn, moved later (to the next
    message that is not a tool result) while it is over ``keep_tokens``, but never past
    the current round.
    """
    first = 1 if history and history[0].notice == m.SUMMARY_NOTICE else 0
    floor = round_start(history)
    starts = [i for i, x in enumerate(history) if x.role == "user" and x.turn_id is not None
              and (i == 0 or history[i - 1].turn_id != x.turn_id)]
    k = floor
    if lim.keep_turns and starts:
        k = min(floor, starts[-min(lim.keep_turns, len(starts))])
    budget = lim.chars(lim.keep_tokens)
    kept = sum(message_chars(x) for x in history[k:])
    while k < floor and (history[k].role == "tool" or kept > budget):
        kept -= message_chars(history[k])
        k += 1
    return k if k > first else 0


def result_budget(history: list[m.Message], lim: Limits, fixed_chars: int, cap: int,
                  compacting: bool) -> Budget:
    """The room for a batch's results: the window less the reply's room, the system message
    and tools, and what the next prompt must carry. With compaction that is only the
    current round and a summary (older messages will give way); without, everything."""
    floor = round_start(history) if compacting else 0
    carried = sum(message_chars(x) for x in history[floor:])
    if floor > 0:
        carried += lim.chars(lim.summary_tokens + _FRAMING_TOKENS)
    room = lim.chars(lim.window - lim.reply_tokens) - fixed_chars - carried
    return Budget(remaining=room, cap=cap)


def compactor(session: Session, config: Config, model: ModelSettings, sink: EventSink) -> Compactor:
    """The compactor of a session under the daemon's configuration."""
    tools = config.tools
    return Compactor(session, config.session, model, sink,
                     GuardSettings(tools.output_guard, tools.redact_secrets))


class Compactor:
    """Compaction of one session's context with the session's model."""

    def __init__(self, session: Session, cfg: SessionConfig, model: ModelSettings,
                 sink: EventSink, guard: GuardSettings) -> None:
        self.session, self.cfg, self.model, self.sink, self.guard = session, cfg, model, sink, guard

    @property
    def enabled(self) -> bool:
        return self.cfg.compact_at > 0

    def limits(self) -> Limits:
        return limits(self.cfg, self.model, self.session)

    def tokens(self, chars: int) -> int:
        """A prompt's size in tokens, from its size in chars."""
        return math.ceil(chars / self.session.chars_per_token)

    def measure(self, history: list[m.Message], schemas: list[dict[str, Any]]) -> int:
        """The estimated prompt size of a model call sending ``history``."""
        return self.tokens(prompt_chars(outgoing(self.session, self.model.name, history), schemas))

    def due(self, tokens: int) -> bool:
        """Whether a prompt of ``tokens`` is to be compacted first (or it was asked for)."""
        return self.session.compact_requested or self.over(tokens)

    def learn(self, refusal: ModelError, sent: int) -> None:
        """The server refused a prompt of ``sent`` tokens as too long: its window is what it
        named, or else below what was sent."""
        window = refusal.context_limit or int(sent * 0.8)
        if window < self.limits().window:
            log.info("session %s: the model server's window is about %d tokens", self.session.id,
                     window)
            self.session.window_limit = max(1024, window)
            self.session.env.settings.context_window = self.session.window_limit

    async def run(self, trigger: p.CompactionTrigger, turn_id: str | None,
                  schemas: list[dict[str, Any]]) -> p.SessionCompacted | None:
        """Compact now (None when nothing is old enough); the editor hears of it."""
        session = self.session
        async with session.compact_lock:
            if session.compact_requested:  # asked for with session/compact while a turn ran
                session.compact_requested = False
                trigger = "manual" if trigger == "auto" else trigger
            elif trigger == "auto" and not self.due(self.measure(session.history, schemas)):
                return None  # not due, or another compaction ran while this one waited
            lim = self.limits()
            cut = choose_cut(session.history, lim)
            if not cut:
                return None
            older = session.history[:cut]
            count = _summarised(older)
            before = self.measure(session.history, schemas)
            spent = p.Usage()
            summary, message, reason = await self._replacement(older, lim, spent)
            kept = session.history[cut:]
            view = [message, *kept]
            event = p.SessionCompacted(
                session_id=session.id, turn_id=turn_id, trigger=trigger,
                mode="summary" if summary else "dropped", messages=count,
                context_tokens_before=before, context_tokens_after=self.measure(view, schemas),
                context_window=lim.window, text="", summary=summary,
                usage=spent if spent.total_tokens or spent.prompt_tokens else None)
            event.text = _notice_text(event, reason)
            session.store.add_compaction(session.id, kept[0].id if kept else None, m.encode(message),
                                         msgspec.json.encode(event).decode())
            session.history = view
        self.sink.notify(event)
        self.sink.notify(p.SessionUsage(session_id=session.id, context_tokens=event.context_tokens_after,
                                        context_window=lim.window, estimated=True))
        return event

    async def call(self, prompt: Callable[[], tuple[list[dict[str, Any]], int]],
                   call: Callable[[list[dict[str, Any]], int], Awaitable[T]],
                   compact: Callable[[CallTrigger, int], Awaitable[bool]]) -> T:
        """A model call of ``prompt()`` (its messages and their size in chars), compacted first
        when ``compact("auto", tokens)`` does so; a refusal of the prompt as too long teaches
        the window, compacts it (``compact("overflow", tokens)``) and tries once more, if
        that or the smaller window (a compact prompt) changed the request.
        ``compact`` returns whether the context changed."""
        messages, chars = prompt()
        tokens = self.tokens(chars)
        if await compact("auto", tokens):
            messages, chars = prompt()
        try:
            return await call(messages, chars)
        except ModelError as exc:
            if exc.kind != "contextWindowExceeded" or not self.enabled:
                raise
            self.learn(exc, tokens)
            compacted = await compact("overflow", tokens)
            again = prompt()  # the window learnt may also have made the prompt compact
            if not compacted and again[1] >= chars:
                raise  # the same request would be refused again
        return await call(*again)

    def over(self, tokens: int) -> bool:
        """Whether a prompt of ``tokens`` reaches the automatic threshold."""
        return self.enabled and tokens >= self.limits().trigger

    async def compact_task(self, history: list[m.Message]) -> list[m.Message] | None:
        """A task agent's conversation with its older part summarised (None when nothing is
        old enough). Its first message, the task, stays word for word; the current round
        stays. Nothing is stored or announced: the agent's conversation lives only as long
        as its call, and the summary's tokens count in the running turn."""
        task, rest = history[:1], history[1:]
        lim = self.limits()
        cut = choose_cut(rest, lim)
        if not cut:
            return None
        older = rest[:cut]
        _, message, _ = await self._replacement(older, lim, p.Usage(), searchable=False)
        log.info("session %s: a task agent's context was compacted (%d messages)",
                 self.session.id, _summarised(older))
        return [*task, message, *rest[cut:]]

    async def _replacement(self, older: list[m.Message], lim: Limits, spent: p.Usage,
                           searchable: bool = True) -> tuple[str, m.Message, str]:
        """``(summary, the message standing for older, why there is no summary)``; the
        summary's tokens go to ``spent`` and to the running turn's tally, if any
        (``searchable``: the older messages stay where recall finds them)."""
        from turnstoned.llm.openai_chat import complete  # imports openai: not on startup

        model = replace(self.model, context_window=lim.window, max_tokens=lim.summary_tokens)
        previous = older[0] if older[0].notice == m.SUMMARY_NOTICE else None
        count = _summarised(older)

        in_turn = self.session.spend()

        def spend(usage: dict[str, Any]) -> None:
            count_usage(spent, usage)
            if in_turn is not None:
                in_turn(usage)

        async def side_call(msgs: list[dict[str, str]]) -> str:
            return await complete(model, list(msgs), spend)

        try:
            text = await summarise(older, side_call, window_tokens=lim.window,
                                   summary_tokens=lim.summary_tokens,
                                   chars_per_token=lim.chars_per_token)
        except (ModelError, SummaryFailed) as exc:
            reason = exc.message if isinstance(exc, ModelError) else str(exc)
            log.warning("session %s: summarising for compaction failed: %s", self.session.id, reason)
            reason = reason if len(reason) <= 200 else reason[:199] + "…"
            return "", dropped_message(count, reason, previous, searchable), reason
        out, advisory = guard_output("the compaction summary", ToolOutput(text), self.guard)
        text = out.text()
        return text, summary_message(text, count, advisory.text if advisory else None,
                                     searchable), ""


def _summarised(older: list[m.Message]) -> int:
    """How many messages a compaction of ``older`` takes out of the model's view (an earlier
    summary at its start is carried over, not counted)."""
    return len(older) - (older[0].notice == m.SUMMARY_NOTICE)


def _notice_text(event: p.SessionCompacted, reason: str) -> str:
    sizes = (f"about {event.context_tokens_before:,} → {event.context_tokens_after:,} of "
             f"{event.context_window:,} tokens")
    why = ("The model server refused the prompt as too long. " if event.trigger == "overflow"
           else "")
    if event.mode == "summary":
        done = f"{event.messages} earlier messages were summarised for the model ({sizes})"
    else:
        done = (f"summarising failed ({reason}), so {event.messages} earlier messages were "
                f"dropped from the model's view without a summary ({sizes})")
    return (f"{why}Context compacted: {done}. They stay in the history, and recall still "
            "finds them.")
