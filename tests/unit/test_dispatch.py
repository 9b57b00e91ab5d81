"""Dispatch into pygls: whatever a handler raises, the wire carries no traceback."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from turnstoned.daemon.server import create
from turnstoned.daemon.transport import Link, served_methods


class Capture:
    def __init__(self) -> None:
        self.data = bytearray()
        self.changed = asyncio.Event()

    def write(self, data: bytes) -> None:
        self.data += data
        self.changed.set()

    def close(self) -> None:
        pass

    def messages(self) -> list[dict[str, Any]]:
        out, rest = [], bytes(self.data)
        while rest:
            head, _, rest = rest.partition(b"\r\n\r\n")
            length = int(head.split(b":")[1].split(b"\r\n")[0])
            out.append(json.loads(rest[:length]))
            rest = rest[length:]
        return out


async def reply_to(link: Link, out: Capture, msg: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps(msg).encode()
    link.feed(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    async with asyncio.timeout(5):
        while True:
            found = [m for m in out.messages() if m.get("id") == msg["id"]]
            if found:
                return found[0]
            out.changed.clear()
            await out.changed.wait()


async def test_a_handler_bug_is_answered_without_a_traceback() -> None:
    server = create()

    @server.feature("test/boom")
    async def boom(_: Any) -> None:
        raise RuntimeError("something broke deep inside")

    @server.feature("test/syncboom")
    def sync_boom(_: Any) -> None:
        raise KeyError("sync")

    out = Capture()
    server.protocol.set_writer(out)
    link = Link(server.protocol, served_methods() | {"test/boom", "test/syncboom"})
    for method in ("test/boom", "test/syncboom"):
        reply = await reply_to(link, out, {"jsonrpc": "2.0", "id": method, "method": method})
        assert reply["error"]["code"] == -32603
        assert reply["error"]["data"] == {"kind": "internal"}
    assert b"Traceback" not in out.data and b'File \\"' not in out.data
