"""The package type-checks under mypy --strict (configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(600)  # a whole-package --strict run; slow on a loaded machine
def test_mypy_strict_is_clean() -> None:
    out = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental"], check=False, cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
