"""Configuration: TOML into Structs, errors that name the file and key, model resolution."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import write_config
from turnstoned import config, paths


def test_missing_file_gives_defaults(isolated_home: Path) -> None:
    cfg = config.load()
    assert cfg.tools.timeout == 120
    assert cfg.tools.approval_timeout_seconds == 0
    assert cfg.session.max_rounds == 50


def test_home_override_places_config_and_data(isolated_home: Path) -> None:
    assert paths.config_file() == isolated_home / "config" / "config.toml"
    assert paths.database_file().parent == isolated_home / "data"


def test_config_env_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "other.toml"
    f.write_text('[model]\nname = "m1"\n')
    monkeypatch.setenv("TURNSTONED_CONFIG", str(f))
    assert config.load().model.name == "m1"


def test_values_are_read(isolated_home: Path) -> None:
    write_config(isolated_home, '[model]\nname = "qwen"\nbase_url = "http://127.0.0.1:9/v1"\n'
                                'context_window = 8192\n[tools]\ntimeout = 30\nskip_permissions = true\n')
    cfg = config.load()
    assert (cfg.model.name, cfg.model.context_window, cfg.tools.timeout) == ("qwen", 8192, 30)
    assert cfg.tools.skip_permissions is True


@pytest.mark.parametrize(("text", "expected"), [
    ('[model]\nnmae = "x"\n', "unknown key `model.nmae`"),
    ('[toolz]\ntimeout = 3\n', "unknown key `toolz`"),
    ('[tools]\ntimeout = "soon"\n', "at key `tools.timeout`: expected `int`, got `str`"),
    ('[tools]\ntimeout = 99999\n', "at key `tools.timeout`: expected `int` <= 3600"),
    ('[model\nname=1', "not valid TOML"),
])
def test_errors_name_file_and_key(isolated_home: Path, text: str, expected: str) -> None:
    path = write_config(isolated_home, text)
    with pytest.raises(config.ConfigError) as info:
        config.load()
    assert str(path) in str(info.value)
    assert expected in str(info.value)


def test_model_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TURNSTONED_MODEL", "envmodel")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    m = config.resolve_model(config.ModelConfig())
    assert isinstance(m, config.ModelSettings)
    assert (m.name, m.base_url, m.api_key) == ("envmodel", "http://127.0.0.1:1/v1", "sk-env")


def test_config_wins_over_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TURNSTONED_MODEL", "envmodel")
    monkeypatch.setenv("MY_KEY", "sk-mine")
    m = config.resolve_model(config.ModelConfig(name="cfg", api_key_env="MY_KEY"))
    assert isinstance(m, config.ModelSettings)
    assert (m.name, m.api_key) == ("cfg", "sk-mine")


def test_session_override_wins() -> None:
    m = config.resolve_model(config.ModelConfig(name="cfg"), "override")
    assert isinstance(m, config.ModelSettings) and m.name == "override"


def test_no_model_explains_how_to_configure(isolated_home: Path) -> None:
    msg = config.resolve_model(config.ModelConfig())
    assert isinstance(msg, str)
    assert "TURNSTONED_MODEL" in msg and "[model]" in msg and str(paths.config_file()) in msg


def test_missing_api_key_env_is_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE_KEY", raising=False)
    msg = config.resolve_model(config.ModelConfig(name="x", api_key_env="NOPE_KEY"))
    assert isinstance(msg, str) and "NOPE_KEY" in msg


def test_a_named_config_file_that_is_missing_is_an_error(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "nope.toml"
    monkeypatch.setenv("TURNSTONED_CONFIG", str(missing))
    with pytest.raises(config.ConfigError) as info:
        config.load()
    assert str(missing) in str(info.value) and "TURNSTONED_CONFIG" in str(info.value)


def test_every_problem_is_listed_once(isolated_home: Path) -> None:
    path = write_config(isolated_home, '[model]\nnmae = "x"\ncontext_window = "big"\n'
                                       '[tools]\ntimeout = "soon"\nsearch = "maybe"\n'
                                       '[toolz]\na = 1\n[session]\nmax_rounds = 0\n')
    with pytest.raises(config.ConfigError) as info:
        config.load()
    lines = str(info.value).splitlines()
    expected = ["unknown key `model.nmae`", "at key `model.context_window`",
                "at key `tools.timeout`", "at key `tools.search`", "unknown key `toolz`",
                "at key `session.max_rounds`"]
    assert len(lines) == len(expected)
    for fragment in expected:
        assert sum(fragment in line for line in lines) == 1, (fragment, lines)
    assert all(line.startswith(str(path)) for line in lines)


def test_discovery_only_when_no_model_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    assert config.discovery_target(config.ModelConfig()) is None  # no URL either
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert config.discovery_target(config.ModelConfig()) == ("http://127.0.0.1:9/v1", "no-key")
    assert config.discovery_target(config.ModelConfig(name="m")) is None
    monkeypatch.setenv("TURNSTONED_MODEL", "m")
    assert config.discovery_target(config.ModelConfig()) is None


@pytest.mark.parametrize(("value", "mode"), [
    (None, "ask"), ('"ask"', "ask"), ('"never"', "never"), ('"trust"', "trust"),
    ("true", "ask"), ("false", "never"),
])
def test_project_config_modes_and_the_old_boolean(isolated_home: Path, value: str | None,
                                                  mode: str) -> None:
    write_config(isolated_home, "" if value is None else f"[mcp]\nproject_config = {value}\n")
    assert config.load().mcp.project_mode == mode


def test_an_unknown_project_config_mode_is_an_error(isolated_home: Path) -> None:
    write_config(isolated_home, '[mcp]\nproject_config = "sometimes"\n')
    with pytest.raises(config.ConfigError, match="mcp.project_config"):
        config.load()
