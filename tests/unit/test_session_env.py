"""A session's environment closes what tools opened for it, through its close hooks."""

from __future__ import annotations

import asyncio
from pathlib import Path

from turnstoned.tools.base import SessionEnv


def test_close_runs_every_hook_even_after_one_fails(tmp_path: Path) -> None:
    env = SessionEnv(session_id="s", kind="interactive", cwd=tmp_path)
    closed: list[str] = []

    async def broken() -> None:
        closed.append("broken")
        raise RuntimeError("cannot close")

    async def fine() -> None:
        closed.append("fine")

    env.on_close(broken, lambda: closed.append("kill broken"))
    env.on_close(fine, lambda: closed.append("kill fine"))
    asyncio.run(env.close())
    assert closed == ["broken", "fine"]
    env.kill_now()
    assert closed[2:] == ["kill broken", "kill fine"]
