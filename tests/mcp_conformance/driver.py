"""The official MCP conformance suite's client command: the real daemon as the client.

    npx conformance client --command "python tests/mcp_conformance/driver.py" --scenario S

The suite starts a test server for scenario S and runs this script with the server's URL
as the last argument (and ``MCP_CONFORMANCE_SCENARIO`` set). The script gives a fresh
daemon that server as an HTTP MCP server, and a scripted model that calls the scenario's
tool in one turn; the daemon's client answers its approval and, for elicitation, accepts
the server's form as sent (the daemon fills the fields the answer leaves out with their
defaults). Exit 0 when the turn completed.

The auth/* scenarios are logins. A server listed ``needsAuth`` is logged in to with
mcpServer/login, as an editor's "Log in" does; the daemon's mcpServer/authorize (open this
page in the browser) is answered by fetching the page and following its redirect to the
daemon's loopback address, which is what a browser does once the user approved. The client
credentials and pre-registration scenarios put the suite's client (``MCP_CONFORMANCE_CONTEXT``)
in the server's ``oauth`` table; the CIMD scenario names the suite's client metadata document.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.fakes.model_server import ScriptedModel, text, tool_calls
from turnstoned import protocol as p
from turnstoned.client import Client, RpcFailure

# The tool each scenario's server offers, and the arguments to call it with.
CALLS = {
    "tools_call": ("add_numbers", {"a": 2, "b": 3}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
    "sse-retry": ("test_reconnection", {}),
}
AUTH_TOOL = ("test-tool", {})
# The login the server refuses every time: a clear error, not a loop, is the pass.
REFUSED = {"auth/scope-retry-limit"}
CIMD_URL = "https://conformance-test.local/client-metadata.json"


def oauth_table(scenario: str) -> str:
    """The server's ``oauth`` table for ``scenario`` (TOML), from the suite's context."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    lines = []
    if scenario == "auth/basic-cimd":
        lines.append(f'client_metadata_url = "{CIMD_URL}"')
    if "client-credentials" in scenario:
        lines.append('grant = "client_credentials"')
    if "client_id" in context:  # a client registered by hand
        lines.append(f'client_id = "{context["client_id"]}"')
        if "client_secret" in context:
            lines.append(f'client_secret = "{context["client_secret"]}"')
        if "private_key_pem" in context:
            lines.append(f"private_key = \'\'\'\n{context['private_key_pem']}\'\'\'")
            lines.append(f'signing_algorithm = "{context.get("signing_algorithm", "ES256")}"')
    return "[mcp.servers.conf.oauth]\n" + "\n".join(lines) + "\n" if lines else ""


def browse(url: str) -> None:
    """What the user's browser does with a login page the user approves: load it, and
    follow its redirect (to the daemon's loopback address)."""
    with urllib.request.urlopen(url, timeout=20) as page:
        page.read()


async def drive(url: str, scenario: str) -> int:
    with tempfile.TemporaryDirectory() as tmp, ScriptedModel() as model:
        home, work = Path(tmp, "home"), Path(tmp, "work")
        (home / "config").mkdir(parents=True)
        work.mkdir()
        (home / "config" / "config.toml").write_text(
            f'[model]\nname = "scripted"\nbase_url = "{model.base_url}"\n'
            f'[tools]\nsearch = "off"\n'
            f'[mcp.servers.conf]\ntype = "http"\nurl = "{url}"\n' + oauth_table(scenario))
        auth = scenario.startswith("auth/")
        call = AUTH_TOOL if auth else CALLS.get(scenario)
        if call is not None:
            model.push(tool_calls([("c1", f"mcp__conf__{call[0]}", json.dumps(call[1]))]))
        model.push(text("done"))
        env = {"TURNSTONED_HOME": str(home), "OPENAI_API_KEY": "none", "TURNSTONED_CONFIG": ""}
        for name in ("OPENAI_BASE_URL", "TURNSTONED_MODEL"):
            os.environ.pop(name, None)
        client = await Client.spawn(env=env, cwd=str(work), initialize=False)

        async def approve(params: p.ApprovalRequestParams) -> p.ApprovalResponse:
            return p.ApprovalResponse(decision="approve")

        async def elicit(params: dict[str, object]) -> object:
            return {"action": "accept", "content": {}}  # the form as sent: its defaults

        async def authorize(params: dict[str, object]) -> object:
            await asyncio.to_thread(browse, str(params["url"]))
            return {"opened": True}

        client.approval_handler = approve
        client.request_handlers["mcpServer/elicit"] = elicit
        client.request_handlers["mcpServer/authorize"] = authorize
        try:
            await client.initialize()
            sid = await client.start_session(cwd=str(work))
            if auth and not await log_in(client, scenario):
                return 1
            done = await client.run_turn(sid, f"run the {scenario} scenario", timeout=120)
        finally:
            await client.close()
        results = [m.get("content") for r in model.requests for m in r["messages"]
                   if m.get("role") == "tool"]
        print(f"turn {done['status']}; tool results: {results}", file=sys.stderr)
        return 0 if done["status"] == "completed" else 1


async def log_in(client: Client, scenario: str) -> bool:
    """Log in when the server asks for it, as an editor's "Log in" does; True to go on."""
    for _ in range(200):  # until its first connect settled
        servers = (await client.request("mcpServer/list"))["servers"]
        server = next(s for s in servers if s["name"] == "conf")
        if server["status"] != "connecting":
            break
        await asyncio.sleep(0.1)
    print(f"before login: {server}", file=sys.stderr)
    if not server.get("needsAuth"):
        return server["status"] == "connected"
    try:
        result = await client.request("mcpServer/login", {"name": "conf"}, timeout=60)
    except RpcFailure as exc:  # the daemon's error answer
        print(f"login failed: {exc}", file=sys.stderr)
        return scenario in REFUSED
    print(f"after login: {result['server']}", file=sys.stderr)
    return scenario not in REFUSED


def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    return asyncio.run(drive(url, scenario))


if __name__ == "__main__":
    sys.exit(main())
