"""Where the engine sends what happens: the sink a front end implements."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from turnstoned import protocol as p


class EventSink(Protocol):
    """The engine's only view of its client(s)."""

    def notify(self, event: p.Event) -> None:
        """Send a notification; the event's type names its method (``type(event).method``)."""

    async def request_approval(self, params: p.ApprovalRequestParams) -> p.ApprovalResponse:
        """Ask the user about one approval cycle; cancellation withdraws the question."""

    async def request_mcp_trust(
        self, params: p.McpTrustRequestParams
    ) -> p.McpTrustResponse | None:
        """Ask whether a project's MCP servers may run; None when the client gave no answer."""

    async def request_policy_trust(
        self, params: p.PolicyTrustRequestParams
    ) -> p.McpTrustResponse | None:
        """Ask whether a workspace's policies file may allow; None when the client gave no
        answer."""


class Coalescer:
    """Batches small text deltas into fewer notifications.

    Text is flushed when ``interval`` seconds have passed since the first
    unflushed piece or when ``max_chars`` accumulate; ``close`` flushes the rest.
    """

    def __init__(self, flush: Callable[[str], None], interval: float = 0.025,
                 max_chars: int = 32_768) -> None:
        self._flush = flush
        self._interval = interval
        self._max = max_chars
        self._parts: list[str] = []
        self._size = 0
        self._timer: asyncio.TimerHandle | None = None

    def push(self, text: str) -> None:
        if not text:
            return
        self._parts.append(text)
        self._size += len(text)
        if self._size >= self._max:
            self.flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._interval, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._parts:
            text = "".join(self._parts)
            self._parts.clear()
            self._size = 0
            self._flush(text)

    close = flush
