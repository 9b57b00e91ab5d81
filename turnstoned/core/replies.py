"""An agent's items as notifications, and one model reply streamed as items.

Both a session's turn and a task agent narrate what happens through items:
an item is started once, streamed as coalesced deltas, and completed once.
``ItemStream`` keeps that bookkeeping for one sink; ``reply`` streams one model
call as an ``agentMessage`` item and, when the server sends reasoning, a
``reasoning`` item.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from turnstoned import protocol as p
from turnstoned.config import ModelSettings
from turnstoned.core import messages as m
from turnstoned.core.events import Coalescer, EventSink
from turnstoned.llm.types import ModelReply


class ItemStream:
    """Items of one agent's turn, told to a sink: each started once and completed once."""

    def __init__(self, sink: EventSink, session_id: str, turn_id: str) -> None:
        self.sink, self.session_id, self.turn_id = sink, session_id, turn_id
        self.open: dict[str, p.Item] = {}
        self.partial = ""  # the text of the last reply streamed so far (kept when it fails)

    def started(self, item: p.Item) -> None:
        self.open[item.id] = item
        self.sink.notify(p.ItemStarted(session_id=self.session_id, turn_id=self.turn_id,
                                       item_id=item.id, item=item))

    def completed(self, item: p.Item) -> None:
        self.open.pop(item.id, None)
        self.sink.notify(p.ItemCompleted(session_id=self.session_id, turn_id=self.turn_id,
                                         item_id=item.id, item=item))

    def close_open(self) -> None:
        """Complete what is still open, except tool calls (their receipts complete them)."""
        for item in list(self.open.values()):
            if not isinstance(item, p.ToolCallItem):
                self.completed(item)

    def _channel(self, item_id: str, delta: type[p.ItemDelta], make: Callable[..., p.Item],
                 kept: list[str]) -> Coalescer:
        """Coalesced deltas of one streamed item, which starts with its first delta; what
        was sent is kept (in the coalesced pieces: a reply of millions of tiny deltas
        costs few objects)."""
        def flush(text: str) -> None:
            kept.append(text)
            if item_id not in self.open:
                self.started(make(id=item_id))
            self.sink.notify(delta(session_id=self.session_id, turn_id=self.turn_id,
                                   item_id=item_id, delta=text))
        return Coalescer(flush)

    async def reply(self, model: ModelSettings, messages: list[dict[str, Any]],
                    tools: list[dict[str, Any]], msg_id: str) -> ModelReply:
        """One model call streamed as items (``msg_id`` names its message item).

        On failure or cancellation the items are completed with what arrived, which
        stays in ``partial``, and the exception propagates.
        """
        from turnstoned.llm.openai_chat import stream_reply  # imports openai: not on startup

        rsn_id = m.new_id("rsn")
        texts: dict[str, list[str]] = {msg_id: [], rsn_id: []}
        text_out = self._channel(msg_id, p.AgentMessageDelta, p.AgentMessageItem, texts[msg_id])
        rsn_out = self._channel(rsn_id, p.ReasoningDelta, p.ReasoningItem, texts[rsn_id])
        self.partial = ""
        try:
            return await stream_reply(model, messages, tools, text_out.push, rsn_out.push)
        finally:
            rsn_out.close()
            text_out.close()
            self.partial = "".join(texts[msg_id])
            for item_id, make in ((rsn_id, p.ReasoningItem), (msg_id, p.AgentMessageItem)):
                if item_id in self.open:
                    self.completed(make(id=item_id, text="".join(texts[item_id])))
