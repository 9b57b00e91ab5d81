/** Pending approval cycles: asked by the daemon, answered by the user, cleared when stale. */
import type { CancelToken } from "./connection";
import { Emitter } from "./events";
import type { ApprovalAnswer, CallAnswer, ClearReason } from "./messages/chat";
import type { ApprovalRequestItem, ApprovalRequestParams, ApprovalResolved, ApprovalResponse, Decision } from "./protocol";

export type ApprovalChange =
  | { kind: "added"; cycle: ApprovalRequestParams }
  | { kind: "callDecided"; sessionId: string; cycleId: string; callId: string; decision: Decision }
  | { kind: "cleared"; sessionId: string; cycleId: string; reason: ClearReason; decision?: string; calls?: Record<string, string> };

interface Pending {
  params: ApprovalRequestParams;
  resolve: (response: ApprovalResponse) => void;
  /** Calls decided one by one so far (sent once every asked-about call has one). */
  calls: Record<string, CallAnswer>;
}

/** Build the wire response for an answer; feedback is sent only when there is some. */
export function toResponse(answer: ApprovalAnswer): ApprovalResponse {
  const response: ApprovalResponse = { decision: answer.decision };
  const feedback = answer.feedback?.trim();
  if (feedback) response.feedback = feedback;
  const calls = Object.entries(answer.calls ?? {});
  if (calls.length) {
    response.calls = Object.fromEntries(calls.map(([callId, c]) => {
      const f = c.feedback?.trim();
      return [callId, { decision: c.decision, ...(f ? { feedback: f } : {}), ...(c.arguments ? { arguments: c.arguments } : {}) }];
    }));
  }
  return response;
}

/** Whether the calls of a cycle may be decided one by one (protocol 1.1, not atomic). */
export function splittable(params: ApprovalRequestParams, perCallDecisions: boolean): boolean {
  return perCallDecisions && !params.atomic && gatedItems(params).length > 1;
}

/** The calls of a cycle the user is actually asked about. */
export function gatedItems(params: ApprovalRequestParams): ApprovalRequestItem[] {
  return params.items.filter((item) => item.needsApproval);
}

/** Edited arguments for an approved call that the answer itself does not carry (an edited review diff). */
export type Amender = (callId: string) => Record<string, unknown> | undefined;

/** The answer with the amender's arguments on every approved call that has none of its own. */
export function amended(params: ApprovalRequestParams, answer: ApprovalAnswer, amend: Amender | null): ApprovalAnswer {
  if (!amend) return answer;
  let calls = answer.calls;
  for (const item of gatedItems(params)) {
    const own = answer.calls?.[item.callId];
    const decision = own?.decision ?? answer.decision;
    if (decision === "deny" || own?.arguments) continue;
    const args = amend(item.callId);
    if (!args) continue;
    calls = { ...calls, [item.callId]: { ...(own ?? { decision }), arguments: args } };
  }
  return calls === answer.calls ? answer : { ...answer, calls };
}

export class ApprovalBroker {
  private readonly pendingCycles = new Map<string, Pending>();
  private readonly changes = new Emitter<ApprovalChange>();
  readonly onChange = this.changes.event;
  /** Asked, as a cycle is answered, for arguments the user gave some other way (see ReviewController). */
  amend: Amender | null = null;

  /** Serve one `item/tool/requestApproval`: resolves when answered, withdrawn or resolved. */
  handle(params: ApprovalRequestParams, token?: CancelToken): Promise<ApprovalResponse> {
    return new Promise<ApprovalResponse>((resolve) => {
      this.pendingCycles.set(params.cycleId, { params, resolve, calls: {} });
      token?.onCancellationRequested(() => this.clear(params.cycleId, "withdrawn"));
      this.changes.fire({ kind: "added", cycle: params });
      if (token?.isCancellationRequested) this.clear(params.cycleId, "withdrawn");
    });
  }

  /** Answer a pending cycle; false when it is no longer pending (answered elsewhere, withdrawn). */
  answer(cycleId: string, answer: ApprovalAnswer): boolean {
    const pending = this.pendingCycles.get(cycleId);
    if (!pending) return false;
    this.pendingCycles.delete(cycleId);
    pending.resolve(toResponse(amended(pending.params, answer, this.amend)));
    const change: ApprovalChange = { kind: "cleared", sessionId: pending.params.sessionId, cycleId, reason: "answered", decision: answer.decision };
    if (answer.calls && Object.keys(answer.calls).length) {
      change.calls = Object.fromEntries(Object.entries(answer.calls).map(([id, c]) => [id, c.decision]));
    }
    this.changes.fire(change);
    return true;
  }

  /**
   * Decide one call of a cycle; the answer goes out once every asked-about call is decided
   * (each by its own entry in `calls`). False when the cycle is no longer pending.
   */
  decideCall(cycleId: string, callId: string, decision: Decision, feedback?: string, args?: Record<string, unknown>): boolean {
    const pending = this.pendingCycles.get(cycleId);
    if (!pending) return false;
    pending.calls[callId] = { decision, ...(feedback ? { feedback } : {}), ...(args ? { arguments: args } : {}) };
    this.changes.fire({ kind: "callDecided", sessionId: pending.params.sessionId, cycleId, callId, decision });
    const gated = gatedItems(pending.params).map((i) => i.callId);
    if (gated.every((id) => pending.calls[id])) {
      // Every call is named; the cycle-level decision only covers calls the request did not ask about.
      const allSame = gated.every((id) => pending.calls[id]!.decision === decision);
      this.answer(cycleId, { decision: allSame ? decision : "deny", calls: pending.calls });
    }
    return true;
  }

  /** `approval/resolved` from the daemon: whatever is still shown for that cycle is stale. */
  resolved(event: ApprovalResolved): void {
    this.clear(event.cycleId, "resolved", event.decision, event.calls);
  }

  /** Withdraw every cycle of a session (or all): the daemon went away or the session closed. */
  withdrawAll(sessionId?: string): void {
    for (const [cycleId, p] of [...this.pendingCycles]) {
      if (sessionId === undefined || p.params.sessionId === sessionId) this.clear(cycleId, "withdrawn");
    }
  }

  pending(sessionId?: string): ApprovalRequestParams[] {
    return [...this.pendingCycles.values()]
      .map((p) => p.params)
      .filter((p) => sessionId === undefined || p.sessionId === sessionId);
  }

  /** The pending cycle that asks about this call, if any. */
  cycleOfCall(callId: string): ApprovalRequestParams | undefined {
    return this.pending().find((p) => p.items.some((item) => item.callId === callId && item.needsApproval));
  }

  private clear(cycleId: string, reason: ClearReason, decision?: string, calls?: Record<string, string>): void {
    const pending = this.pendingCycles.get(cycleId);
    if (!pending) return;
    this.pendingCycles.delete(cycleId);
    // The daemon ignores an answer to a withdrawn or resolved request; deny is the safe filler.
    pending.resolve({ decision: "deny" });
    const change: ApprovalChange = { kind: "cleared", sessionId: pending.params.sessionId, cycleId, reason };
    if (decision !== undefined) change.decision = decision;
    if (calls && Object.keys(calls).length) change.calls = calls;
    this.changes.fire(change);
  }
}
