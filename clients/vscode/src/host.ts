/**
 * What the extension needs from VS Code, as plain interfaces. `vsc.ts` implements them (and is
 * the only module that imports `vscode`); everything else takes a Host and runs in Node too.
 */
import type { Excerpt } from "./messages/attachments";
import type { FromWebview, ToWebview } from "./messages/chat";
import type { CancelToken, Connection, Disposable } from "./connection";
import type { Launch } from "./launch";
import type { FromPreview, ToPreview } from "./messages/preview";
import type { EditorBuffer, EditorDiagnostic, EditorLocation, EditorState, EditorSymbolParams, InitializationOptions, OpenFile, PreviewKind } from "./protocol";
import type { Settings } from "./settings";

export interface DaemonHooks {
  onStderr(chunk: string): void;
  onExit(code: number | null, signal: string | null): void;
}

/** A started daemon: the connection vscode-languageclient opened, and a way to stop it. */
export interface DaemonHandle {
  connection: Connection;
  stop(): Promise<void>;
}

export interface PickItem<T> {
  label: string;
  description?: string;
  detail?: string;
  value: T;
}

export interface TreeNode {
  id: string;
  label: string;
  description?: string;
  tooltip?: string;
  /** A codicon name. */
  icon?: string;
  contextValue?: string;
  /** Command run on click, with its argument. */
  command?: { id: string; arg: unknown };
  children?: TreeNode[];
}

export interface ChatView {
  post(message: ToWebview): void;
  readonly visible: boolean;
  reveal(): Promise<void>;
}

export interface ChatViewProvider {
  /** A message from the page; a (re)loaded page starts with `ready`. */
  onMessage(message: FromWebview): void;
}

/** A preview's webview panel beside the editor. */
export interface PreviewPanel {
  post(message: ToPreview): void;
  reveal(): void;
  dispose(): void;
}

export interface PreviewPanelHooks {
  /** A message from the page; a (re)loaded page starts with `ready`. */
  onMessage(message: FromPreview): void;
  /** The user closed it. */
  onDispose(): void;
}

export interface Folder {
  name: string;
  path: string;
}

export interface Host {
  settings(): Settings;
  onSettingsChanged(listener: (affects: (key: keyof Settings) => boolean) => void): Disposable;
  secret(key: string): Promise<string | undefined>;
  storeSecret(key: string, value: string | undefined): Promise<void>;
  memento<T>(key: string): T | undefined;
  setMemento(key: string, value: unknown): Promise<void>;
  /** Like `memento`, across every window and workspace (globalState). */
  globalMemento<T>(key: string): T | undefined;
  setGlobalMemento(key: string, value: unknown): Promise<void>;
  /** The extension's own directory, and its global storage directory (may not exist yet). */
  extensionPath(): string;
  globalStorage(): string;
  /** The interpreter the Python extension has selected (else `python.defaultInterpreterPath`), if any. */
  pythonInterpreter(): Promise<string | undefined>;
  /**
   * Run `task` under a progress notification; `report` updates its message. With `cancellable`
   * the notification has a Cancel button, which cancels `token`.
   */
  withProgress<T>(title: string, task: (report: (message: string) => void, token: CancelToken) => Promise<T>, options?: { cancellable?: boolean }): Promise<T>;
  folders(): Folder[];
  /** The folder of the active editor, else the first folder. */
  activeFolder(): Folder | undefined;

  log(line: string): void;
  showOutput(): void;
  info(message: string, ...actions: string[]): Promise<string | undefined>;
  warn(message: string, ...actions: string[]): Promise<string | undefined>;
  error(message: string, detail: string, ...actions: string[]): Promise<string | undefined>;
  /** A modal dialog; resolves to the chosen action (undefined on Cancel). */
  modal(message: string, detail: string, ...actions: string[]): Promise<string | undefined>;
  input(options: { prompt: string; password?: boolean; placeHolder?: string; value?: string }): Promise<string | undefined>;
  pick<T>(items: PickItem<T>[], options: { title: string; placeHolder?: string }): Promise<T | undefined>;
  openSettings(query: string): void;
  setStatus(text: string, tooltip: string, command: string): void;
  /** The second status bar item: the chat's approval mode (null hides it). */
  setModeStatus(text: string | null, tooltip: string, command: string): void;
  /** The third: the chat's model (null hides it). */
  setModelStatus(text: string | null, tooltip: string, command: string): void;

  /** Start the daemon; `options` go to `initialize` as its `initializationOptions`. */
  startDaemon(launch: Launch, cwd: string | undefined, hooks: DaemonHooks, options: InitializationOptions): Promise<DaemonHandle>;
  registerCommand(id: string, run: (...args: unknown[]) => unknown): void;
  registerChatView(provider: ChatViewProvider): ChatView;
  registerTree(viewId: string, roots: () => TreeNode[]): { refresh(): void };
  registerDocuments(scheme: string, provide: (uri: string) => Promise<string>): void;
  /**
   * Documents the user may edit (the proposed side of an edit review): `provide` gives their
   * first text; edits stay in the editor and in memory, nothing is written anywhere.
   */
  registerEditableDocuments(scheme: string, provide: (uri: string) => Promise<string>): void;
  /** The text of a document as the user has it now (unsaved edits too, or what they saved before closing it); undefined when it was never opened. */
  documentText(uri: string): string | undefined;
  /** Open a document (a virtual one too) in an editor. */
  showDocument(uri: string): Promise<void>;
  /** Open a preview panel (its page runs `dist/preview.js`) beside the editor, not taking focus. */
  openPreviewPanel(kind: PreviewKind, title: string, hooks: PreviewPanelHooks): PreviewPanel;
  /**
   * An http(s) URL in the user's browser (VS Code may ask before it opens it); resolves to
   * whether the browser was asked to open it.
   */
  openExternal(url: string): Promise<boolean>;
  /** A local file in an editor. */
  openFile(path: string): Promise<void>;

  /** The editor's selection (or undefined when nothing is selected). */
  selection(): Excerpt | undefined;
  /** A whole file: the given URI (explorer) or the active editor's. */
  file(uri?: unknown): Promise<Excerpt | undefined>;
  insertAtCursor(text: string): Promise<boolean>;
  copy(text: string): Promise<void>;
  /** Open VS Code's diff editor on two document URIs (`file:` URIs for files on disk). */
  diff(leftUri: string, rightUri: string, title: string): Promise<void>;
  /** The URI string of the active editor's document (the diff's right side when in a diff). */
  activeUri(): string | undefined;
  closeEditorsOf(uri: string): Promise<void>;

  // The editor as the model may see it. Paths are absolute file paths (a document opened
  // through a symlink matches its real path too); ranges count lines and characters from 0.

  /** The active text editor's file (file scheme only), without its diagnostics; undefined when none. */
  activeEditor(): EditorState | undefined;
  /** Fires when the active editor or its selection changes (often: debounce). */
  onActiveEditorChanged(listener: () => void): Disposable;
  /** The problems the editor shows in a file, or in every file without `path`. */
  diagnostics(path?: string): EditorDiagnostic[];
  /** The files open in editor tabs. */
  openFiles(): OpenFile[];
  /** The definition of, or the references to, the symbol at a position, from the language servers. */
  symbolLocations(action: EditorSymbolParams["action"], path: string, line: number, character: number): Promise<EditorLocation[]>;
  /** The open file documents with unsaved changes, with their text. */
  unsavedBuffers(): EditorBuffer[];
  /** A file's open document: whether it has unsaved changes, and its text; undefined when it is not open. */
  fileDocument(path: string): { dirty: boolean; text: string } | undefined;
  /** Reload a file's document from the disk, dropping its unsaved changes; false when it could not. */
  revertDocument(path: string): Promise<boolean>;
}
