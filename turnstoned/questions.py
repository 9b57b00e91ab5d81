"""Trust questions about a workspace file, asked in the background, one per content.

A project's ``.mcp.json`` and its ``.turnstone/policies.toml`` are both
untrusted until the user says otherwise, and both ask the same way: when a
session opens, one question per (workspace, content hash) goes to the editor
without holding the session up; only ``trust`` or ``deny`` is an answer, and
anything else (dismissed, no client, a failed request) decides nothing, so it
is asked again at the next session. Withdrawn when the daemon stops.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Literal

log = logging.getLogger(__name__)

Answer = Literal["trust", "deny"]


class TrustQuestions:
    """At most one pending question per key; ``decided`` runs with a real answer only."""

    def __init__(self) -> None:
        self._asking: set[Hashable] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def ask(self, key: Hashable, about: str, question: Callable[[], Awaitable[str | None]],
            decided: Callable[[Answer], None]) -> None:
        """Ask unless ``key`` is being asked already or no event loop (so no client) runs."""
        if key in self._asking:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._asking.add(key)
        task = loop.create_task(self._ask_once(key, about, question, decided),
                                name=f"trust:{about}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _ask_once(self, key: Hashable, about: str,
                        question: Callable[[], Awaitable[str | None]],
                        decided: Callable[[Answer], None]) -> None:
        try:
            answer = await question()
        except Exception:  # a background task's boundary: a failed question trusts nothing
            log.exception("asking about %s failed", about)
            answer = None
        finally:
            self._asking.discard(key)
        if answer == "trust":
            decided("trust")
        elif answer == "deny":
            decided("deny")
        else:
            log.info("%s stays undecided (answer: %r)", about, answer)

    async def settle(self, timeout: float) -> None:
        """Wait (bounded) for the questions pending now to be answered."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)

    @property
    def pending(self) -> int:
        return len(self._tasks)

    async def close(self) -> None:
        """Withdraw pending questions."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
