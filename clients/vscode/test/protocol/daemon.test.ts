/** The extension's client drives the real daemon against the repository's scripted model. */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ApprovalBroker, splittable } from "../../src/approvals";
import { applyApproval, applyEvent, clearCycle, emptyState, fromHistory, type ToolEntry } from "../../src/chat/state";
import { daemonFeatures, TurnstonedClient } from "../../src/client";
import { rpcError } from "../../src/connection";
import type { ToWebview } from "../../src/messages/chat";
import type { ApprovalRequestParams } from "../../src/protocol";
import { ErrorKind } from "../../src/protocol";
import type { ToPreview } from "../../src/messages/preview";
import { PreviewController } from "../../src/previews";
import { FakeHost } from "../support/fakeHost";
import { startDaemon, startModel, tempDir, type ModelServer, type RunningDaemon } from "../support/daemon";
import { EventLog } from "../support/events";

const ANSWER = "The command printed **hello-from-bash**. To run it yourself:\n\n```sh\necho hello-from-bash\n```\n\n- it writes one line\n- and exits with `0`";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(replies: unknown[]): Promise<{ client: TurnstonedClient; log: EventLog; broker: ApprovalBroker; daemon: RunningDaemon; model: ModelServer; dir: string }> {
  const dir = tempDir("turnstoned-vscode-");
  const model = await startModel(replies, dir);
  cleanups.push(() => model.stop());
  const home = path.join(dir, "home");
  fs.mkdirSync(home);
  const daemon = await startDaemon({ OPENAI_BASE_URL: model.baseUrl, OPENAI_API_KEY: "sk-test", TURNSTONED_MODEL: "scripted" }, home);
  cleanups.push(() => daemon.stop());
  const client = new TurnstonedClient(daemon.connection);
  const broker = new ApprovalBroker();
  client.setApprovalHandler((params, token) => broker.handle(params, token));
  const log = new EventLog(client);
  client.onEvent((e) => { if (e.method === "approval/resolved") broker.resolved(e.params); });
  const work = path.join(dir, "work");
  fs.mkdirSync(work);
  return { client, log, broker, daemon, model, dir: work };
}

function nextApproval(broker: ApprovalBroker, ms = 10000): Promise<ApprovalRequestParams> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no approval request")), ms);
    const sub = broker.onChange((c) => {
      if (c.kind === "added") { clearTimeout(timer); sub.dispose(); resolve(c.cycle); }
    });
  });
}

describe("the client against the real daemon", () => {
  it("runs a turn with an approval and renders it as the chat would", async () => {
    const { client, log, broker, dir } = await setup([
      { toolCalls: [["call-1", "bash", JSON.stringify({ command: "echo hello-from-bash | tee hello.txt" })]] },
      { text: ANSWER, reasoning: "The user wants a greeting; bash echo prints it." },
    ]);
    const health = await client.health();
    expect(health.protocolVersion).toBe(1);
    const { sessionId } = await client.startSession({ cwd: dir, workspace: dir });
    let chat = emptyState(sessionId);
    const page: ToWebview[] = [{ type: "sent", text: "say hello", queued: false }];
    client.onEvent((e) => { chat = applyEvent(chat, e); page.push({ type: "event", event: e }); });
    broker.onChange((c) => {
      if (c.kind === "added") {
        chat = applyApproval(chat, c.cycle);
        page.push({ type: "approval", cycle: c.cycle });
      } else {
        if (c.kind !== "cleared") return;
        chat = clearCycle(chat, c.cycleId, c.decision);
        page.push({ type: "approvalCleared", cycleId: c.cycleId, reason: c.reason, ...(c.decision ? { decision: c.decision } : {}) });
      }
    });

    const asked = nextApproval(broker);
    const { turnId, queued } = await client.startTurn(sessionId, "say hello");
    expect(queued ?? false).toBe(false);
    const cycle = await asked;
    expect(cycle.items.map((i) => [i.tool, i.needsApproval])).toEqual([["bash", true]]);
    const card = chat.entries.find((e): e is ToolEntry => e.kind === "tool");
    expect(card?.approval?.cycleId).toBe(cycle.cycleId);

    expect(broker.answer(cycle.cycleId, { decision: "approve" })).toBe(true);
    const done = await log.wait("turn/completed", (e) => e.params.turnId === turnId);
    expect(done.params.status).toBe("completed");
    const resolved = await log.wait("approval/resolved");
    expect(resolved.params.decision).toBe("approve");
    expect(log.of("item/toolCall/outputDelta").map((d) => d.chunk).join("")).toContain("hello-from-bash");

    const tool = chat.entries.find((e): e is ToolEntry => e.kind === "tool")!;
    expect([tool.status, tool.approval, tool.output.includes("hello-from-bash")]).toEqual(["completed", null, true]);
    const answer = chat.entries.find((e) => e.kind === "agent");
    expect(answer && "text" in answer ? answer.text : "").toBe(ANSWER);
    expect(chat.entries.find((e) => e.kind === "reasoning")).toMatchObject({ done: true, text: expect.stringContaining("bash echo") });
    expect(chat.turnId).toBeNull();

    // What session/resume gives back redraws the same transcript.
    const history = await client.resumeSession(sessionId);
    const redrawn = fromHistory(sessionId, history.session.title ?? "", history.items);
    expect(redrawn.entries.map((e) => e.kind)).toEqual(["user", "tool", "reasoning", "agent"]);
    expect(history.session.title).toBe("say hello");
    expect((await client.listSessions()).map((s) => s.sessionId)).toContain(sessionId);

    if (process.env.RECORD_STREAM) {
      // The messages the chat page received, in order: the browser test replays them.
      fs.writeFileSync(process.env.RECORD_STREAM, JSON.stringify({ sessionId, messages: page }, null, 1) + "\n");
    }
  });

  it("denies with feedback, and the model reads it", async () => {
    const { client, log, broker, dir } = await setup([
      { toolCalls: [["call-d", "bash", JSON.stringify({ command: "rm -rf build" })]] },
      { text: "Understood." },
    ]);
    const { sessionId } = await client.startSession({ cwd: dir });
    const asked = nextApproval(broker);
    await client.startTurn(sessionId, "clean up");
    const cycle = await asked;
    broker.answer(cycle.cycleId, { decision: "deny", feedback: "keep the build folder" });
    await log.wait("turn/completed");
    const call = log.of("item/completed").map((p) => p.item).find((i) => i.type === "toolCall");
    expect(call && call.type === "toolCall" ? [call.status, call.output] : []).toEqual(["declined", expect.stringContaining("keep the build folder")]);
  });

  it("a withdrawn approval (interrupt) clears the pending prompt and the turn ends interrupted", async () => {
    const { client, log, broker, dir } = await setup([
      { toolCalls: [["call-s", "bash", JSON.stringify({ command: "sleep 30; touch late.txt" })]] },
      { text: "never" },
    ]);
    const { sessionId } = await client.startSession({ cwd: dir });
    const cleared = new Promise<string>((resolve) => broker.onChange((c) => { if (c.kind === "cleared") resolve(c.reason); }));
    const asked = nextApproval(broker);
    await client.startTurn(sessionId, "wait");
    await asked;
    await client.interrupt(sessionId);
    expect(["withdrawn", "resolved"]).toContain(await cleared);
    expect(broker.pending()).toEqual([]);
    const done = await log.wait("turn/completed");
    expect(done.params.status).toBe("interrupted");
  });

  it("a rated request; the user edits the command and the edited one runs", async () => {
    const { client, log, broker, dir } = await setup([
      { toolCalls: [["call-e", "bash", JSON.stringify({ command: "echo original > out.txt" })]] },
      { text: "done" },
    ]);
    const { sessionId } = await client.startSession({ cwd: dir, workspace: dir });
    let chat = emptyState(sessionId);
    client.onEvent((e) => { chat = applyEvent(chat, e); });
    const asked = nextApproval(broker);
    await client.startTurn(sessionId, "write it");
    const cycle = await asked;
    chat = applyApproval(chat, cycle, true);
    const item = cycle.items[0]!;
    expect(item.verdict).toMatchObject({ risk: "medium", rule: "default", tier: "heuristic" });
    expect(item.grantRules).toEqual(["bash:echo"]);
    broker.answer(cycle.cycleId, { decision: "approve", calls: { [item.callId]: { decision: "approve", arguments: { command: "echo edited > out.txt" } } } });
    await log.wait("turn/completed");
    expect(fs.readFileSync(path.join(dir, "out.txt"), "utf8")).toBe("edited\n");
    const card = chat.entries.find((e): e is ToolEntry => e.kind === "tool")!;
    expect([card.status, card.preview, card.verdict?.rule]).toEqual(["completed", "echo edited > out.txt", "default"]);
    expect(JSON.parse(card.originalArguments ?? "{}")).toEqual({ command: "echo original > out.txt" });
  });

  it("interrupts a long command while it runs", async () => {
    const { client, log, broker, dir } = await setup([
      { toolCalls: [["call-l", "bash", JSON.stringify({ command: "echo started; sleep 30" })]] },
      { text: "after" },
    ]);
    const { sessionId } = await client.startSession({ cwd: dir });
    broker.onChange((c) => { if (c.kind === "added") broker.answer(c.cycle.cycleId, { decision: "approve" }); });
    await client.startTurn(sessionId, "run it");
    await log.wait("item/toolCall/outputDelta", (e) => e.params.chunk.includes("started"));
    const before = Date.now();
    await client.interrupt(sessionId);
    const done = await log.wait("turn/completed", () => true, 5000);
    expect(done.params.status).toBe("interrupted");
    expect(Date.now() - before).toBeLessThan(5000);
    const call = log.of("item/completed").map((p) => p.item).find((i) => i.type === "toolCall");
    expect(call && call.type === "toolCall" ? call.status : "").toBe("cancelled");
  });

  it("queues a message typed while a turn runs", async () => {
    const { client, log, dir } = await setup([{ hang: 2, text: "thinking" }, { text: "Got both." }]);
    const { sessionId } = await client.startSession({ cwd: dir });
    const first = await client.startTurn(sessionId, "first");
    await log.wait("item/agentMessage/delta");
    const second = await client.startTurn(sessionId, "second");
    expect(second).toEqual({ turnId: first.turnId, queued: true });
    await log.wait("turn/completed", () => true, 15000);
  });

  it("edit proposals: read while pending, decided call by call, refused after; context usage", async () => {
    const { client, log, broker, dir } = await setup([
      { toolCalls: [["r1", "read_file", JSON.stringify({ path: "old.txt" })]] },
      { toolCalls: [
        ["w1", "write_file", JSON.stringify({ path: "new.txt", content: "brand new\n" })],
        ["e1", "edit_file", JSON.stringify({ path: "old.txt", old_string: "two", new_string: "TWO" })],
      ] },
      { text: "Wrote one, skipped the other." },
    ]);
    fs.writeFileSync(path.join(dir, "old.txt"), "one\ntwo\nthree\n");
    expect(daemonFeatures(await client.health())).toEqual({ perCallDecisions: true, editReview: true, editArguments: true, policies: true, watches: true, compaction: true, approvalModes: true, checkpoints: true, editor: true, composer: true, mcpLogin: true });
    const { sessionId } = await client.startSession({ cwd: dir, workspace: dir });
    const asked = nextApproval(broker);
    await client.startTurn(sessionId, "edit files");
    const cycle = await asked;
    expect(cycle.atomic ?? false).toBe(false);
    expect(splittable(cycle, true)).toBe(true);
    // Call ids on the wire are the daemon's own (models reuse theirs): find the calls by tool.
    const byTool = Object.fromEntries(cycle.items.map((i) => [i.tool, i]));
    const w1 = byTool.write_file!.callId;
    const e1 = byTool.edit_file!.callId;
    expect(byTool.write_file!.fileChange).toMatchObject({ path: path.join(fs.realpathSync(dir), "new.txt"), kind: "create" });
    expect(byTool.edit_file!.fileChange).toMatchObject({ kind: "modify", unifiedDiff: expect.stringContaining("+TWO") });

    // What the diff editor shows: both sides of each proposal, read while pending.
    expect(await client.readFileChange(sessionId, e1)).toMatchObject({ oldText: "one\ntwo\nthree\n", newText: "one\nTWO\nthree\n" });
    expect(await client.readFileChange(sessionId, w1)).toMatchObject({ oldText: "", newText: "brand new\n" });

    const resolvedLater = log.wait("approval/resolved");
    expect(broker.decideCall(cycle.cycleId, w1, "approve")).toBe(true);
    expect(broker.pending()).toHaveLength(1);
    expect(broker.decideCall(cycle.cycleId, e1, "deny", "leave old.txt alone")).toBe(true);
    expect(broker.pending()).toHaveLength(0);
    expect((await resolvedLater).params.calls).toEqual({ [w1]: "approve", [e1]: "deny" });
    await log.wait("turn/completed");
    expect(fs.readFileSync(path.join(dir, "new.txt"), "utf8")).toBe("brand new\n");
    expect(fs.readFileSync(path.join(dir, "old.txt"), "utf8")).toBe("one\ntwo\nthree\n");
    const denied = log.of("item/completed").map((p) => p.item).find((i) => i.type === "toolCall" && i.callId === e1);
    expect(denied && denied.type === "toolCall" ? [denied.status, denied.output] : []).toEqual(["declined", expect.stringContaining("leave old.txt alone")]);

    const late = await client.readFileChange(sessionId, e1).then(() => null, (e: unknown) => rpcError(e));
    expect(late?.kind).toBe(ErrorKind.FILE_CHANGE_NOT_PENDING);
    const usage = log.of("session/usage");
    expect(usage.length).toBeGreaterThanOrEqual(3);
    expect(usage[0]!.contextWindow).toBeGreaterThan(0);
  });

  it("a large preview is read in ranges, each exactly where the last ended", async () => {
    const { client, log, dir } = await setup([
      { toolCalls: [["p1", "open_preview", JSON.stringify({ target: "big.txt" })]] },
      { text: "Shown." },
    ]);
    const body = Array.from({ length: 6000 }, (_, i) => `line ${i}: ${"é".repeat(i % 40)}`).join("\n");
    fs.writeFileSync(path.join(dir, "big.txt"), body);
    const { sessionId } = await client.startSession({ cwd: dir });
    await client.startTurn(sessionId, "show big.txt");
    const opened = (await log.wait("preview/open")).params;
    expect([opened.kind, opened.size]).toEqual(["text", Buffer.byteLength(body)]);
    const reads: number[] = [];
    const host = new FakeHost({ command: "", args: [], model: "", baseUrl: "", logLevel: "INFO", skipPermissions: false, approvalMode: null, editorContext: true, shareDaemon: false }, { name: "w", path: dir });
    const previews = new PreviewController(host, (s, p, offset, length) => { reads.push(offset); return client.readPreview(s, p, offset, length); }, 64 * 1024);
    await previews.opened(opened);
    await host.until("the last range", () => host.panels[0]?.posted.some((m) => m.type === "chunk" && m.eof) ?? false);
    const chunks = host.panels[0]!.posted.filter((m): m is Extract<ToPreview, { type: "chunk" }> => m.type === "chunk");
    expect(reads).toEqual(chunks.map((c) => c.offset));
    expect(reads.length).toBe(Math.ceil(opened.size / (64 * 1024)));
    expect(Buffer.concat(chunks.map((c) => Buffer.from(c.data, "base64"))).toString("utf8")).toBe(body);
    const gone = await client.readPreview(sessionId, "f".repeat(64)).then(() => null, (e: unknown) => rpcError(e));
    expect(gone?.kind).toBe(ErrorKind.PREVIEW_NOT_FOUND);
  });

  it("protocol errors carry their kind", async () => {
    const { client } = await setup([]);
    const err = await client.startTurn("no-such-session", "x").then(() => null, (e: unknown) => rpcError(e));
    expect(err?.kind).toBe(ErrorKind.SESSION_NOT_FOUND);
  });
});
