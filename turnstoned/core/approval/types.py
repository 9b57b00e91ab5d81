"""The approval gate's types: what it decides (``Verdict``), what a session's gate knows
(``ApprovalPolicy``) and one batch at the gate (``Gate``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from turnstoned import protocol as p
from turnstoned.core.events import EventSink
from turnstoned.tools.base import PreparedCall, SessionEnv

if TYPE_CHECKING:
    from turnstoned.core.approval.judge import Judge
    from turnstoned.core.approval.policies import Policy

# Prepare a call again with arguments the user edited (same call id).
Reprepare = Callable[[PreparedCall, dict[str, Any]], PreparedCall]


@dataclass(slots=True)
class Verdict:
    """What the gate decided for one batch."""

    decision: p.ResolvedDecision = "auto"  # the cycle's
    cycle_id: str | None = None
    denied: dict[str, str] = field(default_factory=dict)  # call id -> the result the model reads
    notes: list[str] = field(default_factory=list)  # user feedback the model reads after results
    # Calls the user edited, prepared again: they run (or fail, or are denied) instead.
    replaced: dict[str, PreparedCall] = field(default_factory=dict)
    # Approved calls the answer edited: call id -> (new arguments, the decision given).
    edits: dict[str, tuple[dict[str, Any], p.Decision]] = field(default_factory=dict)

    @property
    def approved(self) -> bool:
        """Every call may run."""
        return not self.denied


@dataclass(slots=True)
class ApprovalPolicy:
    """What a session's gate knows: blanket skip, standing grants, policies, the judge."""

    skip_permissions: bool = False
    mode: p.ApprovalMode = "read-only"  # what runs unasked (see ``modes``): asks by default
    sandbox: bool = False  # commands can run in the OS sandbox on this machine
    grants: set[str] = field(default_factory=set)  # rules saved by "always" (see ``grants``)
    configured: frozenset[str] = frozenset()  # [tools] auto_approve_tools
    timeout: float = 0.0  # seconds; 0 = wait as long as it takes
    on_grant: Callable[[set[str]], None] = lambda grants: None
    # Calls whose approval is being asked right now, by call id.
    awaiting: dict[str, PreparedCall] = field(default_factory=dict)
    # The tool policies that apply (config and workspace), in the order they are tried.
    policies: Callable[[], list[Policy]] = list
    judge: Judge | None = None


@dataclass(slots=True)
class Gate:
    """One batch at the gate."""

    sink: EventSink
    policy: ApprovalPolicy
    session_id: str
    turn_id: str
    env: SessionEnv
    calls: list[PreparedCall]
    reprepare: Reprepare | None = None
    round: int = 0  # how many times edited calls were asked about again
