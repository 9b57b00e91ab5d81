"""Watches in-process: created through the tool, polled by the runner, folded into the session."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from pathlib import Path

import pytest

from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from tests.turnkit import completed_tools, run, start, tool_messages
from turnstoned import protocol as p
from turnstoned.core.engine import Engine
from turnstoned.core.errors import EngineError
from turnstoned.core.watches import WatchRunner
from turnstoned.store.watches import Watch, WatchStore


def _create(name: str, command: str, **extra: object) -> tuple[str, str, str]:
    return (f"w-{name}", "watch", json.dumps({"action": "create", "name": name,
                                              "command": command, **extra}))


def _make_due(engine: Engine, name: str) -> None:
    """Time passes: the watch's next poll is now."""
    with engine.store.transaction() as db:
        db.execute("UPDATE watches SET next_poll = ? WHERE name = ? AND active = 1",
                   (time.time() - 1, name))
    engine.watches.runner.poke()


async def test_a_fired_watch_wakes_the_idle_session(engine: Engine, sink: RecordingSink,
                                                    model: ScriptedModel, tmp_path: Path) -> None:
    (tmp_path / "status.json").write_text('{"state": "MERGED"}')
    model.push(tool_calls([_create("pr", "cat status.json", poll_every="10s",
                                   stop_on='data["state"] == "MERGED"')]),
               text("I will tell you when it merges."),
               text("The pull request merged; nothing left to do."))
    sid = start(engine, tmp_path)
    done = await run(engine, sink, sid, "watch the PR")
    assert done["status"] == "completed"
    assert sink.approvals[0]["items"][0]["approvalLabel"] == "watch"
    created = tool_messages(model.requests[1])[0]["content"]
    assert created.startswith('Watch "pr"') and "every 10s" in created
    [info] = engine.watches.list(sid)
    assert (info.name, info.interval_seconds, info.poll_count, info.active) == ("pr", 10.0, 0, True)

    _make_due(engine, "pr")
    notice = await sink.wait_for("session/notice", lambda e: e["kind"] == "watch")
    assert notice["data"]["name"] == "pr" and notice["data"]["pollCount"] == 1
    assert notice["data"]["reason"] == 'condition met: data["state"] == "MERGED"'
    woken = await sink.wait_for("turn/completed", lambda e: e["turnId"] != done["turnId"])
    assert woken["status"] == "completed"
    report = model.requests[2]["messages"][-1]
    assert report["role"] == "user" and report["content"].startswith('[Watch "pr" — poll #1/100')
    assert '$ cat status.json\n{"state": "MERGED"}' in report["content"]
    assert report["content"].endswith("watch auto-cancelled]")
    assert engine.watches.list(sid) == []
    ended = WatchStore(engine.store).find(sid, "pr")
    assert ended is not None and not ended.active and ended.ended.startswith("condition met")
    # on resume the report is a notice item, not something the user typed
    notices = [i for i in engine.resume(sid).items() if isinstance(i, p.NoticeItem)]
    assert [i.kind for i in notices] == ["watch"] and '[Watch "pr"' in notices[0].text


async def test_a_report_during_a_turn_is_folded_at_its_next_seam(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([_create("ready", "echo ready", poll_every="10s",
                                   stop_on='"ready" in output')]), text("watching"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "watch it")
    gate = asyncio.Event()

    async def slow(_: p.ApprovalRequestParams) -> p.ApprovalResponse:
        await gate.wait()
        return p.ApprovalResponse(decision="approve")

    sink.answers.append(slow)
    model.push(tool_calls([("b1", "bash", '{"command": "touch t"}')]), text("both seen"))
    turn_id, _ = engine.start_turn(sid, ["run something"])
    await sink.wait_for("item/started", lambda e: e["turnId"] == turn_id
                        and e["item"]["type"] == "toolCall")
    _make_due(engine, "ready")
    await sink.wait_for("session/notice", lambda e: e["kind"] == "watch")
    gate.set()
    done = await sink.wait_for("turn/completed", lambda e: e["turnId"] == turn_id)
    assert done["status"] == "completed"
    last = model.requests[-1]["messages"][-1]
    assert last["role"] == "user" and '[Watch "ready"' in last["content"]
    assert len([e for e in sink.of("turn/started")]) == 2  # folded, no extra turn


async def test_create_is_checked_before_anyone_is_asked(engine: Engine, sink: RecordingSink,
                                                        model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([
        _create("a", "rm -rf /"),
        _create("b", "date", poll_every="5s"),
        _create("c", "date", stop_on="output.__class__"),
        _create("d", "date", poll_every="soon"),
    ]), text("ok"))
    await run(engine, sink, start(engine, tmp_path), "go")
    assert sink.approvals == []
    results = [m["content"] for m in tool_messages(model.requests[1])]
    assert results[0].startswith("Blocked: command matches dangerous pattern")
    assert "minimum poll interval is 10s" in results[1]
    assert results[2].startswith("Error: invalid stop_on: attribute access")
    assert results[3].startswith("Error: invalid poll_every")
    assert all(i["status"] == "failed" for i in completed_tools(sink))


async def test_list_cancel_and_the_per_session_limit(engine: Engine, sink: RecordingSink,
                                                     model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([_create(f"w{i}", f"echo {i}") for i in range(5)]), text("five"),
               tool_calls([_create("w5", "echo 5"), ("l", "watch", '{"action": "list"}'),
                           ("c", "watch", '{"action": "cancel", "name": "w0"}')]),
               text("done"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "five watches")
    assert len(engine.watches.list(sid)) == 5
    await run(engine, sink, sid, "a sixth")
    sixth, listed, cancelled = (m["content"] for m in tool_messages(model.requests[3])[-3:])
    assert "already has 5 active watches" in sixth
    assert listed.startswith("Active watches:") and "w3 (" in listed and "every 5m" in listed
    assert cancelled == 'Watch "w0" cancelled.'
    assert [w.name for w in engine.watches.list(sid)] == ["w1", "w2", "w3", "w4"]
    # the editor's side: watch/cancel by name, then again
    result = engine.watches.cancel(sid, "w1")
    assert result.cancelled and result.watch.ended == "cancelled by the user"
    again = engine.watches.cancel(sid, "w1")
    assert not again.cancelled and not again.watch.active
    with pytest.raises(EngineError) as err:
        engine.watches.cancel(sid, "nope")
    assert err.value.code == p.ErrorCode.WATCH_NOT_FOUND
    await engine.close_session(sid)
    assert engine.watches.list(sid) == []  # closing a session ends its watches


# ---------------------------------------------------------------- one poll, directly


def _watch(store: WatchStore, session_id: str, command: str, stop_on: str | None = None,
           max_polls: int = 100) -> Watch:
    key = secrets.token_hex(16)
    w = Watch(id=key, session_id=session_id, name=f"n-{key[:6]}",
              command=command, interval=10, stop_on=stop_on, max_polls=max_polls, poll_count=0,
              last_output=None, last_exit_code=None, last_poll=None, next_poll=time.time(),
              active=True, ended=None, created_at=time.time())
    assert store.create(w, 5) is None
    return w


@pytest.fixture
def polled(engine: Engine, tmp_path: Path) -> tuple[WatchRunner, WatchStore, list[tuple[Watch, str]], str]:
    sid = start(engine, tmp_path)
    store = WatchStore(engine.store)
    reports: list[tuple[Watch, str]] = []
    runner = WatchRunner(store, deliver=lambda w, r: reports.append((w, r.text)),
                         cwd_of=lambda _: tmp_path, timeout=2, env=lambda: {"PATH": "/usr/bin:/bin"})
    return runner, store, reports, sid


async def test_change_detection_needs_a_baseline(polled: tuple[WatchRunner, WatchStore, list[tuple[Watch, str]], str],
                                                 tmp_path: Path) -> None:
    runner, store, reports, sid = polled
    (tmp_path / "f").write_text("one")
    w = _watch(store, sid, "cat f")
    await runner._poll(w)
    assert reports == [] and store.get(w.id).poll_count == 1  # type: ignore[union-attr]
    await runner._poll(store.get(w.id))  # type: ignore[arg-type]
    assert reports == []  # same output
    (tmp_path / "f").write_text("two")
    await runner._poll(store.get(w.id))  # type: ignore[arg-type]
    [(_, report)] = reports
    assert "[mode: fire on output change]" in report and "[output changed — watch" in report
    assert not store.get(w.id).active  # type: ignore[union-attr]


async def test_polls_end_at_max_polls_and_bad_conditions_report(
        polled: tuple[WatchRunner, WatchStore, list[tuple[Watch, str]], str]) -> None:
    runner, store, reports, sid = polled
    limited = _watch(store, sid, "echo x; echo oops >&2; exit 3", stop_on="exit_code == 0",
                     max_polls=1)
    await runner._poll(limited)
    assert "x\n[stderr]\noops" in reports[0][1] and "[max polls reached" in reports[0][1]
    broken = _watch(store, sid, "echo '[1]'", stop_on="data[5] == 1")
    await runner._poll(broken)
    assert "[condition error: IndexError" in reports[1][1]
    slow = _watch(store, sid, "sleep 30", stop_on="True")
    started = time.monotonic()
    await runner._poll(slow)
    assert "[command timed out after 2s]" in reports[2][1] and time.monotonic() - started < 10


async def test_a_report_is_guarded_like_any_tool_result(engine: Engine, sink: RecordingSink,
                                                        model: ScriptedModel, tmp_path: Path) -> None:
    leaked = "AKIA" + "ABCDEFGHIJKLMNOP"
    (tmp_path / "out.txt").write_text(f"aws_access_key_id = {leaked}\nDONE\n")
    model.push(tool_calls([_create("job", "cat out.txt", poll_every="10s",
                                   stop_on='"DONE" in output')]), text("watching"), text("seen"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "watch the job")
    _make_due(engine, "job")
    notice = await sink.wait_for("session/notice", lambda e: e["kind"] == "watch")
    await sink.wait_for("turn/completed", lambda e: len(sink.of("turn/completed")) == 2)
    assert leaked not in notice["text"] and leaked not in json.dumps(model.requests[-1])
    assert "DONE" in model.requests[-1]["messages"][-1]["content"]


async def test_a_report_waiting_for_a_seam_survives_a_restart(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    from tests.fakes.model_server import hang
    from turnstoned import config, paths
    from turnstoned.store import Store

    model.push(tool_calls([_create("ci", "echo green", poll_every="10s",
                                   stop_on='"green" in output')]), text("watching"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "watch ci")
    model.push(hang(30, after_text="thinking"))
    turn_id, _ = engine.start_turn(sid, ["something long"])
    await sink.wait_for("item/agentMessage/delta", lambda e: e["turnId"] == turn_id)
    _make_due(engine, "ci")
    await sink.wait_for("session/notice", lambda e: e["kind"] == "watch")
    await engine.shutdown()  # the daemon stops before the running turn reached a seam
    engine.terminate()

    again = Engine(config.load(), Store(paths.database_file()), RecordingSink())
    try:
        model.push(text("CI is green."))
        done = await run(again, again.sink, sid, "any news?")  # type: ignore[arg-type]
        assert done["status"] == "completed"
        first = model.requests[-1]["messages"][-1]["content"]
        assert first.startswith('[Watch "ci"') and first.endswith("any news?")
    finally:
        await again.shutdown()
        again.terminate()
