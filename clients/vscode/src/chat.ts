/** The chat view's host side: which session it shows, sending, interrupting, approvals. */
import * as os from "node:os";
import * as nodePath from "node:path";
import type { ApprovalBroker, ApprovalChange } from "./approvals";
import type { ElicitChange } from "./elicit";
import { gatedItems } from "./approvals";
import { daemonFeatures, type TurnstonedClient } from "./client";
import type { ElicitRequest } from "./messages/elicit";
import type { Attachment, EditorChipInfo, FromWebview, InstructionLine, Mention, ModeInfo, ModelInfo, ToWebview } from "./messages/chat";
import { isMode } from "./messages/modes";
import { slashCommand } from "./messages/mentions";
import { rpcError } from "./connection";
import type { Daemon } from "./daemon";
import type { ChatView, Folder, Host } from "./host";
import { MODE_LABELS } from "./messages/modes";
import type { ApprovalMode, ApprovalRequestItem, ApprovalRequestParams, DaemonEvent, EditorState, ImageData, InputItem, InstructionFile, Item, PlanStep, RunningTurn, SandboxHealth, SessionCommand, Verdict } from "./protocol";
import { ErrorKind } from "./protocol";
import { Checkpoints, TEXT_SCHEME } from "./undo";

const SESSION_KEY = "turnstoned.session:";
/** The model picked in a workspace folder: new chats there start with it. */
export const MODEL_KEY = "turnstoned.model:";

export interface ChatHooks {
  /** "Review" on an edit card. */
  review(sessionId: string, callId: string): Promise<void>;
  /** The current session changed or a turn ended (the sessions tree may be stale). */
  sessionsChanged(): void;
  /** "Show preview" on a card. */
  openPreview(sessionId: string, previewId: string): Promise<void>;
  /** A session's title for a prompt ("" when unknown). */
  sessionTitle(sessionId: string): Promise<string>;
  /** The chat's approval mode changed (or the chat shows another session). */
  modeChanged(): void;
  /** What the editor shows as a prompt is sent (null: nothing, or the setting leaves it out). */
  editorState(): EditorState | null;
  /** What of the editor the next prompt would carry, for the chat input's chip. */
  editorChip(): EditorChipInfo | null;
  /** The model picker (the header's model, `/model` without a name). */
  pickModel(): Promise<void>;
  /** The approval mode picker (`/mode` without a mode). */
  pickMode(): Promise<void>;
  /** The chat's model changed (or the chat shows another session). */
  modelChanged(): void;
}

/** The instruction files as the chat names them: inside the session's folder relative to it, in the home folder with ~. */
export function instructionLines(files: readonly InstructionFile[], cwd: string | undefined, home = os.homedir()): InstructionLine[] {
  const inside = (root: string, path: string) => {
    const rel = nodePath.relative(root, path);
    return rel && !rel.startsWith("..") && !nodePath.isAbsolute(rel) ? rel : null;
  };
  return files.map((f) => {
    const rel = cwd ? inside(cwd, f.path) : null;
    const inHome = rel === null && home ? inside(home, f.path) : null;
    return { path: f.path, label: rel ?? (inHome ? `~/${inHome}` : f.path), chars: f.chars, truncated: f.truncated ?? false };
  });
}

/** The riskiest rated call of a cycle, for a notification: " (high risk: deletes files …)". */
export function riskNote(items: ApprovalRequestItem[]): string {
  const order = ["low", "medium", "high", "critical"];
  const rated = items.map((i) => i.verdict).filter((v): v is Verdict => Boolean(v));
  const worst = rated.sort((a, b) => order.indexOf(b.risk) - order.indexOf(a.risk))[0];
  return worst ? ` (${worst.risk} risk: ${worst.reason})` : "";
}

/** The "always" choice of a notification: the rules it saves, or none when a call saves none. */
export function alwaysChoice(items: ApprovalRequestItem[]): string | null {
  if (items.some((i) => i.grantRules !== undefined && i.grantRules.length === 0)) return null;
  if (items.every((i) => i.grantRules === undefined)) return `Always allow ${[...new Set(items.map((i) => i.approvalLabel))].join(", ")}`;
  return `Always allow ${[...new Set(items.flatMap((i) => i.grantRules ?? [i.approvalLabel]))].join(", ")}`;
}

/** The newest open top-level session whose working directory is `cwd`, if any. */
async function newestSessionIn(client: TurnstonedClient, cwd: string, log: (line: string) => void): Promise<string | null> {
  try {
    return (await client.listSessions()).find((s) => s.cwd === cwd && s.status !== "closed" && !s.parentSessionId)?.sessionId ?? null;
  } catch (err) {
    log(`session/list: ${rpcError(err).message}`);
    return null;
  }
}

export class ChatController {
  private view: ChatView | null = null;
  private sessionId: string | null = null;
  private title = "";
  private folder: Folder | undefined;
  private recall: boolean;
  /** Each session's approval mode, as the daemon last said. */
  private readonly modes = new Map<string, ApprovalMode>();
  /** The mode picked for the next session before it exists (undefined: the setting's). */
  private nextMode: ApprovalMode | null | undefined;
  /** Each session's own model, as the daemon last said (absent: the daemon's default). */
  private readonly models = new Map<string, string>();
  readonly checkpoints: Checkpoints;

  constructor(
    private readonly host: Host,
    private readonly daemon: Daemon,
    private readonly broker: ApprovalBroker,
    private readonly hooks: ChatHooks,
  ) {
    this.folder = host.activeFolder();
    const remembered = this.folder ? host.memento<string>(SESSION_KEY + this.folder.path) : "";
    this.sessionId = remembered || null;
    // Nothing remembered (a window that went down before its state was saved): the folder's
    // newest session comes back. "" is a chat the user started over.
    this.recall = remembered === undefined;
    this.checkpoints = new Checkpoints(host, () => daemon.ready(), {
      post: (message) => this.post(message),
      show: (sessionId) => this.resume(sessionId, false),
      send: (text) => this.send(text),
      current: () => this.sessionId,
    });
    host.registerDocuments(TEXT_SCHEME, async (uri) => this.checkpoints.provide(uri));
    daemon.onEvent((event) => this.observe(event));
    daemon.onState((s) => {
      this.post({ type: "daemon", state: s.state, ...(s.state === "stopped" && s.problem ? { message: `${s.problem.message} ${s.problem.detail}` } : {}) });
      if (s.state === "ready") {
        this.post({ type: "features", ...daemonFeatures(s.health) });
        this.postMode();
      }
    });
    host.onSettingsChanged((affects) => {
      if (affects("approvalMode") && !this.sessionId) {
        this.postMode();
        hooks.modeChanged();
      }
    });
    broker.onChange((change) => this.approvalChanged(change));
    daemon.elicitation.onChange((change) => this.elicitChanged(change));
  }

  /** The sandbox this machine has for commands, as the daemon reports it. */
  private sandbox(): SandboxHealth | null {
    const s = this.daemon.status;
    return s.state === "ready" ? s.health.sandbox ?? null : null;
  }

  /** The chat's approval mode: its session's, or the one the next session starts in. */
  modeInfo(): ModeInfo {
    if (this.sessionId) return { mode: this.modes.get(this.sessionId) ?? null, pending: false, sandbox: this.sandbox() };
    return { mode: this.nextMode === undefined ? this.host.settings().approvalMode : this.nextMode, pending: true, sandbox: this.sandbox() };
  }

  private postMode(): void {
    this.post({ type: "mode", ...this.modeInfo() });
  }

  /** The model picked in the chat's folder, for its new chats ("" none). */
  private rememberedModel(): string {
    return (this.folder && this.host.memento<string>(MODEL_KEY + this.folder.path)) || "";
  }

  /** The daemon's default model (daemon/health's). */
  private defaultModel(): string | null {
    const s = this.daemon.status;
    return s.state === "ready" ? s.health.model ?? null : null;
  }

  /** The chat's model: its session's, or the one the next session starts with. */
  modelInfo(): ModelInfo {
    if (this.sessionId) return { model: this.models.get(this.sessionId) ?? this.defaultModel(), pending: false };
    return { model: this.rememberedModel() || this.host.settings().model || this.defaultModel(), pending: true };
  }

  private postModel(): void {
    this.post({ type: "model", ...this.modelInfo() });
    this.hooks.modelChanged();
  }

  /** Use `model` in this chat (its session from its next model call) and in new chats of this folder. */
  async setModel(model: string): Promise<boolean> {
    if (this.folder) await this.host.setMemento(MODEL_KEY + this.folder.path, model);
    const sessionId = this.sessionId;
    if (!sessionId) {
      this.postModel();
      return true;
    }
    const client = await this.daemon.ready();
    if (!client) return false;
    try {
      const result = await client.setModel(sessionId, model);
      this.models.set(sessionId, result.model);
      return true;
    } catch (err) {
      const e = rpcError(err);
      void this.host.warn(`The model stays ${this.models.get(sessionId) ?? this.defaultModel() ?? "as it was"}: ${e.message}${e.kind ? ` (${e.kind})` : ""}`);
      return false;
    } finally {
      if (sessionId === this.sessionId) this.postModel();
    }
  }

  /** Set the chat's approval mode: its session's now, or the next session's. */
  async setMode(mode: ApprovalMode): Promise<void> {
    const sessionId = this.sessionId;
    if (!sessionId) {
      this.nextMode = mode;
      this.postMode();
      this.hooks.modeChanged();
      return;
    }
    const client = await this.daemon.ready();
    if (!client) return;
    try {
      const result = await client.setMode(sessionId, mode);
      this.modes.set(sessionId, result.mode);
    } catch (err) {
      const e = rpcError(err);
      void this.host.warn(`The approval mode stays ${MODE_LABELS[this.modes.get(sessionId) ?? "auto"]}: ${e.message}${e.kind ? ` (${e.kind})` : ""}`);
    }
    if (sessionId === this.sessionId) {
      this.postMode();
      this.hooks.modeChanged();
    }
  }

  get currentSession(): string | null {
    return this.sessionId;
  }

  /** Bring the chat view into sight (it loads, and so redraws itself, if it was not yet). */
  async reveal(): Promise<void> {
    await this.view?.reveal();
  }

  attachView(view: ChatView): void {
    this.view = view;
  }

  private post(message: ToWebview): void {
    this.view?.post(message);
  }

  private clearPage(): void {
    this.post({ type: "reset", sessionId: null, title: "", items: [], running: false });
  }

  /** The webview loaded (first time or again): give it everything it shows. */
  async redraw(): Promise<void> {
    const s = this.daemon.status;
    this.post({ type: "daemon", state: s.state === "stopped" && !s.problem ? "starting" : s.state });
    const client = await this.daemon.ready();
    const status = this.daemon.status;
    this.post({ type: "features", ...(status.state === "ready" ? daemonFeatures(status.health) : { perCallDecisions: false, editReview: false, editArguments: false }) });
    this.postMode();
    this.postModel();
    this.showEditorChip(this.hooks.editorChip());
    if (client && this.recall && this.folder) {
      this.recall = false;
      this.sessionId ??= await newestSessionIn(client, this.folder.path, (m) => this.host.log(m));
    }
    if (!client || !this.sessionId) {
      this.clearPage();
      return;
    }
    await this.resume(this.sessionId, false);
  }

  /** A daemon notification (live, or replayed from a running turn on resume). */
  private observe(event: DaemonEvent): void {
    if (event.method === "session/modeChanged") {
      this.modes.set(event.params.sessionId, event.params.mode);
      if (event.params.sessionId === this.sessionId) this.hooks.modeChanged();
    } else if (event.method === "turn/completed") {
      this.checkpoints.completed(event.params.sessionId, event.params.turnId, event.params.checkpoint);
    } else if (event.method === "session/notice") {
      this.checkpoints.noticed(event.params.sessionId, event.params.kind, event.params.data);
    }
    if (event.method === "workspace/filesChanged") return;
    if (event.method !== "mcpServer/statusChanged" && event.params.sessionId !== this.sessionId) return;
    this.post({ type: "event", event });
    if (event.method === "turn/completed") this.hooks.sessionsChanged();
  }

  /** Show a session in the chat, its history redrawn from `session/resume`. */
  async resume(sessionId: string, reveal = true): Promise<void> {
    const client = await this.daemon.ready();
    if (!client) return;
    let items: Item[] = [];
    let running = false;
    let instructions: InstructionFile[] = [];
    let plan: PlanStep[] | undefined;
    let replay: RunningTurn | null = null;
    try {
      const result = await client.resumeSession(sessionId);
      items = result.items;
      replay = result.running ?? null;
      plan = result.plan;
      if (result.session.model) this.models.set(sessionId, result.session.model);
      instructions = result.instructions ?? [];
      running = result.session.status === "running";
      this.title = result.session.title ?? "";
      this.folder = { name: result.session.cwd, path: result.session.cwd };
      if (result.session.approvalMode) this.modes.set(sessionId, result.session.approvalMode);
    } catch (err) {
      this.host.log(`session/resume ${sessionId}: ${rpcError(err).message}`);
      this.setSession(null);
      this.clearPage();
      return;
    }
    this.setSession(sessionId);
    const turns = this.checkpoints.turnsOf(sessionId, items);
    this.post({ type: "reset", sessionId, title: this.title, items, running, turns, ...(plan?.length ? { plan } : {}) });
    this.post({ type: "instructions", files: instructionLines(instructions, this.folder?.path) });
    this.postMode();
    this.postModel();
    // The turn running as the chat joins (1.15): what it sent so far, through the live path;
    // its live notifications follow.
    for (const event of replay?.events ?? []) this.observe(event as unknown as DaemonEvent);
    void this.checkpoints.replay(sessionId, turns);
    for (const cycle of this.broker.pending(sessionId)) this.post({ type: "approval", cycle });
    for (const request of this.daemon.elicitation.pending(sessionId)) this.post({ type: "elicit", request });
    if (reveal) await this.view?.reveal();
  }

  /** Start over: the next message opens a new session in the chosen workspace folder. */
  async newChat(): Promise<void> {
    const folders = this.host.folders();
    let folder = this.host.activeFolder();
    if (folders.length > 1) {
      folder = await this.host.pick(folders.map((f) => ({ label: f.name, description: f.path, value: f })), { title: "New chat in which folder?" });
      if (!folder) return;
    }
    this.folder = folder;
    this.setSession(null);
    this.clearPage();
    this.postMode();
    this.postModel();
    await this.view?.reveal();
  }

  private setSession(sessionId: string | null): void {
    const changed = sessionId !== this.sessionId;
    this.sessionId = sessionId;
    this.recall = false;
    if (this.folder) void this.host.setMemento(SESSION_KEY + this.folder.path, sessionId ?? "");
    this.hooks.sessionsChanged();
    if (changed) this.hooks.modeChanged();
  }

  /** What of the editor the next prompt carries changed: the chat input's chip follows. */
  showEditorChip(chip: EditorChipInfo | null): void {
    this.post({ type: "editor", chip });
  }

  /** The session was closed elsewhere (the sessions tree). */
  closed(sessionId: string): void {
    if (sessionId !== this.sessionId) return;
    this.setSession(null);
    this.clearPage();
    this.postMode();
  }

  async attach(attachment: Attachment): Promise<void> {
    await this.view?.reveal();
    this.post({ type: "attach", attachment });
  }

  private async ensureSession(): Promise<string | null> {
    const client = await this.daemon.ready();
    if (!client) return null;
    if (this.sessionId) return this.sessionId;
    const settings = this.host.settings();
    const folder = this.folder ?? this.host.activeFolder();
    this.folder = folder;
    const mode = this.nextMode === undefined ? settings.approvalMode : this.nextMode;
    const status = this.daemon.status;
    const modes = status.state === "ready" && daemonFeatures(status.health).approvalModes;
    const { sessionId, instructions } = await client.startSession({
      cwd: folder?.path ?? null,
      workspace: folder?.path ?? null,
      model: this.rememberedModel() || settings.model || null,
      skipPermissions: settings.skipPermissions,
      ...(modes && mode ? { approvalMode: mode } : {}),
    });
    this.nextMode = undefined;
    if (modes) {
      // The daemon's default when none was asked for: the session's info says which it is.
      const info = mode ? null : (await client.listSessions().catch(() => [])).find((s) => s.sessionId === sessionId);
      const actual = mode ?? info?.approvalMode;
      if (actual) this.modes.set(sessionId, actual);
    }
    this.setSession(sessionId);
    // The page keeps what it shows (the message being sent) and learns which session it is.
    this.post({ type: "session", sessionId });
    this.post({ type: "instructions", files: instructionLines(instructions ?? [], folder?.path) });
    this.postMode();
    const model = this.rememberedModel() || settings.model;
    if (model) this.models.set(sessionId, model);
    this.postModel();
    return sessionId;
  }

  /** Send a prompt; `withEditor`: with the editor state as it is now (when the setting and the daemon allow). */
  async send(text: string, withEditor = true, mentions: readonly Mention[] = [], images: readonly ImageData[] = []): Promise<void> {
    // As the user sends it (the daemon or the session may take a moment to start).
    const seen = withEditor ? this.hooks.editorState() : null;
    if (!images.length && (await this.ranCommand(text))) {
      this.post({ type: "commandRan", text });
      return;
    }
    const extra: InputItem[] = [
      ...mentions.map((m): InputItem => ({ type: "mention", path: m.path, ...(m.startLine ? { startLine: m.startLine } : {}), ...(m.endLine ? { endLine: m.endLine } : {}) })),
      ...images.map((i): InputItem => ({ type: "image", data: i.data, mimeType: i.mimeType })),
    ];
    try {
      const sessionId = await this.ensureSession();
      const client = this.daemon.client;
      if (!sessionId || !client) {
        this.post({ type: "sendFailed", text, message: "The daemon is not running; nothing was sent." });
        return;
      }
      const status = this.daemon.status;
      const editor = status.state === "ready" && daemonFeatures(status.health).editor ? seen : null;
      const result = await client.startTurn(sessionId, text, editor, extra).catch(async (err: unknown) => {
        // A closed session reopens on resume; then the message goes through.
        if (rpcError(err).kind !== ErrorKind.SESSION_CLOSED) throw err;
        await client.resumeSession(sessionId);
        return client.startTurn(sessionId, text, editor, extra);
      });
      this.post({ type: "sent", text, queued: result.queued ?? false, ...(result.queued ? {} : { turnId: result.turnId }) });
      if (!result.queued) await this.checkpoints.sent(sessionId, result.turnId, text);
    } catch (err) {
      const e = rpcError(err);
      this.post({ type: "sendFailed", text, message: `Not sent: ${e.message}${e.kind ? ` (${e.kind})` : ""}` });
    }
  }

  /** The slash commands of the chat's session (one is started for the list when there is none yet). */
  async commands(): Promise<SessionCommand[]> {
    const status = this.daemon.status;
    if (status.state === "ready" && !daemonFeatures(status.health).composer) return [];
    try {
      const sessionId = await this.ensureSession();
      const client = this.daemon.client;
      return sessionId && client ? await client.commands(sessionId) : [];
    } catch (err) {
      this.host.log(`session/commands: ${rpcError(err).message}`);
      return [];
    }
  }

  /**
   * A sent `/name words` that names a built-in runs its request instead of a prompt; true when
   * it did. A skill or MCP prompt (and a `/word` naming nothing) goes as the prompt it is.
   */
  private async ranCommand(text: string): Promise<boolean> {
    const slash = slashCommand(text);
    if (!slash) return false;
    const status = this.daemon.status;
    if (status.state !== "ready" || !daemonFeatures(status.health).composer) return false;
    // `/new` and `/clear` need no session; the others ask the session's list.
    const fresh = !this.sessionId && (slash.name === "new" || slash.name === "clear");
    const command = fresh ? { kind: "builtin", request: null, name: slash.name } : (await this.commands()).find((c) => c.name === slash.name);
    if (!command || command.kind !== "builtin") return false;
    const sessionId = this.sessionId;
    switch (command.request ?? command.name) {
      case "session/compact": await this.compact(); break;
      case "turn/undo": if (sessionId) await this.checkpoints.undoTurn(sessionId, null); break;
      case "turn/redo": if (sessionId) await this.checkpoints.redo(sessionId, null); break;
      case "session/setMode": {
        if (!slash.args) await this.hooks.pickMode();
        else if (isMode(slash.args)) await this.setMode(slash.args);
        else void this.host.warn(`No approval mode “${slash.args}”: read-only, auto, full-access or plan.`);
        break;
      }
      case "session/setModel":
        if (slash.args) await this.setModel(slash.args);
        else await this.hooks.pickModel();
        break;
      case "new":
      case "clear":
        await this.newChat();
        break;
      default:
        void this.host.info(`/${command.name} has no action in this editor.`);
    }
    return true;
  }

  async interrupt(): Promise<void> {
    const client = this.daemon.client;
    if (!client || !this.sessionId) return;
    try {
      await client.interrupt(this.sessionId);
    } catch (err) {
      const e = rpcError(err);
      if (e.kind !== ErrorKind.TURN_NOT_FOUND) this.host.log(`turn/interrupt: ${e.message}`);
    }
  }

  /** Compact the shown conversation's context now; say so when there was nothing to do. */
  async compact(): Promise<void> {
    const client = await this.daemon.ready();
    if (!client || !this.sessionId) {
      void this.host.info("Open a chat first: there is no conversation to compact.");
      return;
    }
    const status = this.daemon.status;
    if (status.state === "ready" && !daemonFeatures(status.health).compaction) {
      void this.host.info("This daemon cannot compact a conversation (it predates protocol revision 1.4): update turnstoned.");
      return;
    }
    try {
      // "compacted": session/compacted draws the divider.
      const result = await client.compact(this.sessionId);
      if (result.status === "unchanged") void this.host.info("Nothing to compact yet: the conversation is only its most recent turns.");
      else if (result.status === "scheduled") void this.host.info("The conversation will be compacted at the running turn's next step.");
    } catch (err) {
      const e = rpcError(err);
      void this.host.warn(`Compacting failed: ${e.message}${e.kind ? ` (${e.kind})` : ""}`);
    }
  }

  /** The @ list's files: the session's folder's (or the chat's folder's before a session). */
  private async findFiles(seq: number, query: string): Promise<void> {
    const client = this.daemon.client;
    const where = this.sessionId ? { sessionId: this.sessionId } : this.folder ? { root: this.folder.path } : null;
    if (!client || !where) {
      this.post({ type: "files", seq, query, files: [] });
      return;
    }
    try {
      const result = await client.findFiles(where, query, 20);
      this.post({ type: "files", seq, query, files: result.files });
    } catch (err) {
      this.host.log(`workspace/findFiles: ${rpcError(err).message}`);
      this.post({ type: "files", seq, query, files: [] });
    }
  }

  /** A message from the webview. */
  async handle(message: FromWebview): Promise<void> {
    switch (message.type) {
      case "ready": await this.redraw(); break;
      case "send": await this.send(message.text, message.editor !== false, message.mentions ?? [], message.images ?? []); break;
      case "findFiles": await this.findFiles(message.seq, message.query); break;
      case "listCommands": this.post({ type: "commands", commands: await this.commands() }); break;
      case "pickModel": await this.hooks.pickModel(); break;
      case "openFile": await this.host.openFile(message.path); break;
      case "interrupt": await this.interrupt(); break;
      case "answer": this.broker.answer(message.cycleId, message.answer); break;
      case "elicitAnswer": this.daemon.elicitation.answer(message.id, message.response); break;
      case "decideCall": this.broker.decideCall(message.cycleId, message.callId, message.decision, message.feedback, message.arguments); break;
      case "review": if (this.sessionId) await this.hooks.review(this.sessionId, message.callId); break;
      case "copy": await this.host.copy(message.text); break;
      case "insert":
        if (!(await this.host.insertAtCursor(message.text))) void this.host.info("Open an editor to insert the code into.");
        break;
      case "newChat": await this.newChat(); break;
      case "openPreview": if (this.sessionId) await this.hooks.openPreview(this.sessionId, message.previewId); break;
      case "showOutput": this.host.showOutput(); break;
      case "setMode": await this.setMode(message.mode); break;
      case "showChange": if (this.sessionId) await this.checkpoints.showChange(this.sessionId, message.turnId, message.path); break;
      case "undoFile": if (this.sessionId) await this.checkpoints.undoFile(this.sessionId, message.turnId, message.path); break;
      case "undoTurn": if (this.sessionId) await this.checkpoints.undoTurn(this.sessionId, message.turnId); break;
      case "redo": if (this.sessionId) await this.checkpoints.redo(this.sessionId, message.undoId); break;
      case "rerun": if (this.sessionId) await this.checkpoints.rerun(this.sessionId, message.turnId, message.text, message.how); break;
    }
  }

  private approvalChanged(change: ApprovalChange): void {
    if (change.kind === "cleared") {
      this.post({ type: "approvalCleared", cycleId: change.cycleId, reason: change.reason, ...(change.decision ? { decision: change.decision } : {}), ...(change.calls ? { calls: change.calls } : {}) });
      return;
    }
    if (change.kind === "callDecided") {
      this.post({ type: "callDecided", cycleId: change.cycleId, callId: change.callId, decision: change.decision });
      return;
    }
    if (change.cycle.sessionId === this.sessionId) this.post({ type: "approval", cycle: change.cycle });
    if (!this.view?.visible || change.cycle.sessionId !== this.sessionId) void this.notify(change.cycle);
  }

  /** An MCP server's question: a form in the chat showing its session; a notification when the chat is out of sight. */
  private elicitChanged(change: ElicitChange): void {
    if (change.kind === "cleared") {
      this.post({ type: "elicitCleared", id: change.id });
      return;
    }
    const { request } = change;
    if (request.params.sessionId === this.sessionId) this.post({ type: "elicit", request });
    if (!this.view?.visible || request.params.sessionId !== this.sessionId) void this.notifyElicit(request);
  }

  /** The question in a notification: answer it in the chat (where the form is), or decline it here. */
  private async notifyElicit(request: ElicitRequest): Promise<void> {
    const { params } = request;
    const choice = await this.host.info(`MCP server “${params.server}” asks${await this.where(params.sessionId)}: ${params.message}`, "Answer in Chat", "Decline");
    if (!this.daemon.elicitation.get(request.id)) return;
    if (choice === "Decline") this.daemon.elicitation.answer(request.id, { action: "decline" });
    else if (choice === "Answer in Chat") {
      if (params.sessionId !== this.sessionId) await this.resume(params.sessionId);
      else await this.view?.reveal();
    }
  }

  /** A plan to approve, asked in a notification: approve it, send it back, or read it in the chat. */
  private async notifyPlan(cycle: ApprovalRequestParams, plan: ApprovalRequestItem): Promise<void> {
    const choice = await this.host.info(`${this.asker(cycle)} proposes a plan${await this.where(cycle.sessionId)}: ${plan.header.replace(/^\S+ plan: /, "")}. Approving it switches the chat to auto mode.`, "Approve Plan", "Revise…", "Show in Chat");
    if (choice === "Approve Plan") this.broker.answer(cycle.cycleId, { decision: "approve" });
    else if (choice === "Revise…") {
      const feedback = await this.host.input({ prompt: "What should change? (the model revises the plan)" });
      if (feedback !== undefined) this.broker.answer(cycle.cycleId, { decision: "deny", feedback });
    } else if (choice === "Show in Chat") {
      if (cycle.sessionId !== this.sessionId) await this.resume(cycle.sessionId);
      else await this.view?.reveal();
    }
  }

  /** Who asks: the session's model, or a task agent its call started. */
  private asker(cycle: ApprovalRequestParams): string {
    return cycle.parentCallId ? "turnstoned's task agent" : "turnstoned";
  }

  /** The session a question comes from, when the chat shows another (a coordinator's child). */
  private async where(sessionId: string): Promise<string> {
    if (sessionId === this.sessionId) return "";
    return ` in session “${(await this.hooks.sessionTitle(sessionId)) || sessionId.slice(0, 8)}”`;
  }

  /** The chat is not in sight: ask in a notification with the same choices. */
  private async notify(cycle: ApprovalRequestParams): Promise<void> {
    const gated = gatedItems(cycle);
    if (gated.length === 1 && gated[0]!.tool === "propose_plan") {
      await this.notifyPlan(cycle, gated[0]!);
      return;
    }
    const escalation = gated.find((i) => i.escalation)?.escalation;
    const what = (gated.length === 1 ? gated[0]!.header : `${gated.length} tool calls (${gated.map((i) => i.tool).join(", ")})`) + (escalation ? `, outside the sandbox (${escalation})` : "");
    const always = alwaysChoice(gated);
    const choices = ["Approve", ...(always ? [always] : []), "Deny…", "Show in Chat"];
    const choice = await this.host.warn(`${this.asker(cycle)} asks to run ${what}${riskNote(gated)}${await this.where(cycle.sessionId)}`, ...choices);
    if (choice === "Approve") this.broker.answer(cycle.cycleId, { decision: "approve" });
    else if (choice?.startsWith("Always")) this.broker.answer(cycle.cycleId, { decision: "always" });
    else if (choice === "Deny…") {
      const feedback = await this.host.input({ prompt: "Why not? (the model reads this; optional)", placeHolder: "e.g. use the test script instead" });
      if (feedback !== undefined) this.broker.answer(cycle.cycleId, { decision: "deny", feedback });
    } else if (choice === "Show in Chat") {
      if (cycle.sessionId !== this.sessionId) await this.resume(cycle.sessionId);
      else await this.view?.reveal();
    }
  }
}
