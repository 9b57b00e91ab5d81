/**
 * The whole extension (startApp) over a stand-in for VS Code's UI, with the real daemon as a
 * real process and the repository's scripted model: chat, approvals (inline and as a
 * notification), edit review through the virtual documents, restart with the API key from
 * secret storage, a window reload, and the messages shown when the daemon is missing or dies.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { API_KEY_SECRET } from "../../src/daemon";
import { appTests, DAEMON, last, launch as launchApp, settings, withModel as modelFor } from "../support/app";
import { PYTHON, REPO } from "../support/daemon";
import { FakeHost } from "../support/fakeHost";

const t = appTests();
const withModel = (replies: unknown[], extra: Record<string, unknown> = {}) => modelFor(t, replies, extra);
const launch = (host: FakeHost) => launchApp(t, host);

describe("the extension against the real daemon", () => {
  it("chat, edit review in the diff documents, approve from the title bar; the session survives a reload", async () => {
    fs.writeFileSync(path.join(t.work, "app.py"), "def greet():\n    return 'hi'\n");
    const model = await withModel([
      { toolCalls: [["r1", "read_file", JSON.stringify({ path: "app.py" })]] },
      { toolCalls: [["e1", "edit_file", JSON.stringify({ path: "app.py", old_string: "'hi'", new_string: "'hello'" })]] },
      { text: "Done." },
    ]);
    const host = new FakeHost(settings({ baseUrl: model.baseUrl }), { name: "work", path: t.work });
    launch(host);
    await host.until("the daemon to be ready", () => host.status.text.includes("scripted"));
    host.fromPage({ type: "ready" });
    await host.until("features", () => last(host, "features")?.editReview === true);

    host.fromPage({ type: "send", text: "say hello in app.py" });
    await host.until("the approval", () => Boolean(last(host, "approval")));
    const cycle = last(host, "approval")!.cycle;
    expect(cycle.items[0]?.fileChange?.kind).toBe("modify");
    expect(last(host, "sent")).toEqual({ type: "sent", text: "say hello in app.py", queued: false, turnId: expect.stringMatching(/^turn_/) });

    const editCall = cycle.items.find((i) => i.tool === "edit_file")!.callId;
    host.fromPage({ type: "review", callId: editCall });
    await host.until("the diff editor", () => host.diffs.length === 1);
    const { left, right, title } = host.diffs[0]!;
    const provide = host.documents.get("turnstoned-proposal")!;
    expect(await provide(left)).toBe("def greet():\n    return 'hi'\n");
    expect(await provide(right)).toBe("def greet():\n    return 'hello'\n");
    expect(title).toBe("app.py: current ↔ proposed (turnstoned)");

    await host.run("turnstoned.review.approve");
    await host.until("the turn to end", () => host.posted.some((m) => m.type === "event" && m.event.method === "turn/completed"));
    expect(fs.readFileSync(path.join(t.work, "app.py"), "utf8")).toBe("def greet():\n    return 'hello'\n");
    expect(host.closedEditors).toEqual([right]);
    expect(last(host, "approvalCleared")).toMatchObject({ cycleId: cycle.cycleId, reason: "answered", decision: "approve" });
    const sessions = () => host.trees.get("turnstoned.sessions")!();
    await host.until("the sessions tree", () => sessions()[0]?.label === "● say hello in app.py");

    // Close it from the sessions tree, then reopen it by resuming.
    const sessionId = sessions()[0]!.id;
    await host.run("turnstoned.sessions.close", sessions()[0]);
    await host.until("the closed row", () => sessions()[0]?.contextValue === "session.closed");
    expect(last(host, "reset")).toMatchObject({ sessionId: null, items: [] });
    await host.run("turnstoned.sessions.resume", sessionId);
    expect(last(host, "reset")).toMatchObject({ sessionId, title: "say hello in app.py" });

    // A window reload: a new extension host, the same workspace state.
    const reloaded = new FakeHost(host.settingsValue, { name: "work", path: t.work });
    reloaded.mementos = host.mementos;
    await host.daemons[0]!.stop();
    launch(reloaded);
    reloaded.fromPage({ type: "ready" });
    await reloaded.until("the history", () => (last(reloaded, "reset")?.items.length ?? 0) > 0);
    const reset = last(reloaded, "reset")!;
    expect(reset.title).toBe("say hello in app.py");
    expect(reset.items.map((i) => i.type)).toEqual(["userMessage", "toolCall", "toolCall", "agentMessage"]);

    // A window that went down before its workspace state was saved: the folder's newest session.
    const lost = new FakeHost(host.settingsValue, { name: "work", path: t.work });
    await reloaded.daemons[0]!.stop();
    launch(lost);
    lost.fromPage({ type: "ready" });
    await lost.until("the history", () => (last(lost, "reset")?.items.length ?? 0) > 0);
    expect(last(lost, "reset")).toMatchObject({ sessionId, title: "say hello in app.py" });

    // New Chat is remembered as such: the next window starts empty.
    await lost.run("turnstoned.newChat");
    const fresh = new FakeHost(host.settingsValue, { name: "work", path: t.work });
    fresh.mementos = lost.mementos;
    await lost.daemons[0]!.stop();
    launch(fresh);
    fresh.fromPage({ type: "ready" });
    await fresh.until("the page", () => Boolean(last(fresh, "reset")));
    expect(last(fresh, "reset")).toMatchObject({ sessionId: null, items: [] });
  });

  it("asks in a notification when the chat is hidden", async () => {
    const model = await withModel([{ toolCalls: [["b1", "bash", JSON.stringify({ command: "echo from-notification | tee note.txt" })]] }, { text: "ok" }]);
    const host = new FakeHost(settings({ baseUrl: model.baseUrl }), { name: "work", path: t.work });
    host.viewVisible = false;
    host.respond = (s) => (s.kind === "warn" && s.message.startsWith("turnstoned asks to run") ? "Approve" : undefined);
    launch(host);
    await host.until("ready", () => host.status.text.includes("scripted"));
    host.fromPage({ type: "send", text: "echo" });
    await host.until("the turn to end", () => host.posted.some((m) => m.type === "event" && m.event.method === "turn/completed"));
    const asked = host.shown.find((s) => s.kind === "warn")!;
    expect(asked.message).toBe("turnstoned asks to run ⚙ bash: echo from-notification | tee note.txt (medium risk: no rule of the table matched)");
    expect(asked.actions).toEqual(["Approve", "Always allow bash:@read-only, bash:tee", "Deny…", "Show in Chat"]);
    const done = host.posted.find((m) => m.type === "event" && m.event.method === "item/completed" && m.event.params.item.type === "toolCall");
    expect(done?.type === "event" && done.event.method === "item/completed" && done.event.params.item.type === "toolCall" ? done.event.params.item.status : "").toBe("completed");
  });

  it("the API key from secret storage reaches the model server through the daemon's environment", async () => {
    const requests = path.join(t.dir, "requests.jsonl");
    const model = await withModel([{ text: "one" }, { text: "two" }], { requestLog: requests });
    const host = new FakeHost(settings({ baseUrl: model.baseUrl }), { name: "work", path: t.work });
    host.respond = (s) => (s.kind === "input" ? "sk-from-secret-storage" : s.message.startsWith("API key saved") ? "Restart" : undefined);
    launch(host);
    await host.until("ready", () => host.status.text.includes("scripted"));
    await host.run("turnstoned.setApiKey");
    expect(host.secrets.get(API_KEY_SECRET)).toBe("sk-from-secret-storage");
    await host.until("the restart", () => host.daemons.length === 2 && host.status.text.includes("scripted"));
    expect(host.launches[1]!.args.join(" ")).not.toContain("sk-");
    host.fromPage({ type: "ready" });
    host.fromPage({ type: "send", text: "hi" });
    await host.until("a request", () => fs.existsSync(requests) && fs.readFileSync(requests, "utf8").includes("Bearer"));
    expect(JSON.parse(fs.readFileSync(requests, "utf8").split("\n")[0]!)).toEqual({ model: "scripted", authorization: "Bearer sk-from-secret-storage" });
  });

  it("a project's .mcp.json: a modal with the exact command; trusted, its server starts; revoked, it stops", { timeout: 60000 }, async () => {
    const everything = path.join(REPO, "tests/mcp_servers/everything.py");
    fs.writeFileSync(path.join(t.work, ".mcp.json"), JSON.stringify({ mcpServers: { proj: { command: PYTHON, args: [everything, "--name", "proj"], env: { TOKEN: "${TS_SECRET}" } } } }));
    process.env.TS_SECRET = "the user's secret";
    t.cleanups.push(() => delete process.env.TS_SECRET);
    const model = await withModel([{ text: "hi" }]);
    const host = new FakeHost(settings({ baseUrl: model.baseUrl }), { name: "work", path: t.work });
    host.respond = (s) => (s.kind === "modal" ? "Trust and Start" : undefined);
    launch(host);
    await host.until("ready", () => host.status.text.includes("scripted"));
    host.fromPage({ type: "ready" });
    host.fromPage({ type: "send", text: "hi" });
    await host.until("the trust question", () => host.shown.some((s) => s.kind === "modal"));
    const modal = host.shown.find((s) => s.kind === "modal")!;
    expect(modal.message).toBe(`This project's ${fs.realpathSync(t.work)}/.mcp.json wants to start an MCP server. Trust it?`);
    expect(modal.detail).toContain(`runs: ${PYTHON} ${everything} --name proj`);
    expect(modal.detail).toContain("receives the values of your environment variables: TS_SECRET");
    await host.until("the server to connect", () => host.status.text.includes("MCP 1/1"), 30000);

    host.respond = () => undefined;
    await host.run("turnstoned.mcpRevokeTrust");
    await host.until("the revoke message", () => host.shown.some((s) => s.kind === "info" && s.message.includes("no longer trusted")));
    await host.until("the server to stop", () => host.status.text.includes("MCP 0/1"));
  });

  it("a missing daemon: says how to install it", async () => {
    const host = new FakeHost(settings({ command: path.join(t.dir, "no-such-turnstoned") }), { name: "work", path: t.work });
    launch(host);
    await host.until("the error", () => host.shown.some((s) => s.kind === "error"));
    const error = host.shown.find((s) => s.kind === "error")!;
    expect(error.message).toContain("was not found");
    expect(error.detail).toContain("pip install -e .");
    expect(error.actions).toEqual(["Restart", "Open Settings", "Show Output"]);
    expect(host.status.text).toBe("$(error) turnstoned");

    // Fixing the setting starts the daemon at once: nothing was running, so nothing to ask.
    const model = await withModel([]);
    host.changeSettings({ command: DAEMON, baseUrl: model.baseUrl });
    await host.until("the daemon", () => host.status.text.includes("scripted"));
    expect(host.shown.filter((s) => s.kind === "info")).toEqual([]);
  });

  it("settings that change while the daemon starts: it starts again with them, without an error", async () => {
    const model = await withModel([]);
    const host = new FakeHost(settings({ command: "turnstoned-not-installed" }), { name: "work", path: t.work });
    let release!: () => void;
    const slowSecret = new Promise<void>((resolve) => (release = resolve));
    host.secret = async () => { await slowSecret; return undefined; };
    launch(host);
    host.changeSettings({ command: DAEMON, baseUrl: model.baseUrl }); // e.g. settings.json loaded late
    release();
    await host.until("the daemon", () => host.status.text.includes("scripted"));
    expect(host.shown.filter((s) => s.kind === "error")).toEqual([]);
  });

  it("a daemon that exits: the message carries its stderr tail", async () => {
    const script = path.join(t.dir, "broken-daemon");
    fs.writeFileSync(script, `#!${PYTHON}\nimport sys\nsys.stderr.write("config error: [model] base_url is not a URL\\n")\nsys.exit(3)\n`, { mode: 0o755 });
    const host = new FakeHost(settings({ command: script }), { name: "work", path: t.work });
    launch(host);
    await host.until("the error", () => host.shown.some((s) => s.kind === "error"));
    const error = host.shown.find((s) => s.kind === "error")!;
    expect(error.detail).toContain("config error: [model] base_url is not a URL");
    expect(host.status.tooltip).toContain("base_url is not a URL");
  });

  it("a daemon killed mid-session: the user is told, with the exit signal", async () => {
    const model = await withModel([]);
    const host = new FakeHost(settings({ baseUrl: model.baseUrl }), { name: "work", path: t.work });
    launch(host);
    await host.until("ready", () => host.status.text.includes("scripted"));
    host.daemons[0]!.child.kill("SIGKILL");
    await host.until("the error", () => host.shown.some((s) => s.kind === "error"));
    expect(host.shown.find((s) => s.kind === "error")!.message).toContain("was killed by SIGKILL");
  });
});
