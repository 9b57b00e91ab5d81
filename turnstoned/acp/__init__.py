"""The ACP front: the Agent Client Protocol (v1, newline-delimited JSON-RPC on stdio) over the engine.

A front beside ``daemon/``, not a fork of it: the same ``core.engine.Engine``,
seen through an ``EventSink`` (``sink``) that turns engine events into
``session/update`` notifications and approval cycles into
``session/request_permission``. Only this package speaks ACP's JSON-RPC; see
docs/acp.md for what is mapped how.

The projection is written against the ACP schema, not with an ACP SDK: the
wire is a few dozen plain JSON shapes that msgspec validates as the rest of the
daemon does, the daemon keeps its own error discipline (never a traceback on
the wire), starts without pydantic's model building, and the official SDKs
(the Python ``agent-client-protocol`` and the TypeScript
``@agentclientprotocol/sdk``) then test it from outside as independent clients,
instead of one SDK checking itself on both ends.

Modules: ``server`` (the process), ``rpc`` (the JSON-RPC connection), ``wire``
(the ACP shapes read), ``engines`` (the engine, built after ``initialize``),
``agent`` (the requests), ``prompt`` (content blocks to the engine's input),
``servers`` (the client's MCP servers), ``commands`` (the slash commands),
``sink`` (engine events to updates), ``updates`` (items as tool calls, chunks
and plans), ``permission`` (approval cycles).
"""
