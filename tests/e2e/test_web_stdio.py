"""Web tools over the real stdio daemon: previews announced and read, metadata refused."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.rawrpc import RawDaemon
from tests.fakes.model_server import ScriptedModel, text, tool_calls


@pytest.fixture
def daemon(model: ScriptedModel, isolated_home: Path) -> Iterator[RawDaemon]:
    d = RawDaemon({"TURNSTONED_HOME": str(isolated_home), "OPENAI_BASE_URL": model.base_url,
                   "OPENAI_API_KEY": "sk-test", "TURNSTONED_MODEL": "scripted"})
    d.initialize()
    yield d
    d.close()


def test_preview_open_and_read_over_stdio(daemon: RawDaemon, model: ScriptedModel,
                                          tmp_path: Path) -> None:
    (tmp_path / "report.md").write_text("# Report\n\nAll green.\n")
    model.push(tool_calls([("p1", "open_preview", json.dumps({"target": "report.md"}))]),
               text("Shown."))
    sid = daemon.result("session/start", {"cwd": str(tmp_path)})["sessionId"]
    tid = daemon.result("turn/start", {"sessionId": sid,
                                       "input": [{"type": "text", "text": "show it"}]})["turnId"]
    daemon.wait_for("turn/completed", lambda p: p["turnId"] == tid)
    opened = daemon.of("preview/open")[0]
    call = next(e["item"] for e in daemon.of("item/completed") if e["item"]["type"] == "toolCall")
    assert (opened["sessionId"], opened["callId"], opened["kind"]) == (sid, call["callId"], "markdown")
    got = daemon.result("preview/read", {"sessionId": sid, "previewId": opened["previewId"]})
    assert base64.b64decode(got["data"]) == b"# Report\n\nAll green.\n" and got["eof"] is True
    missing = daemon.request("preview/read", {"sessionId": sid, "previewId": "f" * 64})["error"]
    assert missing["code"] == -32021 and missing["data"]["kind"] == "previewNotFound"
    bad = daemon.request("preview/read", {"sessionId": sid, "previewId": "x", "offset": -1})
    assert bad["error"]["code"] == -32602


def test_metadata_is_refused_without_asking(daemon: RawDaemon, model: ScriptedModel,
                                            tmp_path: Path) -> None:
    model.push(tool_calls([("f1", "web_fetch", json.dumps(
        {"url": "http://[::ffff:169.254.169.254]/latest/meta-data/", "question": "keys?"}))]),
        text("Refused."))
    sid = daemon.result("session/start", {"cwd": str(tmp_path)})["sessionId"]
    tid = daemon.result("turn/start", {"sessionId": sid,
                                       "input": [{"type": "text", "text": "go"}]})["turnId"]
    daemon.wait_for("turn/completed", lambda p: p["turnId"] == tid)
    assert not [m for m in daemon.notifications if m["method"] == "item/tool/requestApproval"]
    result = next(m for m in model.requests[1]["messages"] if m["role"] == "tool")["content"]
    assert "routes to 169.254.169.254" in result and "never allowed" in result
