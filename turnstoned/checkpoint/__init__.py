"""Checkpoints of a workspace: snapshots in a shadow git repository, their changes and restores.

``shadow`` holds the repository. Which snapshot belongs to which turn, and undo, are core's
(``core.undo``)."""

from turnstoned.checkpoint.shadow import (
    Change,
    CheckpointError,
    ShadowRepo,
    Snapshot,
    TooBig,
)

__all__ = ["Change", "CheckpointError", "ShadowRepo", "Snapshot", "TooBig"]
