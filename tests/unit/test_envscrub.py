"""Secret scrubbing of subprocess environments."""

from __future__ import annotations

import pytest

from turnstoned.envscrub import scrub_env


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "TURNSTONE_JWT_SECRET",
        "TURNSTONE_GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "DATABASE_URL",
        "TURNSTONE_DB_URL",
        "RIPGREP_CONFIG_PATH",
        "GIT_CONFIG_GLOBAL",
        "GCP_SERVICE_ACCOUNT_KEY",
    ],
)
def test_exact_secret_names_are_dropped(name: str) -> None:
    assert name not in scrub_env({name: "x"})


@pytest.mark.parametrize(
    "name",
    [
        "STRIPE_KEY",
        "MY_SECRET",
        "GH_TOKEN",
        "DB_PASSWORD",
        "SERVICE_CREDENTIAL",
        "SERVICE_CREDENTIALS",
        "lowercase_api_token",
        "LESS_SECRET_TOKEN",
    ],
)
def test_secret_suffixes_are_dropped(name: str) -> None:
    assert scrub_env({name: "x"}) == {}


@pytest.mark.parametrize(
    "name",
    [
        "MONKEYTYPE",
        "KEYBOARD_LAYOUT",
        "PYTHONPATH",
        "GOPATH",
        "TOKENIZERS_PARALLELISM",
        "SECRETARY",
        "KEY",
        "MY_KEYS",
        "PASSWORD_STORE_DIR",
    ],
)
def test_no_substring_false_positives(name: str) -> None:
    assert scrub_env({name: "v"}) == {name: "v"}


@pytest.mark.parametrize(
    "name",
    ["PATH", "HOME", "LANG", "TERM", "SSH_AUTH_SOCK", "LESS", "LESSOPEN", "LC_ALL", "LC_CTYPE",
     "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME"],
)  # fmt: skip
def test_safe_names_and_prefixes_are_kept(name: str) -> None:
    assert scrub_env({name: "v"}) == {name: "v"}


def test_safe_prefix_wins_over_secret_suffix() -> None:
    # XDG_ is a safe prefix; the safe list is consulted before the secret rules.
    assert scrub_env({"XDG_SESSION_TOKEN": "v"}) == {"XDG_SESSION_TOKEN": "v"}


def test_less_secret_token_dropped_while_less_kept() -> None:
    env = {"LESS": "-R", "LESSOPEN": "|x %s", "LESS_SECRET_TOKEN": "t"}
    assert scrub_env(env) == {"LESS": "-R", "LESSOPEN": "|x %s"}


def test_passthrough_keeps_a_named_secret() -> None:
    env = {"OPENAI_API_KEY": "k", "GH_TOKEN": "t"}
    assert scrub_env(env, passthrough=["GH_TOKEN"]) == {"GH_TOKEN": "t"}


def test_extra_is_merged_on_top_and_may_reintroduce() -> None:
    env = {"PATH": "/bin", "OPENAI_API_KEY": "k"}
    out = scrub_env(env, extra={"OPENAI_API_KEY": "scoped", "SKILL_DIR": "/s"})
    assert out == {"PATH": "/bin", "OPENAI_API_KEY": "scoped", "SKILL_DIR": "/s"}


def test_input_is_not_modified() -> None:
    env = {"OPENAI_API_KEY": "k", "PATH": "/bin"}
    scrub_env(env)
    assert env == {"OPENAI_API_KEY": "k", "PATH": "/bin"}
