/** Messages between the extension host and the chat webview. */
import type { ApprovalRequestParams, DaemonEvent, Decision, Item } from "../protocol";

/** What the user answered for one call: `arguments` runs it edited (protocol 1.5). */
export interface CallAnswer {
  decision: Decision;
  feedback?: string;
  arguments?: Record<string, unknown>;
}

/** What the user answered for one cycle (`calls` decides single calls, when the daemon allows). */
export interface ApprovalAnswer {
  decision: Decision;
  feedback?: string;
  calls?: Record<string, CallAnswer>;
}

/** Why a pending cycle stopped being pending. */
export type ClearReason = "answered" | "resolved" | "withdrawn";

/** Something put into the next prompt by "Add selection/file to chat". */
export interface Attachment {
  label: string;
  text: string;
}

export type DaemonState = "starting" | "ready" | "stopped";

export type ToWebview =
  | { type: "reset"; sessionId: string | null; title: string; items: Item[]; running: boolean }
  | { type: "session"; sessionId: string }
  | { type: "event"; event: DaemonEvent }
  | { type: "approval"; cycle: ApprovalRequestParams }
  | { type: "approvalCleared"; cycleId: string; reason: ClearReason; decision?: string; calls?: Record<string, string> }
  | { type: "callDecided"; cycleId: string; callId: string; decision: Decision }
  | { type: "attach"; attachment: Attachment }
  | { type: "daemon"; state: DaemonState; message?: string }
  | { type: "features"; perCallDecisions: boolean; editReview: boolean; editArguments: boolean }
  | { type: "sent"; text: string; queued: boolean }
  | { type: "sendFailed"; text: string; message: string };

export type FromWebview =
  | { type: "ready" }
  | { type: "send"; text: string }
  | { type: "interrupt" }
  | { type: "answer"; cycleId: string; answer: ApprovalAnswer }
  | { type: "decideCall"; cycleId: string; callId: string; decision: Decision; feedback?: string; arguments?: Record<string, unknown> }
  | { type: "review"; callId: string }
  | { type: "copy"; text: string }
  | { type: "insert"; text: string }
  | { type: "newChat" }
  | { type: "openPreview"; previewId: string }
  | { type: "showOutput" };
