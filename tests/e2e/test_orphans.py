"""No child outlives the daemon: kill -9, SIGTERM or SIGHUP while every kind of child runs."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.e2e.orphans import Outcome, Scene
from tests.fakes.model_server import ScriptedModel


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP],
                         ids=["kill-9", "term", "hup"])
def test_children_die_with_the_daemon(model: ScriptedModel, tmp_path: Path, sig: int) -> None:
    scene = Scene(model, tmp_path)
    outcome: Outcome | None = None
    try:
        outcome = scene.kill(sig)
        # the MCP server and its helper, a background shell, 3 sleeps of a foreground
        # bash, rg/grep
        assert len(outcome.children) == 7, outcome
        assert outcome.survivors == set(), f"orphans: {sorted(outcome.survivors)}"
        assert outcome.scripts_left == []
    finally:
        scene.clean_up(outcome)
