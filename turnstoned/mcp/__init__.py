"""MCP client side of the daemon: configuration, connections, catalog, calls.

Importing this package does not import the MCP SDK (it costs ~0.8 s); only
``connection``, ``auth`` and ``discovery`` do, and ``manager`` loads them on the first
connect.

Public interface:

- ``config.load_servers(config_servers, mcp_config_path=)`` ->
  ``(list[ServerSpec], list[ConfigIssue])``: the user's two sources merged,
  mcp-config JSON file < config.toml.
- ``project``: a project's ``.mcp.json`` read once and hashed (``read_project``),
  described unexpanded (``preview``); ``trust.ProjectTrust`` lists its servers
  ``untrusted`` until the user trusts that content, then parses and starts them,
  and re-checks the file before every (re)connect.
- ``manager.MCPManager(specs, issues, call_timeout=, env_scrub=, health_interval=, ...)``:
  ``start``, ``wait_ready``, ``close``; ``replace_servers`` (one origin's
  servers); ``tools``/``resources``/``resource_templates``/``prompts`` snapshots; ``status``; ``call_tool``,
  ``read_resource``, ``get_prompt`` (``MCPCallResult``); ``refresh``
  (``CatalogChange`` per server); ``login``/``logout`` (OAuth, see ``auth``);
  ``add_listener``, ``add_status_listener``.
- ``auth``: OAuth for HTTP servers on the SDK's providers; ``TokenStore`` (0600 files),
  ``Authorizer`` (the browser step only for someone waiting), the loopback ``Receiver``.
- ``models``: ``MCPTool`` (``openai_schema()``), ``MCPResource``,
  ``MCPResourceTemplate``, ``MCPPrompt``, ``ServerStatus``, ``MCPCallResult``,
  ``CatalogChange``.
- ``catalog.catalog_text(manager)``: the ``<mcp-resources>``/``<mcp-prompts>``
  blocks for the system message; ``catalog.prompt_skill(prompt)`` for the
  read-only skills built from MCP prompts.

Protocol choice: the client negotiates with ``initialize`` (protocol
2025-11-25), which every MCP server in use answers, and receives
``notifications/*/list_changed`` on the session's message handler. The SDK's
``Client`` in its default ``auto`` mode negotiates 2026-07-28 with servers
that support it, where change events only flow on a separate
``subscriptions/listen`` stream and the old notifications are not delivered.
"""
