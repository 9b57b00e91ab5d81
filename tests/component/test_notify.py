"""notify in-process: the editor's notice and webhook receivers on loopback, with retries."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RecordingSink, write_config
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from tests.turnkit import completed_tools, run, start, tool_messages
from turnstoned import config, paths
from turnstoned.core.engine import Engine
from turnstoned.store import Store


class Receiver:
    """A webhook endpoint on 127.0.0.1 that records each POST and answers from a script."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict[str, Any], dict[str, str], float]] = []
        self.statuses: dict[str, list[int]] = {}  # path -> statuses to answer, then 204
        self.arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                script = receiver.statuses.get(self.path, [])
                status = script.pop(0) if script else 204
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()
                with receiver.arrived:
                    receiver.posts.append((self.path, body, dict(self.headers), time.monotonic()))
                    receiver.arrived.notify_all()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def to(self, path: str) -> list[tuple[dict[str, Any], dict[str, str], float]]:
        return [(body, headers, at) for p, body, headers, at in self.posts if p == path]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()
    r.server.server_close()


def _configure(home: Path, receiver: Receiver, editor: bool = True) -> None:
    write_config(home, f"""
[notify]
editor = {str(editor).lower()}
timeout_seconds = 5
[notify.channels.team]
url = "{receiver.url}/slack"
format = "slack"
[notify.channels.ops]
url = "{receiver.url}/discord"
format = "discord"
[notify.channels.hook]
url_env = "TEST_HOOK_URL"
headers = {{ Authorization = "Bearer hook-token" }}
[notify.channels.down]
url = "{receiver.url}/down"
""")


@pytest.fixture
async def notify_engine(isolated_home: Path, receiver: Receiver, sink: RecordingSink,
                        model: ScriptedModel, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Engine]:
    monkeypatch.setenv("TEST_HOOK_URL", f"{receiver.url}/generic")
    _configure(isolated_home, receiver)
    engine = Engine(config.load(), Store(paths.database_file()), sink)
    engine.start()
    yield engine
    await engine.shutdown()
    engine.terminate()


def _notify(call_id: str, **args: str) -> tuple[str, str, str]:
    return (call_id, "notify", json.dumps(args))


async def test_notify_reaches_the_editor_and_each_channel_in_its_shape(
        notify_engine: Engine, sink: RecordingSink, model: ScriptedModel, receiver: Receiver,
        tmp_path: Path) -> None:
    receiver.statuses["/slack"] = [500, 503]  # Slack answers on the third attempt
    model.push(tool_calls([_notify("n1", message="All 312 tests pass.", title="CI", channel="team"),
                           _notify("n2", message="Deploy done.", title="Deploy", channel="ops"),
                           _notify("n3", message="Generic hello", channel="hook")]),
               text("told you"))
    sid = start(notify_engine, tmp_path)
    done = await run(notify_engine, sink, sid, "tell me", timeout=30)
    assert done["status"] == "completed" and sink.approvals == []  # notify never asks

    slack = receiver.to("/slack")
    assert [body for body, _, _ in slack] == [{"text": "*CI*\nAll 312 tests pass."}] * 3
    gaps = [b[2] - a[2] for a, b in itertools.pairwise(slack)]
    assert 0.9 <= gaps[0] < 2.5 and 2.9 <= gaps[1] < 5.0  # retries after 1 s, then 3 s
    assert [b for b, _, _ in receiver.to("/discord")] == [{"content": "**Deploy**\nDeploy done."}]
    [(generic, headers, _)] = receiver.to("/generic")
    assert generic == {"title": None, "message": "Generic hello", "source": "turnstoned",
                       "sessionId": sid, "project": tmp_path.name}
    assert headers["Authorization"] == "Bearer hook-token"
    results = [m["content"] for m in tool_messages(model.requests[1])]
    assert results == ["Notification sent to team.", "Notification sent to ops.",
                       "Notification sent to hook."]
    assert receiver.url not in json.dumps(model.requests[1])  # the URLs stay out of the model


async def test_the_editor_notice_and_the_per_turn_limit(
        notify_engine: Engine, sink: RecordingSink, model: ScriptedModel, receiver: Receiver,
        tmp_path: Path) -> None:
    receiver.statuses["/down"] = [500] * 3
    model.push(tool_calls([_notify("f", message="nobody hears this", channel="down")]),
               tool_calls([_notify(f"ok{i}", message=f"note {i}", title="T") for i in range(5)]),
               tool_calls([_notify("over", message="one too many")]),
               text("done"))
    sid = start(notify_engine, tmp_path)
    await run(notify_engine, sink, sid, "spam me", timeout=40)
    failed = tool_messages(model.requests[1])[0]["content"]
    assert failed == "Error: notification delivery failed: down (HTTP 500 after 3 attempts)"
    five = [m["content"] for m in tool_messages(model.requests[2])[-5:]]
    assert five == ["Notification sent to the editor, team, ops, hook, down."] * 5
    over = tool_messages(model.requests[3])[-1]["content"]
    assert over == "Error: notification rate limit exceeded (max 5 per turn)"
    notices = [e for e in sink.of("session/notice") if e["kind"] == "notify"]
    assert len(notices) == 5 and notices[0]["text"] == "note 0"
    assert notices[0]["data"] == {"title": "T", "channels": ["team", "ops", "hook", "down"]}
    assert [i["status"] for i in completed_tools(sink)][-1] == "failed"
    # a new turn may notify again
    model.push(tool_calls([_notify("again", message="fresh turn", channel="team")]), text("ok"))
    await run(notify_engine, sink, sid, "once more")
    assert tool_messages(model.requests[-1])[-1]["content"] == "Notification sent to team."


async def test_bad_arguments_are_refused_before_sending(
        notify_engine: Engine, sink: RecordingSink, model: ScriptedModel, receiver: Receiver,
        tmp_path: Path) -> None:
    model.push(tool_calls([_notify("a", message=" "), _notify("b", message="x" * 2001),
                           _notify("c", message="hi", channel="pager")]), text("ok"))
    await run(notify_engine, sink, start(notify_engine, tmp_path), "go")
    results = [m["content"] for m in tool_messages(model.requests[1])]
    assert results[0] == "Error: message is required"
    assert results[1] == "Error: message exceeds 2000 character limit"
    assert results[2].startswith("Error: unknown channel 'pager' (channels: team, ops, hook, down")
    assert receiver.posts == [] and not [e for e in sink.of("session/notice")
                                         if e["kind"] == "notify"]


def test_a_channel_needs_one_http_url(isolated_home: Path) -> None:
    write_config(isolated_home, '[notify.channels.x]\nurl = "file:///etc/passwd"\n')
    with pytest.raises(config.ConfigError, match="must start with http"):
        config.load()
    write_config(isolated_home, '[notify.channels.x]\nformat = "slack"\n')
    with pytest.raises(config.ConfigError, match="exactly one of `url` and `url_env`"):
        config.load()


async def test_a_notification_carries_no_credential(
        notify_engine: Engine, sink: RecordingSink, model: ScriptedModel, receiver: Receiver,
        tmp_path: Path) -> None:
    """The message is the model's text: a key in it (read from a file, say) must not leave
    for a webhook or the editor."""
    key = "ghp_" + "x1Y2z3" * 6
    model.push(tool_calls([_notify("n1", message=f"done; token is {key}", title="CI",
                                   channel="team"),
                           _notify("n2", message=f"AWS AKIAIOSFODNN7EXAMPLQ {key}")]),
               text("ok"))
    await run(notify_engine, sink, start(notify_engine, tmp_path), "tell me", timeout=30)
    posts = [body for _, body, _, _ in receiver.posts]
    notices = [e for e in sink.of("session/notice") if e["kind"] == "notify"]
    shown = json.dumps([posts, notices])
    assert len(posts) >= 2 and notices
    assert key not in shown and "AKIAIOSFODNN7EXAMPLQ" not in shown
    # the two calls run side by side: their posts arrive in either order
    assert any("done; token is" in body["text"] for body, *_ in receiver.to("/slack"))
