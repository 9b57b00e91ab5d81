"""Where a path really leads, and whether that place belongs to the session.

The one place that decides, for every file tool, whether a path is inside the
session's workspace (its workspace folder, else its cwd) and whether it reaches
a credential store. Both look at the real path with symlinks resolved, so a
link in the project pointing at ``~/.ssh/id_rsa`` counts as ``~/.ssh/id_rsa``,
and ``../`` cannot step out unnoticed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TypedDict

from turnstoned.places import is_credential, within
from turnstoned.tools.base import SessionEnv

# Approval labels: one for every read that leaves the workspace, one for credentials.
READ_OUTSIDE = "read_outside_workspace"
READ_CREDENTIALS = "read_credentials"


@dataclass(frozen=True, slots=True)
class Place:
    """A path as a tool will really touch it."""

    given: str  # what the model wrote
    real: str  # absolute, symlinks resolved
    linked: bool  # a symlink or `..` makes `real` differ from the path as written
    inside: bool  # within the session's workspace
    credential: bool  # a credential store (or the daemon's own config and data)

    @property
    def guarded(self) -> bool:
        """True when the call must ask: outside the workspace, or a credential store."""
        return self.credential or not self.inside

    def note(self) -> str:
        """For an approval header: the real target when it differs, and why it asks."""
        parts = []
        if (self.linked or self.guarded) and self.real != self.given:
            parts.append(f" → {self.real}")
        if self.credential:
            parts.append(" (credential store)")
        elif not self.inside:
            parts.append(" (outside the workspace)")
        return "".join(parts)


def place(env: SessionEnv, given: str) -> Place:
    """Where ``given`` (relative to the session's cwd, ``~`` expanded) really leads."""
    absolute = env.resolve(given)
    real = os.path.realpath(absolute)
    return Place(
        given=given,
        real=real,
        linked=real != os.path.normpath(absolute),
        inside=within(real, env.workspace_root()),
        credential=is_credential(real),
    )


class Gate(TypedDict):
    """The approval fields of a PreparedCall."""

    needs_approval: bool
    approval_label: str | None
    grantable: bool


def read_gate(places: list[Place]) -> Gate:
    """How a call that reads ``places`` is approved: credential stores ask every time."""
    label = None
    if any(p.credential for p in places):
        label = READ_CREDENTIALS
    elif any(not p.inside for p in places):
        label = READ_OUTSIDE
    return Gate(needs_approval=label is not None, approval_label=label,
                grantable=label != READ_CREDENTIALS)
