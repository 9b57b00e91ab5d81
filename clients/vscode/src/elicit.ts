/** Pending MCP server questions (`mcpServer/elicit`): asked by the daemon, answered by the user, withdrawn when stale. */
import type { CancelToken } from "./connection";
import { Emitter } from "./events";
import type { ElicitRequest } from "./messages/elicit";
import type { McpElicitParams, McpElicitResponse } from "./protocol";

export type ElicitClearReason = "answered" | "withdrawn";

export type ElicitChange =
  | { kind: "added"; request: ElicitRequest }
  | { kind: "cleared"; id: string; sessionId: string; reason: ElicitClearReason };

interface Pending {
  request: ElicitRequest;
  resolve: (response: McpElicitResponse) => void;
}

/** The wire answer: content only with accept. */
export function toElicitResponse(response: McpElicitResponse): McpElicitResponse {
  return response.action === "accept" ? { action: "accept", content: response.content ?? {} } : { action: response.action };
}

export class ElicitBroker {
  private readonly pendingRequests = new Map<string, Pending>();
  private readonly changes = new Emitter<ElicitChange>();
  private seq = 0;
  readonly onChange = this.changes.event;

  /** Serve one `mcpServer/elicit`: resolves when answered; a withdrawn question resolves as cancel (the daemon ignores it). */
  handle(params: McpElicitParams, token?: CancelToken): Promise<McpElicitResponse> {
    return new Promise<McpElicitResponse>((resolve) => {
      const id = `elicit-${++this.seq}`;
      this.pendingRequests.set(id, { request: { id, params }, resolve });
      token?.onCancellationRequested(() => this.clear(id, "withdrawn"));
      this.changes.fire({ kind: "added", request: { id, params } });
      if (token?.isCancellationRequested) this.clear(id, "withdrawn");
    });
  }

  /** Answer a pending question; false when it is no longer pending (answered elsewhere, withdrawn). */
  answer(id: string, response: McpElicitResponse): boolean {
    const pending = this.pendingRequests.get(id);
    if (!pending) return false;
    this.pendingRequests.delete(id);
    pending.resolve(toElicitResponse(response));
    this.changes.fire({ kind: "cleared", id, sessionId: pending.request.params.sessionId, reason: "answered" });
    return true;
  }

  /** Withdraw every question of a session (or all): its turn ended, the daemon went away. */
  withdrawAll(sessionId?: string): void {
    for (const [id, p] of [...this.pendingRequests]) {
      if (sessionId === undefined || p.request.params.sessionId === sessionId) this.clear(id, "withdrawn");
    }
  }

  pending(sessionId?: string): ElicitRequest[] {
    return [...this.pendingRequests.values()].map((p) => p.request).filter((r) => sessionId === undefined || r.params.sessionId === sessionId);
  }

  get(id: string): ElicitRequest | undefined {
    return this.pendingRequests.get(id)?.request;
  }

  private clear(id: string, reason: ElicitClearReason): void {
    const pending = this.pendingRequests.get(id);
    if (!pending) return;
    this.pendingRequests.delete(id);
    pending.resolve({ action: "cancel" });
    this.changes.fire({ kind: "cleared", id, sessionId: pending.request.params.sessionId, reason });
  }
}
