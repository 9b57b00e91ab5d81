"""Command line: ``turnstoned`` (the stdio daemon) and ``turnstoned chat`` (headless)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from turnstoned import __version__
from turnstoned import protocol as p

if TYPE_CHECKING:
    import argparse
    from collections.abc import Awaitable, Callable

    from turnstoned.client import Client


def _parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(prog="turnstoned", description=(
        "Agent daemon for code editors. With no command it serves protocol v1 on stdio."))
    parser.add_argument("--version", action="version", version=f"turnstoned {__version__}")
    _serve_options(parser)
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("serve", help="serve JSON-RPC on stdio (the default)")
    chat = sub.add_parser("chat", help="run one turn headless and print it")
    chat.add_argument("prompt", help="what to ask")
    chat.add_argument("--yes", action="store_true", help="approve every tool call")
    chat.add_argument("--json", action="store_true", help="print one JSON event per line")
    chat.add_argument("--cwd", default=None, help="working directory of the session")
    chat.add_argument("--session", default=None, help="continue this session id")
    chat.add_argument("--model", default=None, help="model name for a new session")
    chat.add_argument("--trust-mcp", action="store_true",
                      help="trust the folder's .mcp.json as it is now and start its servers")
    chat.add_argument("--coordinator", action="store_true",
                      help="a coordinator session: it delegates to child sessions, whose "
                           "activity is shown too")
    chat.add_argument("--follow", action="store_true",
                      help="stay while the session has active watches, printing the turns "
                           "they start")
    return parser


def _serve_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mcp-config", metavar="FILE", help='an {"mcpServers": {...}} JSON file')
    parser.add_argument("--tool-search", choices=["auto", "on", "off"],
                        help="defer MCP tools behind tool_search (default: [tools] search)")
    parser.add_argument("--tool-search-threshold", type=int, metavar="N",
                        help="auto mode: defer when more than N tools (default 20)")
    parser.add_argument("--tool-search-max-results", type=int, metavar="N",
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
    if not argv or argv == ["serve"]:  # the editor's launch: skip argparse, start serving
        from turnstoned.server import serve_stdio

        return serve_stdio()
    args = _parser().parse_args(argv)
    if args.command == "chat":
        try:
            return asyncio.run(_chat(args, _daemon_flags(argv)))
        except KeyboardInterrupt:
            return 130
    from turnstoned.server import serve_stdio

    return serve_stdio(overrides(args))


def _daemon_flags(argv: list[str]) -> list[str]:
    """The daemon options given before `chat`, for the daemon it spawns."""
    return argv[: argv.index("chat")]


def _ask_terminal(params: p.ApprovalRequestParams) -> p.ApprovalResponse:
    gated = [i for i in params.items if i.needs_approval]
    for item in params.items:
        print(f"\n{item.header}", file=sys.stderr)
        if item.preview and item.preview != item.header:
            print(item.preview, file=sys.stderr)
        for rated in (item.verdict, item.judge_verdict):
            if rated is not None:
                print(f"  {rated.risk} risk ({rated.rule}): {rated.reason}", file=sys.stderr)
        if item.needs_approval:
            saves = ", ".join(item.grant_rules) or "nothing (it will ask every time)"
            print(f"  always saves: {saves}", file=sys.stderr)
    labels = sorted({i.approval_label for i in gated})
    what = labels[0] if len(gated) == 1 else f"{len(gated)} tools ({', '.join(labels)})"
    print(f"Allow {what}? [y/n/a(lways), optional message] ", end="", file=sys.stderr, flush=True)
    try:
        line = sys.stdin.readline() if sys.stdin and not sys.stdin.closed else ""
    except (OSError, ValueError):
        line = ""
    sep = "," if "," in line else " "
    word, _, feedback = line.strip().partition(sep)
    word = word.strip().lower()
    decision: p.Decision = ("always" if word in ("a", "always")
                            else "approve" if word in ("y", "yes") else "deny")
    return p.ApprovalResponse(decision=decision, feedback=feedback.strip() or None)


def _trust_answer(trust: bool) -> Callable[[p.McpTrustRequestParams],
                                            Awaitable[p.McpTrustResponse]]:
    """Answers mcpServer/requestTrust: trust with --trust-mcp, else say how and ask later."""
    async def answer(params: p.McpTrustRequestParams) -> p.McpTrustResponse:
        if trust:
            print(f"trusting {params.config_path}", file=sys.stderr)
            return p.McpTrustResponse(decision="trust")
        print(f"{params.config_path} defines MCP servers that were not started:", file=sys.stderr)
        for s in params.servers:
            what = s.url or " ".join([s.command or "", *s.args])
            print(f"  {s.name}: {what}", file=sys.stderr)
        print("  rerun with --trust-mcp to trust this version of the file", file=sys.stderr)
        return p.McpTrustResponse(decision="dismiss")

    return answer


async def _trust_project(client: Client, folder: str) -> None:
    """Trust the folder's .mcp.json before the session opens, so its tools are there."""
    from turnstoned.client import RpcFailure

    params = p.McpServerTrustParams(workspace=folder, trusted=True)
    try:
        result = await client.request("mcpServer/trust", params, timeout=None)
    except RpcFailure as exc:
        print(f"turnstoned: --trust-mcp: {exc.message}", file=sys.stderr)
        return
    states = ", ".join(f"{s['name']} {s['status']}" for s in result["servers"])
    print(f"trusted {result['configPath']}: {states}", file=sys.stderr)


class _Printer:
    """Renders events for a person (text on stdout, tool activity on stderr) or as JSON lines.

    What a task agent does (events with ``parentCallId``) is indented under its call, on
    stderr: stdout keeps the session's own answer.
    """

    NESTED = "    "

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self._fresh = True  # stderr is at the start of a line

    def _stream(self, text: str, nested: bool) -> None:
        """Streamed text on stderr; a task agent's lines are indented."""
        for piece in text.splitlines(keepends=True):
            if nested and self._fresh:
                sys.stderr.write(self.NESTED)
            sys.stderr.write(piece)
            self._fresh = piece.endswith("\n")
        sys.stderr.flush()

    def _line(self, text: str, nested: bool) -> None:
        """A line of its own on stderr."""
        start = "" if self._fresh else "\n"
        print(f"{start}{self.NESTED if nested else ''}{text}", file=sys.stderr, flush=True)
        self._fresh = True

    def __call__(self, method: str, params: dict[str, Any]) -> None:
        if self.as_json:
            print(json.dumps({"method": method, "params": params}), flush=True)
            return
        nested = bool(params.get("parentCallId"))
        item = params.get("item") or {}
        if method == "item/agentMessage/delta":
            if nested:
                self._stream(params["delta"], nested)
            else:
                print(params["delta"], end="", flush=True)
        elif method == "item/toolCall/outputDelta":
            self._stream(params["chunk"], nested)
        elif method == "item/started" and item["type"] == "toolCall":
            self._line(item["header"], nested)
        elif method == "item/started" and item["type"] == "agentMessage" and nested:
            self._line("⤷ agent:", nested)
        elif method == "item/completed" and item["type"] == "toolCall":
            mark = "✗" if item.get("isError") else "✓"
            first = (item.get("output") or "").strip().splitlines()[:1]
            self._line(f"{mark} {item['tool']} {item['status']}: "
                       f"{first[0][:200] if first else ''}", nested)
        elif method == "turn/completed":
            print(flush=True)
            if params.get("error"):
                err = params["error"]
                print(f"turn failed ({err['kind']}): {err['message']}", file=sys.stderr)
        elif method == "session/notice":
            title = (params.get("data") or {}).get("title")
            head = f"{params['kind']}: {title}" if title else params["kind"]
            self._line(f"[{head}] {params['text']}", False)


class _Children:
    """One line per step of the sessions a coordinator spawned (the other sessions' events)."""

    def __init__(self, own: str) -> None:
        self.own = own

    def __call__(self, method: str, params: dict[str, Any]) -> None:
        sid = params.get("sessionId")
        if sid in (None, self.own) or params.get("parentCallId"):
            return
        tag, item = f"  [{sid[:8]}]", params.get("item") or {}
        if method == "item/started" and item.get("type") == "toolCall":
            print(f"{tag} {item['header']}", file=sys.stderr, flush=True)
        elif method == "item/completed" and item.get("type") == "agentMessage" and item["text"]:
            first = item["text"].strip().splitlines()[0][:200]
            print(f"{tag} ⤷ {first}", file=sys.stderr, flush=True)
        elif method == "turn/completed" and params["status"] != "completed":
            print(f"{tag} turn {params['status']}", file=sys.stderr, flush=True)


async def _chat(args: argparse.Namespace, daemon_flags: list[str]) -> int:
    from turnstoned.client import Client, RpcFailure, daemon_command

    printer = _Printer(args.json)
    client = await Client.spawn([*daemon_command(), *daemon_flags])
    try:
        if args.yes:
            async def approve(_: p.ApprovalRequestParams) -> p.ApprovalResponse:
                return p.ApprovalResponse(decision="approve")
            client.approval_handler = approve
        else:
            async def ask(params: p.ApprovalRequestParams) -> p.ApprovalResponse:
                return await asyncio.to_thread(_ask_terminal, params)
            client.approval_handler = ask
        client.trust_handler = _trust_answer(args.trust_mcp)
        try:
            if args.trust_mcp and not args.session:
                await _trust_project(client, os.path.abspath(args.cwd or "."))
            if args.session:
                await client.request("session/resume", p.SessionRef(session_id=args.session))
                sid = args.session
            else:
                sid = await client.start_session(
                    cwd=os.path.abspath(args.cwd or "."), model=args.model,
                    skip_permissions=args.yes,
                    kind="coordinator" if args.coordinator else "interactive")
            if not args.json:
                print(f"session {sid}", file=sys.stderr)
                client.listen(_Children(sid))
            done = await client.run_turn(sid, args.prompt, on_event=printer)
            if args.follow:
                await _follow(client, sid, printer)
        except RpcFailure as exc:
            print(f"turnstoned: {exc.message}", file=sys.stderr)
            return 2
        return {"completed": 0, "interrupted": 130}.get(done["status"], 1)
    finally:
        await client.close()


async def _follow(client: Client, session_id: str, printer: _Printer) -> None:
    """Print what the session's watches bring (reports, the turns they start) until none is
    left active and no turn runs."""
    running: set[str] = set()
    changed = asyncio.Event()

    def on_event(method: str, params: dict[str, Any]) -> None:
        if params.get("sessionId") != session_id:
            return
        printer(method, params)
        if method == "turn/started":
            running.add(params["turnId"])
        elif method == "turn/completed":
            running.discard(params["turnId"])
            changed.set()
        elif method == "session/notice":
            changed.set()

    unsubscribe = client.listen(on_event)
    shown = ""
    try:
        while True:
            changed.clear()
            listed = await client.request("watch/list", p.WatchListParams(session_id=session_id))
            names = ", ".join(w["name"] for w in listed["watches"])
            if not names and not running:
                return
            if names and names != shown:
                print(f"\nfollowing: active watches {names}; Ctrl-C stops following (the "
                      "watches stay)", file=sys.stderr, flush=True)
            shown = names
            await changed.wait()
    finally:
        unsubscribe()
