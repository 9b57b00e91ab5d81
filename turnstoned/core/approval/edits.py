"""Calls the user edited in the approval: prepared again, checked again, then run.

An answer may carry ``arguments`` for an approved call (``CallDecision``). The
call is prepared again with them under the same call id, and the same rules
apply to the result: a preparation error is what the model reads; a policy
that denies the edited call denies it. If the edited call needs more than the
user was shown (a higher risk than the original, a different approval label,
or no standing grant possible where the original allowed one), it is asked
about again, as itself, instead of running; after ``MAX_ROUNDS`` such
questions the call is denied. "Always" on an edited call grants the edited
call's rules. The model reads, with the result, that the user edited the
call and what ran (see ``edit_note``); for a file change whose final text the
user gave, hunk by hunk (``hunks``).
"""

from __future__ import annotations

from turnstoned.core.approval import grants, hunks, intent, policies
from turnstoned.core.approval.types import Gate, Verdict
from turnstoned.tools.base import PreparedCall

MAX_ROUNDS = 3


def needs_more(original: PreparedCall, edited: PreparedCall) -> bool:
    """The edited call needs an approval the user was not asked for."""
    before, after = original.verdict, edited.verdict
    riskier = before is not None and after is not None and (
        intent.RANK[after.risk] > intent.RANK[before.risk])
    return riskier or edited.label != original.label or (original.grantable and
                                                         not edited.grantable)


def apply_edits(gate: Gate, verdict: Verdict) -> list[PreparedCall]:
    """Prepare and check every edited call; returns those that need more than the user
    was shown (the gate asks about them again)."""
    assert gate.reprepare is not None
    rules = gate.policy.policies()
    again: list[PreparedCall] = []
    granted = False
    for call in gate.calls:
        edit = verdict.edits.pop(call.call_id, None)
        if edit is None or call.call_id in verdict.denied:
            continue
        arguments, decision = edit
        edited = gate.reprepare(call, arguments)
        edited.original_arguments = call.original_arguments or call.arguments
        edited.hunk_note = _file_note(call, edited)
        verdict.replaced[call.call_id] = edited
        if edited.error or not edited.needs_approval:
            continue
        edited.verdict = intent.rate(edited, gate.env)
        match = policies.decide(rules, edited, gate.env)
        if match is not None and match.rule.action == "deny":
            verdict.denied[call.call_id] = f"Blocked by tool policy: {match.describe()}"
        elif needs_more(call, edited):
            again.append(edited)
        elif decision == "always":
            saved = grants.rules_for(edited, gate.env)
            gate.policy.grants.update(saved)
            granted |= bool(saved)
    if granted:
        gate.policy.on_grant(gate.policy.grants)
    return again


def _file_note(call: PreparedCall, edited: PreparedCall) -> str | None:
    """For a file change the user rewrote in the review: how the text written differs
    from the model's proposal (None for any other edit)."""
    before, after = call.file_change, edited.file_change
    if edited.error or before is None or after is None or before.path != after.path:
        return None
    old, proposed = before.texts()
    return hunks.note(after.path, old, proposed, after.texts()[1])


def edit_note(call: PreparedCall) -> str:
    """What the model reads before the result of a call the user edited."""
    if call.hunk_note is not None:
        return call.hunk_note
    return (f"[The user edited this call before it ran. You asked for "
            f"{call.original_arguments}; it ran as {call.tool} with arguments "
            f"{call.arguments}.]\n")

