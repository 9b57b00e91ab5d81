/**
 * The chat input's 1.13 parts against the real daemon: the model's live plan, @-mentions fed by
 * workspace/findFiles, slash commands (a built-in run as its request, a workspace skill sent as
 * its prompt), the model picker, the first-run offer of a local model, and pictures.
 */
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { PlanEntry, UserEntry } from "../../src/chat/state";
import { MODEL_KEY } from "../../src/chat";
import { appTests, last, launch, pageState, settings, withModel } from "../support/app";
import { writeConfig } from "../support/daemon";
import { FakeHost } from "../support/fakeHost";

const t = appTests();

async function ready(replies: unknown[], over: Parameters<typeof settings>[0] = {}, extra: Record<string, unknown> = {}): Promise<FakeHost> {
  const model = await withModel(t, replies, extra);
  const host = new FakeHost(settings({ baseUrl: model.baseUrl, ...over }), { name: "work", path: t.work });
  launch(t, host);
  await host.until("the daemon", () => host.status.text.includes(over.model || "scripted"));
  host.fromPage({ type: "ready" });
  await host.until("features", () => last(host, "features")?.composer === true);
  return host;
}

const turnEnded = (host: FakeHost, n = 1) => host.until(`turn ${n} to end`, () => host.posted.filter((m) => m.type === "event" && m.event.method === "turn/completed").length >= n, 30000);
const logOf = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) : []);
type Message = { role: string; content: unknown };
const userTexts = (entry: Record<string, unknown>) => (entry.messages as Message[]).filter((m) => m.role === "user").map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));
const plan = (steps: [string, string][], explanation?: string) => JSON.stringify({ steps: steps.map(([step, status]) => ({ step, status })), ...(explanation ? { explanation } : {}) });
/** A 1×1 PNG. */
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

describe("the chat input and the live plan, against the real daemon", () => {
  it("plan/updated from update_plan: one checklist at the top of the turn, replaced in place; session/resume redraws it", { timeout: 40000 }, async () => {
    const host = await ready([
      { toolCalls: [["p1", "update_plan", plan([["Read the code", "in_progress"], ["Fix the bug", "pending"]])]] },
      { toolCalls: [["p2", "update_plan", plan([["Read the code", "done"], ["Fix the bug", "in_progress"]], "read it")]] },
      { text: "Fixed." },
    ]);
    host.fromPage({ type: "send", text: "fix the bug" });
    await turnEnded(host);
    const updates = host.posted.filter((m) => m.type === "event" && m.event.method === "plan/updated");
    expect(updates).toHaveLength(2);
    const page = pageState(host.posted);
    const plans = page.entries.filter((e): e is PlanEntry => e.kind === "plan");
    expect(plans).toHaveLength(1);
    expect(plans[0]!.steps).toEqual([{ step: "Read the code", status: "done" }, { step: "Fix the bug", status: "in_progress" }]);
    expect(plans[0]!.explanation).toBe("read it");
    // At the top of the turn: right after its prompt.
    expect(page.entries.map((e) => e.kind).slice(0, 2)).toEqual(["user", "plan"]);

    await host.run("turnstoned.sessions.resume", page.sessionId);
    const reset = last(host, "reset")!;
    expect(reset.plan).toEqual([{ step: "Read the code", status: "done" }, { step: "Fix the bug", status: "in_progress" }]);
    const again = pageState(host.posted);
    expect(again.entries.filter((e) => e.kind === "plan").map((e) => (e as PlanEntry).steps.map((s) => s.status))).toEqual([["done", "in_progress"]]);
  });

  it("@-mentions: findFiles feeds the list (before and with a session); a sent @file:2-3 reaches the model as those lines", { timeout: 40000 }, async () => {
    fs.writeFileSync(path.join(t.work, "notes.txt"), "one\ntwo\nthree\nfour\n");
    fs.mkdirSync(path.join(t.work, "src"));
    fs.writeFileSync(path.join(t.work, "src", "app.py"), "print('hi')\n");
    const messageLog = path.join(t.dir, "messages.jsonl");
    const host = await ready([{ text: "Read them." }, { text: "Again." }], {}, { messageLog });
    host.fromPage({ type: "findFiles", seq: 1, query: "nts" });
    await host.until("the files", () => last(host, "files")?.seq === 1);
    const files = last(host, "files")!;
    expect(files.files[0]).toMatchObject({ path: "notes.txt" });
    // The matched letters, to highlight.
    expect(files.files[0]!.positions!.map((i) => "notes.txt"[i]).join("")).toBe("nts");

    host.fromPage({ type: "send", text: "what do @notes.txt:2-3 say?", mentions: [{ path: "notes.txt", startLine: 2, endLine: 3 }] });
    await turnEnded(host);
    const sent = userTexts(logOf(messageLog)[0]!).join("\n");
    expect(sent).toContain("[Mentioned notes.txt lines 2-3]");
    expect(sent).toContain("two\nthree");
    expect(sent).not.toContain("four");
    expect(sent).toContain("what do @notes.txt:2-3 say?");
    // The transcript keeps what was typed.
    expect(pageState(host.posted).entries.filter((e): e is UserEntry => e.kind === "user").map((e) => e.text)).toEqual(["what do @notes.txt:2-3 say?"]);

    // With a session: its folder's files.
    host.fromPage({ type: "findFiles", seq: 2, query: "app" });
    await host.until("the files", () => last(host, "files")?.seq === 2);
    expect(last(host, "files")!.files.map((f) => f.path)).toContain("src/app.py");
  });

  it("slash commands: the list has the built-ins and a workspace skill; /compact runs session/compact (no prompt); /x words reaches the model with the skill", { timeout: 40000 }, async () => {
    fs.mkdirSync(path.join(t.work, ".turnstone", "skills"), { recursive: true });
    fs.writeFileSync(path.join(t.work, ".turnstone", "skills", "x.md"), "---\nname: x\ndescription: Say things the x way\n---\nAnswer in the x way: short.\n");
    const messageLog = path.join(t.dir, "messages.jsonl");
    const host = await ready([{ text: "Hello." }, { text: "The x way." }], {}, { messageLog });
    host.fromPage({ type: "listCommands" });
    await host.until("the commands", () => Boolean(last(host, "commands")));
    const commands = last(host, "commands")!.commands;
    expect(commands.filter((c) => c.kind === "builtin").map((c) => c.name)).toEqual(expect.arrayContaining(["compact", "undo", "redo", "mode", "model", "new", "clear"]));
    expect(commands.find((c) => c.name === "x")).toMatchObject({ kind: "skill", description: "Say things the x way" });

    host.fromPage({ type: "send", text: "hi" });
    await turnEnded(host);
    host.fromPage({ type: "send", text: "/compact" });
    await host.until("the compaction's answer", () => host.shown.some((s) => s.message.includes("compact")) && Boolean(last(host, "commandRan")));
    expect(host.shown.filter((s) => s.message.includes("compact")).map((s) => s.message)).toEqual(["Nothing to compact yet: the conversation is only its most recent turns."]);
    expect(last(host, "commandRan")).toEqual({ type: "commandRan", text: "/compact" });
    expect(logOf(messageLog)).toHaveLength(1);
    expect(pageState(host.posted).entries.filter((e) => e.kind === "user").map((e) => (e as UserEntry).text)).toEqual(["hi"]);

    host.fromPage({ type: "send", text: "/x tell me" });
    await turnEnded(host, 2);
    const log = logOf(messageLog);
    expect(log).toHaveLength(2);
    const sent = userTexts(log[1]!).join("\n");
    expect(sent).toContain("[The user ran /x");
    expect(sent).toContain("/x tell me");
    expect(JSON.stringify(log[1]!.messages)).toContain("Answer in the x way: short.");
  });

  it("the model picker: the header's model, the pick used from the next request, kept for new chats in this folder", { timeout: 40000 }, async () => {
    const requestLog = path.join(t.dir, "requests.jsonl");
    const host = await ready([{ text: "one" }, { text: "two" }, { text: "three" }], { model: "alt-model" }, { requestLog });
    expect(last(host, "model")).toEqual({ type: "model", model: "alt-model", pending: true });
    expect(host.modelStatus).toMatchObject({ text: "$(hubot) alt-model", command: "turnstoned.pickModel" });
    host.fromPage({ type: "send", text: "hi" });
    await turnEnded(host);
    expect(logOf(requestLog).map((r) => r.model)).toEqual(["alt-model"]);

    host.respond = (s) => (s.kind === "pick" && s.message === "Model of this chat" ? "scripted" : undefined);
    host.fromPage({ type: "pickModel" });
    await host.until("the model status", () => host.modelStatus.text === "$(hubot) scripted");
    expect(host.shown.find((s) => s.kind === "pick")?.actions).toEqual(["alt-model", "scripted"]);
    expect(last(host, "model")).toEqual({ type: "model", model: "scripted", pending: false });
    expect(host.status.text).toContain("scripted");
    host.fromPage({ type: "send", text: "again" });
    await turnEnded(host, 2);
    expect(logOf(requestLog).map((r) => r.model)).toEqual(["alt-model", "scripted"]);
    expect(host.mementos.get(MODEL_KEY + t.work)).toBe("scripted");

    // A new chat in this folder starts with it; so does /model with a name.
    await host.run("turnstoned.newChat");
    expect(last(host, "model")).toEqual({ type: "model", model: "scripted", pending: true });
    host.fromPage({ type: "send", text: "third" });
    await turnEnded(host, 3);
    expect(logOf(requestLog).map((r) => r.model)).toEqual(["alt-model", "scripted", "scripted"]);
  });

  it("pictures: one pasted reaches a model with supports_vision as an image_url part, and comes back on resume as a thumbnail", { timeout: 40000 }, async () => {
    const messageLog = path.join(t.dir, "messages.jsonl");
    const model = await withModel(t, [{ text: "A dot." }], { messageLog });
    writeConfig(t.home, `[model]\nname = "scripted"\nbase_url = "${model.baseUrl}"\nsupports_vision = true\n\n[approvals]\nmode = "read-only"\n`);
    const host = new FakeHost(settings({ model: "", baseUrl: "" }), { name: "work", path: t.work });
    launch(t, host);
    await host.until("the daemon", () => host.status.text.includes("scripted"));
    host.fromPage({ type: "ready" });
    await host.until("features", () => last(host, "features")?.composer === true);
    host.fromPage({ type: "send", text: "what is this?", images: [{ data: PNG, mimeType: "image/png" }] });
    await turnEnded(host);
    const content = (logOf(messageLog)[0]!.messages as Message[]).filter((m) => m.role === "user").map((m) => m.content).find(Array.isArray) as { type: string; image_url?: { url: string } }[];
    expect(content.find((p) => p.type === "image_url")?.image_url?.url).toBe(`data:image/png;base64,${PNG}`);
    const sessionId = pageState(host.posted).sessionId!;
    await host.run("turnstoned.sessions.resume", sessionId);
    const prompt = pageState(host.posted).entries.find((e): e is UserEntry => e.kind === "user")!;
    expect(prompt.images).toEqual([{ mimeType: "image/png", data: PNG }]);
  });

  it("pictures to a model without vision: nothing is sent and the page is told why", { timeout: 30000 }, async () => {
    const host = await ready([{ text: "never" }]);
    host.fromPage({ type: "send", text: "what is this?", images: [{ data: PNG, mimeType: "image/png" }] });
    await host.until("the failure", () => Boolean(last(host, "sendFailed")));
    expect(last(host, "sendFailed")!.message).toMatch(/^Not sent: .*does not take pictures.*supports_vision = true/);
  });
});

/** A port nothing listens on (the kernel picks it). */
async function freePort(): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}

describe("the first run: no model configured", () => {
  // Where the daemon looks for local servers (TURNSTONED_LOCAL_SERVERS), so a server the
  // developer runs on a usual port cannot change what these tests see.
  afterEach(() => { delete process.env.TURNSTONED_LOCAL_SERVERS; });

  it("a local server answers (the scripted model where the daemon looks for LM Studio): offered, model/use saves config.toml, and the chat works", { timeout: 40000 }, async () => {
    const port = await freePort();
    process.env.TURNSTONED_LOCAL_SERVERS = `LM Studio=${port}`;
    await withModel(t, [{ text: "Local hello." }], { port });
      const host = new FakeHost(settings({ model: "", baseUrl: "" }), { name: "work", path: t.work });
      host.respond = (s) => (s.kind === "info" && s.message.startsWith("No model is configured") ? "Use scripted" : undefined);
      launch(t, host);
      await host.until("the offer's answer", () => host.shown.some((s) => s.message.startsWith("turnstoned uses")), 20000);
      expect(host.shown[0]).toMatchObject({ kind: "info", message: "No model is configured. Use scripted on LM Studio?", actions: ["Use scripted"] });
      const config = fs.readFileSync(path.join(t.home, "config", "config.toml"), "utf8");
      expect(config).toContain('name = "scripted"');
      expect(config).toContain(`base_url = "http://127.0.0.1:${port}/v1"`);
      expect(config).toContain('mode = "read-only"');
      await host.until("the status bar", () => host.status.text.includes("scripted"));
      host.fromPage({ type: "ready" });
      host.fromPage({ type: "send", text: "hi" });
      await turnEnded(host);
      expect(pageState(host.posted).entries.some((e) => e.kind === "agent" && e.text === "Local hello.")).toBe(true);
  });

  it("nothing found: one message naming docs/local-models.md and the settings", { timeout: 30000 }, async () => {
    process.env.TURNSTONED_LOCAL_SERVERS = "";  // look nowhere: nothing is found
    const host = new FakeHost(settings({ model: "", baseUrl: "" }), { name: "work", path: t.work });
    launch(t, host);
    await host.until("the message", () => host.shown.length > 0, 20000);
    await new Promise((r) => setTimeout(r, 300));
    expect(host.shown).toHaveLength(1);
    expect(host.shown[0]).toMatchObject({ kind: "info", actions: ["Open Settings"] });
    expect(host.shown[0]!.message).toContain("docs/local-models.md");
    expect(host.shown[0]!.message).toContain("turnstoned.baseUrl");
  });
});
