"""Where a path really leads, and whether that place belongs to the session.

The one place that decides, for every file tool, whether a path is inside the
session's workspace (its workspace folder, else its cwd) and whether it reaches
a credential store. Both look at the real path with symlinks resolved, so a
link in the project pointing at ``~/.ssh/id_rsa`` counts as ``~/.ssh/id_rsa``,
and ``../`` cannot step out unnoticed.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from turnstoned import paths
from turnstoned.tools.base import SessionEnv

# Under the home directory: directories and files that hold keys, tokens and passwords.
HOME_CREDENTIALS = (
    ".ssh", ".aws", ".gnupg", ".config/gcloud", ".kube", ".docker", ".netrc", ".pgpass",
    ".azure", ".git-credentials", ".config/gh", ".config/hub", ".npmrc", ".pypirc", ".my.cnf",
    ".password-store", ".local/share/keyrings", ".vault-token", ".terraform.d",
    ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials", ".config/rclone",
)  # fmt: skip
SYSTEM_CREDENTIALS = ("/etc/shadow", "/etc/gshadow", "/etc/ssh", "/etc/sudoers")
# Another process's (or the daemon's own) environment and memory.
_PROC_SECRETS = re.compile(r"/proc/[^/]+/(?:task/[^/]+/)?(?:environ|mem)")

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


def workspace_root(env: SessionEnv) -> str:
    """The real path of the session's workspace folder, else of its cwd."""
    return os.path.realpath(env.workspace or env.cwd)


def within(real: str, root: str) -> bool:
    """True when ``real`` is ``root`` or below it (both real paths)."""
    return real == root or real.startswith(root.rstrip("/") + "/")


@functools.lru_cache(maxsize=8)
def _credential_roots(home: str, config_dir: str, data_dir: str) -> tuple[str, ...]:
    roots = [os.path.join(home, name) for name in HOME_CREDENTIALS]
    roots += [*SYSTEM_CREDENTIALS, config_dir, data_dir]
    # Both spellings: the store may itself be a symlink (a dotfiles repo, say).
    return tuple(dict.fromkeys([*roots, *(os.path.realpath(r) for r in roots)]))


def credential_roots() -> tuple[str, ...]:
    """Every credential store, as absolute paths (the current HOME and daemon dirs)."""
    return _credential_roots(str(Path.home()), str(paths.config_dir()), str(paths.data_dir()))


def is_credential(real: str, roots: tuple[str, ...] | None = None) -> bool:
    """True when the real path ``real`` lies in a credential store (``roots``: the
    stores as ``credential_roots`` gave them, when the caller has them already)."""
    return bool(_PROC_SECRETS.fullmatch(real)) or any(
        within(real, root) for root in (roots or credential_roots())
    )


def place(env: SessionEnv, given: str) -> Place:
    """Where ``given`` (relative to the session's cwd, ``~`` expanded) really leads."""
    absolute = env.resolve(given)
    real = os.path.realpath(absolute)
    return Place(
        given=given,
        real=real,
        linked=real != os.path.normpath(absolute),
        inside=within(real, workspace_root(env)),
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
