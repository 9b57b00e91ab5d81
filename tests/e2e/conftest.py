"""The environment of a real daemon process: an isolated home and the scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.model_server import ScriptedModel


@pytest.fixture
def env(model: ScriptedModel, isolated_home: Path) -> dict[str, str]:
    return {"TURNSTONED_HOME": str(isolated_home), "OPENAI_BASE_URL": model.base_url,
            "OPENAI_API_KEY": "sk-test", "TURNSTONED_MODEL": "scripted"}
