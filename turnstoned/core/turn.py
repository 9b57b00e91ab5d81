"""The turn runner: stream a reply, hand its tool calls to the pipeline, commit, repeat.

A turn loops until the model answers without tool calls (or the round cap).
Before each model call the context is compacted when it is due (see
``compaction``); a server refusing the prompt as too long gets one compacted
retry. The runner owns the conversation: it streams the model's reply, commits the
assistant message, gives the batch to ``pipeline.Batch`` and commits what the
batch folded in one generation-checked commit. An interrupt cancels the
runner's task, and the runner commits the batch's receipts (``none`` if a call
never started, ``unknown`` if it had), so the transcript never holds a tool
call without a result.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from turnstoned import protocol as p
from turnstoned.config import Config, ModelSettings
from turnstoned.core import compaction, editor
from turnstoned.core import messages as m
from turnstoned.core.compaction import Compactor
from turnstoned.core.events import EventSink
from turnstoned.core.pipeline import Batch, BatchSetup, Folded, call_item
from turnstoned.core.replies import ItemStream
from turnstoned.core.results import Budget, guard_settings, rate_with
from turnstoned.core.session import Session, TurnState
from turnstoned.core.toolset import Toolset
from turnstoned.llm.types import ModelError, ModelReply
from turnstoned.tools.base import truncate_middle

if TYPE_CHECKING:
    from turnstoned.core.undo import Checkpoints

log = logging.getLogger(__name__)

MCP_READY_SECONDS = 10  # a turn waits this long for MCP servers still connecting

PARTIAL_KEPT = 65_536  # characters of a failed reply's text the conversation keeps


class TurnRunner:
    def __init__(self, session: Session, turn: TurnState, config: Config, sink: EventSink,
                 model_for: Callable[[str], ModelSettings],
                 checkpoints: Checkpoints | None = None) -> None:
        self.session, self.turn, self.config, self.sink = session, turn, config, sink
        self.model_for = model_for  # the session's model; raises ModelError when there is none
        self.checkpoints = checkpoints
        self.batch: Batch | None = None
        self.tools = Toolset()
        self._reply_id = ""
        self.items = ItemStream(sink, session.id, turn.id)
        self._fixed_chars = 0  # the system message and tool schemas of the last model call

    # ----------------------------------------------------------- notifications

    def _item_started(self, item: p.Item) -> None:
        self.items.started(item)

    def _item_completed(self, item: p.Item) -> None:
        self.items.completed(item)

    # ----------------------------------------------------------- the loop

    async def run(self) -> None:
        self.sink.notify(p.TurnStarted(session_id=self.session.id, turn_id=self.turn.id))
        status: p.TurnStatus = "completed"
        error = None
        try:
            await self._loop()
        except ModelError as exc:
            status, error = "failed", p.TurnError(kind=exc.kind, message=exc.message)
        except asyncio.CancelledError:
            status = "interrupted"
            self._commit_receipts("Cancelled by user.")
        except Exception as exc:  # top-level boundary of a turn: log, report, stay alive
            log.exception("turn %s failed", self.turn.id)
            status = "failed"
            error = p.TurnError(kind="internal", message=f"{type(exc).__name__}: {exc}")
            self._commit_receipts("The turn failed.")
        finally:
            self._close_open_items()
            checkpoint = await self._checkpoint()
            self.session.turn = None
            self.session.last_status = status
            self.sink.notify(p.TurnCompleted(
                session_id=self.session.id, turn_id=self.turn.id, status=status, error=error,
                usage=self.turn.usage if self.turn.usage.total_tokens else None,
                checkpoint=checkpoint))

    async def _checkpoint(self) -> p.TurnCheckpoint | None:
        """The workspace after the turn, when it has a checkpoint (never raises: the turn's
        end is reported whatever happens here)."""
        if self.checkpoints is None:
            return None
        try:
            return await self.checkpoints.after(self.session.env, self.turn.id)
        except asyncio.CancelledError:
            return None
        except Exception:
            log.exception("checkpoint after turn %s failed", self.turn.id)
            return None

    async def _loop(self) -> None:
        model = self.model_for(self.session.id)
        manager = self.session.env.services.mcp
        if manager is not None:  # a turn right after the daemon started: let servers connect
            try:
                await manager.wait_ready(MCP_READY_SECONDS)
            except TimeoutError:
                log.info("MCP servers still connecting after %ds; the turn goes on without "
                         "them", MCP_READY_SECONDS)
        self.session.env.settings.supports_vision = model.supports_vision
        compactor = compaction.compactor(self.session, self.config, model, self.sink)
        # The window the prompt and tools are sized for: a smaller one the server named wins.
        self.session.env.settings.context_window = compactor.limits().window
        for _ in range(self.config.session.max_rounds):
            reply = await self._call(model, compactor)
            if reply.tool_calls:
                await editor.load_buffers(self.session.env)
            batch = self._commit_assistant(reply)
            if not batch.calls:
                if self._fold_queued():
                    continue
                return
            self._commit_batch(batch, await batch.run(self._budget(compactor)))
        raise ModelError("turnLimit", f"The turn stopped after {self.config.session.max_rounds} "
                                      "model calls ([session] max_rounds).")

    # ----------------------------------------------------------- model call

    def _prompt(self, model: ModelSettings) -> tuple[list[dict[str, Any]], int]:
        """The messages of the next model call, and their size with the tools in chars
        (the tools as well are built again: a refusal may have shown the window is small)."""
        self.tools = self.session.toolset()
        messages = compaction.outgoing(self.session, model.name, self.session.history)
        self._fixed_chars = compaction.prompt_chars(messages[:1], self.tools.schemas)
        return messages, compaction.prompt_chars(messages, self.tools.schemas)

    async def _call(self, model: ModelSettings, compactor: Compactor) -> ModelReply:
        """A model call, after compacting the context when that is due (or waiting for a
        compaction under way); a refusal of the prompt as too long compacts it and tries
        once more. The tools are built with each prompt (``_prompt``)."""

        async def compact(trigger: compaction.CallTrigger, tokens: int) -> bool:
            if trigger == "auto" and not (compactor.due(tokens)
                                          or self.session.compact_lock.locked()):
                return False
            view = self.session.history
            await compactor.run(trigger, self.turn.id, self.tools.schemas)
            return self.session.history is not view

        async def call(messages: list[dict[str, Any]], chars: int) -> ModelReply:
            return await self._model_call(model, compactor.limits().window, messages, chars)

        return await compactor.call(lambda: self._prompt(model), call, compact)

    async def _model_call(self, model: ModelSettings, window: int,
                          messages: list[dict[str, Any]], chars: int) -> ModelReply:
        """Stream one reply to ``messages`` (``chars`` long with the tools) and report how
        full the context of ``window`` tokens is."""
        msg_id = m.new_id("msg")
        try:
            reply = await self.items.reply(model, messages, self.tools.schemas, msg_id)
        except (asyncio.CancelledError, ModelError):
            if self.items.partial:  # keep what the user already saw (a runaway reply, cut)
                kept = truncate_middle(self.items.partial, PARTIAL_KEPT)
                self.session.commit([m.Message(role="assistant", content=kept,
                                               id=msg_id, turn_id=self.turn.id)])
            raise
        tokens = self._count_usage(chars, reply)
        self.sink.notify(p.SessionUsage(
            session_id=self.session.id, context_tokens=tokens,
            context_window=window, estimated=not reply.usage))
        self._reply_id = msg_id
        self.session.last_finish = reply.finish_reason  # "length": cut at max_tokens
        return reply

    def _count_usage(self, prompt_chars: int, reply: ModelReply) -> int:
        """Add the call to the turn's usage; returns how full the context is (the prompt plus
        the reply, as the server counted it or estimated from the text). The server's count
        also calibrates the session's chars per token."""
        session = self.session
        if reply.usage:
            session.last_usage = reply.usage
            self.turn.add_usage(reply.usage)
            prompt = int(reply.usage["prompt_tokens"])
            if prompt > 0:
                session.chars_per_token = min(8.0, max(1.0, prompt_chars / prompt))
            tokens = prompt + int(reply.usage["completion_tokens"])
        else:
            chars = prompt_chars + len(reply.content) + len(reply.reasoning)
            chars += sum(len(c.name) + len(c.arguments or "") for c in reply.tool_calls)
            tokens = math.ceil(chars / session.chars_per_token)
        return tokens

    # ----------------------------------------------------------- commits

    def _setup(self) -> BatchSetup:
        guard = guard_settings(self.config)
        return BatchSetup(env=self.session.env, sink=self.sink, turn_id=self.turn.id,
                          cancel=self.turn.cancel, policy=self.session.policy,
                          repeats=self.session.repeats, guard=guard,
                          rate=self._rate if guard.llm_check else None,
                          before_changes=partial(self.checkpoints.before, self.session.env,
                                                 self.turn.id) if self.checkpoints else None)

    async def _rate(self, messages: list[dict[str, Any]]) -> str:
        """The output guard's second look, asked of the session's model (its tokens are
        the turn's)."""
        return await rate_with(self.model_for(self.session.id), messages, self.turn.add_usage)

    def _commit_assistant(self, reply: ModelReply) -> Batch:
        """Prepare the reply's tool calls, then commit the assistant message and open their items."""
        batch = self.batch = Batch.prepare(self._setup(), self.tools.handles, reply.tool_calls)
        if not reply.content and not reply.reasoning and not batch.calls:
            return batch
        self.session.commit([m.Message(
            role="assistant", content=reply.content, reasoning=reply.reasoning or None,
            id=self._reply_id, turn_id=self.turn.id, tool_calls=batch.records())])
        for c in batch.calls:
            self._item_started(call_item(c, "pending"))
        return batch

    def _commit_batch(self, batch: Batch, folded: Folded) -> None:
        """One checked commit of a batch's results, then its notices and final items."""
        if self.turn.generation != self.session.generation:
            log.info("dropping results of superseded turn %s", self.turn.id)
            return
        for notice in folded.notices:
            self.sink.notify(notice)
        self.session.queued[:0] = folded.advisories
        extra, taken = self._queued_message(folded.feedback)
        self.session.commit(folded.messages + ([extra] if extra else []), folded=taken)
        batch.folded = True
        for item in folded.items:
            self._item_completed(item)

    def _fold_queued(self) -> bool:
        """Fold queued user input and notices as one user message; False if none."""
        extra, taken = self._queued_message([])
        if extra is None:
            return False
        self.session.commit([extra], folded=taken)
        return True

    def _queued_message(self, feedback: list[str]) -> tuple[m.Message | None, list[m.Message]]:
        """Queued input, notices and approval feedback as one user message (strict chat
        templates refuse two user messages in a row), with the queued messages it folds."""
        queued = self.session.take_queued()
        parts = [q.text() for q in queued] + feedback
        notices = [q.notice for q in queued if q.notice]
        if not parts:
            return None, queued
        notice = None if len(notices) < len(queued) else (notices[0] if notices else "feedback")
        return m.Message(role="user", content="\n\n".join(parts), id=m.new_id("user"),
                         turn_id=self.turn.id, notice=notice), queued

    def _budget(self, compactor: Compactor) -> Budget:
        return compaction.result_budget(self.session.history, compactor.limits(), self._fixed_chars,
                                        self.session.env.output_cap(), compactor.enabled)

    # ----------------------------------------------------------- interrupts

    def _commit_receipts(self, reason: str) -> None:
        """Results for the calls of an unfolded batch, so no call is left orphaned."""
        folded = self.batch.receipts(reason) if self.batch is not None else None
        if folded is None:
            return
        assert self.batch is not None
        self.batch.folded = True
        self.session.commit(folded.messages)
        for item in folded.items:
            self._item_completed(item)

    def _close_open_items(self) -> None:
        self.items.close_open()
