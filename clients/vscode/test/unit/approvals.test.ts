import { describe, expect, it } from "vitest";
import { ApprovalBroker, gatedItems, toResponse, type ApprovalChange } from "../../src/approvals";
import type { CancelToken } from "../../src/connection";
import type { ApprovalRequestParams } from "../../src/protocol";

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
});
