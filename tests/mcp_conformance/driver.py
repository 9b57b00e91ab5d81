"""The official MCP conformance suite's client command: the real daemon as the client.

    npx conformance client --command "python tests/mcp_conformance/driver.py" --scenario S

The suite starts a test server for scenario S and runs this script with the server's URL
as the last argument (and ``MCP_CONFORMANCE_SCENARIO`` set). The script gives a fresh
daemon that server as an HTTP MCP server, and a scripted model that calls the scenario's
tool in one turn; the daemon's client answers its approval and, for elicitation, accepts
the server's form as sent (the daemon fills the fields the answer leaves out with their
defaults). Exit 0 when the turn completed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.fakes.model_server import ScriptedModel, text, tool_calls
from turnstoned import protocol as p
from turnstoned.client import Client

# The tool each scenario's server offers, and the arguments to call it with.
CALLS = {
    "tools_call": ("add_numbers", {"a": 2, "b": 3}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
    "sse-retry": ("test_reconnection", {}),
}


async def drive(url: str, scenario: str) -> int:
    with tempfile.TemporaryDirectory() as tmp, ScriptedModel() as model:
        home, work = Path(tmp, "home"), Path(tmp, "work")
        (home / "config").mkdir(parents=True)
        work.mkdir()
        (home / "config" / "config.toml").write_text(
            f'[model]\nname = "scripted"\nbase_url = "{model.base_url}"\n'
            f'[tools]\nsearch = "off"\n'
            f'[mcp.servers.conf]\ntype = "http"\nurl = "{url}"\n')
        call = CALLS.get(scenario)
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

        client.approval_handler = approve
        client.request_handlers["mcpServer/elicit"] = elicit
        try:
            await client.initialize()
            sid = await client.start_session(cwd=str(work))
            done = await client.run_turn(sid, f"run the {scenario} scenario", timeout=120)
        finally:
            await client.close()
        results = [m.get("content") for r in model.requests for m in r["messages"]
                   if m.get("role") == "tool"]
        print(f"turn {done['status']}; tool results: {results}", file=sys.stderr)
        return 0 if done["status"] == "completed" else 1


def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    return asyncio.run(drive(url, scenario))


if __name__ == "__main__":
    sys.exit(main())
