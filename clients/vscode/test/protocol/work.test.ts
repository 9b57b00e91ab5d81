/**
 * The extension against the real daemon for work beyond one turn: a task agent's items and
 * question nested under its call, a coordinator's children asking from sessions the chat does
 * not show, notify, watches (listed, cancelled, one firing after a restart and starting a turn),
 * compaction on demand and in resumed history, and previews read into a panel.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import type { ToWebview } from "../../src/messages/chat";
import { toolCard, type CompactionEntry, type NoticeEntry, type ToolEntry } from "../../src/chat/state";
import type { ToPreview } from "../../src/messages/preview";
import { appTests, last, launch, pageState, sawEvent, settings, withModel } from "../support/app";
import { PYTHON } from "../support/daemon";
import { FakeHost } from "../support/fakeHost";

const t = appTests();

async function ready(replies: unknown[], extra: Record<string, unknown> = {}): Promise<FakeHost> {
  const model = await withModel(t, replies, extra);
  const host = new FakeHost(settings({ baseUrl: model.baseUrl }), { name: "work", path: t.work });
  launch(t, host);
  await host.until("the daemon", () => host.status.text.includes("scripted"));
  host.fromPage({ type: "ready" });
  await host.until("features", () => Boolean(last(host, "features")));
  return host;
}

const turnEnded = (host: FakeHost, n = 1) => host.until(`turn ${n} to end`, () => host.posted.filter((m) => m.type === "event" && m.event.method === "turn/completed").length >= n, 30000);

/** Answer, as the page would, the next approval the chat shows that matches. */
async function approveNext(host: FakeHost, what: string, match: (cycle: Extract<ToWebview, { type: "approval" }>["cycle"]) => boolean) {
  const asked = () => host.posted.find((m): m is Extract<ToWebview, { type: "approval" }> => m.type === "approval" && match(m.cycle));
  await host.until(what, () => Boolean(asked()), 20000);
  const cycle = asked()!.cycle;
  host.fromPage({ type: "answer", cycleId: cycle.cycleId, answer: { decision: "approve" } });
  return cycle;
}

function record(name: string, host: FakeHost, sessionId: string | null): void {
  // The messages the chat page received, in order: the browser tests replay them.
  const dir = process.env.RECORD_STREAMS;
  const panels = host.panels.map((p) => p.posted);
  if (dir) fs.writeFileSync(path.join(dir, name), JSON.stringify({ sessionId, messages: host.posted, ...(panels.length ? { panels } : {}) }, null, 1) + "\n");
}

describe("work beyond one turn, against the real daemon", () => {
  it("a task agent: its items and its question nested under the call, answered inline", async () => {
    const host = await ready([
      { toolCalls: [["t1", "task_agent", JSON.stringify({ prompt: "Count the words in notes.txt and report." })]] },
      { toolCalls: [["b1", "bash", JSON.stringify({ command: "wc -w < notes.txt | tee count.txt" })]] },
      { text: "notes.txt has **4** words." },
      { text: "The agent counted 4 words in notes.txt." },
    ]);
    fs.writeFileSync(path.join(t.work, "notes.txt"), "one two three four\n");
    host.fromPage({ type: "send", text: "count the words with an agent" });
    const parent = await approveNext(host, "the task_agent question", (c) => c.items[0]?.tool === "task_agent");
    const agentCall = parent.items[0]!.callId;
    const nested = await approveNext(host, "the agent's own question", (c) => c.parentCallId === agentCall);
    expect(nested.items.map((i) => [i.tool, i.needsApproval])).toEqual([["bash", true]]);
    await turnEnded(host);

    const page = pageState(host.posted);
    const tools = page.entries.filter((e): e is ToolEntry => e.kind === "tool");
    expect(tools.map((e) => [e.tool, e.status, e.decision])).toEqual([["task_agent", "completed", "approved"]]);
    const agent = tools[0]!;
    expect(agent.children.map((e) => e.kind)).toEqual(["tool", "agent"]);
    expect(agent.children[0]).toMatchObject({ tool: "bash", status: "completed", decision: "approved", output: expect.stringContaining("4") });
    expect(agent.children[1]).toMatchObject({ kind: "agent", text: "notes.txt has **4** words.", done: true });
    expect(page.entries.at(-2)).toMatchObject({ kind: "agent", text: "The agent counted 4 words in notes.txt." });
    // The agent's command wrote count.txt: the turn ends with its changes.
    expect(page.entries.at(-1)).toMatchObject({ kind: "changes", files: [{ path: path.join(fs.realpathSync(t.work), "count.txt"), kind: "create", status: "changed" }] });
    expect(toolCard(page, nested.items[0]!.callId)?.approval).toBeNull();
    record("agent-turn.json", host, page.sessionId);
  });

  it("a coordinator's children ask from sessions the chat does not show: the notification names them; they nest in the tree", { timeout: 60000 }, async () => {
    const host = await ready([
      { toolCalls: [["s1", "spawn_workstream", JSON.stringify({ name: "tally", initial_message: "tally: write the tally file" })]] },
      { text: "The tally child is on it." },
    ], { routes: { "tally:": [
      { toolCalls: [["c1", "bash", JSON.stringify({ command: "echo 42 > tally.txt" })]] },
      { toolCalls: [["c2", "open_preview", JSON.stringify({ target: "tally.txt" })]] },
      { text: "Wrote tally.txt." },
    ] } });
    host.viewVisible = false;
    host.respond = (s) => (s.kind === "warn" && s.message.includes(" asks to run ") ? "Approve" : s.message.includes("opened a preview") ? "Show Preview" : undefined);
    const raw = host.daemons[0]!.raw;
    const { sessionId: coordinator } = await raw.sendRequest("session/start", { cwd: t.work, kind: "coordinator" }) as { sessionId: string };
    await raw.sendRequest("turn/start", { sessionId: coordinator, input: [{ type: "text", text: "delegate the tally" }] });
    // The child's preview is offered (the chat shows another session), and shown when asked.
    await host.until("the child's preview", () => host.panels[0]?.posted.some((m) => m.type === "chunk" && m.eof) ?? false, 30000);
    expect(host.shown.find((s) => s.message.includes("opened a preview"))).toMatchObject({ kind: "info", message: "Session “tally” opened a preview: tally.txt", actions: ["Show Preview"] });
    expect(host.panels.map((p) => [p.kind, p.title])).toEqual([["text", "tally.txt"]]);
    const asked = host.shown.filter((s) => s.kind === "warn").map((s) => s.message);
    // Each names the session it comes from (after the call and how risky it looks).
    expect(asked.some((m) => m.startsWith("turnstoned asks to run ⚙ spawn_workstream tally: tally: write the tally file") && m.endsWith(" in session “delegate the tally”"))).toBe(true);
    expect(asked.some((m) => m.startsWith("turnstoned asks to run ⚙ bash: echo 42 > tally.txt") && m.endsWith(" in session “tally”"))).toBe(true);

    const tree = () => host.trees.get("turnstoned.sessions")!();
    await host.until("the child under its coordinator", () => tree().some((n) => n.label === "delegate the tally" && n.children?.some((c) => c.label === "tally")));
    expect(tree().find((n) => n.label === "delegate the tally")!.description).toMatch(/^coordinator · /);
    // Opening the child shows its own history.
    const child = tree().find((n) => n.label === "delegate the tally")!.children![0]!.id;
    await host.run("turnstoned.sessions.resume", child);
    expect(last(host, "reset")).toMatchObject({ sessionId: child, title: "tally" });
  });

  it("notify: a notification with its title, and a notice in the chat", async () => {
    const host = await ready([
      { toolCalls: [["n1", "notify", JSON.stringify({ title: "Build", message: "The build is green." })]] },
      { text: "I told you." },
    ]);
    host.fromPage({ type: "send", text: "tell me when the build is green" });
    await turnEnded(host);
    expect(host.shown.filter((s) => s.kind === "info").map((s) => [s.message, s.actions])).toEqual([["Build: The build is green.", []]]);
    const notice = pageState(host.posted).entries.find((e): e is NoticeEntry => e.kind === "notice");
    expect(notice).toMatchObject({ noticeKind: "notify", headline: "Build", text: "The build is green." });
  });

  it("watches: listed and cancelled from the quick pick; an overdue one fires after a restart and starts a turn", { timeout: 60000 }, async () => {
    fs.writeFileSync(path.join(t.work, "ci.json"), '{"status": "passed"}');
    const watch = (name: string, command: string, stopOn: string) => ["w-" + name, "watch", JSON.stringify({ action: "create", name, command, poll_every: "1h", stop_on: stopOn })];
    const host = await ready([
      { toolCalls: [watch("ci", "cat ci.json", 'data["status"] == "passed"'), watch("nightly", "echo pending", '"done" in output')] },
      { text: "Watching CI and the nightly build." },
      { text: "CI passed: the branch is ready to merge." },
    ]);
    host.fromPage({ type: "send", text: "watch ci and the nightly build" });
    await approveNext(host, "the watches' question", (c) => c.items.every((i) => i.tool === "watch"));
    await turnEnded(host);

    host.respond = (s) => (s.kind === "pick" && s.message === "Watches" ? s.actions.find((a) => a.includes("nightly")) : s.kind === "pick" ? s.actions[0] : undefined);
    await host.run("turnstoned.watches");
    const pick = host.shown.find((s) => s.kind === "pick" && s.message === "Watches")!;
    expect(pick.actions).toEqual(["$(eye) ci", "$(eye) nightly"]);
    expect(host.shown.find((s) => s.kind === "info")?.message).toBe("Watch “nightly” cancelled.");

    // The daemon is down for two hours: the watch is overdue when the next one starts.
    await host.daemons[0]!.stop();
    const db = path.join(t.home, "data", "turnstoned.sqlite3");
    const moved = spawnSync(PYTHON, ["-I", "-c", "import sqlite3, sys\nwith sqlite3.connect(sys.argv[1]) as db: db.execute(\"UPDATE watches SET next_poll = next_poll - 7200 WHERE active = 1\")", db]);
    expect(moved.status, String(moved.stderr)).toBe(0);
    const sessionId = pageState(host.posted).sessionId;
    await host.run("turnstoned.restart");
    await turnEnded(host, 2);
    const page = pageState(host.posted);
    const fired = page.entries.find((e): e is NoticeEntry => e.kind === "notice" && e.noticeKind === "watch");
    expect(fired?.headline).toBe('“ci”: condition met: data["status"] == "passed"');
    expect(fired?.text).toContain('{"status": "passed"}');
    expect(page.entries.at(-1)).toMatchObject({ kind: "agent", text: "CI passed: the branch is ready to merge.", done: true });
    expect(page.turnId).toBeNull();
    // No turn/start from this window: the turn the daemon started reached the chat all the same.
    expect(sawEvent(host, "turn/started", (p) => p.sessionId === sessionId)).toBe(true);
    host.shown.length = 0;
    await host.run("turnstoned.watches");
    expect(host.shown.at(-1)).toMatchObject({ kind: "info", message: "No watches are active." });
  });

  it("compaction: the command compacts, the chat shows a divider, the status bar the new fill; resumed history keeps it", { timeout: 60000 }, async () => {
    const long = "hello back 1. " + "A long answer that the summary shortens. ".repeat(60);
    const host = await ready([{ text: long }, { text: "hello back 2" }, { text: "hello back 3" }], { summary: "The user said hello three times; each was answered." });
    await host.run("turnstoned.compact");
    expect(host.shown.at(-1)?.message).toBe("Open a chat first: there is no conversation to compact.");
    for (let n = 1; n <= 3; n++) {
      host.fromPage({ type: "send", text: `hello ${n}` });
      await turnEnded(host, n);
    }
    const before = host.status.text;
    await host.run("turnstoned.compact");
    await host.until("session/compacted", () => sawEvent(host, "session/compacted"));
    const divider = pageState(host.posted).entries.find((e): e is CompactionEntry => e.kind === "compaction")!;
    expect(divider.figures).toMatchObject({ trigger: "manual", mode: "summary", messages: 2 });
    expect(divider.figures!.after).toBeLessThan(divider.figures!.before);
    expect(divider.figures!.cost).toBeGreaterThan(0); // what the summary cost, between turns
    expect(divider.summary).toBe("The user said hello three times; each was answered.");
    expect(host.status.text).toMatch(/ctx \d+%/);
    expect(host.status.text).not.toBe(before);
    await host.run("turnstoned.compact");
    expect(host.shown.at(-1)?.message).toBe("Nothing to compact yet: the conversation is only its most recent turns.");
    record("compaction.json", host, pageState(host.posted).sessionId);

    // A reload redraws the history: the divider after the last message it compacted from.
    host.fromPage({ type: "ready" });
    await host.until("the history", () => (last(host, "reset")?.items.length ?? 0) > 0);
    const resumed = pageState([last(host, "reset")!]);
    expect(resumed.entries.map((e) => e.kind)).toEqual(["user", "agent", "user", "agent", "user", "agent", "compaction"]);
    expect(resumed.entries[6]).toMatchObject({ figures: null, summary: "The user said hello three times; each was answered." });
  });

  it("previews: each opens in a panel that receives exactly the file's bytes; Show preview brings it back", { timeout: 60000 }, async () => {
    const csv = "city,temp\n" + Array.from({ length: 400 }, (_, i) => `town ${i},${i % 40}`).join("\n") + "\n";
    fs.writeFileSync(path.join(t.work, "temps.csv"), csv);
    const host = await ready([
      { toolCalls: [["p1", "open_preview", JSON.stringify({ target: "temps.csv", title: "Temperatures" })]] },
      { text: "It is open." },
    ]);
    host.fromPage({ type: "send", text: "show the temperatures" });
    await turnEnded(host);
    await host.until("the panel's content", () => host.panels[0]?.posted.some((m) => m.type === "chunk" && m.eof) ?? false);
    const panel = host.panels[0]!;
    expect([panel.kind, panel.title]).toEqual(["table", "Temperatures"]);
    const open = panel.posted[0] as Extract<ToPreview, { type: "open" }>;
    expect(open.preview).toMatchObject({ kind: "table", contentType: "text/csv", size: Buffer.byteLength(csv), csp: "default-src 'none'; sandbox" });
    const bytes = Buffer.concat(panel.posted.filter((m): m is Extract<ToPreview, { type: "chunk" }> => m.type === "chunk").map((c) => Buffer.from(c.data, "base64")));
    expect(bytes.toString()).toBe(csv);

    const card = pageState(host.posted).entries.find((e): e is ToolEntry => e.kind === "tool")!;
    expect(card.previews).toEqual([{ previewId: open.preview.previewId, title: "Temperatures", kind: "table" }]);
    host.fromPage({ type: "openPreview", previewId: open.preview.previewId });
    await host.until("the panel to come forward", () => panel.revealed === 1);
    expect(host.panels).toHaveLength(1);
    panel.hooks.onMessage({ type: "openSource" });
    expect(host.opened).toEqual([path.join(fs.realpathSync(t.work), "temps.csv")]);
    record("preview.json", host, open.preview.sessionId);
  });
});
