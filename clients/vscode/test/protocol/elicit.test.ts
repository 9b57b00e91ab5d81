/**
 * An MCP server's question (`mcpServer/elicit`) against the real daemon and the repository's
 * asking server: the form's answer reaches the server (the daemon fills the defaults the answer
 * leaves out), Decline declines, and a chat out of sight asks in a notification.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { formFields } from "../../src/messages/elicit";
import { appTests, last, launch, settings, withModel } from "../support/app";
import { PYTHON, REPO, writeConfig } from "../support/daemon";
import { FakeHost } from "../support/fakeHost";

const t = appTests();
const ASKING = path.join(REPO, "tests/mcp_servers/asking.py");
const CONFIG = [
  "[tools]",
  'search = "off"',
  'auto_approve_tools = ["mcp__asking__book"]',
  "[mcp.servers.asking]",
  `command = ${JSON.stringify(PYTHON)}`,
  `args = [${JSON.stringify(ASKING)}]`,
  "",
].join("\n");

/** The tool results the model was sent, from the scripted model's message log. */
function toolResults(log: string): string[] {
  if (!fs.existsSync(log)) return [];
  const lines = fs.readFileSync(log, "utf8").split("\n").filter(Boolean);
  const messages = lines.flatMap((l) => (JSON.parse(l) as { messages: { role: string; content: unknown }[] }).messages);
  return messages.filter((m) => m.role === "tool").map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));
}

/** The extension with the asking server configured, ready, its server connected. */
async function ready(messageLog: string): Promise<FakeHost> {
  writeConfig(t.home, CONFIG);
  const model = await withModel(t, [{ toolCalls: [["b1", "mcp__asking__book", "{}"]] }, { text: "Done." }], { messageLog });
  const host = new FakeHost(settings({ baseUrl: model.baseUrl }), { name: "work", path: t.work });
  launch(t, host);
  await host.until("the daemon to be ready", () => host.status.text.includes("scripted"));
  const raw = host.daemons[0]!.raw;
  const deadline = Date.now() + 20000;
  for (;;) {
    const health = (await raw.sendRequest("daemon/health", {})) as { mcp: { connected?: number; tools?: number } };
    if ((health.mcp.connected ?? 0) >= 1 && (health.mcp.tools ?? 0) >= 1) break;
    if (Date.now() > deadline) throw new Error(`the asking server did not connect: ${JSON.stringify(health.mcp)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  host.fromPage({ type: "ready" });
  await host.until("features", () => Boolean(last(host, "features")));
  return host;
}

describe("MCP servers' questions against the real daemon", () => {
  it("the form's answer books the table; the daemon fills the defaults left out", async () => {
    const log = path.join(t.dir, "messages.jsonl");
    const host = await ready(log);
    host.fromPage({ type: "send", text: "book a table" });
    await host.until("the question", () => Boolean(last(host, "elicit")));
    const { request } = last(host, "elicit")!;
    expect(request.params).toMatchObject({ server: "asking", message: "Who is the booking for?" });
    const fields = formFields(request.params.requestedSchema);
    expect(fields.map((f) => [f.name, f.kind, f.required, f.initial])).toEqual([
      ["name", "string", true, ""], ["seats", "integer", false, "2"], ["window", "boolean", false, false],
    ]);
    // The visible chat asks in the page, not in a notification.
    expect(host.shown.some((s) => JSON.stringify(s).includes("Who is the booking for?"))).toBe(false);

    host.fromPage({ type: "elicitAnswer", id: request.id, response: { action: "accept", content: { name: "Ada" } } });
    await host.until("the turn to end", () => host.posted.some((m) => m.type === "event" && m.event.method === "turn/completed"));
    expect(last(host, "elicitCleared")).toEqual({ type: "elicitCleared", id: request.id });
    expect(toolResults(log).some((r) => r.includes("booked Ada x2 window=False"))).toBe(true);
  }, 60000);

  it("Decline in a notification when the chat is out of sight: the server hears decline", async () => {
    const log = path.join(t.dir, "messages.jsonl");
    const host = await ready(log);
    host.viewVisible = false;
    host.respond = (shown) => (JSON.stringify(shown).includes("Who is the booking for?") ? "Decline" : undefined);
    host.fromPage({ type: "send", text: "book a table" });
    await host.until("the turn to end", () => host.posted.some((m) => m.type === "event" && m.event.method === "turn/completed"), 30000);
    expect(host.shown.some((s) => JSON.stringify(s).includes("MCP server “asking” asks: Who is the booking for?"))).toBe(true);
    expect(toolResults(log).some((r) => r.includes("no booking: decline"))).toBe(true);
    expect(last(host, "elicitCleared")).toBeTruthy();
  }, 60000);
});
