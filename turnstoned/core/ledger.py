"""What a task agent's own tool calls did, for the receipt of an interrupted ``task_agent`` call.

When the user stops a turn while a task agent works, its ``task_agent`` call
gets, instead of a bare "outcome unknown", an account of its agent's calls and
an effect status for the whole:

- ``none``: the agent issued no call, or every call it issued had no effect
  (refused, denied, never started, rolled back);
- ``unknown``: a call was running when the stop came, or a result says its own
  effect is unknown;
- ``partial``: some calls completed with effect and nothing is left unknown.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from turnstoned import protocol as p
from turnstoned.tools.base import PreparedCall, ToolOutput

NO_ACTION = "(task cancelled by user before any action — no side effects)"
HEAD = "(task cancelled by user before completion)"
_NO_EFFECT: tuple[p.EffectStatus | None, ...] = ("none", "rolled_back")
# How the agent's answered calls are told, by their effect status (None: an ordinary result).
_GROUPS: tuple[tuple[str, p.EffectStatus | None], ...] = (
    ("Completed before cancel", None), ("Partially completed", "partial"),
    ("Confirmed no effect", "none"), ("Completed and rolled back", "rolled_back"),
    ("Results received with UNKNOWN effects", "unknown"))


@dataclass(slots=True)
class _Entry:
    tool: str
    state: str = "issued"  # issued | done | in_flight | not_started
    effect: p.EffectStatus | None = None


class Ledger:
    """The calls of one task agent, in the order it issued them."""

    def __init__(self) -> None:
        self.entries: dict[str, _Entry] = {}

    def issue(self, calls: Iterable[PreparedCall]) -> None:
        for c in calls:
            self.entries[c.call_id] = _Entry(c.tool)

    def settle(self, items: Iterable[p.ToolCallItem]) -> None:
        """Record results: real ones, or the receipts of a batch the stop cut short."""
        for item in items:
            entry = self.entries.setdefault(item.call_id, _Entry(item.tool))
            entry.effect = item.effect_status
            if item.status != "cancelled":
                entry.state = "done"
            else:
                entry.state = "not_started" if item.effect_status == "none" else "in_flight"

    def status(self) -> p.EffectStatus:
        entries = list(self.entries.values())
        if not entries:
            return "none"
        if any(e.state in ("in_flight", "issued") or e.effect == "unknown" for e in entries):
            return "unknown"
        if all(e.effect in _NO_EFFECT for e in entries):
            return "none"
        return "partial"

    def receipt(self, reason: str) -> ToolOutput:
        """The result the interrupted ``task_agent`` call reports (``reason``: why it stopped)."""
        if not self.entries:
            return ToolOutput(f"{NO_ACTION}\n{reason}", is_error=True, effect_status="none")
        lines = [HEAD]
        entries = list(self.entries.values())
        for title, effect in _GROUPS:
            names = _counted(e.tool for e in entries if e.state == "done" and e.effect == effect)
            if names:
                lines.append(f"{title}: {names}.")
        flying = _counted(e.tool for e in entries if e.state in ("in_flight", "issued"))
        if flying:
            lines.append(f"In flight at cancel: {flying} — outcome UNKNOWN; it may have run, "
                         "check before re-issuing it.")
        waiting = _counted(e.tool for e in entries if e.state == "not_started")
        if waiting:
            lines.append(f"Not started (cancelled first): {waiting}.")
        lines.append(reason)
        return ToolOutput("\n".join(lines), is_error=True, effect_status=self.status())


def _counted(names: Iterable[str]) -> str:
    """``a, b×2`` in the order of first appearance."""
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(name if n == 1 else f"{name}×{n}" for name, n in counts.items())
