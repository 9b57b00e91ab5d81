/** Messages between the extension host and the chat webview. */
import type { ApprovalMode, ApprovalRequestParams, ChangedFile, DaemonEvent, Decision, FoundFile, ImageData, Item, McpElicitResponse, PlanStep, SandboxHealth, SessionCommand } from "../protocol";
import type { ElicitRequest } from "./elicit";

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

/** What the daemon can do, as far as the page cares (absent fields: it cannot). */
export interface PageFeatures {
  perCallDecisions: boolean;
  editReview: boolean;
  editArguments: boolean;
  /** Approval modes and the sandbox (1.9). */
  approvalModes?: boolean;
  /** Checkpoints, undo, redo and fork (1.10). */
  checkpoints?: boolean;
  /** @-mentions, slash commands, pictures, the model picker (1.13). */
  composer?: boolean;
}

/** A file an @-mention in the prompt names, with its lines (from 1) when given. */
export interface Mention {
  path: string;
  startLine?: number;
  endLine?: number;
}

/** The model the chat's session uses (or the next chat's), for the header. */
export interface ModelInfo {
  model: string | null;
  pending: boolean;
}

/**
 * The approval mode the chat's session is in; `pending` when no session exists yet and it is
 * the mode the next one starts in (null: the daemon's configured default).
 */
export interface ModeInfo {
  mode: ApprovalMode | null;
  pending: boolean;
  sandbox: SandboxHealth | null;
}

/** An undo the chat shows (with Redo until it is redone). */
export interface UndoInfo {
  undoId: string;
  turnIds: string[];
  restored: string[];
  kept: string[];
  rewound: boolean;
  redone: boolean;
}

/** A project instruction file the session's model follows, as the chat names it. */
export interface InstructionLine {
  path: string;
  /** Relative to the session's folder when inside it ("src/AGENTS.md"). */
  label: string;
  chars: number;
  truncated: boolean;
}

/** What the next prompt carries of the editor: "app.py: lines 10-20", and all of it in words. */
export interface EditorChipInfo {
  label: string;
  detail: string;
}

/** How an earlier prompt runs again: in this chat (rewound) or in a new one (forked). */
export type Rerun = "rewind" | "fork";

export type ToWebview =
  /** `turns` maps history's userMessage item ids to the turns they started, where known. */
  | { type: "reset"; sessionId: string | null; title: string; items: Item[]; running: boolean; turns?: Record<string, string>; plan?: PlanStep[] }
  | { type: "session"; sessionId: string }
  | { type: "event"; event: DaemonEvent }
  | { type: "approval"; cycle: ApprovalRequestParams }
  | { type: "approvalCleared"; cycleId: string; reason: ClearReason; decision?: string; calls?: Record<string, string> }
  | { type: "callDecided"; cycleId: string; callId: string; decision: Decision }
  /** An MCP server's question: a form under its running call. */
  | { type: "elicit"; request: ElicitRequest }
  /** The question was answered (here or elsewhere) or withdrawn: its form goes. */
  | { type: "elicitCleared"; id: string }
  | { type: "attach"; attachment: Attachment }
  | { type: "daemon"; state: DaemonState; message?: string }
  | ({ type: "features" } & PageFeatures)
  | ({ type: "mode" } & ModeInfo)
  /** What a turn changed (redrawn history has no turn/completed to carry it). */
  | { type: "changes"; turnId: string; files: ChangedFile[]; undoable: boolean; note: string | null }
  | ({ type: "undone" } & UndoInfo)
  /** Text for the composer (the prompt of a rewound turn, to edit and send again). */
  | { type: "draft"; text: string }
  | { type: "sent"; text: string; queued: boolean; turnId?: string }
  /** The instruction files of the shown session (after its `reset` or `session`). */
  | { type: "instructions"; files: InstructionLine[] }
  /** What of the editor goes with the next prompt (null: nothing). */
  | { type: "editor"; chip: EditorChipInfo | null }
  | { type: "sendFailed"; text: string; message: string }
  /** The answer to a `findFiles` of the page (`seq` names which). */
  | { type: "files"; seq: number; query: string; files: FoundFile[] }
  /** The slash commands the chat offers (an empty list: none could be had). */
  | { type: "commands"; commands: SessionCommand[] }
  /** A sent `/command` ran as a command, not as a prompt: the page takes the prompt back out. */
  | { type: "commandRan"; text: string }
  | ({ type: "model" } & ModelInfo);

export type FromWebview =
  | { type: "ready" }
  /** `editor: false`: the user left the editor state out of this prompt. */
  | { type: "send"; text: string; editor?: boolean; mentions?: Mention[]; images?: ImageData[] }
  /** The @-completion list: files matching what follows the @ (answered with `files`). */
  | { type: "findFiles"; seq: number; query: string }
  /** The / list (answered with `commands`). */
  | { type: "listCommands" }
  /** The header's model: pick another. */
  | { type: "pickModel" }
  /** A file named in the chat (an instruction file) in an editor. */
  | { type: "openFile"; path: string }
  | { type: "interrupt" }
  | { type: "answer"; cycleId: string; answer: ApprovalAnswer }
  | { type: "decideCall"; cycleId: string; callId: string; decision: Decision; feedback?: string; arguments?: Record<string, unknown> }
  | { type: "review"; callId: string }
  /** The answer to an MCP server's question. */
  | { type: "elicitAnswer"; id: string; response: McpElicitResponse }
  | { type: "copy"; text: string }
  | { type: "insert"; text: string }
  | { type: "newChat" }
  | { type: "openPreview"; previewId: string }
  | { type: "showOutput" }
  | { type: "setMode"; mode: ApprovalMode }
  /** A file of a turn's changes: its diff in the editor, or undo it alone. */
  | { type: "showChange"; turnId: string; path: string }
  | { type: "undoFile"; turnId: string; path: string }
  | { type: "undoTurn"; turnId: string }
  | { type: "redo"; undoId: string }
  /** Run an earlier prompt again, edited. */
  | { type: "rerun"; turnId: string; text: string; how: Rerun };
