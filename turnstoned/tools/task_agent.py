"""task_agent: hand a task to an autonomous sub-agent (run by the engine: ``core.agent``)."""

from __future__ import annotations

from typing import Any

import msgspec

from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error

PREVIEW = 300


class Args(msgspec.Struct, kw_only=True):
    prompt: Any = None


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    prompt = args.prompt.strip() if isinstance(args.prompt, str) else ""
    if not prompt:
        return prepare_error("Error: empty prompt", header="⚙ task_agent: (empty prompt)")
    if ctx.env.services.agents is None:
        return prepare_error("Error: task agents are not available here")
    first = prompt.splitlines()[0]
    return PreparedCall(header=f"⚙ task_agent (autonomous agent): {first[:120]}",
                        preview=prompt[:PREVIEW], needs_approval=True,
                        approval_label="task_agent", data=prompt)


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    agents = ctx.env.services.agents
    if agents is None:  # checked in prepare; the services do not change
        raise RuntimeError("no agent runner")
    return await agents.run(call.data, call, ctx)
