"""The ACP v1 shapes the agent reads, as msgspec Structs (camelCase on the wire).

Only what the agent reads is declared; unknown fields (``_meta``, fields a later
schema adds) are ignored. What the agent writes is built as plain JSON where it
is sent (``agent``, ``updates``, ``permission``), field for field as the schema
(schema/v1/schema.json of ``@agentclientprotocol/sdk``) names them.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

PROTOCOL_VERSION = 1
# The ids of the session modes: turnstoned's approval modes.
MODES = ("read-only", "auto", "full-access", "plan")


class In(msgspec.Struct, rename="camel", kw_only=True):
    """Base of what the client sends."""


class FsCapabilities(In, kw_only=True):
    read_text_file: bool = False
    write_text_file: bool = False


class ClientSessionCapabilities(In, kw_only=True):
    """Present-and-not-null means supported (``{}``)."""

    notices: dict[str, Any] | None = None
    compaction: dict[str, Any] | None = None
    config_options: dict[str, Any] | None = None


class ClientCapabilities(In, kw_only=True):
    fs: FsCapabilities = msgspec.field(default_factory=FsCapabilities)
    terminal: bool = False
    session: ClientSessionCapabilities | None = None
    elicitation: dict[str, Any] | None = None
    # ``{"turnstoned": {"notifications": true}}``: send the ``_turnstoned/`` notifications.
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")

    def wants_extensions(self) -> bool:
        mine = (self.meta or {}).get("turnstoned")
        return isinstance(mine, dict) and mine.get("notifications") is True


class Implementation(In, kw_only=True):
    name: str
    version: str = ""
    title: str | None = None


class InitializeParams(In, kw_only=True):
    protocol_version: int
    client_capabilities: ClientCapabilities = msgspec.field(default_factory=ClientCapabilities)
    client_info: Implementation | None = None


class AuthenticateParams(In, kw_only=True):
    method_id: str


class SessionOptions(In, kw_only=True):
    """``_meta.turnstoned`` of ``session/new``: what ACP has no field for."""

    kind: Literal["interactive", "coordinator"] = "interactive"
    model: str | None = None
    approval_mode: Literal["read-only", "auto", "full-access", "plan"] | None = None
    title: str | None = None


class NewSessionMeta(In, kw_only=True):
    turnstoned: SessionOptions = msgspec.field(default_factory=SessionOptions)


class NewSessionParams(In, kw_only=True):
    cwd: str
    # McpServer: stdio entries carry no ``type``, so they are read by hand (``servers``).
    mcp_servers: list[dict[str, Any]] | None = None
    additional_directories: list[str] | None = None
    meta: NewSessionMeta | None = msgspec.field(default=None, name="_meta")


class LoadSessionParams(In, kw_only=True):
    """``session/load`` and ``session/resume``."""

    session_id: str
    cwd: str | None = None
    mcp_servers: list[dict[str, Any]] | None = None


class ListSessionsParams(In, kw_only=True):
    cwd: str | None = None
    cursor: str | None = None


class SessionRef(In, kw_only=True):
    session_id: str


class SetModeParams(In, kw_only=True):
    session_id: str
    mode_id: str


class SetConfigOptionParams(In, kw_only=True):
    session_id: str
    config_id: str
    value: str | bool
    type: str | None = None


# ---------------------------------------------------------------- prompt content


class TextBlock(In, kw_only=True, tag="text", tag_field="type"):
    text: str


class ImageBlock(In, kw_only=True, tag="image", tag_field="type"):
    data: str
    mime_type: str
    uri: str | None = None


class AudioBlock(In, kw_only=True, tag="audio", tag_field="type"):
    data: str
    mime_type: str


class ResourceLinkBlock(In, kw_only=True, tag="resource_link", tag_field="type"):
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None


class ResourceContents(In, kw_only=True):
    """A text (``text``) or binary (``blob``, base64) resource."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None


class ResourceBlock(In, kw_only=True, tag="resource", tag_field="type"):
    resource: ResourceContents


ContentBlock = TextBlock | ImageBlock | AudioBlock | ResourceLinkBlock | ResourceBlock


class PromptParams(In, kw_only=True):
    session_id: str
    prompt: list[ContentBlock]


# ---------------------------------------------------------------- answers to our requests


class PermissionOutcome(In, kw_only=True):
    outcome: Literal["selected", "cancelled"]
    option_id: str | None = None


class PermissionResponse(In, kw_only=True):
    outcome: PermissionOutcome


class ReadTextFileResponse(In, kw_only=True):
    content: str
