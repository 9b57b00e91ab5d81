"""The receipt of an interrupted task agent: its calls' account and one effect status."""

from __future__ import annotations

from turnstoned import protocol as p
from turnstoned.core.ledger import Ledger
from turnstoned.tools.base import PreparedCall


def _call(call_id: str, tool: str) -> PreparedCall:
    return PreparedCall(header=tool, call_id=call_id, tool=tool)


def _item(call_id: str, tool: str, status: p.ToolStatus,
          effect: p.EffectStatus | None = None) -> p.ToolCallItem:
    return p.ToolCallItem(id=call_id, call_id=call_id, tool=tool, needs_approval=False,
                          status=status, is_error=status != "completed", effect_status=effect)


def test_no_calls_is_none() -> None:
    out = Ledger().receipt("Cancelled by user.")
    assert out.effect_status == "none" and out.is_error
    assert out.text().startswith("(task cancelled by user before any action — no side effects)")


def test_completed_calls_make_it_partial() -> None:
    ledger = Ledger()
    ledger.issue([_call("a", "write_file"), _call("b", "bash"), _call("c", "write_file"),
                  _call("d", "edit_file")])
    ledger.settle([_item("a", "write_file", "completed"), _item("b", "bash", "declined", "none"),
                   _item("c", "write_file", "completed"),
                   _item("d", "edit_file", "cancelled", "none")])
    out = ledger.receipt("Cancelled by user.")
    assert out.effect_status == "partial"
    assert out.text() == ("(task cancelled by user before completion)\n"
                          "Completed before cancel: write_file×2.\n"
                          "Confirmed no effect: bash.\n"
                          "Not started (cancelled first): edit_file.\n"
                          "Cancelled by user.")


def test_only_calls_without_effect_is_none() -> None:
    ledger = Ledger()
    ledger.issue([_call("a", "bash"), _call("b", "write_file")])
    ledger.settle([_item("a", "bash", "declined", "none"),
                   _item("b", "write_file", "cancelled", "none")])
    assert ledger.status() == "none"


def test_a_call_in_flight_or_an_unknown_result_is_unknown() -> None:
    flying = Ledger()
    flying.issue([_call("a", "write_file"), _call("b", "bash")])
    flying.settle([_item("a", "write_file", "completed"), _item("b", "bash", "cancelled", "unknown")])
    out = flying.receipt("Cancelled by user.")
    assert out.effect_status == "unknown"
    assert "In flight at cancel: bash — outcome UNKNOWN" in out.text()
    reported = Ledger()
    reported.issue([_call("a", "mcp__x__y")])
    reported.settle([_item("a", "mcp__x__y", "failed", "unknown")])
    assert reported.status() == "unknown"
    assert "Results received with UNKNOWN effects: mcp__x__y." in reported.receipt("x").text()
    unanswered = Ledger()
    unanswered.issue([_call("a", "bash")])
    assert unanswered.status() == "unknown"
