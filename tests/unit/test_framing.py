"""Content-Length framing read liberally: variants accepted, garbage skipped, size capped."""

from __future__ import annotations

import json

import pytest

from turnstoned.daemon.framing import FrameReader, Message, Oversized, Unreadable


def body(msg_id: int = 1, text: str = "hi") -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "m", "params": {"t": text}},
                      ensure_ascii=False).encode()


def frame(b: bytes, header: bytes = b"Content-Length: %d\r\n\r\n") -> bytes:
    return header % len(b) + b


def ids(events: list) -> list:
    return [e.value["id"] if isinstance(e, Message) else e for e in events]


def test_standard_frames_in_one_read_and_byte_by_byte() -> None:
    data = frame(body(1)) + frame(body(2)) + frame(body(3, "é" * 10))
    assert ids(FrameReader().feed(data)) == [1, 2, 3]
    reader, got = FrameReader(), []
    for i in range(len(data)):
        got += reader.feed(data[i:i + 1])
    assert ids(got) == [1, 2, 3] and reader.garbage == 0


@pytest.mark.parametrize("header", [
    b"content-length: %d\r\n\r\n",         # lowercase
    b"CONTENT-LENGTH: %d\r\n\r\n",
    b"Content-Length:%d\r\n\r\n",          # no space after the colon
    b"Content-Length: %d  \r\n\r\n",       # trailing spaces
    b"Content-Length : %d\r\n\r\n",
    b"Content-Length: %d\n\n",             # LF only
    b"Content-Length: %d\r\n\n",
    b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",
    b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n",
    b"Content-Length: %d\r\n",             # no blank line at all
])
def test_header_variants_are_accepted(header: bytes) -> None:
    data = frame(body(1), header) + frame(body(2))
    assert ids(FrameReader().feed(data)) == [1, 2]


def test_length_in_characters_recovers_the_short_body() -> None:
    b = body(1, "héllo wörld ✓")
    short = b"Content-Length: %d\r\n\r\n" % len(b.decode()) + b
    assert ids(FrameReader().feed(short + frame(body(2)))) == [1, 2]
    # the last frame of a burst, its tail arriving in a later read
    reader = FrameReader()
    cut = len(short) - 3
    assert reader.feed(short[:cut]) == [] and reader.waiting
    assert ids(reader.feed(short[cut:])) == [1] and not reader.waiting


def test_a_stalled_short_body_is_reported_when_flushed() -> None:
    reader = FrameReader()
    assert reader.feed(frame(b'{"jsonrpc": "2.0", "id": 7, "method"')) == []
    events = reader.flush()
    assert isinstance(events[0], Unreadable) and events[0].id == 7
    assert ids(reader.feed(frame(body(8)))) == [8]


def test_overstated_length_gives_back_the_next_frame() -> None:
    b1, b2 = body(1), body(2)
    data = b"Content-Length: %d\r\n\r\n" % (len(b1) + 10) + b1 + frame(b2)
    assert ids(FrameReader().feed(data)) == [1, 2]


def test_garbage_between_frames_is_skipped() -> None:
    reader = FrameReader()
    data = (b"hello\r\n\r\n" + frame(body(1)) + b"\x00\xff junk Content-Length: x\r\n" +
            frame(body(2)) + b"\r\n\r\n" + frame(body(3)))
    assert ids(reader.feed(data)) == [1, 2, 3]
    assert reader.garbage > 0


def test_not_json_is_unreadable_with_its_id_when_visible() -> None:
    events = FrameReader().feed(frame(b'{"jsonrpc":"2.0","id":"a1","method":x}') + frame(body(2)))
    assert isinstance(events[0], Unreadable) and events[0].id == "a1"
    assert ids(events[1:]) == [2]
    deep = FrameReader().feed(frame(b"[" * 100_000) + frame(body(3)))
    assert isinstance(deep[0], Unreadable) and ids(deep[1:]) == [3]


def test_oversized_frame_is_skipped_without_buffering() -> None:
    reader = FrameReader(max_frame=1000)
    big = b'{"jsonrpc":"2.0","id":41,"method":"m","params":{"t":"' + b"x" * 5000 + b'"}}'
    events = []
    data = frame(big) + frame(body(2))
    for i in range(0, len(data), 700):
        events += reader.feed(data[i:i + 700])
        assert len(reader._buf) < 1000  # the point: nothing is buffered
    assert isinstance(events[0], Oversized) and events[0].id == 41 and events[0].length == len(big)
    assert ids(events[1:]) == [2]


def test_absurd_length_resynchronises_on_the_next_header() -> None:
    reader = FrameReader()
    events = reader.feed(b"Content-Length: 100000000000000000000\r\n\r\n" + b'{"id": 5, "x": 1}'
                         + frame(body(6)))
    assert isinstance(events[0], Oversized) and events[0].id == 5
    assert ids(events[1:]) == [6]
