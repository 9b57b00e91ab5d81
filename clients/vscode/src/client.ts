/** The typed turnstoned client: requests, one stream of daemon events, the approval hook. */
import type { CancelToken, Connection, Disposable, NotificationName } from "./connection";
import { TypedConnection } from "./connection";
import { Emitter } from "./events";
import type {
  ApprovalRequestParams,
  ApprovalResponse,
  DaemonHealthResult,
  DaemonEvent,
  DaemonRequests,
  EditorState,
  FileChangeReadResult,
  FindFilesResult,
  InputItem,
  ModelListResult,
  ModelUseParams,
  ModelUseResult,
  SessionCommand,
  SessionSetModelResult,
  GrantInfo,
  McpAuthorizeParams,
  McpAuthorizeResponse,
  McpServerInfo,
  McpServerLoginResult,
  McpServerRefreshResult,
  McpServerTrustParams,
  McpServerTrustResult,
  McpElicitParams,
  McpElicitResponse,
  McpTrustRequestParams,
  McpTrustResponse,
  PolicyListResult,
  PolicyTrustParams,
  PolicyTrustRequestParams,
  PolicyTrustResult,
  PreviewReadResult,
  ApprovalMode,
  Resolution,
  SessionCompactResult,
  SessionForkParams,
  SessionForkResult,
  SessionInfo,
  SessionSetModeResult,
  SessionResumeResult,
  SessionStartParams,
  SessionStartResult,
  ToolInfo,
  TurnChangesResult,
  TurnStartResult,
  TurnUndoParams,
  TurnUndoResult,
  WatchCancelResult,
  WatchInfo,
} from "./protocol";
import { Method } from "./protocol";


/** The notifications the client forwards; a daemon may send others, which are ignored. */
export const FORWARDED: readonly NotificationName[] = [
  Method.sessionInput,
  Method.turnStarted,
  Method.itemStarted,
  Method.itemAgentMessageDelta,
  Method.itemReasoningDelta,
  Method.itemToolCallOutputDelta,
  Method.itemCompleted,
  Method.approvalResolved,
  Method.approvalVerdicts,
  Method.turnCompleted,
  Method.sessionNotice,
  Method.sessionUsage,
  Method.sessionCompacted,
  Method.sessionModeChanged,
  Method.previewOpen,
  Method.mcpServerStatusChanged,
  Method.workspaceFilesChanged,
  Method.planUpdated,
];

/** What a daemon can do beyond protocol 1.0, from its `protocolRevision`. */
export interface DaemonFeatures {
  /** `calls` in approval answers; `fileChange/read`; `session/usage`. */
  perCallDecisions: boolean;
  editReview: boolean;
  /** `watch/list` and `watch/cancel` (1.3). */
  watches: boolean;
  /** `session/compact` (1.4). */
  compaction: boolean;
  /** `arguments` in a per-call decision: the user edits a call before it runs (1.5). */
  editArguments: boolean;
  /** `grant/list`, `grant/revoke`, `policy/list`, `policy/trust` (1.5). */
  policies: boolean;
  /** Approval modes (`session/setMode`, `session/modeChanged`) and the command sandbox (1.9). */
  approvalModes: boolean;
  /** Checkpoints: `turn/changes`, `turn/undo`, `turn/redo`, `session/fork` (1.10). */
  checkpoints: boolean;
  /** The editor state on `turn/start`, the `editor/*` requests, `workspace/filesChanged`; `turnId` on prompts and `undoneBy` (1.12). */
  editor: boolean;
  /** Mentions, slash commands, pictures, the live plan and the model requests (1.13). */
  composer: boolean;
  /** OAuth for HTTP MCP servers: `needsAuth`/`loggedIn`, `mcpServer/login`, `mcpServer/logout`, `mcpServer/authorize` (1.14). */
  mcpLogin: boolean;
}

function revisionAtLeast(revision: string | undefined, wanted: string): boolean {
  const [major = 0, minor = 0] = (revision ?? "1.0").split(".").map(Number);
  const [wMajor = 0, wMinor = 0] = wanted.split(".").map(Number);
  return major > wMajor || (major === wMajor && minor >= wMinor);
}

export function daemonFeatures(health: Pick<DaemonHealthResult, "protocolRevision">): DaemonFeatures {
  const v11 = revisionAtLeast(health.protocolRevision, "1.1");
  const v15 = revisionAtLeast(health.protocolRevision, "1.5");
  return {
    perCallDecisions: v11, editReview: v11, editArguments: v15, policies: v15,
    watches: revisionAtLeast(health.protocolRevision, "1.3"), compaction: revisionAtLeast(health.protocolRevision, "1.4"),
    approvalModes: revisionAtLeast(health.protocolRevision, "1.9"), checkpoints: revisionAtLeast(health.protocolRevision, "1.10"),
    editor: revisionAtLeast(health.protocolRevision, "1.12"),
    composer: revisionAtLeast(health.protocolRevision, "1.13"),
    mcpLogin: revisionAtLeast(health.protocolRevision, "1.14"),
  };
}

export type ApprovalHandler = (params: ApprovalRequestParams, token: CancelToken) => Promise<ApprovalResponse>;
export type TrustHandler = (params: McpTrustRequestParams, token: CancelToken) => Promise<McpTrustResponse>;
/** Who answers an MCP server's question (`mcpServer/elicit`). */
export type ElicitHandler = (params: McpElicitParams, token: CancelToken) => Promise<McpElicitResponse>;
/** Who shows an MCP server's login page (`mcpServer/authorize`, 1.14). */
export type AuthorizeHandler = (params: McpAuthorizeParams, token: CancelToken) => Promise<McpAuthorizeResponse>;
export type PolicyTrustHandler = (params: PolicyTrustRequestParams, token: CancelToken) => Promise<McpTrustResponse>;

type EditorRequest = "editor/diagnostics" | "editor/openFiles" | "editor/symbol" | "editor/buffers";
/** Who answers the daemon's `editor/*` requests (1.12); one that is missing answers with an error. */
export type EditorHandlers = { [M in EditorRequest]?: (params: DaemonRequests[M]["params"], token: CancelToken) => Promise<DaemonRequests[M]["result"]> };
const EDITOR_REQUESTS: readonly EditorRequest[] = [Method.editorDiagnostics, Method.editorOpenFiles, Method.editorSymbol, Method.editorBuffers];

export class TurnstonedClient {
  private readonly conn: TypedConnection;
  private readonly events = new Emitter<DaemonEvent>();
  private readonly subscriptions: Disposable[] = [];
  private approvalHandler: ApprovalHandler = async () => ({ decision: "deny", feedback: "No one is there to approve." });
  private trustHandler: TrustHandler = async () => ({ decision: "dismiss" });
  private policyTrustHandler: PolicyTrustHandler = async () => ({ decision: "dismiss" });
  private elicitHandler: ElicitHandler = async () => ({ action: "decline" });
  private authorizeHandler: AuthorizeHandler = async () => { throw new Error("this client shows no login pages"); };
  private editorHandlers: EditorHandlers = {};

  /** Every forwarded notification, in arrival order. */
  readonly onEvent = this.events.event;

  constructor(connection: Connection) {
    this.conn = new TypedConnection(connection);
    for (const method of FORWARDED) {
      this.subscriptions.push(
        this.conn.on(method, (params) => this.events.fire({ method, params } as DaemonEvent)),
      );
    }
    this.subscriptions.push(
      this.conn.serve(Method.itemToolRequestApproval, (params, token) => this.approvalHandler(params, token)),
      this.conn.serve(Method.mcpServerRequestTrust, (params, token) => this.trustHandler(params, token)),
      this.conn.serve(Method.policyRequestTrust, (params, token) => this.policyTrustHandler(params, token)),
      this.conn.serve(Method.mcpServerElicit, (params, token) => this.elicitHandler(params, token)),
      this.conn.serve(Method.mcpServerAuthorize, (params, token) => this.authorizeHandler(params, token)),
      ...EDITOR_REQUESTS.map((method) => this.serveEditor(method)),
    );
  }

  private serveEditor<M extends EditorRequest>(method: M): Disposable {
    return this.conn.serve(method, (params, token) => {
      const handler: EditorHandlers[M] = this.editorHandlers[method];
      return handler ? handler(params, token) : Promise.reject(new Error(`this editor does not serve ${method}`));
    });
  }

  /** Who answers the `editor/*` requests (what the client declared at initialize). */
  setEditorHandlers(handlers: EditorHandlers): void {
    this.editorHandlers = handlers;
  }

  /** Who answers `mcpServer/requestTrust` (the default trusts nothing). */
  setTrustHandler(handler: TrustHandler): void {
    this.trustHandler = handler;
  }

  /** Who answers `mcpServer/elicit` (the default declines). */
  setElicitHandler(handler: ElicitHandler): void {
    this.elicitHandler = handler;
  }

  /** Who answers `mcpServer/authorize` (the default answers with an error, which ends the login). */
  setAuthorizeHandler(handler: AuthorizeHandler): void {
    this.authorizeHandler = handler;
  }

  /** Who answers `policy/requestTrust` (the default trusts nothing). */
  setPolicyTrustHandler(handler: PolicyTrustHandler): void {
    this.policyTrustHandler = handler;
  }

  /** Trust (start) or revoke a project's `.mcp.json` servers. */
  mcpTrust(params: McpServerTrustParams): Promise<McpServerTrustResult> {
    return this.conn.request(Method.mcpServerTrust, params);
  }

  /** Who answers `item/tool/requestApproval` (the default denies). */
  setApprovalHandler(handler: ApprovalHandler): void {
    this.approvalHandler = handler;
  }

  health(): Promise<DaemonHealthResult> {
    return this.conn.request(Method.daemonHealth, {});
  }

  /** The sessions the daemon knows of, newest first (with `cwd`: those working in that folder or below it, 1.13). */
  async listSessions(cwd?: string): Promise<SessionInfo[]> {
    return (await this.conn.request(Method.sessionList, cwd ? { cwd } : {})).sessions;
  }

  /** A new session: its id and the project instructions its model reads (1.11). */
  startSession(params: SessionStartParams): Promise<SessionStartResult> {
    return this.conn.request(Method.sessionStart, params);
  }

  resumeSession(sessionId: string): Promise<SessionResumeResult> {
    return this.conn.request(Method.sessionResume, { sessionId });
  }

  async closeSession(sessionId: string): Promise<void> {
    await this.conn.request(Method.sessionClose, { sessionId });
  }

  /** Send a prompt; `editor`: what the user has in front of them as they send it (1.12). */
  startTurn(sessionId: string, text: string, editor?: EditorState | null, extra: readonly InputItem[] = []): Promise<TurnStartResult> {
    return this.conn.request(Method.turnStart, { sessionId, input: [{ type: "text", text }, ...extra], ...(editor ? { editor } : {}) });
  }

  /** The workspace's files matching `query` fuzzily, best first (1.13): a session's folder, or an absolute `root`. */
  findFiles(where: { sessionId: string } | { root: string }, query: string, limit = 20): Promise<FindFilesResult> {
    return this.conn.request(Method.workspaceFindFiles, { ...where, query, limit });
  }

  /** The slash commands a session offers: the built-ins, then its skills and MCP prompts (1.13). */
  async commands(sessionId: string): Promise<SessionCommand[]> {
    return (await this.conn.request(Method.sessionCommands, { sessionId })).commands;
  }

  /** The models to choose from (with none configured: what local servers serve) (1.13). */
  listModels(): Promise<ModelListResult> {
    return this.conn.request(Method.modelList, null);
  }

  /** The model of new sessions, saved to the user's config.toml unless `save` is false (1.13). */
  useModel(params: ModelUseParams): Promise<ModelUseResult> {
    return this.conn.request(Method.modelUse, params);
  }

  /** A session's own model from its next model call (1.13). */
  setModel(sessionId: string, model: string): Promise<SessionSetModelResult> {
    return this.conn.request(Method.sessionSetModel, { sessionId, model });
  }

  async interrupt(sessionId: string, turnId?: string): Promise<void> {
    await this.conn.request(Method.turnInterrupt, { sessionId, turnId: turnId ?? null });
  }

  async mcpServers(): Promise<McpServerInfo[]> {
    return (await this.conn.request(Method.mcpServerList, null)).servers;
  }

  mcpRefresh(name?: string): Promise<McpServerRefreshResult> {
    return this.conn.request(Method.mcpServerRefresh, { name: name ?? null });
  }

  /**
   * Log in to an HTTP MCP server (1.14): the daemon sends `mcpServer/authorize` with the page to
   * open and answers once the server connected (minutes, while the user is in the browser).
   * Cancelling `token` sends `$/cancelRequest`, which ends the login.
   */
  mcpLogin(name: string, token?: CancelToken): Promise<McpServerLoginResult> {
    return this.conn.request(Method.mcpServerLogin, { name }, token);
  }

  /** Forget an MCP server's OAuth tokens (1.14); it reconnects without them. */
  mcpLogout(name: string): Promise<McpServerLoginResult> {
    return this.conn.request(Method.mcpServerLogout, { name });
  }

  /** The whole proposed content of a pending write/edit call (protocol 1.1). */
  readFileChange(sessionId: string, callId: string): Promise<FileChangeReadResult> {
    return this.conn.request(Method.fileChangeRead, { sessionId, callId });
  }

  /** `length` bytes of a preview from `offset` (all of the rest without `length`), base64. */
  readPreview(sessionId: string, previewId: string, offset = 0, length?: number): Promise<PreviewReadResult> {
    return this.conn.request(Method.previewRead, { sessionId, previewId, offset, length: length ?? null });
  }

  /** Change a session's approval mode (1.9); it applies from the next tool call. */
  setMode(sessionId: string, mode: ApprovalMode): Promise<SessionSetModeResult> {
    return this.conn.request(Method.sessionSetMode, { sessionId, mode });
  }

  /** Every file a turn changed, with its diff (1.10). */
  turnChanges(sessionId: string, turnId: string): Promise<TurnChangesResult> {
    return this.conn.request(Method.turnChanges, { sessionId, turnId });
  }

  /** Put the workspace back as it was before a turn and the turns after it (1.10). */
  undo(params: TurnUndoParams): Promise<TurnUndoResult> {
    return this.conn.request(Method.turnUndo, params);
  }

  /** Bring back what an undo took back (1.10); without `undoId`, the session's latest undo not redone. */
  redo(sessionId: string, undoId: string | null, resolutions: Record<string, Resolution> = {}): Promise<TurnUndoResult> {
    return this.conn.request(Method.turnRedo, { sessionId, undoId, resolutions });
  }

  /** A new session continuing from before one of a session's turns (1.10). */
  fork(params: SessionForkParams): Promise<SessionForkResult> {
    return this.conn.request(Method.sessionFork, params);
  }

  /** Compact the session's context now (1.4). */
  compact(sessionId: string): Promise<SessionCompactResult> {
    return this.conn.request(Method.sessionCompact, { sessionId });
  }

  /** Active watches, of one session or of all. */
  async watches(sessionId?: string): Promise<WatchInfo[]> {
    return (await this.conn.request(Method.watchList, { sessionId: sessionId ?? null })).watches;
  }

  cancelWatch(sessionId: string, name: string): Promise<WatchCancelResult> {
    return this.conn.request(Method.watchCancel, { sessionId, name });
  }

  async tools(sessionId?: string): Promise<ToolInfo[]> {
    return (await this.conn.request(Method.toolList, { sessionId: sessionId ?? null })).tools;
  }

  /** A session's standing grants (1.5). */
  async grants(sessionId: string): Promise<GrantInfo[]> {
    return (await this.conn.request(Method.grantList, { sessionId })).grants;
  }

  async revokeGrant(sessionId: string, rule: string): Promise<boolean> {
    return (await this.conn.request(Method.grantRevoke, { sessionId, rule })).revoked;
  }

  /** The tool policies that apply to a session, in the order tried (1.5). */
  policies(sessionId: string): Promise<PolicyListResult> {
    return this.conn.request(Method.policyList, { sessionId });
  }

  /** Trust or stop trusting a workspace's policies file (1.5). */
  policyTrust(params: PolicyTrustParams): Promise<PolicyTrustResult> {
    return this.conn.request(Method.policyTrust, params);
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
    this.events.clear();
  }
}
