/**
 * Test support: a Host that stands in for VS Code's UI (it records what would be shown and
 * answers prompts from a script) while starting the real daemon as a real process.
 */
import type { Excerpt } from "../../src/messages/attachments";
import type { FromWebview, ToWebview } from "../../src/messages/chat";
import type { ChatView, ChatViewProvider, DaemonHandle, DaemonHooks, Folder, Host, PickItem, PreviewPanel, PreviewPanelHooks, TreeNode } from "../../src/host";
import type { CancelToken } from "../../src/connection";
import type { Launch } from "../../src/launch";
import type { ToPreview } from "../../src/messages/preview";
import * as fs from "node:fs";
import type { EditorDiagnostic, EditorLocation, EditorRange, EditorSelection, EditorState, EditorSymbolParams, InitializationOptions, OpenFile, PreviewKind } from "../../src/protocol";
import type { Settings } from "../../src/settings";
import { connectDaemon, type RunningDaemon } from "./daemon";

export interface Shown {
  kind: "info" | "warn" | "error" | "modal" | "input" | "pick";
  message: string;
  detail?: string;
  actions: string[];
}

/** A preview panel as the host opened it, and what its page was sent. */
export interface FakePanel {
  kind: PreviewKind;
  title: string;
  posted: ToPreview[];
  hooks: PreviewPanelHooks;
  revealed: number;
  disposed: boolean;
}

/** A file open in the fake editor: its text as the user has it, whether it is unsaved. */
export interface FakeDocument {
  text: string;
  dirty: boolean;
  languageId: string;
}

/** Answers a prompt: the action to choose (or text to type); undefined dismisses it. */
export type Responder = (shown: Shown) => string | undefined;

export class FakeHost implements Host {
  shown: Shown[] = [];
  posted: ToWebview[] = [];
  logs: string[] = [];
  diffs: { left: string; right: string; title: string }[] = [];
  closedEditors: string[] = [];
  status = { text: "", tooltip: "" };
  modeStatus: { text: string | null; tooltip: string; command: string } = { text: null, tooltip: "", command: "" };
  modelStatus: { text: string | null; tooltip: string; command: string } = { text: null, tooltip: "", command: "" };
  /** What the user typed into editable documents, by URI (as VS Code would hold it, unsaved). */
  editedDocuments = new Map<string, string>();
  editable = new Map<string, (uri: string) => Promise<string>>();
  shownDocuments: string[] = [];
  commands = new Map<string, (...args: unknown[]) => unknown>();
  trees = new Map<string, () => TreeNode[]>();
  documents = new Map<string, (uri: string) => Promise<string>>();
  secrets = new Map<string, string>();
  mementos = new Map<string, unknown>();
  daemons: RunningDaemon[] = [];
  launches: Launch[] = [];
  chatProvider: ChatViewProvider | null = null;
  panels: FakePanel[] = [];
  opened: string[] = [];
  viewVisible = true;
  activeDiff: string | undefined;
  respond: Responder = () => undefined;
  /** The file documents open in the editor, by absolute path. */
  fileDocuments = new Map<string, FakeDocument>();
  /** The active text editor: its file, selection (an empty one is the cursor) and visible lines. */
  active: { path: string; selection: EditorSelection; visible: EditorRange | null } | undefined;
  /** The problems the editor shows, by file. */
  problems = new Map<string, EditorDiagnostic[]>();
  /** What the language servers answer for a definition or references. */
  symbols: (action: EditorSymbolParams["action"], path: string, line: number, character: number) => EditorLocation[] = () => [];
  /** Documents reloaded from the disk, in order. */
  reverted: string[] = [];
  /** The `initializationOptions` each daemon was started with. */
  initOptions: InitializationOptions[] = [];
  private editorListeners: (() => void)[] = [];
  private waiters: (() => void)[] = [];

  constructor(public settingsValue: Settings, private readonly folder: Folder) {}

  private changed(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Wait (bounded) until `check` holds; re-checked whenever the host records something. */
  async until(what: string, check: () => boolean, ms = 15000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!check()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; shown: ${JSON.stringify(this.shown.slice(-3))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 250));
        this.waiters.push(() => { clearTimeout(timer); resolve(); });
      });
    }
  }

  private show(shown: Shown): Promise<string | undefined> {
    this.shown.push(shown);
    this.changed();
    return Promise.resolve(this.respond(shown));
  }

  /** The page sends a message to the host. */
  fromPage(message: FromWebview): void {
    this.chatProvider?.onMessage(message);
  }

  private settingsListeners: ((affects: (key: keyof Settings) => boolean) => void)[] = [];

  /** The user edits settings.json. */
  changeSettings(change: Partial<Settings>): void {
    this.settingsValue = { ...this.settingsValue, ...change };
    for (const l of this.settingsListeners) l((key) => key in change);
  }

  settings = () => this.settingsValue;
  onSettingsChanged = (listener: (affects: (key: keyof Settings) => boolean) => void) => {
    this.settingsListeners.push(listener);
    return { dispose: () => undefined };
  };
  secret = async (key: string) => this.secrets.get(key);
  storeSecret = async (key: string, value: string | undefined) => { if (value) this.secrets.set(key, value); else this.secrets.delete(key); };
  memento = <T>(key: string) => this.mementos.get(key) as T | undefined;
  setMemento = async (key: string, value: unknown) => { this.mementos.set(key, value); };
  globalMementos = new Map<string, unknown>();
  globalMemento = <T>(key: string) => this.globalMementos.get(key) as T | undefined;
  setGlobalMemento = async (key: string, value: unknown) => { this.globalMementos.set(key, value); };
  /** The extension's directory and its global storage (tests point them at temporary ones). */
  extensionDir = "/nonexistent/turnstoned-extension";
  storageDir = "/nonexistent/turnstoned-storage";
  extensionPath = () => this.extensionDir;
  globalStorage = () => this.storageDir;
  /** What the Python extension has selected. */
  selectedPython: string | undefined = undefined;
  pythonInterpreter = async () => this.selectedPython;
  /** Progress notifications: their title and every message reported. */
  progress: { title: string; messages: string[]; done: boolean; cancellable: boolean; cancel: () => void }[] = [];
  withProgress = async <T>(title: string, task: (report: (message: string) => void, token: CancelToken) => Promise<T>, options?: { cancellable?: boolean }): Promise<T> => {
    // The Cancel button of a cancellable notification is `cancel()`.
    const listeners: (() => void)[] = [];
    const token = { isCancellationRequested: false, onCancellationRequested: (listener: () => void) => { listeners.push(listener); return { dispose: () => undefined }; } };
    const cancel = () => { if (!token.isCancellationRequested) { token.isCancellationRequested = true; for (const l of listeners) l(); } };
    const entry = { title, messages: [] as string[], done: false, cancellable: options?.cancellable ?? false, cancel };
    this.progress.push(entry);
    try {
      return await task((m) => { entry.messages.push(m); this.changed(); }, token);
    } finally {
      entry.done = true;
      this.changed();
    }
  };
  folders = () => [this.folder];
  activeFolder = () => this.folder;
  log = (line: string) => { this.logs.push(line); };
  showOutput = () => undefined;
  info = (message: string, ...actions: string[]) => this.show({ kind: "info", message, actions });
  warn = (message: string, ...actions: string[]) => this.show({ kind: "warn", message, actions });
  error = (message: string, detail: string, ...actions: string[]) => this.show({ kind: "error", message, detail, actions });
  modal = (message: string, detail: string, ...actions: string[]) => this.show({ kind: "modal", message, detail, actions });
  input = (options: { prompt: string }) => this.show({ kind: "input", message: options.prompt, actions: [] });
  pick = async <T>(items: PickItem<T>[], options: { title: string }): Promise<T | undefined> => {
    const label = await this.show({ kind: "pick", message: options.title, actions: items.map((i) => i.label) });
    return items.find((i) => i.label === label)?.value;
  };
  openSettings = () => undefined;
  setStatus = (text: string, tooltip: string) => { this.status = { text, tooltip }; this.changed(); };
  setModeStatus = (text: string | null, tooltip: string, command: string) => { this.modeStatus = { text, tooltip, command }; this.changed(); };
  setModelStatus = (text: string | null, tooltip: string, command: string) => { this.modelStatus = { text, tooltip, command }; this.changed(); };

  startDaemon = async (launch: Launch, cwd: string | undefined, hooks: DaemonHooks, options: InitializationOptions): Promise<DaemonHandle> => {
    this.launches.push(launch);
    this.initOptions.push(options);
    const daemon = await connectDaemon(launch.command, launch.args, launch.env, cwd ?? process.cwd(), hooks.onStderr, (code, signal) => { hooks.onExit(code, signal); this.changed(); }, options);
    this.daemons.push(daemon);
    return { connection: daemon.connection, stop: () => daemon.stop() };
  };
  registerCommand = (id: string, run: (...args: unknown[]) => unknown) => { this.commands.set(id, run); };
  registerChatView = (provider: ChatViewProvider): ChatView => {
    this.chatProvider = provider;
    const host = this;
    return {
      post: (message) => { host.posted.push(message); host.changed(); },
      get visible() { return host.viewVisible; },
      reveal: async () => { host.viewVisible = true; },
    };
  };
  registerTree = (viewId: string, roots: () => TreeNode[]) => {
    this.trees.set(viewId, roots);
    return { refresh: () => this.changed() };
  };
  registerDocuments = (scheme: string, provide: (uri: string) => Promise<string>) => {
    this.documents.set(scheme, provide);
  };
  registerEditableDocuments = (scheme: string, provide: (uri: string) => Promise<string>) => {
    this.editable.set(scheme, provide);
  };
  documentText = (uri: string) => this.editedDocuments.get(uri);
  showDocument = async (uri: string) => { this.shownDocuments.push(uri); this.changed(); };

  /** The text a document shows: a virtual one's provider, an editable one's edits, a file's bytes. */
  async read(uri: string): Promise<string> {
    const edited = this.editedDocuments.get(uri);
    if (edited !== undefined) return edited;
    const scheme = uri.slice(0, uri.indexOf(":"));
    const provide = this.documents.get(scheme) ?? this.editable.get(scheme);
    if (provide) return provide(uri);
    if (scheme === "file") return (await import("node:fs")).readFileSync(decodeURIComponent(new URL(uri).pathname), "utf8");
    throw new Error(`no documents for ${uri}`);
  }
  openPreviewPanel = (kind: PreviewKind, title: string, hooks: PreviewPanelHooks): PreviewPanel => {
    const panel: FakePanel = { kind, title, posted: [], hooks, revealed: 0, disposed: false };
    this.panels.push(panel);
    this.changed();
    // Like a webview page, it says `ready` once loaded.
    queueMicrotask(() => hooks.onMessage({ type: "ready" }));
    return {
      post: (message) => { panel.posted.push(message); this.changed(); },
      reveal: () => { panel.revealed++; this.changed(); },
      dispose: () => { panel.disposed = true; hooks.onDispose(); this.changed(); },
    };
  };
  /** What `openExternal` answers (false: the browser could not be asked). */
  browserOpens = true;
  openExternal = async (url: string) => { this.opened.push(url); this.changed(); return this.browserOpens; };
  openFile = async (path: string) => { this.opened.push(path); };
  selection = (): Excerpt | undefined => undefined;
  file = async (): Promise<Excerpt | undefined> => undefined;
  insertAtCursor = async () => false;
  /** What was put on the clipboard, in order. */
  copied: string[] = [];
  copy = async (text: string) => { this.copied.push(text); this.changed(); };
  diff = async (left: string, right: string, title: string) => { this.diffs.push({ left, right, title }); this.activeDiff = right; this.changed(); };
  activeUri = () => this.activeDiff;
  closeEditorsOf = async (uri: string) => { this.closedEditors.push(uri); this.editedDocuments.delete(uri); if (this.activeDiff === uri) this.activeDiff = undefined; this.changed(); };

  // ---------------------------------------------------------------- the editor

  /** The user opens a file (its text from the disk unless given; given text differing from the disk is unsaved). */
  openDocument(path: string, text?: string, languageId = "plaintext"): FakeDocument {
    const disk = fs.existsSync(path) ? fs.readFileSync(path, "utf8") : "";
    const doc = { text: text ?? disk, dirty: text !== undefined && text !== disk, languageId };
    this.fileDocuments.set(path, doc);
    this.editorChanged();
    return doc;
  }

  /** The user types into an open document: it has unsaved changes. */
  typeInto(path: string, text: string): void {
    const doc = this.fileDocuments.get(path);
    if (!doc) throw new Error(`${path} is not open`);
    Object.assign(doc, { text, dirty: true });
    this.editorChanged();
  }

  /** The user makes an open document the active editor, with this selection (none: the cursor at the start). */
  focusEditor(path: string, selection?: EditorSelection, visible: EditorRange | null = null): void {
    if (!this.fileDocuments.has(path)) this.openDocument(path);
    this.active = { path, selection: selection ?? { range: { startLine: 0, startCharacter: 0, endLine: 0, endCharacter: 0 }, text: "" }, visible };
    this.editorChanged();
  }

  /** A language server reports problems in a file. */
  setDiagnostics(path: string, list: Omit<EditorDiagnostic, "path">[]): void {
    this.problems.set(path, list.map((d) => ({ ...d, path })));
    this.editorChanged();
  }

  private editorChanged(): void {
    for (const l of this.editorListeners) l();
    this.changed();
  }

  /** Same file: as written or its real path. */
  private docOf(path: string): [string, FakeDocument] | undefined {
    const real = (p: string) => { try { return fs.realpathSync(p); } catch { return p; } };
    for (const entry of this.fileDocuments) if (entry[0] === path || real(entry[0]) === real(path)) return entry;
    return undefined;
  }

  activeEditor = (): EditorState | undefined => {
    const active = this.active;
    const doc = active && this.fileDocuments.get(active.path);
    if (!active || !doc) return undefined;
    return { activeFile: active.path, languageId: doc.languageId, modified: doc.dirty, selection: active.selection, visible: active.visible };
  };
  onActiveEditorChanged = (listener: () => void) => {
    this.editorListeners.push(listener);
    return { dispose: () => { this.editorListeners = this.editorListeners.filter((l) => l !== listener); } };
  };
  diagnostics = (path?: string): EditorDiagnostic[] => {
    if (path === undefined) return [...this.problems.values()].flat();
    const real = (p: string) => { try { return fs.realpathSync(p); } catch { return p; } };
    for (const [file, list] of this.problems) if (file === path || real(file) === real(path)) return list.map((d) => ({ ...d, path }));
    return [];
  };
  openFiles = (): OpenFile[] => [...this.fileDocuments].map(([path, doc]) => ({ path, modified: doc.dirty, active: this.active?.path === path }));
  symbolLocations = async (action: EditorSymbolParams["action"], path: string, line: number, character: number) => this.symbols(action, path, line, character);
  unsavedBuffers = () => [...this.fileDocuments].filter(([, d]) => d.dirty).map(([path, d]) => ({ path, text: d.text }));
  fileDocument = (path: string) => {
    const doc = this.docOf(path)?.[1];
    return doc ? { dirty: doc.dirty, text: doc.text } : undefined;
  };
  revertDocument = async (path: string) => {
    const found = this.docOf(path);
    if (!found) return true;
    Object.assign(found[1], { text: fs.readFileSync(found[0], "utf8"), dirty: false });
    this.reverted.push(found[0]);
    this.editorChanged();
    return true;
  };

  async run(command: string, ...args: unknown[]): Promise<unknown> {
    const c = this.commands.get(command);
    if (!c) throw new Error(`no command ${command}`);
    return c(...args);
  }
}
