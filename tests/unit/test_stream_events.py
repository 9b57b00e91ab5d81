"""The model stream's event reader on byte chunks cut anywhere: line ends of every style,
[DONE] noted, one endless line refused instead of buffered."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest

from turnstoned.llm.openai_chat import _Events
from turnstoned.llm.types import ModelError


class Body:
    """What ``iter_bytes`` of a streamed response yields."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.chunks = chunks

    async def iter_bytes(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


async def read(events: _Events, chunks: Iterable[bytes]) -> list[dict[str, Any]]:
    return [event async for event in events(Body(chunks))]


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
async def test_events_split_across_chunks_with_any_line_end(end: bytes) -> None:
    stream = (b'data: {"a": 1}' + end + end + b": a comment" + end + b'data:{"b": 2}' + end
              + end + b"data: [DONE]" + end)
    for size in (1, 3, len(stream)):
        events = _Events(max_line=1024)
        chunks = [stream[i:i + size] for i in range(0, len(stream), size)]
        assert await read(events, chunks) == [{"a": 1}, {"b": 2}]
        assert events.done


async def test_a_body_that_ends_without_done_is_noted() -> None:
    events = _Events(max_line=1024)
    assert await read(events, [b'data: {"a": 1}\n\ndata: {"b"']) == [{"a": 1}]
    assert not events.done


async def test_one_endless_line_is_refused_at_the_limit() -> None:
    def endless() -> Iterable[bytes]:
        yield b"data: "
        while True:
            yield b"x" * 65536

    with pytest.raises(ModelError) as info:
        await read(_Events(max_line=1024 * 1024), endless())
    assert "exceeded 1 MiB in one stream event" in info.value.message
