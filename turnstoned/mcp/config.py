"""MCP server configuration: the user's sources merged into validated ``ServerSpec``s.

The user's sources, lowest precedence first (a name defined in a later source
replaces the whole entry of an earlier one; fields are never merged across
sources):

1. the ``{"mcpServers": {...}}`` JSON file named by ``--mcp-config`` or
   ``[mcp] config_path`` (origin ``mcp-config:<path>``);
2. the ``[mcp.servers.NAME]`` tables of config.toml (origin ``config``).

A project's ``.mcp.json`` is not the user's: ``project`` reads it and parses
it only once the user trusted that exact content (``parse_entries`` with
``project_dir``), and its servers join after the user's, whose names win.
A bad higher-precedence entry is not replaced by a good lower one (that would
silently run a command the user did not write); it becomes a ``ConfigIssue``
and that server is disabled.

Entry fields: stdio ``command``, ``args``, ``env``, ``cwd``; HTTP ``type = "http"``
(also ``"streamable-http"``/``"streamableHttp"``; an entry with ``url`` and no
``type`` is HTTP), ``url``, ``headers``; both take ``timeout`` (seconds per call)
and ``enabled``/``disabled``; HTTP also ``oauth`` (``OAuthSpec``: ``false`` turns
OAuth off). Strings may use ``${VAR}`` and ``${VAR:-default}``,
expanded from the daemon's environment. A relative ``cwd`` from a JSON file is
taken relative to that file; project stdio servers default to the project folder.
Unknown keys (other agents' ``autoApprove`` and the like) are ignored.

Nothing here raises on bad input: every problem becomes a ``ConfigIssue``
naming the server (``name == ""`` for a whole-file problem) and its origin.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec

log = logging.getLogger(__name__)

NAME_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,64}")
VAR_PATTERN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_HTTP_TYPES = frozenset({"http", "streamable-http", "streamable_http", "streamableHttp"})


class OAuthSpec(msgspec.Struct, kw_only=True, frozen=True):
    """An HTTP server's ``oauth`` table. Everything is optional: a server that answers 401
    is discovered and registered with by itself. ``client_id`` (and ``client_secret``)
    name a client registered by hand; ``client_metadata_url`` is the HTTPS address of the
    user's client ID metadata document, used where the authorization server accepts one;
    ``grant = "client_credentials"`` logs in as a machine (a secret, or ``private_key``,
    a PEM signing a JWT assertion with ``signing_algorithm``)."""

    enabled: bool = True
    grant: Literal["authorization_code", "client_credentials"] = "authorization_code"
    client_id: str = ""
    client_secret: str = ""
    scope: str = ""
    client_metadata_url: str = ""
    token_endpoint_auth_method: Literal[
        "", "none", "client_secret_basic", "client_secret_post"] = ""
    private_key: str = ""
    signing_algorithm: str = "RS256"


class ServerSpec(msgspec.Struct, kw_only=True, frozen=True):
    """One configured MCP server, validated."""

    name: str
    type: Literal["stdio", "http"]
    command: str = ""
    args: list[str] = []
    env: dict[str, str] = {}
    cwd: str | None = None
    url: str = ""
    headers: dict[str, str] = {}
    oauth: OAuthSpec | None = None  # None: the defaults (OAuth on a 401)
    origin: str = "config"
    timeout: float | None = None  # per-call timeout override, seconds
    enabled: bool = True


class ConfigIssue(msgspec.Struct, kw_only=True, frozen=True):
    """A configuration problem; the named server (if any) is disabled."""

    name: str
    origin: str
    message: str


class EntryError(ValueError):
    """One entry cannot be used; the message is shown to the user."""


def load_servers(
    config_servers: Mapping[str, Mapping[str, Any]] | None,
    *,
    mcp_config_path: Path | None,
    environ: Mapping[str, str] | None = None,
) -> tuple[list[ServerSpec], list[ConfigIssue]]:
    """Merge the user's sources (see the module docstring) into specs and issues.

    Specs come out in precedence order of first definition: the JSON file's,
    then config.toml's, each in file order.
    """
    env = os.environ if environ is None else environ
    issues: list[ConfigIssue] = []
    layers: list[tuple[str, Mapping[str, Any], Path | None]] = []
    if mcp_config_path is not None:
        origin = f"mcp-config:{mcp_config_path}"
        table = _read_json_servers(mcp_config_path, origin, issues)
        layers.append((origin, table, mcp_config_path.parent))
    if config_servers:
        layers.append(("config", config_servers, None))
    merged: dict[str, ServerSpec | ConfigIssue] = {}
    for origin, table, base_dir in layers:
        for name, raw in table.items():
            if name in merged:
                log.info(
                    "MCP server %r from %s replaces the one from %s",
                    name,
                    origin,
                    _origin_of(merged[name]),
                )
                del merged[name]  # re-insert so the order shows where the winner came from
            merged[name] = _parse_entry(str(name), raw, origin, base_dir, None, env)
    specs = [item for item in merged.values() if isinstance(item, ServerSpec)]
    issues.extend(item for item in merged.values() if isinstance(item, ConfigIssue))
    return specs, issues


def parse_entries(
    table: Mapping[str, Any],
    origin: str,
    *,
    project_dir: Path,
    environ: Mapping[str, str] | None = None,
) -> tuple[list[ServerSpec], list[ConfigIssue]]:
    """A trusted project file's entries, expanded (relative ``cwd``s from ``project_dir``)."""
    env = os.environ if environ is None else environ
    parsed = [
        _parse_entry(str(name), raw, origin, project_dir, project_dir, env)
        for name, raw in table.items()
    ]
    return (
        [item for item in parsed if isinstance(item, ServerSpec)],
        [item for item in parsed if isinstance(item, ConfigIssue)],
    )


def _origin_of(item: ServerSpec | ConfigIssue) -> str:
    return item.origin


def _read_json_servers(path: Path, origin: str, issues: list[ConfigIssue]) -> Mapping[str, Any]:
    """The ``mcpServers`` table of a JSON file, or {} with an issue recorded."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        issues.append(ConfigIssue(name="", origin=origin, message=f"{path}: file not found"))
        return {}
    except OSError as exc:
        issues.append(ConfigIssue(name="", origin=origin, message=f"{path}: cannot read: {exc}"))
        return {}
    return servers_table(data, path, origin, issues)


def servers_table(
    data: bytes, path: Path, origin: str, issues: list[ConfigIssue]
) -> Mapping[str, Any]:
    """The ``mcpServers`` table of a JSON document, or {} with an issue recorded."""
    try:
        document = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        issues.append(ConfigIssue(name="", origin=origin, message=f"{path}: cannot read: {exc}"))
        return {}
    except json.JSONDecodeError as exc:
        message = f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        issues.append(ConfigIssue(name="", origin=origin, message=message))
        return {}
    servers = document.get("mcpServers") if isinstance(document, dict) else None
    if not isinstance(servers, dict):
        message = f'{path}: expected a top-level object {{"mcpServers": {{...}}}}'
        issues.append(ConfigIssue(name="", origin=origin, message=message))
        return {}
    return servers


def _parse_entry(
    name: str,
    raw: Any,
    origin: str,
    base_dir: Path | None,
    project: Path | None,
    env: Mapping[str, str],
) -> ServerSpec | ConfigIssue:
    try:
        kind = check_entry(name, raw)
        expand = _expander(env)
        common: dict[str, Any] = {
            "name": name,
            "origin": origin,
            "timeout": _timeout(raw.get("timeout")),
            "enabled": _enabled(raw),
        }
        if kind == "http":
            oauth = _oauth(raw.get("oauth"), expand, base_dir, project is not None)
            return ServerSpec(type="http", **common, **_http_fields(raw, expand), oauth=oauth)
        return ServerSpec(type="stdio", **common, **_stdio_fields(raw, expand, base_dir, project))
    except EntryError as exc:
        return entry_issue(name, origin, str(exc))


def check_entry(name: str, raw: Any) -> Literal["stdio", "http"]:
    """The entry's transport; raises ``EntryError`` for a bad name, shape or type.

    Reads no environment variable: safe on an untrusted entry.
    """
    _check_name(name)
    if not isinstance(raw, Mapping):
        raise EntryError(f"expected a table/object, got {_kind(raw)}")
    return _transport(raw)


def entry_issue(name: str, origin: str, message: str) -> ConfigIssue:
    """The issue that disables the entry ``name``."""
    text = f"MCP server {name!r} ({origin}): {message}"
    return ConfigIssue(name=name, origin=origin, message=text)


def _check_name(name: str) -> None:
    if "__" in name:
        raise EntryError(
            "the name contains '__', which is reserved as the separator in tool names "
            "(mcp__<server>__<tool>); rename the server"
        )
    if not NAME_PATTERN.fullmatch(name):
        raise EntryError(
            "a server name must be 1-64 characters of letters, digits, '.', '_' or '-'"
        )


def _transport(raw: Mapping[str, Any]) -> Literal["stdio", "http"]:
    kind = raw.get("type")
    if kind is None:
        return "http" if "url" in raw and "command" not in raw else "stdio"
    if not isinstance(kind, str):
        raise EntryError(f"'type' must be a string, got {_kind(kind)}")
    if kind == "stdio":
        return "stdio"
    if kind in _HTTP_TYPES:
        return "http"
    if kind == "sse":
        raise EntryError(
            "the legacy SSE transport is not supported; use type 'http' (streamable HTTP)"
        )
    raise EntryError(f"unknown type {kind!r} (expected 'stdio' or 'http')")


def _stdio_fields(
    raw: Mapping[str, Any],
    expand: Callable[[str], str],
    base_dir: Path | None,
    project: Path | None,
) -> dict[str, Any]:
    command = raw.get("command")
    if not isinstance(command, str) or not command.strip():
        got = "nothing" if command is None else _kind(command)
        raise EntryError(f"'command' must be a non-empty string (got {got})")
    args = raw.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str | int | float) for a in args):
        raise EntryError("'args' must be a list of strings")
    cwd = raw.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise EntryError(f"'cwd' must be a string, got {_kind(cwd)}")
    resolved_cwd = (
        _resolve_cwd(expand(cwd), base_dir) if cwd else (str(project) if project else None)
    )
    return {
        "command": os.path.expanduser(expand(command.strip())),
        "args": [expand(str(a)) for a in args],
        "env": _string_map(raw.get("env"), "env", expand),
        "cwd": resolved_cwd,
    }


def _http_fields(raw: Mapping[str, Any], expand: Callable[[str], str]) -> dict[str, Any]:
    url = raw.get("url")
    if not isinstance(url, str) or not url.strip():
        raise EntryError("'url' must be a non-empty string for an HTTP server")
    url = expand(url.strip())
    if not url.startswith(("http://", "https://")):
        raise EntryError(f"'url' must start with http:// or https:// (got {url!r})")
    return {"url": url, "headers": _string_map(raw.get("headers"), "headers", expand)}


_OAUTH_KEYS = frozenset(OAuthSpec.__struct_fields__) - {"enabled"} | {"private_key_file"}
_OAUTH_CREDENTIALS = frozenset({"client_id", "client_secret", "private_key", "private_key_file",
                                "client_metadata_url", "grant"})


def _oauth(raw: Any, expand: Callable[[str], str], base_dir: Path | None,
           from_project: bool) -> OAuthSpec | None:
    """The ``oauth`` entry: ``false`` turns OAuth off, a table configures it. A project's
    file may name scopes only: credentials come from the user's own configuration."""
    if raw is None or raw is True:
        return None
    if raw is False:
        return OAuthSpec(enabled=False)
    if not isinstance(raw, Mapping):
        raise EntryError(f"'oauth' must be a table/object or false, got {_kind(raw)}")
    unknown = sorted(set(raw) - _OAUTH_KEYS)
    if unknown:
        raise EntryError(f"'oauth' has unknown keys: {', '.join(unknown)}")
    if from_project and _OAUTH_CREDENTIALS & set(raw):
        raise EntryError("a project's .mcp.json may not name OAuth credentials "
                         "(client_id, client_secret, private_key, grant); put them in your "
                         "own configuration")
    fields = _string_map(raw, "oauth", expand)
    key_file = fields.pop("private_key_file", "")
    if key_file:
        path = Path(_resolve_cwd(key_file, base_dir))
        try:
            fields["private_key"] = path.read_text()
        except OSError as exc:
            raise EntryError(f"'oauth.private_key_file' {path}: {exc.strerror or exc}") from None
    try:
        spec = msgspec.convert(fields, OAuthSpec)
    except msgspec.ValidationError as exc:
        raise EntryError(f"'oauth': {exc}") from None
    if spec.grant == "client_credentials" and not (
            spec.client_id and (spec.client_secret or spec.private_key)):
        raise EntryError("'oauth.grant = \"client_credentials\"' needs client_id and "
                         "client_secret or private_key")
    if spec.client_metadata_url and not spec.client_metadata_url.startswith("https://"):
        raise EntryError("'oauth.client_metadata_url' must be an https:// URL")
    return spec


def _resolve_cwd(cwd: str, base_dir: Path | None) -> str:
    path = Path(os.path.expanduser(cwd))
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    return str(path)


def _string_map(value: Any, key: str, expand: Callable[[str], str]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise EntryError(f"'{key}' must be a table/object of strings, got {_kind(value)}")
    out: dict[str, str] = {}
    for k, v in value.items():
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise EntryError(f"'{key}.{k}' must be a string, got {_kind(v)}")
        out[str(k)] = expand(str(v))
    return out


def _timeout(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise EntryError(f"'timeout' must be a positive number of seconds, got {value!r}")
    return float(value)


def _enabled(raw: Mapping[str, Any]) -> bool:
    enabled, disabled = raw.get("enabled", True), raw.get("disabled", False)
    if not isinstance(enabled, bool) or not isinstance(disabled, bool):
        raise EntryError("'enabled' and 'disabled' must be true or false")
    return enabled and not disabled


def _expander(env: Mapping[str, str]) -> Callable[[str], str]:
    def expand(text: str) -> str:
        def one(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            value = env.get(name)
            if default is not None and not value:
                return default
            if value is not None:
                return value
            raise EntryError(f"environment variable {name} is not set (used as ${{{name}}})")

        return VAR_PATTERN.sub(one, text) if "${" in text else text

    return expand


def _kind(value: Any) -> str:
    names = {str: "a string", bool: "a boolean", int: "a number", float: "a number", list: "a list"}
    return names.get(type(value), "a table" if isinstance(value, Mapping) else type(value).__name__)
