"""Background shells: bash(run_in_background), bash_output, kill_shell, close_all."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from turnstoned.tools import _shells, bash, bash_output, kill_shell
from turnstoned.tools.base import SessionEnv, ToolContext, ToolOutput, ToolSettings

WAIT = 10.0


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def wait_until(predicate: Any, timeout: float = WAIT) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate() and loop.time() < deadline:
        await asyncio.sleep(0.01)
    return bool(predicate())


async def wait_dead(pid: int) -> bool:
    return await wait_until(lambda: not alive(pid), 5)


async def wait_file(path: Path) -> int:
    assert await wait_until(lambda: path.exists() and path.read_text().strip() != "")
    return int(path.read_text().strip())


class Notices:
    def __init__(self) -> None:
        self.items: list[tuple[str, str, dict[str, Any]]] = []

    def __call__(self, kind: str, text: str, data: dict[str, Any]) -> None:
        self.items.append((kind, text, data))


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[SessionEnv]:
    session = SessionEnv(session_id="s", kind="interactive", cwd=tmp_path, notice=Notices())
    yield session
    await _shells.close_all(session)


def ctx_for(env: SessionEnv) -> ToolContext:
    return ToolContext(env=env, call_id="c1", emit_output=lambda chunk: None)


async def start(env: SessionEnv, command: str, **kwargs: Any) -> ToolOutput:
    ctx = ctx_for(env)
    call = bash.prepare(bash.Args(command=command, run_in_background=True, **kwargs), ctx)
    assert call.error is None
    assert call.header.startswith("⚙ bash (background): ")
    return await asyncio.wait_for(bash.execute(call, ctx), WAIT)


async def read(env: SessionEnv, shell_id: str, pattern: Any = None) -> ToolOutput:
    ctx = ctx_for(env)
    call = bash_output.prepare(bash_output.Args(id=shell_id, filter=pattern), ctx)
    if call.error is not None:
        return ToolOutput(call.error, is_error=True)
    return await asyncio.wait_for(bash_output.execute(call, ctx), WAIT)


async def kill(env: SessionEnv, shell_id: str) -> ToolOutput:
    ctx = ctx_for(env)
    call = kill_shell.prepare(kill_shell.Args(id=shell_id), ctx)
    assert call.error is None and call.needs_approval is False
    return await asyncio.wait_for(kill_shell.execute(call, ctx), WAIT)


def shell_of(env: SessionEnv, shell_id: str) -> _shells.Shell:
    found = _shells.registry(env).get(shell_id)
    assert found is not None
    return found


async def lines_buffered(env: SessionEnv, shell_id: str, count: int) -> None:
    buffer = shell_of(env, shell_id).buffer
    assert await wait_until(lambda: buffer.count >= count)


async def exited(env: SessionEnv, shell_id: str) -> None:
    await asyncio.wait_for(shell_of(env, shell_id).done.wait(), WAIT)


async def test_start_returns_a_handle_at_once(env: SessionEnv, tmp_path: Path) -> None:
    out = await start(env, f"echo one; while [ ! -e {tmp_path / 'go'} ]; do sleep 0.01; done")
    assert out.content.startswith("Started background shell bash_1 (pid ")
    assert 'bash_output(id="bash_1")' in out.content
    assert 'kill_shell(id="bash_1")' in out.content
    assert "a system notice will announce its exit" in out.content
    assert out.is_error is False
    assert shell_of(env, "bash_1").status == "running"


async def test_reads_return_only_what_is_new(env: SessionEnv, tmp_path: Path) -> None:
    gate = tmp_path / "go"
    await start(
        env, f"echo one; echo two >&2; while [ ! -e {gate} ]; do sleep 0.01; done; echo three"
    )
    await lines_buffered(env, "bash_1", 2)
    first = await read(env, "bash_1")
    assert first.content == "bash_1 (running)\n2 new line(s):\none\n[stderr] two"
    again = await read(env, "bash_1")
    assert again.content == "bash_1 (running)\nNo new output since the last read."
    gate.touch()
    await exited(env, "bash_1")
    last = await read(env, "bash_1")
    assert last.content == "bash_1 (completed, exit code 0)\n1 new line(s):\nthree"


async def test_filter_selects_lines_but_consumes_all(env: SessionEnv) -> None:
    await start(env, "printf 'apple\\nbanana\\napricot\\ncherry\\n'")
    await exited(env, "bash_1")
    out = await read(env, "bash_1", "^ap+")
    assert out.content == (
        "bash_1 (completed, exit code 0)\n2 of 4 new line(s) match the filter:\napple\napricot"
    )
    assert (await read(env, "bash_1")).content.endswith("No new output since the last read.")


async def test_filter_has_search_semantics_and_literal_alternatives(env: SessionEnv) -> None:
    await start(env, "printf 'an error here\\nfine\\nwarning: x\\n'")
    await exited(env, "bash_1")
    out = await read(env, "bash_1", "error|warning")
    assert out.content.endswith("2 of 3 new line(s) match the filter:\nan error here\nwarning: x")


async def test_filter_without_match_reports_and_consumes(env: SessionEnv) -> None:
    await start(env, "echo alpha; echo beta")
    await exited(env, "bash_1")
    out = await read(env, "bash_1", r"z\d")
    assert out.content == (
        "bash_1 (completed, exit code 0)\n2 new line(s), none matching the filter."
    )
    assert (await read(env, "bash_1")).content.endswith("No new output since the last read.")


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("(unclosed", "Error: invalid filter regex: "),
        ("a" * 513, "Error: filter pattern too long (513 chars; max 512)"),
        (42, "Error: filter must be a string"),
    ],
)
async def test_bad_filters_consume_nothing(env: SessionEnv, pattern: Any, message: str) -> None:
    await start(env, "echo kept")
    await exited(env, "bash_1")
    bad = await read(env, "bash_1", pattern)
    assert bad.is_error and bad.content.startswith(message)
    assert (await read(env, "bash_1")).content.endswith("1 new line(s):\nkept")


async def test_filter_only_sees_the_first_4096_chars_of_a_line(env: SessionEnv) -> None:
    await start(env, "printf 'x%.0s' $(seq 1 5000); echo NEEDLE; echo NEEDLE")
    await exited(env, "bash_1")
    out = await read(env, "bash_1", "NEEDLE$")
    assert out.content.endswith("1 of 2 new line(s) match the filter:\nNEEDLE")


async def test_runaway_filter_is_stopped_and_consumes_nothing(env: SessionEnv) -> None:
    await start(env, "printf 'a%.0s' $(seq 1 40); echo b")
    await exited(env, "bash_1")
    out = await read(env, "bash_1", "(a+)+$")
    assert out.is_error is True
    assert "took longer than 2s" in out.text() and "Nothing was consumed" in out.text()
    assert (await read(env, "bash_1")).content.endswith("1 new line(s):\n" + "a" * 40 + "b")


async def test_rolling_buffer_reports_dropped_lines(env: SessionEnv) -> None:
    env.settings.truncation = 1_000_000
    await start(env, "seq 1 100000")
    await exited(env, "bash_1")
    out = await read(env, "bash_1")
    lines = out.text().splitlines()
    assert lines[0] == "bash_1 (completed, exit code 0)"
    assert lines[1].startswith("[")
    assert lines[1].endswith(" earlier line(s) dropped from the buffer]")
    assert lines[-1] == "100000"
    dropped = int(lines[1][1:].split()[0])
    kept = shell_of(env, "bash_1").buffer.count - dropped
    assert lines[2] == f"{kept} new line(s):"
    assert sum(len(str(n)) + 1 for n in range(100001 - kept, 100001)) <= _shells.BUFFER_CHARS


async def test_cut_output_says_it_was_consumed(env: SessionEnv) -> None:
    env.settings.truncation = 1000
    await start(env, "seq 1 20000")
    await exited(env, "bash_1")
    out = await read(env, "bash_1")
    assert "chars truncated — output exceeded 1000 char limit" in out.text()
    assert out.text().endswith(
        "20000\n[The middle of this output was cut to fit. Those lines were consumed and "
        "cannot be read again.]"
    )
    assert (await read(env, "bash_1")).content.endswith("No new output since the last read.")


async def test_long_lines_are_clipped_with_a_note(env: SessionEnv) -> None:
    await start(env, "printf 'y%.0s' $(seq 1 12000); echo; echo short")
    await exited(env, "bash_1")
    out = await read(env, "bash_1")
    assert "[1 line(s) longer than 10000 chars were clipped]" in out.text()
    assert "y" * 10000 + " … [2000 more chars clipped]\nshort" in out.text()


async def test_kill_shell_stops_the_group(env: SessionEnv, tmp_path: Path) -> None:
    await start(env, "sleep 300 & echo $! > child.pid; echo up; sleep 300")
    child = await wait_file(tmp_path / "child.pid")
    leader = shell_of(env, "bash_1").proc.pid
    out = await kill(env, "bash_1")
    assert out.content == (
        "Killed background shell bash_1. Output produced before the kill remains readable "
        'via bash_output(id="bash_1").'
    )
    assert await wait_dead(child) and await wait_dead(leader)
    status = await read(env, "bash_1")
    assert status.text().startswith("bash_1 (killed, exit code ")
    assert "up" in status.text()
    again = await kill(env, "bash_1")
    assert again.content.startswith("Background shell bash_1 had already exited (status: killed")
    assert again.content.endswith("nothing to kill.")
    assert env.notice.items == []  # type: ignore[attr-defined]


async def test_unknown_ids(env: SessionEnv) -> None:
    none = await read(env, "bash_9")
    assert none.is_error
    assert none.content == (
        "Error: No background shell with id 'bash_9'. No background shells exist."
    )
    await start(env, "true")
    await exited(env, "bash_1")
    known = await kill(env, "nope")
    assert known.content == (
        "Error: No background shell with id 'nope'. Known shells: bash_1 (completed, exit code 0)."
    )


async def test_cap_on_running_shells(tmp_path: Path) -> None:
    env = SessionEnv(
        session_id="s", kind="interactive", cwd=tmp_path,
        settings=ToolSettings(max_background_shells=2),
    )  # fmt: skip
    try:
        await start(env, "sleep 300")
        await start(env, "sleep 300")
        refused = await start(env, "sleep 300")
        assert refused.is_error is True
        assert refused.content.startswith(
            "Background shell limit reached (2 running). In your scope: bash_1, bash_2"
        )
        await kill(env, "bash_1")
        accepted = await start(env, "true")
        assert accepted.content.startswith("Started background shell bash_3 ")
    finally:
        await _shells.close_all(env)


async def test_exit_notice_on_natural_exit_only(env: SessionEnv) -> None:
    await start(env, "echo a; echo b; exit 3")
    await exited(env, "bash_1")
    await start(env, "sleep 300")
    await kill(env, "bash_2")
    notices = env.notice.items  # type: ignore[attr-defined]
    assert notices == [
        (
            "backgroundShell/exited",
            ("Background shell bash_1 (echo a; echo b; exit 3) exited with code 3 — 2 unread "
            'line(s); use bash_output(id="bash_1") to read them.'),
            {"id": "bash_1", "exitCode": 3, "unreadLines": 2},
        )
    ]


async def test_leftover_children_die_when_the_shell_exits(env: SessionEnv, tmp_path: Path) -> None:
    await start(env, "sleep 300 & echo $! > child.pid; echo done")
    child = await wait_file(tmp_path / "child.pid")
    await exited(env, "bash_1")
    assert await wait_dead(child)
    assert shell_of(env, "bash_1").status == "completed"


async def test_close_all_leaves_nothing_running(tmp_path: Path) -> None:
    notices = Notices()
    env = SessionEnv(session_id="s", kind="interactive", cwd=tmp_path, notice=notices)
    await start(env, "sleep 300 & echo $! > a.pid; sleep 300")
    await start(env, "(trap '' TERM; echo $BASHPID > b.pid; exec sleep 300)")
    pids = [await wait_file(tmp_path / "a.pid"), await wait_file(tmp_path / "b.pid")]
    pids += [s.proc.pid for s in _shells.registry(env).running()]
    await _shells.close_all(env)
    for pid in pids:
        assert await wait_dead(pid)
    assert notices.items == []
    assert _shells.registry(env).running() == []


async def test_turn_cancel_does_not_stop_background_shells(env: SessionEnv) -> None:
    ctx = ctx_for(env)
    call = bash.prepare(bash.Args(command="sleep 300", is_background="yes"), ctx)
    await bash.execute(call, ctx)
    ctx.cancel.set()
    shell = shell_of(env, "bash_1")
    assert shell.status == "running" and alive(shell.proc.pid)


async def test_ids_are_never_reused_and_old_exits_are_pruned(env: SessionEnv) -> None:
    for _ in range(_shells.EXITED_KEPT + 1):
        out = await start(env, "true")
        shell_id = out.text().split()[3]
        await exited(env, shell_id)
    # Still running while it is looked at: an exit of its own would prune one more.
    last = await start(env, "sleep 30")
    assert last.text().startswith(f"Started background shell bash_{_shells.EXITED_KEPT + 2} ")
    assert _shells.registry(env).get("bash_1") is None
    assert _shells.registry(env).get("bash_2") is not None


async def test_task_agent_shells_say_they_are_scoped(tmp_path: Path) -> None:
    notices = Notices()
    env = SessionEnv(session_id="t", kind="task", cwd=tmp_path, notice=notices)
    try:
        out = await start(env, "echo hi")
        assert "terminated when the agent finishes" in out.text()
        await exited(env, "bash_1")
        assert notices.items == []
    finally:
        await _shells.close_all(env)


async def test_kill_all_now_is_synchronous(tmp_path: Path) -> None:
    env = SessionEnv(session_id="s", kind="interactive", cwd=tmp_path)
    await start(env, "sleep 300 & echo $! > c.pid; sleep 300")
    child = await wait_file(tmp_path / "c.pid")
    _shells.kill_all_now(env)
    assert await wait_dead(child)
    await _shells.close_all(env)
