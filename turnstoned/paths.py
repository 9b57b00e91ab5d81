"""Where turnstoned keeps its configuration and data.

``TURNSTONED_HOME=DIR`` puts both under DIR (``DIR/config``, ``DIR/data``);
otherwise platformdirs' user dirs for the app "turnstone" are used.
``TURNSTONED_CONFIG`` names the config file directly.
"""

from __future__ import annotations

import os
from pathlib import Path

APP = "turnstone"


def _home() -> Path | None:
    home = os.environ.get("TURNSTONED_HOME")
    return Path(home).expanduser() if home else None


def config_dir() -> Path:
    home = _home()
    if home is not None:
        return home / "config"
    import platformdirs

    return Path(platformdirs.user_config_dir(APP))


def data_dir() -> Path:
    home = _home()
    if home is not None:
        return home / "data"
    import platformdirs

    return Path(platformdirs.user_data_dir(APP))


def config_file() -> Path:
    override = os.environ.get("TURNSTONED_CONFIG")
    return Path(override).expanduser() if override else config_dir() / "config.toml"


def database_file() -> Path:
    return data_dir() / "turnstoned.sqlite3"
