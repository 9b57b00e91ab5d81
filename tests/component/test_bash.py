"""The bash tool against real bash processes in tmp dirs."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from turnstoned.tools import bash
from turnstoned.tools.base import SessionEnv, ToolContext, ToolOutput, ToolSettings

WAIT = 10.0


def make_ctx(
    tmp_path: Path,
    emit: Callable[[str], None] | None = None,
    settings: ToolSettings | None = None,
) -> tuple[ToolContext, list[str]]:
    chunks: list[str] = []
    env = SessionEnv(
        session_id="s", kind="interactive", cwd=tmp_path, settings=settings or ToolSettings()
    )
    return ToolContext(env=env, call_id="c1", emit_output=emit or chunks.append), chunks


async def run(ctx: ToolContext, command: str, **kwargs: object) -> ToolOutput:
    call = bash.prepare(bash.Args(command=command, **kwargs), ctx)
    assert call.error is None, call.error
    return await asyncio.wait_for(bash.execute(call, ctx), WAIT)


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


async def wait_dead(pid: int) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    while alive(pid) and loop.time() < deadline:
        await asyncio.sleep(0.02)
    return not alive(pid)


def read_pid(path: Path) -> int:
    return int(path.read_text().strip())


# ---------------------------------------------------------------- prepare


def test_prepare_header_preview_and_approval(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path)
    call = bash.prepare(bash.Args(command="echo a\necho b\necho c", timeout=30), ctx)
    assert call.header == "⚙ bash (30s): echo a … (2 more lines)"
    assert call.preview == "echo a\necho b\necho c"
    assert call.needs_approval is True
    assert call.approval_label == "bash"
    single = bash.prepare(bash.Args(command="ls"), ctx)
    assert single.header == "⚙ bash: ls"


@pytest.mark.parametrize("command", ["", "   ", None, 42])
def test_prepare_empty_command_is_an_error(tmp_path: Path, command: object) -> None:
    ctx, _ = make_ctx(tmp_path)
    call = bash.prepare(bash.Args(command=command), ctx)
    assert call.error == "Error: empty command"


def test_prepare_blocked_command_never_asks(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path)
    call = bash.prepare(bash.Args(command="rm \u2014rf /"), ctx)
    assert call.error == "Blocked: command matches dangerous pattern 'rm -rf /'"


@pytest.mark.parametrize(
    ("value", "expected"),
    [(30, 30), ("45", 45), (0, 1), (-5, 1), (601, 600), (10_000, 600), ("2.5", 2),
     ("soon", 120), (None, 120), (True, 120)],
)  # fmt: skip
def test_prepare_timeout_is_clamped_or_defaulted(
    tmp_path: Path, value: object, expected: int
) -> None:
    ctx, _ = make_ctx(tmp_path)
    call = bash.prepare(bash.Args(command="true", timeout=value), ctx)
    assert call.data.timeout == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, True), ("true", True), ("1", True), (" YES ", True), ("on", True), (1, True),
     (False, False), ("false", False), ("0", False), ("no", False), (0, False), (None, False),
     ([], False)],
)  # fmt: skip
def test_prepare_lenient_booleans(tmp_path: Path, value: object, expected: bool) -> None:
    ctx, _ = make_ctx(tmp_path)
    assert bash.prepare(bash.Args(command="x", stop_on_error=value), ctx).data.stop_on_error is (
        expected
    )
    assert bash.prepare(bash.Args(command="x", run_in_background=value), ctx).data.background is (
        expected
    )
    assert bash.prepare(bash.Args(command="x", is_background=value), ctx).data.background is (
        expected
    )


def test_prepare_normalises_curly_quotes_in_the_command(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path)
    call = bash.prepare(bash.Args(command="echo \u201chi\u201d"), ctx)
    assert call.data.command == 'echo "hi"'


# ---------------------------------------------------------------- execute


@pytest.mark.parametrize(
    ("command", "stop_on_error", "text", "is_error"),
    [
        ("echo hi", False, "hi", False),
        ("true", False, "(no output)", False),
        ("echo x; exit 1", False, "x\n[exit code: 1]", False),
        ("exit 2", False, "(no output)\n[exit code: 2]", True),
        ("exit 127", False, "(no output)\n[exit code: 127]", True),
        ("kill -9 $$", False, "(no output)\n[exit code: -9]", True),
        ("false | cat; echo rc=$?", False, "rc=1", False),
        ("false; echo after", True, "(no output)\n[exit code: 1]", True),
        ("echo ok", True, "ok", False),
    ],
)
async def test_output_and_exit_codes(
    tmp_path: Path, command: str, stop_on_error: bool, text: str, is_error: bool
) -> None:
    ctx, _ = make_ctx(tmp_path)
    out = await run(ctx, command, stop_on_error=stop_on_error)
    assert out.content == text
    assert out.is_error is is_error
    assert out.effect_status is None


async def test_stderr_lines_are_tagged_after_stdout(tmp_path: Path) -> None:
    ctx, chunks = make_ctx(tmp_path)
    out = await run(ctx, "echo out1; echo err1 >&2; echo out2; echo err2 >&2")
    assert out.content == "out1\nout2\n[stderr] err1\n[stderr] err2"
    streamed = "".join(chunks)
    assert "[stderr] err1\n" in streamed and "out2\n" in streamed


async def test_merged_stderr_is_not_tagged(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path)
    out = await run(ctx, "{ echo a; echo b >&2; echo c; } 2>&1")
    assert out.content == "a\nb\nc"


async def test_stdout_streams_before_the_command_ends(tmp_path: Path) -> None:
    seen = asyncio.Event()
    chunks: list[str] = []

    def emit(chunk: str) -> None:
        chunks.append(chunk)
        if "ready" in chunk:
            seen.set()

    ctx, _ = make_ctx(tmp_path, emit)
    gate = tmp_path / "go"
    task = asyncio.create_task(
        run(ctx, f"echo ready; while [ ! -e {gate} ]; do sleep 0.01; done; echo finished")
    )
    await asyncio.wait_for(seen.wait(), WAIT)
    assert not task.done()
    assert chunks == ["ready\n"]
    gate.touch()
    out = await task
    assert out.content == "ready\nfinished"
    assert "".join(chunks) == "ready\nfinished\n"


async def test_many_lines_arrive_in_coalesced_chunks(tmp_path: Path) -> None:
    ctx, chunks = make_ctx(tmp_path)
    await run(ctx, "seq 1 20000")
    streamed = "".join(chunks)
    assert streamed == "".join(f"{i}\n" for i in range(1, 20001))
    assert len(chunks) < 20000
    assert all(c.endswith("\n") for c in chunks)


async def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path)
    command = "echo $$ > leader.pid; sleep 300 & echo $! > child.pid; echo begun; sleep 300"
    out = await run(ctx, command, timeout=1)
    assert out.content.startswith("Command timed out after 1s. Outcome UNKNOWN")
    assert "Partial output:\nbegun" in out.content
    assert out.is_error is True
    assert out.effect_status == "unknown"
    assert await wait_dead(read_pid(tmp_path / "leader.pid"))
    assert await wait_dead(read_pid(tmp_path / "child.pid"))


async def test_group_member_ignoring_sigterm_is_killed(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path)
    command = "(trap '' TERM; echo $BASHPID > stubborn.pid; exec sleep 300) & sleep 300"
    out = await run(ctx, command, timeout=1)
    assert out.effect_status == "unknown"
    assert await wait_dead(read_pid(tmp_path / "stubborn.pid"))


async def _start_and_wait_ready(
    tmp_path: Path,
) -> tuple[ToolContext, asyncio.Task[ToolOutput]]:
    seen = asyncio.Event()
    ctx, _ = make_ctx(tmp_path, lambda chunk: seen.set() if "ready" in chunk else None)
    command = "echo $$ > leader.pid; sleep 300 & echo $! > child.pid; echo ready; sleep 300"
    call = bash.prepare(bash.Args(command=command), ctx)
    task = asyncio.create_task(bash.execute(call, ctx))
    await asyncio.wait_for(seen.wait(), WAIT)
    return ctx, task


async def test_cancel_event_stops_the_group_with_unknown_effect(tmp_path: Path) -> None:
    ctx, task = await _start_and_wait_ready(tmp_path)
    ctx.cancel.set()
    out = await asyncio.wait_for(task, WAIT)
    assert out.content.startswith("Cancelled by user. Outcome UNKNOWN")
    assert "Do not assume it did not run." in out.content
    assert "Partial output:\nready" in out.content
    assert out.is_error is True
    assert out.effect_status == "unknown"
    assert await wait_dead(read_pid(tmp_path / "leader.pid"))
    assert await wait_dead(read_pid(tmp_path / "child.pid"))


async def test_task_cancel_stops_the_group_and_propagates(tmp_path: Path) -> None:
    _, task = await _start_and_wait_ready(tmp_path)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, WAIT)
    assert await wait_dead(read_pid(tmp_path / "leader.pid"))
    assert await wait_dead(read_pid(tmp_path / "child.pid"))


async def test_a_cancel_while_the_process_is_being_spawned_ends_its_group_at_once(
        tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path)
    call = bash.prepare(bash.Args(command="echo $$ > leader.pid; sleep 30"), ctx)
    children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    before = set(children.read_text().split())
    task = asyncio.ensure_future(bash.execute(call, ctx))
    for _ in range(100):  # one loop step at a time, up to the spawn: bash is our child...
        await asyncio.sleep(0)
        if set(children.read_text().split()) - before:
            break
    pidfile = tmp_path / "leader.pid"
    deadline = time.monotonic() + WAIT
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.01)  # noqa: ASYNC251 (on purpose: the loop is held, so bash runs before its pipes connect)
    leader = read_pid(pidfile)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=WAIT)
    assert task in done, "the cancelled call waits for the command's sleep (30 s)"
    assert task.cancelled()
    assert await wait_dead(leader)
    with pytest.raises(ProcessLookupError):
        for _ in range(100):  # the whole group, the sleep included
            os.killpg(leader, 0)
            await asyncio.sleep(0.02)


async def test_background_leftover_does_not_hang_the_call(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path)
    out = await run(ctx, "sleep 300 & echo $! > child.pid; echo started", timeout=120)
    assert out.content == "started"
    assert out.effect_status is None
    assert await wait_dead(read_pid(tmp_path / "child.pid"))


async def test_environment_is_scrubbed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("DEPLOY_TOKEN", "t-should-not-leak")
    monkeypatch.setenv("ALLOWED_TOKEN", "allowed")
    monkeypatch.setenv("KEYBOARD_LAYOUT", "dvorak")
    ctx, _ = make_ctx(tmp_path, settings=ToolSettings(env_passthrough=("ALLOWED_TOKEN",)))
    out = await run(
        ctx,
        'echo "${OPENAI_API_KEY:-unset} ${DEPLOY_TOKEN:-unset} $ALLOWED_TOKEN $KEYBOARD_LAYOUT"',
    )
    assert out.content == "unset unset allowed dvorak"


async def test_runs_in_the_session_cwd_with_empty_stdin(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path)
    out = await run(ctx, "pwd; cat; echo end")
    assert out.content == f"{tmp_path}\nend"


async def test_long_output_keeps_head_and_tail(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path, settings=ToolSettings(truncation=1000))
    out = await run(ctx, "seq 1 5000")
    full = "\n".join(str(i) for i in range(1, 5001))
    omitted = len(full) - 1000
    assert out.content == (
        f"{full[:500]}\n\n... [{omitted} chars truncated — output exceeded 1000 char "
        f"limit] ...\n\n{full[-500:]}"
    )


async def test_huge_output_is_bounded_but_counted_exactly(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path, settings=ToolSettings(truncation=1000))
    out = await run(ctx, "seq 1 200000; echo boom >&2")
    full = "\n".join(str(i) for i in range(1, 200001)) + "\n[stderr] boom"
    omitted = len(full) - 1000
    assert out.content == (
        f"{full[:500]}\n\n... [{omitted} chars truncated — output exceeded 1000 char "
        f"limit] ...\n\n{full[-500:]}"
    )


async def test_undecodable_bytes_are_replaced_not_lost(tmp_path: Path) -> None:
    ctx, chunks = make_ctx(tmp_path)
    out = await run(ctx, r"printf 'a\xffb\n'; printf 'caf\xc3\xa9\n'")
    assert out.content == "a\ufffdb\ncafé"
    assert "".join(chunks) == "a\ufffdb\ncafé\n"


async def test_unterminated_last_line_is_kept(tmp_path: Path) -> None:
    ctx, chunks = make_ctx(tmp_path)
    out = await run(ctx, "printf 'one\\ntwo'")
    assert out.content == "one\ntwo"
    assert "".join(chunks) == "one\ntwo"


async def test_the_script_exists_on_no_filesystem(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path)
    out = await run(ctx, 'echo "$0"; readlink /proc/$$/fd/255; ls /proc/self/fd')
    name, target, *inherited = out.text().splitlines()
    assert name.startswith("/dev/fd/")
    assert target.startswith("/memfd:turnstoned-bash")
    assert sorted(inherited) == ["0", "1", "2", "3"]  # the command does not inherit the script


async def test_spawn_failure_is_reported(tmp_path: Path) -> None:
    ctx, _ = make_ctx(tmp_path / "does-not-exist")
    out = await run(ctx, "echo hi")
    assert out.content.startswith("Error executing command:")
    assert out.is_error is True
