"""Provider-neutral results of one model call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from turnstoned.protocol import TurnErrorKind

# Where a model call's reported token counts (OpenAI's ``usage``) go.
OnUsage = Callable[[dict[str, Any]], None]


class ModelError(Exception):
    """A model call failed, in the words of a turn error."""

    def __init__(self, kind: TurnErrorKind, message: str, context_limit: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        # contextWindowExceeded: the window the server said it has, when it said so.
        self.context_limit = context_limit


@dataclass(slots=True)
class RawToolCall:
    """A tool call as the model streamed it; ``arguments`` is raw text."""

    id: str
    name: str
    arguments: str = ""


@dataclass(slots=True)
class ModelReply:
    content: str = ""
    reasoning: str = ""
    tool_calls: list[RawToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
