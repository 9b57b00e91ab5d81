/**
 * Test support: a Host that stands in for VS Code's UI (it records what would be shown and
 * answers prompts from a script) while starting the real daemon as a real process.
 */
import type { Excerpt } from "../../src/messages/attachments";
import type { FromWebview, ToWebview } from "../../src/messages/chat";
import type { ChatView, ChatViewProvider, DaemonHandle, DaemonHooks, Folder, Host, PickItem, PreviewPanel, PreviewPanelHooks, TreeNode } from "../../src/host";
import type { Launch } from "../../src/launch";
import type { ToPreview } from "../../src/messages/preview";
import type { PreviewKind } from "../../src/protocol";
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

  startDaemon = async (launch: Launch, cwd: string | undefined, hooks: DaemonHooks): Promise<DaemonHandle> => {
    this.launches.push(launch);
    const daemon = await connectDaemon(launch.command, launch.args, launch.env, cwd ?? process.cwd(), hooks.onStderr, (code, signal) => { hooks.onExit(code, signal); this.changed(); });
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
  openExternal = (url: string) => { this.opened.push(url); };
  openFile = async (path: string) => { this.opened.push(path); };
  selection = (): Excerpt | undefined => undefined;
  file = async (): Promise<Excerpt | undefined> => undefined;
  insertAtCursor = async () => false;
  copy = async () => undefined;
  diff = async (left: string, right: string, title: string) => { this.diffs.push({ left, right, title }); this.activeDiff = right; this.changed(); };
  activeUri = () => this.activeDiff;
  closeEditorsOf = async (uri: string) => { this.closedEditors.push(uri); this.editedDocuments.delete(uri); if (this.activeDiff === uri) this.activeDiff = undefined; this.changed(); };

  async run(command: string, ...args: unknown[]): Promise<unknown> {
    const c = this.commands.get(command);
    if (!c) throw new Error(`no command ${command}`);
    return c(...args);
  }
}
