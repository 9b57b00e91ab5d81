"""Errors the engine raises for requests it cannot honour (protocol errors)."""

from __future__ import annotations

from turnstoned.protocol import ERROR_KINDS, ErrorCode


class EngineError(Exception):
    """A request failed; ``code`` and ``kind`` go on the wire."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def kind(self) -> str:
        return ERROR_KINDS[self.code]
