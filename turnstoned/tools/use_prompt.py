"""use_prompt: expand an MCP prompt template through the daemon's MCP manager."""

from __future__ import annotations

from typing import Any

import msgspec

from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error


class Args(msgspec.Struct):
    name: str = ""
    arguments: dict[str, Any] = {}


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    manager = ctx.env.services.mcp
    if manager is None:
        return prepare_error("Error: no MCP servers are configured")
    prompts = {p.name: p for p in manager.prompts()}
    prompt = prompts.get(args.name.strip())
    if prompt is None:
        return prepare_error(f"Error: unknown prompt {args.name!r}. Available prompts: "
                             f"{', '.join(sorted(prompts)) or '(none)'}")
    values = {k: v if isinstance(v, str) else str(v) for k, v in args.arguments.items()}
    missing = [a.name for a in prompt.arguments if a.required and a.name not in values]
    if missing:
        return prepare_error(f"Error: prompt {prompt.name} needs arguments: {', '.join(missing)}")
    shown = ", ".join(f"{k}={v[:60]!r}" for k, v in values.items())
    return PreparedCall(header=f"⚙ use_prompt: {prompt.name}({shown})", preview=prompt.description,
                        needs_approval=True, approval_label=prompt.name, data=(prompt.name, values))


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    name, values = call.data
    result = await ctx.env.services.need_mcp().get_prompt(name, values)
    return ToolOutput(result.content, is_error=result.is_error, effect_status=result.effect_status)
