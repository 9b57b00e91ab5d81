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


@pytest.mark.parametrize(
    "name",
    ["PGPASSWORD", "MYSQL_PWD", "PASSWORD", "GITHUB_PAT", "AZURE_DEVOPS_PAT",
     "AWS_ACCESS_KEY_ID", "SENTRY_DSN", "SMTP_PASS", "DB_PASSWD", "GPG_PASSPHRASE",
     "NPM_CONFIG__AUTH", "MAPS_APIKEY"],
)  # fmt: skip
def test_credential_carrying_names_are_dropped(name: str) -> None:
    assert scrub_env({name: "v", "PATH": "/bin"}) == {"PATH": "/bin"}


@pytest.mark.parametrize(
    "name,value",
    [
        ("REDIS_URL", "redis://:s3cret@cache:6379/0"),
        ("MONGODB_URI", "mongodb+srv://app:pw123@cluster0.example.net/db"),
        ("DATABASE_URL", "postgres://app:pw@db/app"),
        ("UPSTREAM", "https://user:hunter2@example.com/repo.git"),
        ("PG_CONN", "host=db user=app password=hunter2 dbname=app"),
        ("MSSQL", "Server=db;Database=app;User Id=sa;Pwd=Hunter2;"),
    ],
)
def test_values_with_a_password_are_dropped_whatever_the_name(name: str, value: str) -> None:
    assert scrub_env({name: value}) == {}


@pytest.mark.parametrize(
    "name,value",
    [
        ("REDIS_URL", "redis://cache:6379/0"),
        ("MONGODB_URI", "mongodb://db.example.net:27017"),
        ("HTTP_PROXY", "http://proxy.local:3128"),
        ("GIT_ASKPASS", "/usr/lib/git-core/git-gui--askpass"),
        ("OLDPWD", "/home/me"),
        ("NO_BYPASS", "1"),
        ("CLASSPATH", "/opt/lib"),
        ("DOCS_URL", "https://docs.example.com/a:b@c"),
    ],
)
def test_values_without_a_password_are_kept(name: str, value: str) -> None:
    assert scrub_env({name: value}) == {name: value}


def test_passthrough_keeps_a_url_with_a_password() -> None:
    env = {"DATABASE_URL": "postgres://app:pw@db/app"}
    assert scrub_env(env, passthrough=["DATABASE_URL"]) == env


@pytest.mark.parametrize(
    "name",
    ["APIKEY", "SECRET", "TOKEN", "JWT", "CI_JOB_JWT", "CI_JOB_JWT_V2", "ID_TOKEN_JWT",
     "SLACK_WEBHOOK_URL", "DISCORD_WEBHOOK", "TEAMS_WEBHOOK_URL", "WEBHOOK_URL",
     "GITHUB_WEBHOOK_SECRET", "API_KEY_V2", "npm_config_//registry.npmjs.org/:_authToken",
     "npm_config_//npm.acme.dev/:_auth"],
)  # fmt: skip
def test_bare_jwt_and_webhook_names_are_dropped(name: str) -> None:
    assert scrub_env({name: "v", "PATH": "/bin"}) == {"PATH": "/bin"}


@pytest.mark.parametrize(
    "name", ["JWT_ALGORITHM", "SECRETARY", "TOKENIZERS_PARALLELISM", "KEY", "HOOKS_DIR",
             "ENV_VERSION", "LAYOUT_V2"],
)  # fmt: skip
def test_names_near_the_new_ones_are_kept(name: str) -> None:
    assert scrub_env({name: "v"}) == {name: "v"}


def test_passthrough_keeps_a_webhook_and_a_jwt() -> None:
    env = {"SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T1/B2/x", "CI_JOB_JWT": "e",
           "SECRET": "s"}
    kept = scrub_env(env, passthrough=["SLACK_WEBHOOK_URL", "CI_JOB_JWT"])
    assert kept == {"SLACK_WEBHOOK_URL": env["SLACK_WEBHOOK_URL"], "CI_JOB_JWT": "e"}
