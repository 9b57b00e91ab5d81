"""Calling one tool module directly, the way the pipeline does: decode, prepare, execute."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec

from turnstoned.tools.base import PreparedCall, SessionEnv, ToolContext, ToolOutput, ToolSettings


def tool_ctx(tmp_path: Path, **settings: Any) -> ToolContext:
    """A context for an interactive session rooted at ``tmp_path``."""
    env = SessionEnv(session_id="s", kind="interactive", cwd=tmp_path)
    env.settings = ToolSettings(**settings)
    return ToolContext(env=env)


def prepare(tool: ModuleType, ctx: ToolContext, **args: Any) -> PreparedCall:
    return tool.prepare(msgspec.convert(args, tool.Args, strict=False), ctx)  # type: ignore[no-any-return]


async def run_auto(tool: ModuleType, ctx: ToolContext, **args: Any) -> ToolOutput:
    """Prepare and execute a call that must be valid and must not ask for approval."""
    call = prepare(tool, ctx, **args)
    assert call.error is None, call.error
    assert not call.needs_approval
    return await tool.execute(call, ctx)  # type: ignore[no-any-return]
