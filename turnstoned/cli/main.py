"""Command line: ``turnstoned`` (the stdio daemon) and its commands.

Only ``os`` and ``sys`` at import: ``turnstoned attach`` and ``turnstoned
chat`` start in a few tens of milliseconds because each command imports only
what it uses.
"""

from __future__ import annotations

import os
import sys

from turnstoned import __version__

TYPE_CHECKING = False  # `typing` costs the attach bridge a few milliseconds of its start
if TYPE_CHECKING:
    import argparse
    from typing import Any

ATTACH_HELP = """usage: turnstoned attach [serve options]

Relay stdin and stdout to this user's resident daemon (turnstoned serve),
starting it with the given options when none is running. What an editor may
launch instead of the stdio daemon: set the daemon command to `turnstoned` and
its arguments to `["attach"]`.
"""


TERMINAL_HINT = """turnstoned is the agent daemon an editor starts: it speaks JSON-RPC on stdin and
stdout. From a terminal, try:
  turnstoned chat "what does this project do?"   one turn, printed here
  turnstoned doctor                              check the setup
  turnstoned --help                              every command
(`turnstoned stdio` serves on a terminal's stdin anyway.)
"""

ENVIRONMENT = """The model: [model] in the config file ($TURNSTONED_CONFIG, else
~/.config/turnstone/config.toml), or TURNSTONED_MODEL with OPENAI_BASE_URL and
OPENAI_API_KEY in the environment. TURNSTONED_HOME puts config, data and the
resident daemon's socket under one folder. See docs/local-models.md for local
servers (llama.cpp, Ollama, vLLM, LM Studio)."""


def _parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(prog="turnstoned", description=(
        "Agent daemon for code editors. With no command it serves protocol v1 on stdio."),
        epilog=ENVIRONMENT, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"turnstoned {__version__}")
    _daemon_options(parser)
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("stdio", help="serve JSON-RPC on stdio (the default)")
    serve = sub.add_parser("serve", help="the resident daemon: serve this user's clients on a "
                                         "Unix socket until idle")
    _daemon_options(serve, argparse.SUPPRESS)
    serve.add_argument("--idle-timeout", type=float, metavar="SECONDS", default=None,
                       help="exit after this long with no client and no turn "
                            "(default: [daemon] idle_timeout_seconds, 600)")
    sub.add_parser("attach", help="relay stdio to the resident daemon, starting it if needed "
                                  "(what an editor may launch)")
    sub.add_parser("stop", help="stop the resident daemon")
    acp = sub.add_parser("acp", help="serve the Agent Client Protocol on stdio (Zed, JetBrains, "
                                     "Emacs agent-shell, codecompanion.nvim, avante.nvim)")
    _daemon_options(acp, argparse.SUPPRESS)
    doctor = sub.add_parser("doctor", help="check the setup and say how to fix what is wrong")
    doctor.add_argument("--tool-call", action="store_true",
                        help="also ask the configured model for a tool call (a real request)")
    chat = sub.add_parser("chat", help="run one turn headless and print it")
    chat.add_argument("prompt", help="what to ask; or /undo [rewind] [TURN_ID], /redo [UNDO_ID] "
                      "with --session; or /login MCP_SERVER, /logout MCP_SERVER (OAuth)")
    chat.add_argument("--yes", action="store_true", help="approve every tool call")
    chat.add_argument("--json", action="store_true", help="print one JSON event per line")
    chat.add_argument("--cwd", default=None, help="working directory of the session")
    chat.add_argument("--session", default=None, help="continue this session id")
    chat.add_argument("--model", default=None, help="model name for a new session")
    chat.add_argument("--mode", choices=["read-only", "auto", "full-access", "plan"],
                      default=None, help="approval mode: what runs without asking (default: "
                                         "[approvals] mode, auto); with --session it switches "
                                         "that session")
    chat.add_argument("--trust-mcp", action="store_true",
                      help="trust the folder's .mcp.json as it is now and start its servers")
    chat.add_argument("--private", action="store_true",
                      help="spawn a daemon of its own over stdio instead of using the resident one")
    chat.add_argument("--coordinator", action="store_true",
                      help="a coordinator session: it delegates to child sessions, whose "
                           "activity is shown too")
    chat.add_argument("--follow", action="store_true",
                      help="stay while the session has active watches, printing the turns "
                           "they start")
    return parser


def _daemon_options(parser: argparse.ArgumentParser, default: Any = None) -> None:
    parser.add_argument("--mcp-config", metavar="FILE", default=default,
                        help='an {"mcpServers": {...}} JSON file')
    parser.add_argument("--tool-search", choices=["auto", "on", "off"], default=default,
                        help="defer MCP tools behind tool_search (default: [tools] search)")
    parser.add_argument("--tool-search-threshold", type=int, metavar="N", default=default,
                        help="auto mode: defer when more than N tools (default 20)")
    parser.add_argument("--tool-search-max-results", type=int, metavar="N", default=default,
                        help="tools returned per search (default 5)")


def overrides(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Command-line flags as config overrides, by section."""
    out: dict[str, dict[str, Any]] = {"tools": {}, "mcp": {}}
    if args.mcp_config:
        out["mcp"]["config_path"] = os.path.abspath(args.mcp_config)
    for flag, key in (("tool_search", "search"), ("tool_search_threshold", "search_threshold"),
                      ("tool_search_max_results", "search_max_results")):
        if getattr(args, flag) is not None:
            out["tools"][key] = getattr(args, flag)
    return {k: v for k, v in out.items() if v}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv and sys.stdin.isatty():  # typed in a terminal: not what an editor starts
        sys.stderr.write(TERMINAL_HINT)
        return 2
    if not argv or argv == ["stdio"]:  # the editor's launch: skip argparse, start serving
        from turnstoned.daemon.server import serve_stdio

        return serve_stdio()
    if argv[0] == "attach":  # an editor's launch too: nothing but the bridge is imported
        if {"-h", "--help"} & set(argv[1:]):
            print(ATTACH_HELP, end="")
            return 0
        from turnstoned.cli import attach

        return attach.main(argv[1:])
    args = _parser().parse_args(argv)
    if args.command == "chat":
        from turnstoned.cli import chat

        return chat.run(args, _daemon_flags(argv))
    if args.command == "serve":
        from turnstoned.daemon import resident

        resident.main(overrides(args), args.idle_timeout)
    if args.command == "acp":
        from turnstoned.acp.server import serve

        serve(overrides(args))
    if args.command == "stop":
        from turnstoned.daemon import resident

        return resident.stop_running()
    if args.command == "doctor":
        from turnstoned.cli import doctor

        return doctor.main(args.tool_call)
    from turnstoned.daemon.server import serve_stdio

    return serve_stdio(overrides(args))


def _daemon_flags(argv: list[str]) -> list[str]:
    """The daemon options given before `chat`, for the daemon it spawns or starts."""
    return argv[: argv.index("chat")]
