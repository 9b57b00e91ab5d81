"""The MCP servers a client passes to ``session/new`` (and ``session/load``): the user's own.

They are the user's configuration, handed over by their editor, so they are
merged as config.toml's servers are, trusted and started without a question
(unlike a cloned project's ``.mcp.json``): stdio servers with the given command,
arguments and environment (on top of the daemon's scrubbed one), HTTP servers
with the given headers. A name config.toml (or ``--mcp-config``) already uses
keeps the configured server. Servers are the engine's, shared by every session:
the ones the client passed stay for as long as this connection lives, and every
``session/new`` that passes a different set replaces them. SSE servers are not
offered (``mcpCapabilities.sse`` is false) and are skipped with a warning.
"""

from __future__ import annotations

import logging
from typing import Any

from turnstoned.acp.rpc import INVALID_PARAMS, AcpError
from turnstoned.mcp.config import ServerSpec

log = logging.getLogger(__name__)

ORIGIN = "acp:client"


def _pairs(raw: Any, field: str, name: str) -> dict[str, str]:
    """ACP's ``[{name, value}]`` lists (env, headers) as a mapping."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise _bad(f"{field} of server {name!r} must be a list of {{name, value}}")
    out: dict[str, str] = {}
    for pair in raw:
        if not (isinstance(pair, dict) and isinstance(pair.get("name"), str)
                and isinstance(pair.get("value"), str)):
            raise _bad(f"{field} of server {name!r} must be a list of {{name, value}}")
        out[pair["name"]] = pair["value"]
    return out


def _bad(problem: str) -> AcpError:
    return AcpError(INVALID_PARAMS, f"Invalid params: {problem} - at `params.mcpServers`",
                    "invalidParams")


def specs(raw: list[dict[str, Any]]) -> list[ServerSpec]:
    """The client's servers as specs; ``-32602`` naming the entry that cannot be read."""
    found: dict[str, ServerSpec] = {}
    for entry in raw:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) \
                or not entry["name"].strip():
            raise _bad("every server needs a name")
        name = entry["name"].strip()
        kind = entry.get("type")
        if kind in ("http", "sse"):
            url = entry.get("url")
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise _bad(f"server {name!r} needs an http(s) url")
            if kind == "sse":
                log.warning("MCP server %r uses SSE, which this agent does not offer; skipped",
                            name)
                continue
            found[name] = ServerSpec(name=name, type="http", url=url,
                                     headers=_pairs(entry.get("headers"), "headers", name),
                                     origin=ORIGIN)
        elif kind in (None, "stdio"):
            command = entry.get("command")
            args = entry.get("args") or []
            if not isinstance(command, str) or not command.strip():
                raise _bad(f"server {name!r} needs a command")
            if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
                raise _bad(f"args of server {name!r} must be strings")
            found[name] = ServerSpec(name=name, type="stdio", command=command, args=list(args),
                                     env=_pairs(entry.get("env"), "env", name), origin=ORIGIN)
        else:
            raise _bad(f"server {name!r} has an unknown type {kind!r}")
    return list(found.values())
