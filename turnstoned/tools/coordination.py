"""What the coordinator tools ask of the engine: the ``Coordination`` contract.

A coordinator session manages child sessions ("workstreams", the seed's word,
kept in the tool names): ordinary interactive sessions of the daemon whose
parent is the coordinator. The engine implements ``Coordination``
(``core.coordinator``); the tools (``tools._coordination`` and the
``*_workstream`` modules) only check their arguments and render results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from turnstoned import protocol as p

LAST_MESSAGE_CAP = 10 * 1024


class CoordinationError(ValueError):
    """A request the engine refuses; the message is what the model reads."""


@dataclass(frozen=True, slots=True)
class Child:
    """A child session as the coordinator sees it."""

    id: str
    name: str
    state: str  # one of STATES
    last_status: str | None  # how its last turn ended: completed | interrupted | failed
    last_message: str  # its last answer ("" before it said anything)
    updated_at: str

    def brief(self, message_cap: int = LAST_MESSAGE_CAP) -> dict[str, Any]:
        message = self.last_message
        if len(message) > message_cap:
            message = message[:message_cap] + f"\n[... {len(message) - message_cap} more chars]"
        return {"ws_id": self.id, "name": self.name, "state": self.state,
                "last_turn": self.last_status, "last_message": message,
                "updated_at": self.updated_at}


class Coordination(Protocol):
    """The engine's side of the coordinator tools; every method checks ``child`` is a child
    of ``parent`` and raises ``CoordinationError`` (with suggestions) when it is not."""

    def spawn(self, parent: str, name: str | None, message: str | None,
              model: str | None) -> Child: ...

    def send(self, parent: str, child: str, message: str) -> Child: ...

    async def wait(self, parent: str, children: list[str], timeout: float,
                   mode: str) -> tuple[list[Child], bool]: ...

    def inspect(self, parent: str, child: str) -> tuple[Child, list[p.Item]]: ...

    def children(self, parent: str, include_closed: bool) -> list[Child]: ...

    async def close(self, parent: str, child: str) -> Child: ...

    def cancel(self, parent: str, child: str) -> tuple[Child, bool]: ...
