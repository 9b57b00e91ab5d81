/**
 * Tool policies and grants through the whole extension, against the real daemon: a workspace's
 * policies file asks for trust with its rules in a modal (trusted, its allow rule runs a call
 * unasked; denied, the call asks), and a grant saved by "Always allow" is listed and revoked.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import type { ToolCallItem } from "../../src/protocol";
import { appTests, last, launch as launchApp, settings, withModel as modelFor } from "../support/app";
import { FakeHost, type Shown } from "../support/fakeHost";

const t = appTests();
const withModel = (replies: unknown[]) => modelFor(t, replies);
const launch = (host: FakeHost) => launchApp(t, host);
const bash = (id: string, command: string) => ({ toolCalls: [[id, "bash", JSON.stringify({ command })]] });

const POLICIES = `[[policies]]
label = "bash"
command = "touch allowed-by-policy*"
action = "allow"
reason = "harmless"

[[policies]]
label = "bash"
command = "git push*"
action = "deny"
priority = 10
reason = "pushes go through review"
`;

function writePolicies(): string {
  fs.mkdirSync(path.join(t.work, ".turnstone"));
  fs.writeFileSync(path.join(t.work, ".turnstone/policies.toml"), POLICIES);
  return path.join(fs.realpathSync(t.work), ".turnstone/policies.toml");
}

const turnsDone = (host: FakeHost) => host.posted.filter((m) => m.type === "event" && m.event.method === "turn/completed").length;
const approvals = (host: FakeHost) => host.posted.filter((m) => m.type === "approval").length;

/** The bash call running `command`, as it completed. */
function completedCall(host: FakeHost, command: string): ToolCallItem | undefined {
  for (const m of host.posted) {
    if (m.type !== "event" || m.event.method !== "item/completed") continue;
    const item = m.event.params.item;
    if (item.type === "toolCall" && (JSON.parse(item.arguments ?? "{}") as { command?: string }).command === command) return item;
  }
  return undefined;
}

/** The extension started on the workspace, the chat page loaded, the daemon ready. */
async function started(replies: unknown[], respond: (s: Shown) => string | undefined): Promise<FakeHost> {
  const model = await withModel(replies);
  const host = new FakeHost(settings({ baseUrl: model.baseUrl }), { name: "work", path: t.work });
  host.respond = respond;
  launch(host);
  await host.until("ready", () => host.status.text.includes("scripted"));
  host.fromPage({ type: "ready" });
  return host;
}

async function turn(host: FakeHost, text: string): Promise<void> {
  const before = turnsDone(host);
  host.fromPage({ type: "send", text });
  await host.until(`the turn “${text}” to end`, () => turnsDone(host) > before, 30000);
}

describe("tool policies and grants in the extension", () => {
  it("a workspace's policies file: a modal with its rules; trusted, its allow rule runs a call unasked", { timeout: 60000 }, async () => {
    const file = writePolicies();
    const host = await started([{ text: "hello" }, bash("b1", "touch allowed-by-policy"), { text: "done" }], (s) => (s.kind === "modal" ? "Trust" : undefined));
    await turn(host, "hi");
    await host.until("the trust question", () => host.shown.some((s) => s.kind === "modal"));
    const modal = host.shown.find((s) => s.kind === "modal")!;
    expect(modal.message).toBe(`This project's ${file} wants 1 allow rule to run tool calls without asking. Trust it?`);
    expect(modal.detail!.split("\n").slice(0, 4)).toEqual([
      '#1  allow  label = "bash"  command = "touch allowed-by-policy*"',
      "      reason: harmless",
      '#2  deny  label = "bash"  command = "git push*"  priority = 10',
      "      reason: pushes go through review",
    ]);
    expect(modal.detail).toContain("Its deny and ask rules apply whatever you answer");
    expect(modal.actions).toEqual(["Deny", "Trust"]);

    await host.run("turnstoned.policies");
    const listed = host.shown.filter((s) => s.kind === "pick").at(-1)!;
    expect(listed.actions).toEqual([
      "$(shield) Workspace policies file: trusted: its allow rules apply",
      "$(lock) Stop trusting the workspace policies file",
      '$(circle-slash) deny  label = "bash"  command = "git push*"  priority = 10',
      '$(check) allow  label = "bash"  command = "touch allowed-by-policy*"',
    ]);

    await turn(host, "run it");
    expect(approvals(host)).toBe(0);
    const call = completedCall(host, "touch allowed-by-policy");
    expect(call).toMatchObject({ status: "completed", autoApproved: true });
    expect(call?.autoApproveReason).toMatch(/^policy: allow/);
  });

  it("denied, its allow rule does not apply (the call asks) while its deny rule still blocks", { timeout: 60000 }, async () => {
    writePolicies();
    const host = await started([{ text: "hello" }, { toolCalls: [["b1", "bash", JSON.stringify({ command: "touch allowed-by-policy" })], ["b2", "bash", JSON.stringify({ command: "git push origin main" })]] }, { text: "done" }], (s) => (s.kind === "modal" ? "Deny" : undefined));
    await turn(host, "hi");
    await host.until("the trust question", () => host.shown.some((s) => s.kind === "modal"));

    host.fromPage({ type: "send", text: "run it" });
    await host.until("the approval", () => approvals(host) === 1, 30000);
    const cycle = last(host, "approval")!.cycle;
    expect(cycle.items.filter((i) => i.needsApproval).map((i) => i.preview)).toEqual(["touch allowed-by-policy"]);
    host.fromPage({ type: "answer", cycleId: cycle.cycleId, answer: { decision: "approve" } });
    await host.until("the turn to end", () => turnsDone(host) === 2, 30000);
    expect(completedCall(host, "touch allowed-by-policy")).toMatchObject({ status: "completed" });
    expect(completedCall(host, "git push origin main")).toMatchObject({ status: "declined", isError: true });
    expect(completedCall(host, "git push origin main")?.output).toContain("pushes go through review");

    await host.run("turnstoned.policies");
    expect(host.shown.filter((s) => s.kind === "pick").at(-1)!.actions.slice(0, 2)).toEqual([
      "$(shield) Workspace policies file: denied: its allow rules are off",
      "$(unlock) Trust the workspace policies file…",
    ]);
  });

  it("trusting from Tool Policies shows the rules first, then lets the allow rule run unasked", { timeout: 60000 }, async () => {
    writePolicies();
    let picks = 0;
    const host = await started([{ text: "hello" }, bash("b1", "touch allowed-by-policy now"), { text: "done" }], (s) => {
      if (s.kind === "modal") return s.message.includes("wants") && picks === 0 ? undefined : "Trust";
      if (s.kind === "pick") return picks++ === 0 ? "$(unlock) Trust the workspace policies file…" : undefined;
      return undefined;
    });
    await turn(host, "hi");
    await host.until("the trust question", () => host.shown.some((s) => s.kind === "modal"));
    await host.run("turnstoned.policies");
    const modals = host.shown.filter((s) => s.kind === "modal");
    expect(modals).toHaveLength(2);
    expect(modals[1]!.detail).toContain('#1  allow  label = "bash"  command = "touch allowed-by-policy*"');
    expect(host.shown.some((s) => s.kind === "info" && s.message.endsWith("policies.toml: trusted, its allow rules apply."))).toBe(true);
    // The list came back with the file trusted.
    expect(host.shown.filter((s) => s.kind === "pick").at(-1)!.actions[0]).toBe("$(shield) Workspace policies file: trusted: its allow rules apply");
    await turn(host, "run it");
    expect(approvals(host)).toBe(0);
    expect(completedCall(host, "touch allowed-by-policy now")).toMatchObject({ status: "completed", autoApproved: true });
  });

  it("a grant saved by “Always allow” shows in Grants; revoked, the next call asks again", { timeout: 60000 }, async () => {
    let revoking = true;
    const host = await started([bash("b1", "touch one"), { text: "1" }, bash("b2", "touch two"), { text: "2" }, bash("b3", "touch three"), { text: "3" }], (s) => {
      if (s.kind !== "pick" || !revoking) return undefined;
      if (s.message === "Grants of this chat") return s.actions.find((a) => a.includes("bash:touch"));
      if (s.message === "Grant bash:touch") return "$(trash) Revoke bash:touch";
      return undefined;
    });
    await host.run("turnstoned.grants");
    expect(host.shown.at(-1)).toMatchObject({ kind: "info", message: "Start or resume a chat first: grants belong to a chat's session." });

    host.fromPage({ type: "send", text: "one" });
    await host.until("the approval", () => approvals(host) === 1, 30000);
    const cycle = last(host, "approval")!.cycle;
    expect(cycle.items[0]!.grantRules).toEqual(["bash:touch"]);
    host.fromPage({ type: "answer", cycleId: cycle.cycleId, answer: { decision: "always" } });
    await host.until("the first turn to end", () => turnsDone(host) === 1, 30000);
    await turn(host, "two");
    expect(approvals(host)).toBe(1);
    expect(completedCall(host, "touch two")).toMatchObject({ autoApproved: true, autoApproveReason: "grant: bash:touch" });

    await host.run("turnstoned.grants");
    const picks = host.shown.filter((s) => s.kind === "pick");
    expect(picks[0]!.actions).toEqual(["$(key) bash:touch"]);
    expect(picks[1]!.actions).toEqual(["$(trash) Revoke bash:touch"]);
    expect(host.shown.filter((s) => s.kind === "info").map((s) => s.message).slice(-2)).toEqual([
      "Revoked bash:touch: its calls ask again.",
      "This chat has no grants: nothing runs unasked because of an earlier “Always allow”.",
    ]);

    revoking = false;
    host.fromPage({ type: "send", text: "three" });
    await host.until("the approval again", () => approvals(host) === 2, 30000);
    expect(last(host, "approval")!.cycle.items[0]!.preview).toBe("touch three");
  });
});
