import { describe, expect, it } from "vitest";
import { ApprovalBroker, gatedItems, splittable, toResponse, type ApprovalChange } from "../../src/approvals";
import type { CancelToken } from "../../src/connection";
import { alwaysChoice, riskNote } from "../../src/chat";
import type { ApprovalRequestItem, ApprovalRequestParams } from "../../src/protocol";

function cycle(cycleId: string, sessionId = "s1"): ApprovalRequestParams {
  return {
    sessionId, turnId: "t1", cycleId,
    items: [
      { callId: `${cycleId}-a`, tool: "bash", header: "bash: ls", needsApproval: true, approvalLabel: "bash" },
      { callId: `${cycleId}-b`, tool: "read_file", header: "read a", needsApproval: false, approvalLabel: "read_file" },
    ],
  };
}

class Token implements CancelToken {
  isCancellationRequested = false;
  private listeners: (() => void)[] = [];
  onCancellationRequested(l: () => void) { this.listeners.push(l); }
  cancel() { this.isCancellationRequested = true; for (const l of this.listeners) l(); }
}

describe("ApprovalBroker", () => {
  it("answers a pending cycle once, with trimmed feedback", async () => {
    const broker = new ApprovalBroker();
    const changes: ApprovalChange[] = [];
    broker.onChange((c) => changes.push(c));
    const response = broker.handle(cycle("k1"));
    expect(broker.pending().map((p) => p.cycleId)).toEqual(["k1"]);
    expect(broker.answer("k1", { decision: "deny", feedback: "  not now " })).toBe(true);
    expect(await response).toEqual({ decision: "deny", feedback: "not now" });
    expect(broker.answer("k1", { decision: "approve" })).toBe(false);
    expect(changes.map((c) => c.kind)).toEqual(["added", "cleared"]);
    expect(broker.pending()).toEqual([]);
  });

  it("clears a cycle the daemon withdrew, and one it resolved by itself", async () => {
    const broker = new ApprovalBroker();
    const reasons: string[] = [];
    broker.onChange((c) => { if (c.kind === "cleared") reasons.push(`${c.cycleId}:${c.reason}:${c.decision ?? ""}`); });
    const token = new Token();
    const withdrawn = broker.handle(cycle("k1"), token);
    const timedOut = broker.handle(cycle("k2"));
    token.cancel();
    broker.resolved({ sessionId: "s1", turnId: "t1", cycleId: "k2", callIds: ["k2-a"], decision: "timeout" });
    expect(await withdrawn).toEqual({ decision: "deny" });
    expect(await timedOut).toEqual({ decision: "deny" });
    expect(reasons).toEqual(["k1:withdrawn:", "k2:resolved:timeout"]);
    expect(broker.answer("k1", { decision: "approve" })).toBe(false);
  });

  it("finds the cycle asking about a call, and withdraws a session's cycles", () => {
    const broker = new ApprovalBroker();
    void broker.handle(cycle("k1", "s1"));
    void broker.handle(cycle("k2", "s2"));
    expect(broker.cycleOfCall("k2-a")?.cycleId).toBe("k2");
    expect(broker.cycleOfCall("k2-b")).toBeUndefined();
    broker.withdrawAll("s1");
    expect(broker.pending().map((p) => p.sessionId)).toEqual(["s2"]);
  });

  it("sends feedback only when there is some; lists only the gated calls", () => {
    expect(toResponse({ decision: "approve", feedback: "   " })).toEqual({ decision: "approve" });
    expect(gatedItems(cycle("k")).map((i) => i.callId)).toEqual(["k-a"]);
  });

  it("decides calls one by one and answers once every asked-about call is decided", async () => {
    const broker = new ApprovalBroker();
    const two: ApprovalRequestParams = { ...cycle("k"), items: [
      { callId: "w", tool: "write_file", header: "write", needsApproval: true, approvalLabel: "write_file" },
      { callId: "e", tool: "edit_file", header: "edit", needsApproval: true, approvalLabel: "edit_file" },
      { callId: "r", tool: "read_file", header: "read", needsApproval: false, approvalLabel: "read_file" },
    ] };
    const changes: ApprovalChange[] = [];
    broker.onChange((c) => changes.push(c));
    const response = broker.handle(two);
    expect(splittable(two, true)).toBe(true);
    expect(splittable({ ...two, atomic: true }, true)).toBe(false);
    expect(splittable(two, false)).toBe(false);
    broker.decideCall("k", "w", "approve");
    expect(broker.pending()).toHaveLength(1);
    broker.decideCall("k", "e", "deny", " not this one ");
    expect(await response).toEqual({ decision: "deny", calls: { w: { decision: "approve" }, e: { decision: "deny", feedback: "not this one" } } });
    expect(changes.map((c) => c.kind)).toEqual(["added", "callDecided", "callDecided", "cleared"]);
    expect(changes[3]).toMatchObject({ calls: { w: "approve", e: "deny" } });
    expect(broker.decideCall("k", "w", "approve")).toBe(false);
  });

  it("an edited call carries its arguments, decided alone or with the cycle", async () => {
    expect(toResponse({ decision: "approve", calls: { c: { decision: "approve", arguments: { command: "make -k" } } } }))
      .toEqual({ decision: "approve", calls: { c: { decision: "approve", arguments: { command: "make -k" } } } });
    const broker = new ApprovalBroker();
    const two: ApprovalRequestParams = { ...cycle("k"), items: [
      { callId: "a", tool: "bash", header: "a", needsApproval: true, approvalLabel: "bash" },
      { callId: "b", tool: "bash", header: "b", needsApproval: true, approvalLabel: "bash" },
    ] };
    const response = broker.handle(two);
    broker.decideCall("k", "a", "approve", undefined, { command: "ls -la" });
    broker.decideCall("k", "b", "approve");
    expect(await response).toEqual({ decision: "approve", calls: { a: { decision: "approve", arguments: { command: "ls -la" } }, b: { decision: "approve" } } });
  });

  it("all calls decided alike answer with that decision", async () => {
    const broker = new ApprovalBroker();
    const two: ApprovalRequestParams = { ...cycle("k"), items: [
      { callId: "a", tool: "bash", header: "a", needsApproval: true, approvalLabel: "bash" },
      { callId: "b", tool: "bash", header: "b", needsApproval: true, approvalLabel: "bash" },
    ] };
    const response = broker.handle(two);
    broker.decideCall("k", "a", "approve");
    broker.decideCall("k", "b", "approve");
    expect((await response).decision).toBe("approve");
  });
});

describe("the notification shown when the chat is hidden", () => {
  const item = (extra: Partial<ApprovalRequestItem>): ApprovalRequestItem => ({ callId: "c", tool: "bash", header: "bash", needsApproval: true, approvalLabel: "bash", ...extra });

  it("names the riskiest verdict", () => {
    const high = { risk: "high" as const, recommendation: "review" as const, rule: "destructive-git", reason: "git push --force discards work" };
    const low = { risk: "low" as const, recommendation: "approve" as const, rule: "read-only", reason: "only reads" };
    expect(riskNote([item({ verdict: low }), item({ verdict: high })])).toBe(" (high risk: git push --force discards work)");
    expect(riskNote([item({})])).toBe("");
  });

  it("offers always only with what it saves, and not for a call that asks every time", () => {
    expect(alwaysChoice([item({ grantRules: ["bash:npm test"] }), item({ grantRules: ["write@workspace"] })])).toBe("Always allow bash:npm test, write@workspace");
    expect(alwaysChoice([item({ grantRules: ["bash:npm test"] }), item({ grantRules: [] })])).toBeNull();
    expect(alwaysChoice([item({})])).toBe("Always allow bash");  // a daemon before 1.5
  });
});
