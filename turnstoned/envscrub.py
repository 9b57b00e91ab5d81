"""Secret scrubbing for the environments of the subprocesses the daemon starts.

Used for bash (foreground and background), search, the bash_output filter
helper and MCP stdio servers. A variable survives when it is passed through
explicitly, is on the safe list, or does not look like a secret. Secrets are
recognised by exact name (also the bare ``SECRET``, ``APIKEY``, ``TOKEN``), by a
trailing ``_KEY``/``_SECRET``/``_PAT``/``_JWT``/... segment (suffix matching,
not substring, keeps names such as ``MONKEYTYPE`` and ``KEYBOARD_LAYOUT``), by
``WEBHOOK`` anywhere in the name (a webhook URL is its own credential:
``SLACK_WEBHOOK_URL``), or by a value that carries a password: a URL with
``user:password@`` (``REDIS_URL``, ``MONGODB_URI``, ``DATABASE_URL``, any
name) or a ``password=`` connection string.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

SAFE_NAMES: frozenset[str] = frozenset(
    {
        "PATH", "HOME", "USER", "SHELL", "LANG", "TERM", "TMPDIR", "TMP", "TEMP",
        "EDITOR", "VISUAL", "COLORTERM", "COLUMNS", "LINES", "PWD", "OLDPWD",
        "HOSTNAME", "LOGNAME", "DISPLAY", "WAYLAND_DISPLAY", "SSH_AUTH_SOCK",
        "GPG_AGENT_INFO", "SHLVL", "MANWIDTH", "MAN_KEEP_FORMATTING", "LESS",
        "LESSOPEN", "LESSCLOSE", "LESSPIPE", "LESSCHARSET",
    }
)  # fmt: skip
SAFE_PREFIXES: tuple[str, ...] = ("LC_", "XDG_")

SECRET_NAMES: frozenset[str] = frozenset(
    {
        "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "TURNSTONE_JWT_SECRET",
        "TURNSTONE_DISCORD_TOKEN", "TURNSTONE_GITHUB_TOKEN",
        "TURNSTONE_OIDC_CLIENT_SECRET", "AWS_SECRET_ACCESS_KEY",
        "AZURE_CLIENT_SECRET", "GCP_SERVICE_ACCOUNT_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS", "DATABASE_URL", "TURNSTONE_DB_URL",
        "RIPGREP_CONFIG_PATH", "GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
        "PASSWORD", "PASSWD", "PGPASSWORD", "MYSQL_PWD", "AWS_ACCESS_KEY_ID",
        "NPM_CONFIG__AUTH", "NPM_CONFIG__AUTHTOKEN", "DOCKER_AUTH_CONFIG",
        "SECRET", "APIKEY", "TOKEN", "JWT", "CREDENTIALS", "PASSPHRASE",
    }
)  # fmt: skip
SECRET_SUFFIXES: tuple[str, ...] = (
    "_KEY", "_SECRET", "_TOKEN", "_PASSWORD", "_PASSWD", "_PASS", "_PWD", "_PASSPHRASE",
    "_CREDENTIAL", "_CREDENTIALS", "_PAT", "_DSN", "_APIKEY", "_JWT", "_AUTHTOKEN", ":_AUTH",
)  # fmt: skip
# Anywhere in the name: a webhook URL carries its own secret (SLACK_WEBHOOK_URL).
SECRET_PARTS: tuple[str, ...] = ("WEBHOOK",)
# CI_JOB_JWT_V2: a version after a secret suffix.
_VERSIONED = re.compile(r"(?P<name>.+)_V\d{1,3}")
# scheme://user:password@host (the user may be empty, as in redis://:pw@host).
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@")
# libpq / ODBC style: "host=db user=app password=..." or "Pwd=...;".
_CONNINFO_PASSWORD = re.compile(r"(?:^|[\s;])(?:password|pwd)\s*=\s*[^\s;]", re.IGNORECASE)


def is_safe_name(name: str) -> bool:
    """True for names on the safe list (exact, case-sensitive) or with a safe prefix."""
    return name in SAFE_NAMES or name.startswith(SAFE_PREFIXES)


def is_secret_name(name: str) -> bool:
    """True for names that are known secrets, end with a secret-looking segment (a version
    after it allowed) or contain a secret-looking part."""
    upper = name.upper()
    versioned = _VERSIONED.fullmatch(upper)
    base = versioned.group("name") if versioned else upper
    return (upper in SECRET_NAMES or upper.endswith(SECRET_SUFFIXES)
            or base.endswith(SECRET_SUFFIXES) or any(p in upper for p in SECRET_PARTS))


def carries_password(value: str) -> bool:
    """True for a URL with a password in it, or a connection string with ``password=``."""
    return bool(_URL_PASSWORD.search(value) or _CONNINFO_PASSWORD.search(value))


def is_secret(name: str, value: str) -> bool:
    """True when the variable ``name=value`` must not reach a child process."""
    if is_safe_name(name):
        return False
    return is_secret_name(name) or carries_password(value)


def scrub_env(
    environ: Mapping[str, str],
    *,
    passthrough: Iterable[str] = (),
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """A copy of ``environ`` without secrets, with ``extra`` merged on top.

    ``passthrough`` names are kept whatever they look like (an operator's
    explicit choice); ``extra`` may re-introduce a scrubbed name on purpose.
    """
    keep = frozenset(passthrough)
    result = {
        name: value
        for name, value in environ.items()
        if name in keep or not is_secret(name, value)
    }
    if extra:
        result.update(extra)
    return result
