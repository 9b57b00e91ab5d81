"""A watch outlives the daemon: created through one process, it fires in the next."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.rawrpc import RawDaemon
from tests.e2e.test_stdio import turn
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from turnstoned import paths
from turnstoned.store import Store

CREATE = json.dumps({"action": "create", "name": "ci", "command": "cat ci.json",
                     "poll_every": "1h", "stop_on": 'data["status"] == "passed"'})


def test_an_overdue_watch_fires_once_after_a_restart(env: dict[str, str],
                                                     model: ScriptedModel, tmp_path: Path) -> None:
    (tmp_path / "ci.json").write_text('{"status": "passed", "duration": 312}')
    model.push(tool_calls([("w1", "watch", CREATE)]), text("I am watching CI."))
    first = RawDaemon(env)
    first.initialize()
    sid = first.result("session/start", {"cwd": str(tmp_path)})["sessionId"]
    assert turn(first, sid, "tell me when CI passes")["status"] == "completed"
    [watch] = first.result("watch/list", {"sessionId": sid})["watches"]
    assert (watch["name"], watch["intervalSeconds"], watch["active"]) == ("ci", 3600, True)
    assert first.close() == 0

    # The daemon stays down for five hours: the watch misses several polls.
    store = Store(paths.database_file())
    with store.transaction() as db:
        db.execute("UPDATE watches SET next_poll = next_poll - 5 * 3600")
    store.close()

    model.push(text("CI passed in 312 seconds; the branch is ready to merge."))
    second = RawDaemon(env)
    second.initialize()
    notice = second.wait_for("session/notice", lambda e: e["kind"] == "watch", 30)
    assert notice["sessionId"] == sid and notice["data"]["pollCount"] == 1
    assert notice["text"].startswith('[Watch "ci" — poll #1/100')
    woken = second.wait_for("turn/completed", lambda e: e["sessionId"] == sid, 30)
    assert woken["status"] == "completed"
    said = "".join(e["delta"] for e in second.of("item/agentMessage/delta"))
    assert said == "CI passed in 312 seconds; the branch is ready to merge."
    report = model.requests[-1]["messages"][-1]
    assert report["role"] == "user" and '"duration": 312' in report["content"]
    # one poll for all the missed ones, then the watch is over
    assert len([e for e in second.of("session/notice") if e["kind"] == "watch"]) == 1
    assert second.result("watch/list", {"sessionId": sid})["watches"] == []
    cancel = second.request("watch/cancel", {"sessionId": sid, "name": "ci"})
    assert cancel["result"]["cancelled"] is False
    assert cancel["result"]["watch"]["ended"] == 'condition met: data["status"] == "passed"'
    missing = second.request("watch/cancel", {"sessionId": sid, "name": "nope"})["error"]
    assert missing["data"]["kind"] == "watchNotFound"
    assert second.close() == 0
