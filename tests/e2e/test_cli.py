"""`turnstoned chat`: the headless front end, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.model_server import ScriptedModel, text, tool_calls


def chat(args: list[str], model: ScriptedModel, home: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TURNSTONED_HOME": str(home), "OPENAI_BASE_URL": model.base_url,
           "OPENAI_API_KEY": "sk", "TURNSTONED_MODEL": "scripted"}
    return subprocess.run([sys.executable, "-m", "turnstoned", "chat", *args], check=False, input=stdin,
                          capture_output=True, text=True, env=env, timeout=60)


def test_json_events_and_yes(model: ScriptedModel, isolated_home: Path, tmp_path: Path) -> None:
    model.push(tool_calls([("c1", "bash", '{"command": "echo from-bash"}')]), text("finished"))
    out = chat(["--yes", "--json", "--cwd", str(tmp_path), "do it"], model, isolated_home)
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    methods = [e["method"] for e in events]
    assert methods[0] == "turn/started" and methods[-1] == "turn/completed"
    assert "item/tool/requestApproval" not in methods
    chunks = "".join(e["params"]["chunk"] for e in events if e["method"] == "item/toolCall/outputDelta")
    assert "from-bash" in chunks


def test_terminal_denial_with_feedback(model: ScriptedModel, isolated_home: Path, tmp_path: Path) -> None:
    model.push(tool_calls([("w1", "write_file", '{"path": "f.txt", "content": "x"}')]), text("ok then"))
    out = chat(["--cwd", str(tmp_path), "write f"], model, isolated_home, stdin="n, not that file\n")
    assert out.returncode == 0, out.stderr
    assert "Allow write_file?" in out.stderr
    assert not (tmp_path / "f.txt").exists()
    tool_msg = next(m for m in model.requests[1]["messages"] if m["role"] == "tool")
    assert tool_msg["content"] == "Denied by user: not that file"
    assert "ok then" in out.stdout


def test_unconfigured_model_fails_with_advice(isolated_home: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if k not in ("TURNSTONED_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY")}
    out = subprocess.run([sys.executable, "-m", "turnstoned", "chat", "--cwd", str(tmp_path), "hi"],
                         capture_output=True, text=True, timeout=60, check=False,
                         env={**env, "TURNSTONED_HOME": str(isolated_home)})
    assert out.returncode == 1
    assert "notConfigured" in out.stderr and "TURNSTONED_MODEL" in out.stderr
    assert "Traceback" not in out.stderr


def hostile_checkout(root: Path) -> Path:
    """A cloned repository that ships its own `turnstoned` package."""
    pkg = root / "turnstoned"
    pkg.mkdir(parents=True)
    marker = root / "pwned"
    code = f"open({str(marker)!r}, 'a').write('ran\\n')\n"
    (pkg / "__init__.py").write_text(code)
    (pkg / "__main__.py").write_text(code + "raise SystemExit(3)\n")
    return marker


def test_chat_never_runs_a_turnstoned_folder_of_the_cwd(model: ScriptedModel, isolated_home: Path,
                                                       tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    marker = hostile_checkout(repo)
    model.push(text("hello from the real daemon"))
    script = Path(sys.executable).with_name("turnstoned")
    env = {**os.environ, "TURNSTONED_HOME": str(isolated_home), "OPENAI_BASE_URL": model.base_url,
           "OPENAI_API_KEY": "sk", "TURNSTONED_MODEL": "scripted"}
    out = subprocess.run([str(script), "chat", "--cwd", str(repo), "hi"], cwd=repo, env=env, check=False,
                         capture_output=True, text=True, timeout=60)
    assert not marker.exists()
    assert out.returncode == 0, out.stderr
    assert "hello from the real daemon" in out.stdout


async def test_client_spawn_never_runs_a_turnstoned_folder_of_its_cwd(isolated_home: Path,
                                                                    tmp_path: Path) -> None:
    from turnstoned.client import Client

    marker = hostile_checkout(tmp_path)
    client = await Client.spawn(cwd=str(tmp_path), env={"TURNSTONED_HOME": str(isolated_home)})
    try:
        health = await client.request("daemon/health")
        assert health["protocolVersion"] == 1
    finally:
        await client.close()
    assert not marker.exists()


def _session(out: subprocess.CompletedProcess[str]) -> str:
    return next(line.split()[1] for line in out.stderr.splitlines() if line.startswith("session "))


def test_undo_and_redo_a_turn_from_the_command_line(model: ScriptedModel, isolated_home: Path,
                                                     tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("before\n")
    (tmp_path / "gone.txt").write_text("doomed\n")
    model.push(tool_calls([("w1", "write_file", '{"path": "keep.txt", "content": "after\\n"}'),
                           ("b1", "bash", '{"command": "rm gone.txt && echo new > made.txt"}')]),
               text("changed three files"))
    out = chat(["--yes", "--cwd", str(tmp_path), "change things"], model, isolated_home)
    assert out.returncode == 0, out.stderr
    sid = _session(out)
    assert (tmp_path / "made.txt").exists() and not (tmp_path / "gone.txt").exists()

    undo = chat(["--session", sid, "/undo"], model, isolated_home)
    assert undo.returncode == 0, undo.stderr
    assert (tmp_path / "keep.txt").read_text() == "before\n"
    assert (tmp_path / "gone.txt").read_text() == "doomed\n" and not (tmp_path / "made.txt").exists()
    assert undo.stdout.startswith("undid 1 turn\n") and "/redo undo_" in undo.stdout
    assert len(model.requests) == 2  # no turn ran for it

    redo = chat(["--session", sid, "/redo"], model, isolated_home)
    assert redo.returncode == 0, redo.stderr
    assert (tmp_path / "keep.txt").read_text() == "after\n" and (tmp_path / "made.txt").exists()
    assert not (tmp_path / "gone.txt").exists()

    (tmp_path / "keep.txt").write_text("mine\n")  # the user edits after the agent did
    again = chat(["--session", sid, "/undo"], model, isolated_home, stdin="d\nk\n")
    assert again.returncode == 0, again.stderr
    assert "keep.txt changed after the agent's turn" in again.stderr and "+mine" in again.stderr
    assert (tmp_path / "keep.txt").read_text() == "mine\n"  # kept: not clobbered
    assert (tmp_path / "gone.txt").exists() and "kept   " in again.stdout


def test_undo_without_a_session_or_with_nothing_to_undo_says_so(
        model: ScriptedModel, isolated_home: Path, tmp_path: Path) -> None:
    out = chat(["--cwd", str(tmp_path), "/undo"], model, isolated_home)
    assert out.returncode == 2 and "/undo needs --session" in out.stderr
    model.push(text("only talk"))
    talk = chat(["--cwd", str(tmp_path), "hello"], model, isolated_home)
    none = chat(["--session", _session(talk), "/undo"], model, isolated_home)
    assert none.returncode == 2 and "nothing to undo" in none.stderr
    assert "Traceback" not in none.stderr


def test_typed_in_a_terminal_it_says_what_it_is_and_help_names_the_environment(
        isolated_home: Path) -> None:
    import pty

    leader, follower = pty.openpty()
    try:
        out = subprocess.run([sys.executable, "-m", "turnstoned"], stdin=follower,
                             capture_output=True, text=True, timeout=30, check=False)
    finally:
        os.close(leader)
        os.close(follower)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("turnstoned is the agent daemon an editor starts")
    assert 'turnstoned chat "' in out.stderr
    helped = subprocess.run([sys.executable, "-m", "turnstoned", "--help"], capture_output=True,
                            text=True, timeout=30, check=False)
    assert "TURNSTONED_MODEL" in helped.stdout and "OPENAI_BASE_URL" in helped.stdout
    assert "config.toml" in helped.stdout


def test_the_terminal_asks_again_and_end_of_input_is_no_answer(
        model: ScriptedModel, isolated_home: Path, tmp_path: Path) -> None:
    model.push(tool_calls([("b1", "bash", '{"command": "touch made.txt"}')]), text("done"))
    out = chat(["--cwd", str(tmp_path), "make it"], model, isolated_home, stdin="maybe\ny\n")
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("Allow bash?") == 2 and "answer y (run it)" in out.stderr
    assert out.stderr.count("touch made.txt") == 1  # the command is printed once
    assert (tmp_path / "made.txt").exists()

    model.push(tool_calls([("b2", "bash", '{"command": "touch other.txt"}')]), text("ok"))
    silent = chat(["--cwd", str(tmp_path), "another"], model, isolated_home, stdin="")
    assert silent.returncode == 0, silent.stderr
    assert "(no answer: the call does not run)" in silent.stderr
    told = next(m for m in model.requests[-1]["messages"] if m["role"] == "tool"
                and m["tool_call_id"] == "b2")["content"]
    assert told.startswith("Not run:") and "Denied by user" not in told
    assert not (tmp_path / "other.txt").exists() and "Traceback" not in silent.stderr


def test_ctrl_c_at_the_approval_prompt_ends_the_private_chat_cleanly(
        model: ScriptedModel, isolated_home: Path, tmp_path: Path) -> None:
    import signal
    import time

    model.push(tool_calls([("b1", "bash", '{"command": "touch made.txt"}')]), text("never"))
    env = {**os.environ, "TURNSTONED_HOME": str(isolated_home), "OPENAI_BASE_URL": model.base_url,
           "OPENAI_API_KEY": "sk", "TURNSTONED_MODEL": "scripted"}
    proc = subprocess.Popen([sys.executable, "-m", "turnstoned", "chat", "--private", "--cwd",
                             str(tmp_path), "make it"], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not model.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # the question is on the terminal now
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal does: the whole group
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "BrokenPipe" not in err
    assert not (tmp_path / "made.txt").exists()


def test_a_servers_question_is_a_form_on_the_terminal(model: ScriptedModel, isolated_home: Path,
                                                      tmp_path: Path) -> None:
    from tests.component.test_mcp_engine import server_toml
    from tests.conftest import write_config

    write_config(isolated_home, '[tools]\nsearch = "off"\n' + server_toml("asking", "asking.py"))
    model.push(tool_calls([("m1", "mcp__asking__book", "{}")]), text("done"))
    out = chat(["--yes", "--cwd", str(tmp_path), "book"], model, isolated_home,
               stdin="\nAda\n\ny\n")
    assert out.returncode == 0, out.stderr
    assert "[asking] Who is the booking for?" in out.stderr
    assert "this one is required" in out.stderr  # an empty name asks again
    assert "booked Ada x2 window=True" in out.stderr  # the default seats, the answered window
