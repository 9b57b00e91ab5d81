"""``turnstoned acp``: the real process over stdio, driven by a minimal ND-JSON client, with
the scripted model (tests.acpkit.Brain) playing the turns."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.acpkit import HELLO, AcpFailure, Brain, RawAcp, model_env
from tests.conftest import write_config
from tests.fakes.model_server import ScriptedModel, error, hang

JSON = dict[str, Any]


@pytest.fixture
def env(model: ScriptedModel, isolated_home: Path) -> dict[str, str]:
    model.default = Brain()
    return model_env(model, isolated_home)


@pytest.fixture
async def acp(env: dict[str, str]) -> AsyncIterator[Callable[..., Any]]:
    """Started ``turnstoned acp`` processes (all closed after the test)."""
    started: list[RawAcp] = []

    async def start(**kw: Any) -> RawAcp:
        client = await RawAcp.start(env, **kw)
        started.append(client)
        return client

    yield start
    for client in started:
        await client.close()


def answer(*option_ids: str) -> Callable[[str, JSON], Any]:
    """Answers permission requests with these options, in order (then rejects)."""
    queue = list(option_ids)

    async def on_request(method: str, params: JSON) -> Any:
        assert method == "session/request_permission"
        chosen = queue.pop(0) if queue else "reject_once"
        return {"outcome": {"outcome": "selected", "optionId": chosen}}

    return on_request


async def test_a_text_prompt_streams_to_end_turn(acp: Any, tmp_path: Path) -> None:
    client = await acp()
    init = await client.initialize()
    assert init["protocolVersion"] == 1
    caps = init["agentCapabilities"]
    assert caps["loadSession"] is True
    assert caps["promptCapabilities"] == {"image": False, "audio": False, "embeddedContext": True}
    assert caps["mcpCapabilities"] == {"http": True, "sse": False}
    assert init["authMethods"] == []
    assert await client.request("authenticate", {"methodId": "none"}) == {}

    created = await client.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
    sid = created["sessionId"]
    assert created["modes"]["currentModeId"] == "read-only"  # the tests' configured mode
    assert [m["id"] for m in created["modes"]["availableModes"]] == [
        "read-only", "auto", "full-access", "plan"]
    commands = await client.wait_for(lambda: client.of("available_commands_update", sid))
    names = {c["name"] for c in commands[0]["availableCommands"]}
    assert {"compact", "undo", "grants", "trust-mcp"} <= names

    done = await client.prompt(sid, "hello there")
    assert done["stopReason"] == "end_turn"
    assert client.text(sid) == HELLO
    chunks = client.of("agent_message_chunk", sid)
    assert len({c["messageId"] for c in chunks}) == 1  # one message, however many chunks
    assert client.of("usage_update", sid)[-1]["size"] > 0
    # Everything on stdout is ACP: one JSON-RPC message per line.
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in client.lines)


async def test_reasoning_arrives_as_thought_chunks(acp: Any, tmp_path: Path) -> None:
    client = await acp()
    await client.initialize()
    sid = await client.new_session(tmp_path)
    assert (await client.prompt(sid, "think"))["stopReason"] == "end_turn"
    assert client.text(sid, "agent_thought_chunk") == "Let me consider this carefully."
    assert client.text(sid) == "Thought it through."


async def test_errors_on_the_wire_are_json_rpc_errors(acp: Any, tmp_path: Path) -> None:
    client = await acp()
    await client.initialize()
    client.write(b"this is not json\n")
    client.write(b"[1, 2]\n")
    client.write(b'{"jsonrpc": "2.0", "id": 77}\n')
    await client.wait_for(lambda: len([ln for ln in client.lines if b'"error"' in ln]) >= 3)
    errors = [json.loads(ln)["error"]["code"] for ln in client.lines if b'"error"' in ln]
    assert sorted(errors) == [-32700, -32600, -32600]

    with pytest.raises(AcpFailure) as unknown:
        await client.request("session/fly", {})
    assert unknown.value.code == -32601
    with pytest.raises(AcpFailure) as bad:
        await client.request("session/new", {"cwd": 42})
    assert bad.value.code == -32602 and "cwd" in bad.value.message
    with pytest.raises(AcpFailure) as relative:
        await client.request("session/new", {"cwd": "relative/dir", "mcpServers": []})
    assert relative.value.code == -32602
    with pytest.raises(AcpFailure) as missing:
        await client.prompt("no-such-session", "hi")
    assert missing.value.code == -32002
    with pytest.raises(AcpFailure) as not_there:
        await client.request("session/load", {"sessionId": "nope", "cwd": str(tmp_path),
                                              "mcpServers": []})
    assert not_there.value.code == -32002

    sid = await client.new_session(tmp_path)
    with pytest.raises(AcpFailure) as image:
        await client.request("session/prompt", {"sessionId": sid, "prompt": [
            {"type": "image", "data": "aGk=", "mimeType": "image/png"}]})
    assert image.value.code == -32602 and "image" in image.value.message
    with pytest.raises(AcpFailure) as ext:
        await client.request("_turnstoned/no/such", {})
    assert ext.value.code == -32601
    # An unknown notification is ignored; the agent still answers.
    client.notify("_someone_else/hello", {})
    assert (await client.prompt(sid, "hi"))["stopReason"] == "end_turn"
    assert b"Traceback" not in bytes(client.stderr)
    assert all(b"Traceback" not in line for line in client.lines)


async def test_a_command_asks_permission_with_the_verdict(acp: Any, tmp_path: Path) -> None:
    client = await acp()
    client.on_request = answer("allow_once")
    await client.initialize()
    sid = await client.new_session(tmp_path)
    done = await client.prompt(sid, "run `echo made > out.txt && echo printed`")
    assert done["stopReason"] == "end_turn"
    method, asked = client.asked[0]
    assert method == "session/request_permission" and asked["sessionId"] == sid
    kinds = [o["kind"] for o in asked["options"]]
    assert kinds[0] == "allow_once" and "reject_once" in kinds
    call = asked["toolCall"]
    assert call["kind"] == "execute" and "risk" in call["title"]
    shown = "\n".join(c["content"]["text"] for c in call["content"] if c["type"] == "content")
    assert "risk**" in shown and "echo made" in shown
    assert (tmp_path / "out.txt").read_text() == "made\n"
    final = client.calls(sid)[call["toolCallId"]]
    assert final["status"] == "completed" and final["kind"] == "execute"
    output = "".join(c["content"]["text"] for c in final["content"])
    assert "printed" in output
    assert client.text(sid).startswith("Done:")


async def test_a_rejected_command_does_not_run(acp: Any, tmp_path: Path) -> None:
    client = await acp()
    client.on_request = answer("reject_once")
    await client.initialize()
    sid = await client.new_session(tmp_path)
    done = await client.prompt(sid, "run `touch rejected.txt`")
    assert done["stopReason"] == "end_turn"
    assert not (tmp_path / "rejected.txt").exists()
    (call,) = client.calls(sid).values()
    assert call["status"] == "failed"
    assert call["_meta"]["turnstoned"]["status"] == "declined"


async def test_allow_always_saves_the_rule_and_the_next_call_runs_unasked(
        acp: Any, tmp_path: Path) -> None:
    client = await acp()
    client.on_request = answer("allow_always")
    await client.initialize()
    sid = await client.new_session(tmp_path)
    await client.prompt(sid, "run `touch a.txt`")
    always = [o for o in client.asked[0][1]["options"] if o["kind"] == "allow_always"]
    assert always and "touch" in always[0]["name"]
    await client.prompt(sid, "run `touch b.txt`")
    assert len(client.asked) == 1  # the grant covers the second call
    assert (tmp_path / "a.txt").exists() and (tmp_path / "b.txt").exists()
    # A different program is not covered: it asks.
    client.on_request = answer("reject_once")
    await client.prompt(sid, "run `mkdir newdir`")
    assert len(client.asked) == 2 and not (tmp_path / "newdir").exists()
    await client.prompt(sid, "/grants")
    assert "bash:touch" in client.text(sid)


async def test_reject_always_is_not_asked_again_on_this_connection(
        acp: Any, tmp_path: Path) -> None:
    client = await acp()
    client.on_request = answer("reject_always")
    await client.initialize()
    sid = await client.new_session(tmp_path)
    await client.prompt(sid, "run `touch one.txt`")
    await client.prompt(sid, "run `touch two.txt`")
    assert len(client.asked) == 1
    assert not (tmp_path / "one.txt").exists() and not (tmp_path / "two.txt").exists()


async def test_an_asked_edit_is_a_diff_in_the_question_and_the_result(
        acp: Any, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    client = await acp()
    client.on_request = answer("allow_once")
    await client.initialize()
    sid = await client.new_session(tmp_path)
    done = await client.prompt(sid, "edit notes.txt: beta -> BETA")
    assert done["stopReason"] == "end_turn"
    assert (tmp_path / "notes.txt").read_text() == "alpha\nBETA\ngamma\n"
    asked = client.asked[0][1]["toolCall"]
    diffs = [c for c in asked["content"] if c["type"] == "diff"]
    assert diffs == [{"type": "diff", "path": str(tmp_path / "notes.txt"),
                      "oldText": "alpha\nbeta\ngamma\n", "newText": "alpha\nBETA\ngamma\n"}]
    assert asked["locations"] == [{"path": str(tmp_path / "notes.txt")}]
    read, edit = client.calls(sid).values()
    assert read["kind"] == "read" and read["status"] == "completed"
    assert read["locations"] == [{"path": str(tmp_path / "notes.txt")}]
    assert edit["kind"] == "edit" and edit["status"] == "completed"
    assert [c for c in edit["content"] if c["type"] == "diff"] == diffs


async def test_an_unasked_write_in_auto_mode_is_a_diff_of_whole_texts(
        acp: Any, tmp_path: Path, isolated_home: Path) -> None:
    write_config(isolated_home, '[approvals]\nmode = "auto"\n')
    (tmp_path / "f.py").write_text("old = 1\n")
    client = await acp()
    await client.initialize()
    sid = await client.new_session(tmp_path)
    await client.prompt(sid, "write f.py: new = 2\n")
    assert client.asked == []
    (call,) = client.calls(sid).values()
    assert call["status"] == "completed"
    assert [c for c in call["content"] if c["type"] == "diff"] == [
        {"type": "diff", "path": str(tmp_path / "f.py"), "oldText": "old = 1\n",
         "newText": "new = 2\n"}]


async def test_cancel_stops_a_running_command_at_once(acp: Any, tmp_path: Path) -> None:
    client = await acp()
    client.on_request = answer("allow_once")
    await client.initialize()
    sid = await client.new_session(tmp_path)
    marker = tmp_path / "pid.txt"
    running = asyncio.get_running_loop().create_task(
        client.prompt(sid, f"run `echo $$ > {marker}; sleep 60`"))
    await client.wait_for(lambda: marker.exists() and marker.read_text().strip())
    pid = int(marker.read_text())
    client.notify("session/cancel", {"sessionId": sid})
    done = await asyncio.wait_for(running, 10)
    assert done["stopReason"] == "cancelled"
    for _ in range(50):
        if not _alive(pid):
            break
        await asyncio.sleep(0.1)
    assert not _alive(pid)


async def test_cancel_withdraws_an_open_permission_question(acp: Any, tmp_path: Path) -> None:
    client = await acp()
    never: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    async def hold(method: str, params: JSON) -> Any:
        return await never

    client.on_request = hold
    await client.initialize()
    sid = await client.new_session(tmp_path)
    running = asyncio.get_running_loop().create_task(client.prompt(sid, "run `touch x.txt`"))
    await client.wait_for(lambda: client.asked)
    client.notify("session/cancel", {"sessionId": sid})
    assert (await asyncio.wait_for(running, 10))["stopReason"] == "cancelled"
    withdrawn = await client.wait_for(
        lambda: [n for n in client.notes if n[0] == "$/cancel_request"])
    assert withdrawn[0][1]["requestId"] is not None
    assert not (tmp_path / "x.txt").exists()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


async def test_modes_switch_with_set_mode_and_config_options(acp: Any, tmp_path: Path) -> None:
    client = await acp()
    await client.initialize()
    sid = await client.new_session(tmp_path)
    assert await client.request("session/set_mode", {"sessionId": sid, "modeId": "auto"}) == {}
    update = await client.wait_for(lambda: client.of("current_mode_update", sid))
    assert update[-1]["currentModeId"] == "auto"
    # Auto mode: a workspace write runs unasked.
    await client.prompt(sid, "write made.txt: hi")
    assert client.asked == [] and (tmp_path / "made.txt").read_text() == "hi"
    result = await client.request("session/set_config_option", {
        "sessionId": sid, "configId": "mode", "value": "read-only"})
    assert result["configOptions"][0]["currentValue"] == "read-only"
    await client.wait_for(lambda: client.of("current_mode_update", sid)[-1]["currentModeId"]
                          == "read-only")
    client.on_request = answer("reject_once")
    await client.prompt(sid, "write other.txt: hi")
    assert len(client.asked) == 1 and not (tmp_path / "other.txt").exists()
    with pytest.raises(AcpFailure) as bad:
        await client.request("session/set_mode", {"sessionId": sid, "modeId": "yolo"})
    assert bad.value.code == -32602


async def test_load_replays_the_history_after_a_restart(acp: Any, tmp_path: Path) -> None:
    first = await acp()
    first.on_request = answer("allow_once")
    await first.initialize()
    sid = await first.new_session(tmp_path)
    await first.prompt(sid, "hello there")
    await first.prompt(sid, "run `echo replayed-output`")
    assert await first.close() == 0

    second = await acp()
    init = await second.initialize()
    assert init["agentCapabilities"]["loadSession"]
    listed = await second.request("session/list", {"cwd": str(tmp_path)})
    assert [s["sessionId"] for s in listed["sessions"]] == [sid]
    loaded = await second.request("session/load", {"sessionId": sid, "cwd": str(tmp_path),
                                                   "mcpServers": []})
    assert loaded["modes"]["currentModeId"] == "read-only"
    kinds = [u["update"]["sessionUpdate"] for u in second.updates if u["sessionId"] == sid]
    assert kinds[:3] == ["user_message_chunk", "agent_message_chunk", "user_message_chunk"]
    assert second.text(sid, "user_message_chunk") == "hello thererun `echo replayed-output`"
    (call,) = second.calls(sid).values()
    assert call["status"] == "completed" and call["kind"] == "execute"
    assert "replayed-output" in "".join(c["content"]["text"] for c in call["content"])
    assert HELLO in second.text(sid)
    # The loaded session goes on.
    assert (await second.prompt(sid, "hello again"))["stopReason"] == "end_turn"


async def test_a_failed_turn_is_a_json_rpc_error(
        acp: Any, tmp_path: Path, model: ScriptedModel) -> None:
    client = await acp()
    await client.initialize()
    sid = await client.new_session(tmp_path)
    model.push(error(401, "bad key"))
    with pytest.raises(AcpFailure) as failed:
        await client.prompt(sid, "hello")
    assert failed.value.data == {"kind": "unauthorized"}


async def test_the_turn_limit_is_max_turn_requests(
        acp: Any, tmp_path: Path, isolated_home: Path) -> None:
    write_config(isolated_home, '[session]\nmax_rounds = 1\n[approvals]\nmode = "auto"\n')
    client = await acp()
    await client.initialize()
    sid = await client.new_session(tmp_path)
    done = await client.prompt(sid, "run `true`")
    assert done["stopReason"] == "max_turn_requests"


async def test_slash_commands_undo_a_turn(acp: Any, tmp_path: Path, isolated_home: Path) -> None:
    write_config(isolated_home, '[approvals]\nmode = "auto"\n')
    (tmp_path / "keep.txt").write_text("original\n")
    client = await acp()
    await client.initialize()
    sid = await client.new_session(tmp_path)
    await client.prompt(sid, "write keep.txt: changed\n")
    assert (tmp_path / "keep.txt").read_text() == "changed\n"
    assert (await client.prompt(sid, "/undo"))["stopReason"] == "end_turn"
    assert (tmp_path / "keep.txt").read_text() == "original\n"
    assert "keep.txt" in client.text(sid)
    await client.prompt(sid, "/redo")
    assert (tmp_path / "keep.txt").read_text() == "changed\n"


async def test_a_prompt_embeds_attached_files(acp: Any, tmp_path: Path,
                                              model: ScriptedModel) -> None:
    client = await acp()
    await client.initialize()
    sid = await client.new_session(tmp_path)
    uri = f"file://{tmp_path}/draft.md"
    done = await client.request("session/prompt", {"sessionId": sid, "prompt": [
        {"type": "text", "text": "What is in it?"},
        {"type": "resource", "resource": {"uri": uri, "mimeType": "text/markdown",
                                          "text": "UNSAVED-BUFFER-TEXT"}},
        {"type": "resource_link", "uri": f"file://{tmp_path}/other.py", "name": "other.py"}]})
    assert done["stopReason"] == "end_turn"
    user = [m for m in model.requests[-1]["messages"] if m["role"] == "user"][-1]["content"]
    assert "What is in it?" in user and "UNSAVED-BUFFER-TEXT" in user
    assert f"{tmp_path}/draft.md" in user and f"{tmp_path}/other.py" in user


async def test_the_process_ends_with_stdin_and_leaves_no_child(acp: Any, tmp_path: Path) -> None:
    client = await acp()
    client.on_request = answer("allow_once")
    await client.initialize()
    sid = await client.new_session(tmp_path)
    marker = tmp_path / "pid.txt"
    asyncio.get_running_loop().create_task(
        client.prompt(sid, f"run `echo $$ > {marker}; sleep 60`"))
    await client.wait_for(lambda: marker.exists() and marker.read_text().strip())
    pid = int(marker.read_text())
    assert await client.close() == 0
    for _ in range(50):
        if not _alive(pid):
            break
        await asyncio.sleep(0.1)
    assert not _alive(pid)


async def test_a_turn_cancelled_while_the_model_hangs(acp: Any, tmp_path: Path,
                                                      model: ScriptedModel) -> None:
    client = await acp()
    await client.initialize()
    sid = await client.new_session(tmp_path)
    model.push(hang(30, after_text="partial "))
    running = asyncio.get_running_loop().create_task(client.prompt(sid, "hello"))
    await client.wait_for(lambda: "partial" in client.text(sid))
    client.notify("session/cancel", {"sessionId": sid})
    assert (await asyncio.wait_for(running, 5))["stopReason"] == "cancelled"


async def test_a_reply_cut_at_its_token_limit_is_max_tokens_and_a_filtered_one_refusal(
        acp: Any, tmp_path: Path) -> None:
    client = await acp()
    await client.initialize()
    sid = await client.new_session(tmp_path)
    assert (await client.prompt(sid, "long"))["stopReason"] == "max_tokens"
    assert (await client.prompt(sid, "refuse"))["stopReason"] == "refusal"
    assert (await client.prompt(sid, "hello"))["stopReason"] == "end_turn"


async def test_plan_mode_proposes_a_plan_and_its_approval_switches_to_auto(
        acp: Any, tmp_path: Path, isolated_home: Path) -> None:
    write_config(isolated_home, '[approvals]\nmode = "plan"\n')
    client = await acp()
    client.on_request = answer("allow_once")
    await client.initialize()
    sid = await client.new_session(tmp_path)
    plan = json.dumps({"plan": "# Fix it\n1. Read the code\n2. Fix the bug\n- Run the tests"})
    assert (await client.prompt(sid, f"call `propose_plan` with `{plan}`"))["stopReason"] \
        == "end_turn"
    (entries,) = [u["entries"] for u in client.of("plan", sid)]
    assert [e["content"] for e in entries] == ["Read the code", "Fix the bug", "Run the tests"]
    assert {e["status"] for e in entries} == {"pending"}
    asked = client.asked[0][1]["toolCall"]
    assert asked["kind"] == "switch_mode"
    assert "Read the code" in "".join(c["content"]["text"] for c in asked["content"])
    assert client.of("current_mode_update", sid)[-1]["currentModeId"] == "auto"


async def test_a_coordinators_task_list_is_a_plan(acp: Any, tmp_path: Path) -> None:
    client = await acp()
    client.on_request = answer("allow_once", "allow_once")
    await client.initialize()
    sid = await client.new_session(tmp_path, _meta={"turnstoned": {"kind": "coordinator"}})
    await client.prompt(sid, 'call `tasks` with `{"action": "add", "title": "Write the docs"}`')
    await client.prompt(sid, 'call `tasks` with `{"action": "add", "title": "Ship it", '
                             '"status": "blocked", "note": "waits for review"}`')
    plans = [u["entries"] for u in client.of("plan", sid)]
    assert plans[-1] == [
        {"content": "Write the docs", "priority": "medium", "status": "pending"},
        {"content": "Ship it (blocked) — waits for review", "priority": "medium",
         "status": "pending"}]
    assert client.calls(sid) and {c["kind"] for c in client.calls(sid).values()} == {"think"}


async def test_a_notice_for_the_user_is_a_message_without_the_notices_capability(
        acp: Any, tmp_path: Path) -> None:
    client = await acp()
    client.on_request = answer("allow_once")
    await client.initialize()
    sid = await client.new_session(tmp_path)
    await client.prompt(sid, 'call `notify` with `{"message": "The build is done"}`')
    quoted = [c["content"]["text"] for c in client.of("agent_message_chunk", sid)
              if c["messageId"].startswith("notice_")]
    assert quoted and "> " in quoted[0] and "The build is done" in quoted[0]


async def test_a_configuration_that_cannot_be_used_is_an_error_on_each_request(
        acp: Any, tmp_path: Path, isolated_home: Path) -> None:
    write_config(isolated_home, '[tools]\ntimeout = "soon"\n')
    client = await acp()
    await client.initialize()  # answered before the configuration is read
    for _ in range(2):
        with pytest.raises(AcpFailure) as failed:
            await client.new_session(tmp_path)
        assert failed.value.code == -32014 and failed.value.data == {"kind": "configError"}
        assert "timeout" in failed.value.message


async def test_closing_stdin_ends_the_turn_and_its_prompt_is_still_answered(
        acp: Any, tmp_path: Path, model: ScriptedModel) -> None:
    client = await acp()
    await client.initialize()
    sid = await client.new_session(tmp_path)
    model.push(hang(30, after_text="working "))
    running = asyncio.get_running_loop().create_task(client.prompt(sid, "hello"))
    await client.wait_for(lambda: "working" in client.text(sid))
    assert client.proc.stdin is not None
    client.proc.stdin.close()
    assert (await asyncio.wait_for(running, 10))["stopReason"] == "cancelled"
    assert await asyncio.wait_for(client.proc.wait(), 15) == 0


async def test_extension_notifications_only_for_a_client_that_asks(
        acp: Any, tmp_path: Path) -> None:
    plain = await acp()
    await plain.initialize()
    await plain.prompt(await plain.new_session(tmp_path), "hello")
    assert [m for m, _ in plain.notes if m.startswith("_turnstoned/")] == []

    asking = await acp()
    await asking.request("initialize", {"protocolVersion": 1, "clientCapabilities": {
        "_meta": {"turnstoned": {"notifications": True}}}})
    sid = await asking.new_session(tmp_path)
    await asking.prompt(sid, "hello")
    started = [p for m, p in asking.notes if m == "_turnstoned/turn/started"]
    assert started and started[0]["sessionId"] == sid


async def test_a_withdrawn_prompt_interrupts_its_turn(acp: Any, tmp_path: Path,
                                                     model: ScriptedModel) -> None:
    client = await acp()
    await client.initialize()
    sid = await client.new_session(tmp_path)
    model.push(hang(30, after_text="slow "))
    running = asyncio.get_running_loop().create_task(client.raw("session/prompt", {
        "sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]}))
    await client.wait_for(lambda: "slow" in client.text(sid))
    client.notify("$/cancel_request", {"requestId": client._ids})
    answer_ = await asyncio.wait_for(running, 10)
    assert answer_["error"]["code"] == -32800
    # The turn was interrupted: the next prompt runs at once.
    assert (await asyncio.wait_for(client.prompt(sid, "hello"), 10))["stopReason"] == "end_turn"


async def test_close_and_list_sessions(acp: Any, tmp_path: Path) -> None:
    client = await acp()
    await client.initialize()
    kept = await client.new_session(tmp_path)
    gone = await client.new_session(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    elsewhere = await client.new_session(other)
    assert await client.request("session/close", {"sessionId": gone}) == {}
    listed = await client.request("session/list", {"cwd": str(tmp_path)})
    assert [s["sessionId"] for s in listed["sessions"]] == [kept]
    everything = {s["sessionId"] for s in (await client.request("session/list", {}))["sessions"]}
    assert {kept, elsewhere} <= everything and gone not in everything
    with pytest.raises(AcpFailure) as closed:
        await client.prompt(gone, "hi")
    assert closed.value.code == -32002
    resumed = await client.request("session/resume", {"sessionId": gone, "cwd": str(tmp_path),
                                                      "mcpServers": []})
    assert resumed["modes"]["currentModeId"] == "read-only"
    assert client.of("user_message_chunk", gone) == []  # resume does not replay
    assert (await client.prompt(gone, "hi"))["stopReason"] == "end_turn"
