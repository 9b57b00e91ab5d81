"""The resident daemon: `turnstoned serve` on a private socket, reached through `attach`."""

from __future__ import annotations

import os
import select
import signal
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import stop_resident
from tests.e2e.orphans import Outcome, Scene, socket_peer_pid
from tests.e2e.rawrpc import DEFER, RawClient, RawDaemon, RawSocket
from tests.fakes.model_server import ScriptedModel, gated, text, tool_calls


def attach(env: dict[str, str], *args: str) -> RawDaemon:
    return RawDaemon(env, args=("attach", *args))


def run_dir(home: Path) -> Path:
    return home / "run"


def daemon_pid(home: Path) -> int:
    return socket_peer_pid(run_dir(home) / "daemon.sock")


def exited(pid: int, timeout: float) -> bool:
    """Wait (on a pidfd) for ``pid`` to end; False if it still runs after ``timeout``."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


def start_turn(c: RawClient, sid: str, prompt: str = "go") -> str:
    return str(c.result("turn/start", {"sessionId": sid,
                                       "input": [{"type": "text", "text": prompt}]})["turnId"])


def session(c: RawClient, cwd: Path) -> str:
    return str(c.result("session/start", {"cwd": str(cwd)})["sessionId"])


def text_of(c: RawClient, sid: str) -> str:
    return "".join(p["delta"] for p in c.of("item/agentMessage/delta") if p["sessionId"] == sid)


def sessions_seen(c: RawClient) -> set[str]:
    return {str(p["sessionId"]) for m in list(c.notifications)
            if "sessionId" in (p := m.get("params") or {})}


def test_attach_starts_a_private_resident_daemon(env: dict[str, str],
                                                 isolated_home: Path) -> None:
    sock = run_dir(isolated_home) / "daemon.sock"
    assert not sock.exists()
    a = attach(env)
    a.initialize()
    health = a.result("daemon/health")
    assert health["resident"] is True and health["clients"] == 1
    a.send({"jsonrpc": "2.0", "id": "null-params", "method": "daemon/health", "params": None})
    assert a.wait_response("null-params")["result"]["resident"] is True
    probed = a.result("daemon/health", {"probe": True})
    assert probed["resident"] is True and probed["modelReachable"] is True
    pid = daemon_pid(isolated_home)
    assert pid != a.proc.pid
    for path, mode in ((run_dir(isolated_home), 0o700), (sock, 0o600)):
        st = path.lstat()
        assert stat.S_IMODE(st.st_mode) == mode and st.st_uid == os.getuid()
    assert stat.S_ISSOCK(sock.lstat().st_mode)
    assert a.close() == 0
    assert not exited(pid, 0.2)  # the daemon outlives its client
    assert not any("closed the connection" in line for line in a.stderr_lines)  # a normal end
    b = attach(env)
    b.initialize()
    assert b.result("daemon/health")["clients"] == 1  # a has gone
    assert daemon_pid(isolated_home) == pid
    assert b.close() == 0


def test_two_clients_each_see_their_own_sessions(env: dict[str, str], model: ScriptedModel,
                                                 tmp_path: Path) -> None:
    a, b = attach(env), attach(env)
    try:
        a.initialize()
        b.initialize()
        assert b.result("daemon/health")["clients"] == 2
        model.push(text("answer for a"), text("answer for b"))
        sa = session(a, tmp_path)
        ta = start_turn(a, sa)
        a.wait_for("turn/completed", lambda p: p["turnId"] == ta)
        sb = session(b, tmp_path)
        tb = start_turn(b, sb)
        b.wait_for("turn/completed", lambda p: p["turnId"] == tb)
        assert text_of(a, sa) == "answer for a" and text_of(b, sb) == "answer for b"
        assert sessions_seen(a) == {sa} and sessions_seen(b) == {sb}
        listed = {s["sessionId"] for s in a.result("session/list")["sessions"]}
        assert {sa, sb} <= listed  # one engine: both clients can find every session
    finally:
        a.close()
        b.close()


def test_a_client_that_resumes_a_running_turn_gets_the_rest(env: dict[str, str],
                                                           model: ScriptedModel,
                                                           tmp_path: Path) -> None:
    gate = threading.Event()
    model.push(gated("first half; ", "second half", gate))
    a, b, c = attach(env), attach(env), attach(env)
    try:
        for client in (a, b, c):
            client.initialize()
        sid = session(a, tmp_path)
        tid = start_turn(a, sid)
        a.wait_for("item/agentMessage/delta", lambda p: text_of(a, sid) == "first half; ")
        resumed = b.result("session/resume", {"sessionId": sid})
        assert resumed["session"]["status"] == "running"
        # What b missed is the running turn so far (replayed, its deltas joined); the
        # items are the conversation before it.
        assert resumed["items"] == []
        running = resumed["running"]
        assert running["turnId"] == tid
        methods = [e["method"] for e in running["events"]]
        assert methods[:2] == ["session/input", "turn/started"]
        assert running["events"][0]["params"]["item"]["text"] == "go"
        missed = "".join(e["params"]["delta"] for e in running["events"]
                         if e["method"] == "item/agentMessage/delta")
        assert missed == "first half; "
        assert methods.count("item/agentMessage/delta") == 1
        c.result("session/resume", {"sessionId": sid})
        assert c.result("session/unsubscribe", {"sessionId": sid}) == {}
        gate.set()
        done = b.wait_for("turn/completed", lambda p: p["turnId"] == tid)
        assert done["status"] == "completed"
        a.wait_for("turn/completed", lambda p: p["turnId"] == tid)
        assert missed + text_of(b, sid) == "first half; second half"
        assert text_of(a, sid) == "first half; second half"
        assert b.result("session/resume", {"sessionId": sid}).get("running") is None
        c.result("daemon/health")  # everything sent to c before this answer has arrived
        assert sessions_seen(c) == set()
    finally:
        for client in (a, b, c):
            client.close()


def test_every_follower_sees_the_prompts_the_others_send(env: dict[str, str],
                                                        model: ScriptedModel,
                                                        tmp_path: Path) -> None:
    gate = threading.Event()
    model.push(gated("one; ", "two", gate), text("three"))
    a, b = attach(env), attach(env)
    try:
        for client in (a, b):
            client.initialize()
        sid = session(a, tmp_path)
        b.result("session/resume", {"sessionId": sid})
        tid = start_turn(a, sid, "first prompt")
        shown = b.wait_for("session/input", lambda p: p["sessionId"] == sid)
        assert (shown["turnId"], shown["item"]["text"], shown["item"]["turnId"]) == (
            tid, "first prompt", tid)
        queued = start_turn(b, sid, "and this too")  # while the turn runs: queued
        assert queued == tid
        waiting = a.wait_for("session/input", lambda p: p["item"]["text"] == "and this too")
        assert waiting["turnId"] is None and waiting["item"]["queued"] is True
        gate.set()
        a.wait_for("turn/completed", lambda p: p["turnId"] == tid)
        b.result("daemon/health")
        a.result("daemon/health")  # everything sent before these answers has arrived
        assert [p["item"]["text"] for p in a.of("session/input")] == ["and this too"]
        assert [p["item"]["text"] for p in b.of("session/input")] == ["first prompt"]
    finally:
        for client in (a, b):
            client.close()


def test_an_approval_goes_to_every_follower_and_the_first_answer_wins(
        env: dict[str, str], model: ScriptedModel, tmp_path: Path) -> None:
    model.push(tool_calls([("w1", "write_file", '{"path": "f.txt", "content": "x"}')]),
               text("written"))
    a, b = attach(env), attach(env)
    try:
        a.on_request = lambda msg: DEFER  # a sees the question and leaves it open
        a.initialize()
        b.initialize()
        sid = session(a, tmp_path)
        tid = start_turn(a, sid)
        asked = a.wait_for("item/tool/requestApproval")
        b.result("session/resume", {"sessionId": sid})  # b answers approve (its default)
        b.wait_for("item/tool/requestApproval", lambda p: p["cycleId"] == asked["cycleId"])
        done = b.wait_for("turn/completed", lambda p: p["turnId"] == tid)
        assert done["status"] == "completed"
        assert (tmp_path / "f.txt").read_text() == "x"
        request_id = next(m["id"] for m in a.notifications
                          if m["method"] == "item/tool/requestApproval")
        withdrawn = a.wait_for("$/cancelRequest")
        assert withdrawn["id"] == request_id
        resolved = a.wait_for("approval/resolved")
        assert resolved["decision"] == "approve"
    finally:
        a.close()
        b.close()


def test_a_client_that_breaks_does_not_stop_the_daemon(env: dict[str, str], model: ScriptedModel,
                                                       tmp_path: Path,
                                                       isolated_home: Path) -> None:
    gate = threading.Event()
    model.push(gated("working ", "done", gate))
    a = attach(env)
    a.initialize()
    sid = session(a, tmp_path)
    tid = start_turn(a, sid)
    a.wait_for("item/agentMessage/delta")
    path = str(run_dir(isolated_home) / "daemon.sock")
    for garbage in (b"\x00\xff not a frame", b"Content-Length: 99999999999\r\n\r\n{", b"Content-"):
        rude = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        rude.connect(path)
        rude.sendall(garbage)
        rude.close()
    a.proc.kill()  # the client that drives the turn vanishes mid-turn
    a.proc.wait(5)
    b = RawSocket(path)
    try:
        b.initialize()
        resumed = b.result("session/resume", {"sessionId": sid})
        assert resumed["session"]["status"] == "running"
        gate.set()
        done = b.wait_for("turn/completed", lambda p: p["turnId"] == tid)
        assert done["status"] == "completed"
        assert b.result("daemon/health")["clients"] == 1
    finally:
        b.close()


def test_an_idle_daemon_exits_and_removes_its_socket(env: dict[str, str],
                                                     isolated_home: Path) -> None:
    a = attach(env, "--idle-timeout", "0.4")
    a.initialize()
    pid = daemon_pid(isolated_home)
    assert not exited(pid, 1.0)  # a client is attached: no idle exit
    a.close()
    assert exited(pid, 10)
    assert not (run_dir(isolated_home) / "daemon.sock").exists()


def test_an_idle_daemon_waits_for_a_running_turn(env: dict[str, str], model: ScriptedModel,
                                                 tmp_path: Path, isolated_home: Path) -> None:
    gate = threading.Event()
    model.push(gated("a long ", "answer", gate))
    a = attach(env, "--idle-timeout", "0.4")
    a.initialize()
    sid = session(a, tmp_path)
    start_turn(a, sid)
    a.wait_for("item/agentMessage/delta")
    pid = daemon_pid(isolated_home)
    a.proc.kill()
    a.proc.wait(5)
    assert not exited(pid, 1.2)  # the turn still runs
    gate.set()
    assert exited(pid, 10)


def test_a_stale_socket_of_a_killed_daemon_is_replaced(env: dict[str, str],
                                                      isolated_home: Path) -> None:
    a = attach(env)
    a.initialize()
    first = daemon_pid(isolated_home)
    os.kill(first, signal.SIGKILL)
    assert exited(first, 10)
    assert a.proc.wait(10) == 0  # the bridge ends when its daemon does
    assert (run_dir(isolated_home) / "daemon.sock").exists()
    b = attach(env)
    b.initialize()
    assert b.result("daemon/health")["resident"] is True
    assert daemon_pid(isolated_home) != first
    b.close()


def refused(env: dict[str, str], reason: str) -> None:
    out = subprocess.run([sys.executable, "-m", "turnstoned", "attach"], input=b"",
                         capture_output=True, env={**os.environ, **env}, timeout=30, check=False)
    assert out.returncode == 2, out.stderr
    assert reason in out.stderr.decode(), out.stderr


def test_a_runtime_dir_others_may_use_is_refused(env: dict[str, str],
                                                 isolated_home: Path) -> None:
    run_dir(isolated_home).mkdir(mode=0o755)
    os.chmod(run_dir(isolated_home), 0o755)
    refused(env, "has mode 0755")
    assert list(run_dir(isolated_home).iterdir()) == []


def test_a_runtime_dir_of_another_user_is_refused(env: dict[str, str],
                                                  isolated_home: Path) -> None:
    if os.getuid() == 0:
        run_dir(isolated_home).mkdir(mode=0o700)
        os.chown(run_dir(isolated_home), 65534, 65534)
        refused(env, "belongs to uid 65534")
        assert list(run_dir(isolated_home).iterdir()) == []
    else:  # with TURNSTONED_HOME=/ the runtime directory is /run, which root owns
        refused({**env, "TURNSTONED_HOME": "/"}, "belongs to uid 0")


def test_a_symlinked_runtime_dir_is_refused(env: dict[str, str], isolated_home: Path,
                                            tmp_path: Path) -> None:
    real = tmp_path / "elsewhere"
    real.mkdir(mode=0o700)
    os.symlink(real, run_dir(isolated_home))
    refused(env, "is a symbolic link")
    assert list(real.iterdir()) == []


def test_a_socket_path_that_is_not_a_socket_is_left_alone(env: dict[str, str],
                                                          isolated_home: Path) -> None:
    run_dir(isolated_home).mkdir(mode=0o700)
    planted = run_dir(isolated_home) / "daemon.sock"
    planted.write_text("not a socket")
    refused(env, "is not a socket")
    assert planted.read_text() == "not a socket"


def test_attach_sends_again_when_the_daemon_closes_before_answering(
        env: dict[str, str], isolated_home: Path) -> None:
    """A daemon stopping for idleness may close a connection it just accepted."""
    run_dir(isolated_home).mkdir(mode=0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = str(run_dir(isolated_home) / "daemon.sock")
    old = os.umask(0o177)
    listener.bind(path)
    os.umask(old)
    listener.listen(4)
    received: list[bytes] = []

    def serve() -> None:
        first, _ = listener.accept()
        received.append(first.recv(65536))
        first.close()  # closes without a byte
        second, _ = listener.accept()
        data = b""
        while not data.endswith(b"}"):
            data += second.recv(65536)
        received.append(data)
        body = b'{"jsonrpc":"2.0","id":1,"result":{"ok":true}}'
        second.sendall(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        second.recv(65536)  # until the bridge closes
        second.close()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    a = attach(env)
    try:
        assert a.result("initialize", {"capabilities": {}}, timeout=10) == {"ok": True}
        assert len(received) == 2 and received[0] == received[1]
        assert b'"initialize"' in received[1]
    finally:
        a.proc.kill()
        a.proc.wait(5)
        listener.close()
        server.join(5)


def chat(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "turnstoned", "chat", "--cwd", str(cwd), *args],
                          capture_output=True, text=True, env={**os.environ, **env}, timeout=60,
                          check=False)


def test_chat_uses_the_resident_daemon(env: dict[str, str], model: ScriptedModel,
                                       tmp_path: Path, isolated_home: Path) -> None:
    model.push(text("first answer"), text("second answer"))
    one = chat(env, tmp_path, "hello")
    assert one.returncode == 0 and "first answer" in one.stdout, one.stderr
    pid = daemon_pid(isolated_home)
    two = chat(env, tmp_path, "again")
    assert two.returncode == 0 and "second answer" in two.stdout, two.stderr
    assert daemon_pid(isolated_home) == pid
    probe = RawSocket(str(run_dir(isolated_home) / "daemon.sock"))
    probe.initialize()
    assert probe.result("daemon/health")["sessions"] == 2
    probe.close()


def test_chat_says_when_the_resident_daemon_uses_another_model_and_a_fixed_config_applies(
        env: dict[str, str], model: ScriptedModel, tmp_path: Path, isolated_home: Path) -> None:
    model.push(text("one"), text("two"), text("three"))
    assert chat(env, tmp_path, "hello").returncode == 0
    other = chat({**env, "TURNSTONED_MODEL": "bigger"}, tmp_path, "again")
    assert other.returncode == 0, other.stderr
    assert ("the resident daemon uses scripted at " + model.base_url) in other.stderr
    assert "this shell says bigger" in other.stderr and "turnstoned stop" in other.stderr
    assert model.requests[-1]["model"] == "scripted"  # said, not silently ignored
    doctor = subprocess.run([sys.executable, "-m", "turnstoned", "doctor"], capture_output=True,
                            text=True, env={**os.environ, **env, "TURNSTONED_MODEL": "bigger"},
                            timeout=60, check=False, cwd=tmp_path)
    line = next(x for x in doctor.stdout.splitlines() if "resident daemon" in x)
    assert line.startswith("FAIL") and "uses scripted" in line and "says bigger" in line
    # A config file fixed while the daemon runs is read again: the next turn uses it.
    (isolated_home / "config" / "config.toml").write_text(
        '[approvals]\nmode = "read-only"\n[model]\nname = "renamed"\n')
    third = chat({**env, "TURNSTONED_MODEL": ""}, tmp_path, "and now")
    assert third.returncode == 0, third.stderr
    assert model.requests[-1]["model"] == "renamed"


def test_chat_private_spawns_its_own_daemon(env: dict[str, str], model: ScriptedModel,
                                            tmp_path: Path, isolated_home: Path) -> None:
    model.push(text("private answer"))
    out = chat(env, tmp_path, "--private", "hello")
    assert out.returncode == 0 and "private answer" in out.stdout, out.stderr
    assert not (run_dir(isolated_home) / "daemon.sock").exists()


def test_kill_9_of_the_resident_daemon_leaves_no_orphans(model: ScriptedModel,
                                                         tmp_path: Path) -> None:
    scene = Scene(model, tmp_path, resident=True)
    outcome: Outcome | None = None
    try:
        outcome = scene.kill(signal.SIGKILL)
        assert len(outcome.children) == 7, outcome
        assert outcome.survivors == set(), f"orphans: {sorted(outcome.survivors)}"
    finally:
        scene.clean_up(outcome)
        stop_resident(tmp_path / "home")


def test_the_model_connection_is_open_before_the_first_turn(env: dict[str, str],
                                                            model: ScriptedModel,
                                                            tmp_path: Path) -> None:
    d = RawDaemon(env)
    try:
        d.initialize()
        (path, port), = model.wait_gets(1, timeout=15)  # no turn yet
        assert path.rstrip("/").endswith("/models")
        model.push(text("warm"))
        sid = session(d, tmp_path)
        tid = start_turn(d, sid)
        d.wait_for("turn/completed", lambda p: p["turnId"] == tid)
        assert model.client_ports == [port]  # the turn reused the warmed connection
    finally:
        d.close()


async def test_the_python_client_attaches_to_the_resident_daemon(
        model: ScriptedModel, tmp_path: Path, isolated_home: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from turnstoned.client import Client

    model.push(text("from the resident daemon"))
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path)
    async with await Client.attach() as c:
        assert (await c.request("daemon/health"))["resident"] is True
        sid = await c.start_session(cwd="here")  # relative: this process's, as the doc says
        done = await c.run_turn(sid, "hi", timeout=30)
        assert done["status"] == "completed"
        listed = await c.request("session/list")
        assert next(s for s in listed["sessions"] if s["sessionId"] == sid)["cwd"] == str(
            tmp_path / "here")
    pid = daemon_pid(isolated_home)
    assert not exited(pid, 0.2)  # closing the client leaves the daemon running


def test_the_resident_daemon_needs_a_cwd(env: dict[str, str]) -> None:
    a = attach(env)
    a.initialize()
    try:
        a.send({"jsonrpc": "2.0", "id": "no-cwd", "method": "session/start", "params": {}})
        answer = a.wait_response("no-cwd")
        assert answer["error"]["code"] == -32602 and "needs `cwd`" in answer["error"]["message"]
    finally:
        assert a.close() == 0
