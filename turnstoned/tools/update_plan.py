"""update_plan: the model's plan as a checklist the user watches (``plan/updated``).

The whole list each time; kept with the session (``session/resume`` gives it back). At
most one step is in progress: a second one is read as pending, and the model is told.
"""

from __future__ import annotations

from typing import Any, cast

import msgspec

from turnstoned.protocol import PlanStatus, PlanStep, PlanUpdated
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error

PLAN_KEY = "plan"
MAX_STEPS = 50
MAX_STEP = 300
STATUSES = ("pending", "in_progress", "done")


class Args(msgspec.Struct, kw_only=True):
    steps: Any = None
    explanation: Any = None


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    if not isinstance(args.steps, list) or not args.steps:
        return prepare_error("Error: steps must be a list of {step, status}")
    steps: list[PlanStep] = []
    notes: list[str] = []
    for n, raw in enumerate(args.steps[:MAX_STEPS], 1):
        text = raw.get("step") if isinstance(raw, dict) else raw
        status = raw.get("status", "pending") if isinstance(raw, dict) else "pending"
        if not isinstance(text, str) or not text.strip():
            return prepare_error(f"Error: step {n} has no text")
        if status not in STATUSES:
            notes.append(f"step {n}: unknown status {status!r}, read as pending")
            status = "pending"
        if status == "in_progress" and any(s.status == "in_progress" for s in steps):
            notes.append(f"step {n}: only one step is in progress at a time, read as pending")
            status = "pending"
        steps.append(PlanStep(step=" ".join(text.split())[:MAX_STEP],
                              status=cast(PlanStatus, status)))
    if len(args.steps) > MAX_STEPS:
        notes.append(f"only the first {MAX_STEPS} steps are kept")
    explanation = args.explanation.strip() if isinstance(args.explanation, str) else None
    done = sum(s.status == "done" for s in steps)
    return PreparedCall(header=f"☑ update_plan: {done}/{len(steps)} done",
                        preview="\n".join(_line(s) for s in steps),
                        data=(steps, explanation or None, notes))


def _line(step: PlanStep) -> str:
    mark = {"done": "[x]", "in_progress": "[>]", "pending": "[ ]"}[step.status]
    return f"{mark} {step.step}"


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    steps, explanation, notes = call.data
    ctx.env.persist(PLAN_KEY, [msgspec.to_builtins(s) for s in steps])
    ctx.env.emit(PlanUpdated(session_id=ctx.env.session_id, turn_id=ctx.turn_id,
                             steps=steps, explanation=explanation))
    done = sum(s.status == "done" for s in steps)
    text = f"Plan updated: {done} of {len(steps)} steps done; the user sees it."
    if notes:
        text += " Note: " + "; ".join(notes) + "."
    return ToolOutput(text, summary=f"{done}/{len(steps)} done")
