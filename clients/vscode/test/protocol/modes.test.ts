/**
 * Approval modes and the command sandbox in the extension, against the real daemon: the mode
 * set from the chat's header and from the command, shown in the status bar and the header, a
 * plan approved as a plan (the session then in auto), and a session with no config on this
 * machine running a command in the sandbox without asking.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import type { ToolEntry } from "../../src/chat/state";
import { appTests, last, launch, pageState, settings, withModel } from "../support/app";
import { writeConfig } from "../support/daemon";
import { FakeHost } from "../support/fakeHost";

const t = appTests();

async function ready(replies: unknown[], over: Parameters<typeof settings>[0] = {}): Promise<FakeHost> {
  const model = await withModel(t, replies);
  const host = new FakeHost(settings({ baseUrl: model.baseUrl, ...over }), { name: "work", path: t.work });
  launch(t, host);
  await host.until("the daemon", () => host.status.text.includes("scripted"));
  host.fromPage({ type: "ready" });
  await host.until("features", () => last(host, "features")?.approvalModes === true);
  return host;
}

const turnEnded = (host: FakeHost, n = 1) => host.until(`turn ${n} to end`, () => host.posted.filter((m) => m.type === "event" && m.event.method === "turn/completed").length >= n, 30000);

describe("approval modes and the sandbox, against the real daemon", () => {
  it("the mode set from the header and the command: status bar, header and daemon agree; an approved plan switches to auto", { timeout: 60000 }, async () => {
    const plan = "# Rename the greeting\n\n1. Change `hi` to `hello` in app.py\n2. Run the tests";
    const host = await ready([
      { text: "Hello." },
      { toolCalls: [["p1", "propose_plan", JSON.stringify({ plan })]] },
      { text: "Carrying it out." },
    ], { approvalMode: "plan" });
    // Before any session: the next chat's mode, from the setting.
    expect(last(host, "mode")).toMatchObject({ mode: "plan", pending: true });
    expect(host.modeStatus).toMatchObject({ text: "$(checklist) Plan", command: "turnstoned.setApprovalMode" });
    expect(host.modeStatus.tooltip).toContain("The next chat starts in this mode");

    // Picked in the header before sending: the session starts in it.
    host.fromPage({ type: "setMode", mode: "read-only" });
    await host.until("the header", () => last(host, "mode")?.mode === "read-only");
    host.fromPage({ type: "send", text: "hi" });
    await turnEnded(host);
    const sessionId = pageState(host.posted).sessionId!;
    const info = async () => (await host.daemons[0]!.raw.sendRequest("session/list") as { sessions: { sessionId: string; approvalMode: string }[] }).sessions.find((s) => s.sessionId === sessionId);
    expect((await info())?.approvalMode).toBe("read-only");
    expect(last(host, "mode")).toMatchObject({ mode: "read-only", pending: false });
    expect(host.modeStatus.text).toBe("$(lock) Read-only");

    // The header's picker: the daemon's session changes, and so do the status bar and the header.
    host.fromPage({ type: "setMode", mode: "full-access" });
    await host.until("the status bar", () => host.modeStatus.text === "$(unlock) Full access");
    expect((await info())?.approvalMode).toBe("full-access");
    expect(pageState(host.posted).mode).toMatchObject({ mode: "full-access", pending: false });

    // The command's quick pick.
    host.respond = (s) => (s.kind === "pick" && s.message === "Approval mode of this chat" ? "$(checklist) Plan" : undefined);
    await host.run("turnstoned.setApprovalMode");
    expect(host.shown.find((s) => s.kind === "pick")?.actions).toEqual(["$(lock) Read-only", "$(shield) Auto", "$(unlock) Full access", "$(checklist) Plan"]);
    await host.until("plan mode", () => host.modeStatus.text === "$(checklist) Plan");
    expect((await info())?.approvalMode).toBe("plan");

    // In plan mode the model proposes a plan; asked (the chat hidden) as a plan, approving it switches to auto.
    host.viewVisible = false;
    host.respond = (s) => (s.kind === "info" && s.message.includes("proposes a plan") ? "Approve Plan" : undefined);
    host.fromPage({ type: "send", text: "rename the greeting" });
    await host.until("the plan", () => Boolean(last(host, "approval")), 30000);
    const cycle = last(host, "approval")!.cycle;
    expect(cycle.items.map((i) => [i.tool, i.preview])).toEqual([["propose_plan", plan]]);
    await turnEnded(host, 2);
    expect(host.shown.filter((s) => s.message.includes("plan")).map((s) => [s.kind, s.message, s.actions])).toEqual([
      ["info", "turnstoned proposes a plan: Rename the greeting. Approving it switches the chat to auto mode.", ["Approve Plan", "Revise…", "Show in Chat"]],
    ]);
    await host.until("auto mode", () => host.modeStatus.text === "$(shield) Auto");
    expect((await info())?.approvalMode).toBe("auto");
    const page = pageState(host.posted);
    expect(page.mode).toMatchObject({ mode: "auto", pending: false });
    expect(page.entries.filter((e) => e.kind === "notice" && e.noticeKind === "mode").map((e) => e.kind === "notice" && e.text)).toEqual([
      "Approval mode: read-only → full-access", "Approval mode: full-access → plan", "Approval mode: plan → auto",
    ]);
  });

  it("no config on this machine: auto mode, and `touch x` runs in the sandbox without asking", async () => {
    fs.rmSync(path.join(t.home, "config", "config.toml"));
    const host = await ready([
      { toolCalls: [["b1", "bash", JSON.stringify({ command: "touch x" })]] },
      { text: "Touched." },
    ]);
    const status = host.daemons.length ? await host.daemons[0]!.raw.sendRequest("daemon/health", {}) as { sandbox?: { available: boolean; detail?: string } } : {};
    // This test is about the sandbox: a machine without one fails it loudly rather than skipping.
    if (!status.sandbox?.available) throw new Error(`daemon/health reports no sandbox on this machine: ${JSON.stringify(status.sandbox)}`);
    expect(host.status.tooltip).toContain("sandbox: on");

    host.fromPage({ type: "send", text: "touch x" });
    await turnEnded(host);
    expect(host.posted.filter((m) => m.type === "approval")).toEqual([]);
    expect(host.shown.filter((s) => s.kind === "warn")).toEqual([]);
    expect(fs.existsSync(path.join(t.work, "x"))).toBe(true);
    const page = pageState(host.posted);
    expect(page.mode).toMatchObject({ mode: "auto", pending: false, sandbox: { available: true } });
    expect(host.modeStatus.text).toBe("$(shield) Auto");
    const card = page.entries.find((e): e is ToolEntry => e.kind === "tool")!;
    expect([card.tool, card.status, card.sandbox, card.approval]).toEqual(["bash", "completed", "sandboxed", null]);
    expect(card.autoApproved).toContain("sandbox");
  });

  it("a mode changed by a request the chat did not make: the chat follows", async () => {
    writeConfig(t.home, '[approvals]\nmode = "auto"\n');
    const host = await ready([{ text: "ok" }]);
    host.fromPage({ type: "send", text: "hi" });
    await turnEnded(host);
    await host.until("auto", () => host.modeStatus.text === "$(shield) Auto");
    const sessionId = pageState(host.posted).sessionId!;
    await host.daemons[0]!.raw.sendRequest("session/setMode", { sessionId, mode: "read-only" });
    await host.until("read-only", () => host.modeStatus.text === "$(lock) Read-only");
    expect(pageState(host.posted).mode?.mode).toBe("read-only");
  });
});
