"""propose_plan: the model's plan, for the user to approve before anything changes.

Offered only in plan mode (a read-only session whose model is asked for a plan
first). The call asks the user every time, showing the plan; approving it
switches the session to auto mode (``Services.set_mode``), so the model carries
the plan out with the usual autonomy. A denial, with its feedback, is what the
model reads: it revises the plan and proposes again.
"""

from __future__ import annotations

from typing import Any

import msgspec

from turnstoned.protocol import ApprovalMode
from turnstoned.tools.base import (
    MODE_KEY,
    PreparedCall,
    SessionEnv,
    ToolContext,
    ToolOutput,
    prepare_error,
)

MAX_PLAN = 20_000
AFTER: ApprovalMode = "auto"  # the mode an approved plan switches the session to


class Args(msgspec.Struct, kw_only=True):
    plan: Any = None


def available(env: SessionEnv) -> bool:
    """Only a session in plan mode proposes plans."""
    return env.persisted.get(MODE_KEY) == "plan"


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    plan = args.plan.strip() if isinstance(args.plan, str) else ""
    if not plan:
        return prepare_error("Error: the plan is empty")
    if len(plan) > MAX_PLAN:
        return prepare_error(f"Error: the plan exceeds {MAX_PLAN} characters; summarise it")
    first = next((line.strip("# ").strip() for line in plan.splitlines() if line.strip()), "")
    return PreparedCall(header=f"📋 plan: {first[:160]}", preview=plan, needs_approval=True,
                        approval_label="propose_plan", grantable=False, data=plan)


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    set_mode = ctx.env.services.set_mode
    if set_mode is not None:
        set_mode(ctx.env.session_id, AFTER)
    return ToolOutput(f"The user approved the plan. The session is now in {AFTER} mode: carry "
                      "the plan out step by step, then say what changed and how you checked it.",
                      summary="plan approved")
