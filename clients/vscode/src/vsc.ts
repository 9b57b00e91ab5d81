/** The one module that talks to the `vscode` API (and vscode-languageclient, which needs it). */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as vscode from "vscode";
import { CloseAction, ErrorAction, LanguageClient, RevealOutputChannelOn } from "vscode-languageclient/node";
import type { Excerpt } from "./messages/attachments";
import { chatHtml, makeNonce } from "./messages/html";
import type { FromWebview } from "./messages/chat";
import type { Connection } from "./connection";
import type { ChatView, ChatViewProvider, DaemonHandle, DaemonHooks, Folder, Host, PickItem, PreviewPanel, PreviewPanelHooks, TreeNode } from "./host";
import type { Launch } from "./launch";
import { previewHtml } from "./messages/html";
import type { FromPreview } from "./messages/preview";
import type { EditorDiagnostic, EditorLocation, EditorRange, EditorState, EditorSymbolParams, InitializationOptions, OpenFile, PreviewKind } from "./protocol";
import { readSettings, SETTINGS_SECTION, type Settings } from "./settings";

const CHAT_VIEW = "turnstoned.chat";

function folderOf(uri: vscode.Uri | undefined): Folder | undefined {
  const f = uri ? vscode.workspace.getWorkspaceFolder(uri) : undefined;
  return f ? { name: f.name, path: f.uri.fsPath } : undefined;
}

function excerptOf(doc: vscode.TextDocument, range?: vscode.Range): Excerpt {
  const excerpt: Excerpt = { path: vscode.workspace.asRelativePath(doc.uri, false), languageId: doc.languageId, text: doc.getText(range) };
  if (range) excerpt.lines = { start: range.start.line + 1, end: range.end.character === 0 && range.end.line > range.start.line ? range.end.line : range.end.line + 1 };
  return excerpt;
}

class TreeProvider implements vscode.TreeDataProvider<TreeNode> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  constructor(private readonly roots: () => TreeNode[]) {}
  refresh(): void { this.changed.fire(); }
  getChildren(node?: TreeNode): TreeNode[] { return node ? node.children ?? [] : this.roots(); }
  getTreeItem(node: TreeNode): vscode.TreeItem {
    const item = new vscode.TreeItem(node.label, node.children?.length ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
    item.id = node.id;
    if (node.description) item.description = node.description;
    if (node.tooltip) item.tooltip = node.tooltip;
    if (node.icon) item.iconPath = new vscode.ThemeIcon(node.icon);
    if (node.contextValue) item.contextValue = node.contextValue;
    if (node.command) item.command = { title: node.label, command: node.command.id, arguments: [node.command.arg] };
    return item;
  }
}

/**
 * Documents the user may edit without anything being written: the first read asks `provide`,
 * a save keeps the text in memory. The diff editor's per-hunk revert works on them.
 */
class EditableDocuments implements vscode.FileSystemProvider {
  private readonly files = new Map<string, { data: Uint8Array; mtime: number; saved?: boolean }>();
  private readonly changed = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.changed.event;
  constructor(private readonly provide: (uri: string) => Promise<string>) {}

  private async file(uri: vscode.Uri): Promise<{ data: Uint8Array; mtime: number }> {
    const key = uri.toString();
    let file = this.files.get(key);
    if (!file) {
      let text: string;
      try {
        text = await this.provide(uri.toString(true));
      } catch {
        throw vscode.FileSystemError.FileNotFound(uri);
      }
      file = { data: new TextEncoder().encode(text), mtime: Date.now() };
      this.files.set(key, file);
    }
    return file;
  }

  forget(uri: vscode.Uri): void { this.files.delete(uri.toString()); }
  /** The text the user saved into a document (it may be closed since). */
  saved(uri: vscode.Uri): string | undefined {
    const file = this.files.get(uri.toString());
    return file?.saved ? new TextDecoder().decode(file.data) : undefined;
  }
  watch(): vscode.Disposable { return new vscode.Disposable(() => undefined); }
  async stat(uri: vscode.Uri): Promise<vscode.FileStat> {
    const file = await this.file(uri);
    return { type: vscode.FileType.File, ctime: file.mtime, mtime: file.mtime, size: file.data.byteLength };
  }
  readDirectory(): [string, vscode.FileType][] { return []; }
  createDirectory(uri: vscode.Uri): void { throw vscode.FileSystemError.NoPermissions(uri); }
  async readFile(uri: vscode.Uri): Promise<Uint8Array> { return (await this.file(uri)).data; }
  writeFile(uri: vscode.Uri, content: Uint8Array): void {
    this.files.set(uri.toString(), { data: content, mtime: Date.now(), saved: true });
    this.changed.fire([{ type: vscode.FileChangeType.Changed, uri }]);
  }
  delete(uri: vscode.Uri): void { throw vscode.FileSystemError.NoPermissions(uri); }
  rename(uri: vscode.Uri): void { throw vscode.FileSystemError.NoPermissions(uri); }
}

/** The same resource whatever way its URI string was written (encoded or not). */
function sameUri(a: vscode.Uri, b: string): boolean {
  return a.toString() === vscode.Uri.parse(b).toString();
}

/**
 * What vscode-languageclient writes its protocol trace to. It traces only while that channel's
 * log level is Trace; this view of the output channel reports Trace exactly when the
 * `turnstoned.trace.server` setting is not "off", so the setting alone turns the trace on.
 */
function traceChannel(output: vscode.LogOutputChannel, context: vscode.ExtensionContext): vscode.LogOutputChannel {
  const level = () => (vscode.workspace.getConfiguration(SETTINGS_SECTION).get("trace.server") === "off" ? vscode.LogLevel.Info : vscode.LogLevel.Trace);
  const changed = new vscode.EventEmitter<vscode.LogLevel>();
  context.subscriptions.push(changed, vscode.workspace.onDidChangeConfiguration((e) => {
    if (e.affectsConfiguration(`${SETTINGS_SECTION}.trace.server`)) changed.fire(level());
  }));
  const view: Partial<vscode.LogOutputChannel> = {
    name: output.name,
    get logLevel() { return level(); },
    onDidChangeLogLevel: changed.event,
    trace: (message: string) => output.info(`[trace] ${message}`),
    debug: (message: string) => output.debug(message),
    info: (message: string) => output.info(message),
    warn: (message: string) => output.warn(message),
    error: (message: string | Error) => output.error(message),
    append: (value: string) => output.append(value),
    appendLine: (value: string) => output.appendLine(value),
    show: () => output.show(true),
  };
  return view as vscode.LogOutputChannel;
}

function startLanguageClient(output: vscode.LogOutputChannel, trace: vscode.LogOutputChannel, launch: Launch, cwd: string | undefined, hooks: DaemonHooks, options: InitializationOptions): Promise<DaemonHandle> {
  const serverOptions = async () => {
    const child = spawn(launch.command, launch.args, { env: launch.env, cwd: cwd ?? process.cwd(), stdio: "pipe" });
    child.on("exit", (code, signal) => hooks.onExit(code, signal));
    child.on("error", (err) => hooks.onStderr(`${err.message}\n`));
    return child;
  };
  const client = new LanguageClient("turnstoned", "turnstoned", serverOptions, {
    documentSelector: [],
    initializationOptions: options,
    outputChannel: output,
    traceOutputChannel: trace,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    stdioOptions: {
      stdout: () => undefined,
      stderr: (input) => {
        input.setEncoding("utf8");
        input.on("data", (chunk: string) => {
          hooks.onStderr(chunk);
          for (const line of chunk.split(/\r?\n/)) if (line) output.info(`[daemon] ${line}`);
        });
      },
    },
    initializationFailedHandler: () => false,
    errorHandler: {
      error: () => ({ action: ErrorAction.Shutdown, handled: true }),
      closed: () => ({ action: CloseAction.DoNotRestart, handled: true }),
    },
  });
  return client.start().then(() => ({
    connection: client as unknown as Connection,
    stop: async () => { if (client.isRunning()) await client.stop(4000); else await client.dispose(); },
  }));
}

function chatView(context: vscode.ExtensionContext, provider: ChatViewProvider): ChatView {
  let view: vscode.WebviewView | undefined;
  // Until its page says `ready` nothing is sent: the host redraws everything on `ready`.
  let ready = false;
  const handle: ChatView = {
    post: (message) => {
      if (view && ready) void view.webview.postMessage(message);
    },
    get visible() { return view?.visible ?? false; },
    reveal: async () => { await vscode.commands.executeCommand(`${CHAT_VIEW}.focus`); },
  };
  context.subscriptions.push(vscode.window.registerWebviewViewProvider(CHAT_VIEW, {
    resolveWebviewView(v) {
      view = v;
      ready = false;
      const media = vscode.Uri.joinPath(context.extensionUri, "media");
      const dist = vscode.Uri.joinPath(context.extensionUri, "dist");
      v.webview.options = { enableScripts: true, localResourceRoots: [media, dist] };
      v.webview.html = chatHtml({
        cspSource: v.webview.cspSource,
        nonce: makeNonce(),
        scriptUri: v.webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.js")).toString(),
        styleUri: v.webview.asWebviewUri(vscode.Uri.joinPath(media, "chat.css")).toString(),
      });
      v.webview.onDidReceiveMessage((message: FromWebview) => {
        if (message.type === "ready") ready = true;
        provider.onMessage(message);
      });
      v.onDidDispose(() => { if (view === v) { view = undefined; ready = false; } });
    },
  }, { webviewOptions: { retainContextWhenHidden: true } }));
  return handle;
}

function previewPanel(context: vscode.ExtensionContext, kind: PreviewKind, title: string, hooks: PreviewPanelHooks): PreviewPanel {
  const media = vscode.Uri.joinPath(context.extensionUri, "media");
  const dist = vscode.Uri.joinPath(context.extensionUri, "dist");
  const panel = vscode.window.createWebviewPanel("turnstoned.preview", title, { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true }, {
    enableScripts: true,
    enableCommandUris: false,
    localResourceRoots: [media, dist],
    retainContextWhenHidden: true,
  });
  panel.iconPath = vscode.Uri.joinPath(media, "icon.svg");
  panel.webview.onDidReceiveMessage((message: FromPreview) => hooks.onMessage(message));
  panel.onDidDispose(() => hooks.onDispose());
  panel.webview.html = previewHtml({
    cspSource: panel.webview.cspSource,
    nonce: makeNonce(),
    scriptUri: panel.webview.asWebviewUri(vscode.Uri.joinPath(dist, "preview.js")).toString(),
    styleUri: panel.webview.asWebviewUri(vscode.Uri.joinPath(media, "preview.css")).toString(),
  }, kind, title);
  return {
    post: (message) => void panel.webview.postMessage(message),
    reveal: () => panel.reveal(undefined, true),
    dispose: () => panel.dispose(),
  };
}

// ---------------------------------------------------------------- the editor, for the model

/** At most this much of a selection goes with a prompt (the model reads far less of it). */
const SELECTION_CHARS = 100_000;
/** At most this many locations answer a definition or references request, and files read for their lines. */
const LOCATIONS = 200;
const LOCATION_FILES = 20;
const SEVERITIES: Record<vscode.DiagnosticSeverity, EditorDiagnostic["severity"]> = {
  [vscode.DiagnosticSeverity.Error]: "error",
  [vscode.DiagnosticSeverity.Warning]: "warning",
  [vscode.DiagnosticSeverity.Information]: "information",
  [vscode.DiagnosticSeverity.Hint]: "hint",
};

function realPath(path: string): string {
  try {
    return fs.realpathSync.native(path);
  } catch {
    return path;
  }
}

/** A file URI of this path, as written or through symlinks (the daemon names real paths). */
function isFile(uri: vscode.Uri, path: string): boolean {
  return uri.scheme === "file" && (uri.fsPath === path || realPath(uri.fsPath) === realPath(path));
}

function fileDocument(path: string): vscode.TextDocument | undefined {
  return vscode.workspace.textDocuments.find((d) => !d.isClosed && isFile(d.uri, path));
}

function rangeOf(r: vscode.Range): EditorRange {
  return { startLine: r.start.line, startCharacter: r.start.character, endLine: r.end.line, endCharacter: r.end.character };
}

function diagnosticOf(path: string, d: vscode.Diagnostic): EditorDiagnostic {
  const code = d.code === undefined ? null : typeof d.code === "object" ? String(d.code.value) : String(d.code);
  return { path, range: rangeOf(d.range), severity: SEVERITIES[d.severity] ?? "error", message: d.message, source: d.source ?? null, code };
}

/** The tab input's file, for a text editor or the modified side of a diff. */
function tabFile(tab: vscode.Tab): vscode.Uri | undefined {
  const input = tab.input;
  const uri = input instanceof vscode.TabInputText ? input.uri : input instanceof vscode.TabInputTextDiff ? input.modified : undefined;
  return uri?.scheme === "file" ? uri : undefined;
}

/** The line a location points at: from its open document, else from the disk (a few files only). */
async function locationLines(found: { uri: vscode.Uri; range: vscode.Range }[]): Promise<EditorLocation[]> {
  const files = new Map<string, Promise<string[] | null>>();
  const linesOf = (uri: vscode.Uri): Promise<string[] | null> => {
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    if (open) return Promise.resolve(Array.from({ length: open.lineCount }, (_, i) => open.lineAt(i).text));
    if (!files.has(uri.fsPath)) {
      if (files.size >= LOCATION_FILES) return Promise.resolve(null);
      files.set(uri.fsPath, fs.promises.readFile(uri.fsPath, "utf8").then((t) => t.split(/\r?\n/), () => null));
    }
    return files.get(uri.fsPath)!;
  };
  return Promise.all(found.map(async ({ uri, range }) => {
    const line = (await linesOf(uri))?.[range.start.line];
    return { path: uri.fsPath, range: rangeOf(range), text: line ?? null };
  }));
}

function editorState(editor: vscode.TextEditor): EditorState {
  const doc = editor.document;
  const visible = editor.visibleRanges[0];
  return {
    activeFile: doc.uri.fsPath,
    languageId: doc.languageId,
    modified: doc.isDirty,
    selection: { range: rangeOf(editor.selection), text: doc.getText(editor.selection).slice(0, SELECTION_CHARS) },
    visible: visible ? rangeOf(visible) : null,
  };
}

/**
 * Reload a document from the disk. VS Code reverts only the active editor, so the document is
 * made that for a moment (in its own tab group), then the editor the user was in comes back.
 */
async function revertDocument(doc: vscode.TextDocument): Promise<boolean> {
  if (!doc.isDirty) return true;
  const previous = vscode.window.activeTextEditor;
  const active = vscode.window.tabGroups.activeTabGroup;
  const isActive = previous?.document === doc && active.activeTab !== undefined && tabFile(active.activeTab)?.toString() === doc.uri.toString();
  const group = vscode.window.tabGroups.all.find((g) => g.tabs.some((t) => tabFile(t)?.toString() === doc.uri.toString())) ?? active;
  // In the active group the focus can stay where it is (the chat); another group must be activated.
  const quiet = group === active;
  if (!isActive) await vscode.window.showTextDocument(doc, { viewColumn: group.viewColumn, preserveFocus: quiet, preview: false });
  await vscode.commands.executeCommand("workbench.action.files.revert");
  if (!isActive && previous && previous.document !== doc && !previous.document.isClosed) {
    await vscode.window.showTextDocument(previous.document, { viewColumn: previous.viewColumn, selection: previous.selection, preserveFocus: quiet, preview: false });
  }
  return !doc.isDirty;
}

/** The shape of the Python extension's API this extension reads. */
interface PythonApi {
  environments?: { getActiveEnvironmentPath?(resource?: vscode.Uri): { path?: string } | undefined };
}

/** The Python extension's selected interpreter, else the `python.defaultInterpreterPath` setting. */
async function pythonInterpreter(): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension<PythonApi>("ms-python.python");
  if (ext) {
    try {
      const api = ext.isActive ? ext.exports : await ext.activate();
      const selected = api?.environments?.getActiveEnvironmentPath?.(vscode.workspace.workspaceFolders?.[0]?.uri)?.path;
      if (selected) return selected;
    } catch {
      // The Python extension failed: fall back to its setting.
    }
  }
  const configured = vscode.workspace.getConfiguration("python").get<string>("defaultInterpreterPath");
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const value = configured?.trim().replace(/\$\{workspaceFolder\}/g, folder ?? "");
  return value && value !== "python" ? value : undefined;
}

export function createHost(context: vscode.ExtensionContext): Host {
  const output = vscode.window.createOutputChannel("turnstoned", { log: true });
  const trace = traceChannel(output, context);
  const status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  status.show();
  const modeStatus = vscode.window.createStatusBarItem("turnstoned.mode", vscode.StatusBarAlignment.Right, 99);
  modeStatus.name = "turnstoned approval mode";
  const modelStatus = vscode.window.createStatusBarItem("turnstoned.model", vscode.StatusBarAlignment.Right, 98);
  modelStatus.name = "turnstoned model";
  const editable: EditableDocuments[] = [];
  context.subscriptions.push(output, status, modeStatus, modelStatus);
  const config = () => vscode.workspace.getConfiguration(SETTINGS_SECTION);
  // The file editor the user was last in: an output channel or a preview taking the focus does not hide it.
  let lastFileEditor: vscode.TextEditor | undefined;
  const fileEditor = (): vscode.TextEditor | undefined => {
    const active = vscode.window.activeTextEditor;
    if (active?.document.uri.scheme === "file") return (lastFileEditor = active);
    return lastFileEditor && vscode.window.visibleTextEditors.includes(lastFileEditor) ? lastFileEditor : undefined;
  };
  context.subscriptions.push(vscode.window.onDidChangeActiveTextEditor(() => void fileEditor()));
  const activeFolder = (): Folder | undefined => {
    const first = vscode.workspace.workspaceFolders?.[0];
    return folderOf(vscode.window.activeTextEditor?.document.uri) ?? (first ? { name: first.name, path: first.uri.fsPath } : undefined);
  };
  const host: Host = {
    settings: () => readSettings((key) => config().get(key)),
    onSettingsChanged: (listener) => {
      const d = vscode.workspace.onDidChangeConfiguration((e) => listener((key: keyof Settings) => e.affectsConfiguration(`${SETTINGS_SECTION}.${key}`)));
      context.subscriptions.push(d);
      return d;
    },
    secret: async (key) => context.secrets.get(key),
    storeSecret: async (key, value) => { if (value) await context.secrets.store(key, value); else await context.secrets.delete(key); },
    memento: (key) => context.workspaceState.get(key),
    setMemento: async (key, value) => { await context.workspaceState.update(key, value); },
    globalMemento: (key) => context.globalState.get(key),
    setGlobalMemento: async (key, value) => { await context.globalState.update(key, value); },
    extensionPath: () => context.extensionUri.fsPath,
    globalStorage: () => context.globalStorageUri.fsPath,
    pythonInterpreter,
    withProgress: (title, task, options) => Promise.resolve(vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title, cancellable: options?.cancellable ?? false },
      (progress, token) => task((message) => progress.report({ message }), token),
    )),
    folders: () => (vscode.workspace.workspaceFolders ?? []).map((f) => ({ name: f.name, path: f.uri.fsPath })),
    activeFolder,
    log: (line) => output.info(line),
    showOutput: () => output.show(true),
    info: (message, ...actions) => Promise.resolve(vscode.window.showInformationMessage(message, ...actions)),
    warn: (message, ...actions) => Promise.resolve(vscode.window.showWarningMessage(message, ...actions)),
    error: (message, detail, ...actions) => Promise.resolve(vscode.window.showErrorMessage(`${message} ${detail}`, ...actions)),
    modal: (message, detail, ...actions) => Promise.resolve(vscode.window.showWarningMessage(message, { modal: true, detail }, ...actions)),
    input: (options) => Promise.resolve(vscode.window.showInputBox({ ...options, ignoreFocusOut: true })),
    pick: async <T>(items: PickItem<T>[], options: { title: string; placeHolder?: string }) => {
      const picked = await vscode.window.showQuickPick(items, { title: options.title, placeHolder: options.placeHolder ?? "", matchOnDescription: true });
      return picked?.value;
    },
    openSettings: (query) => void vscode.commands.executeCommand("workbench.action.openSettings", query),
    setStatus: (text, tooltip, command) => { status.text = text; status.tooltip = tooltip; status.command = command; },
    setModeStatus: (text, tooltip, command) => {
      if (text === null) {
        modeStatus.hide();
        return;
      }
      modeStatus.text = text;
      modeStatus.tooltip = tooltip;
      modeStatus.command = command;
      modeStatus.show();
    },
    setModelStatus: (text, tooltip, command) => {
      if (text === null) {
        modelStatus.hide();
        return;
      }
      modelStatus.text = text;
      modelStatus.tooltip = tooltip;
      modelStatus.command = command;
      modelStatus.show();
    },
    startDaemon: (launch, cwd, hooks, options) => startLanguageClient(output, trace, launch, cwd, hooks, options),
    registerCommand: (id, run) => context.subscriptions.push(vscode.commands.registerCommand(id, run)),
    registerChatView: (provider) => chatView(context, provider),
    registerTree: (viewId, roots) => {
      const provider = new TreeProvider(roots);
      context.subscriptions.push(vscode.window.createTreeView(viewId, { treeDataProvider: provider }));
      return provider;
    },
    registerDocuments: (scheme, provide) => {
      context.subscriptions.push(vscode.workspace.registerTextDocumentContentProvider(scheme, {
        provideTextDocumentContent: (uri) => provide(uri.toString(true)),
      }));
    },
    registerEditableDocuments: (scheme, provide) => {
      const provider = new EditableDocuments(provide);
      editable.push(provider);
      context.subscriptions.push(vscode.workspace.registerFileSystemProvider(scheme, provider, { isCaseSensitive: true }));
    },
    documentText: (uri) => {
      const open = vscode.workspace.textDocuments.find((d) => sameUri(d.uri, uri));
      if (open) return open.getText();
      const parsed = vscode.Uri.parse(uri);
      for (const provider of editable) {
        const saved = provider.saved(parsed);
        if (saved !== undefined) return saved;
      }
      return undefined;
    },
    showDocument: async (uri) => { await vscode.window.showTextDocument(vscode.Uri.parse(uri), { preview: true }); },
    openPreviewPanel: (kind, title, hooks) => previewPanel(context, kind, title, hooks),
    openExternal: async (url) => {
      // The address goes as the string it is: the extension host opens a string exactly as
      // given, where a Uri would have its query decoded and encoded again (a login page's
      // encoded redirect_uri, state and scope must reach the browser unchanged).
      try {
        return await vscode.env.openExternal(url as unknown as vscode.Uri);
      } catch {
        return false;
      }
    },
    openFile: async (path) => { await vscode.window.showTextDocument(vscode.Uri.file(path), { preview: true }); },
    selection: () => {
      const editor = vscode.window.activeTextEditor;
      if (!editor || editor.selection.isEmpty) return undefined;
      return excerptOf(editor.document, editor.selection);
    },
    file: async (uri) => {
      const target = uri instanceof vscode.Uri ? uri : vscode.window.activeTextEditor?.document.uri;
      if (!target) return undefined;
      return excerptOf(await vscode.workspace.openTextDocument(target));
    },
    insertAtCursor: async (text) => {
      const editor = vscode.window.visibleTextEditors.find((e) => e === vscode.window.activeTextEditor) ?? vscode.window.visibleTextEditors.find((e) => e.document.uri.scheme === "file");
      if (!editor) return false;
      return editor.edit((edit) => { for (const s of editor.selections) edit.replace(s, text); });
    },
    copy: async (text) => { await vscode.env.clipboard.writeText(text); },
    diff: async (left, right, title) => {
      await vscode.commands.executeCommand("vscode.diff", vscode.Uri.parse(left), vscode.Uri.parse(right), title, { preview: false });
    },
    activeUri: () => {
      const tab = vscode.window.tabGroups.activeTabGroup.activeTab;
      const input = tab?.input;
      if (input instanceof vscode.TabInputTextDiff) return input.modified.toString(true);
      return vscode.window.activeTextEditor?.document.uri.toString(true);
    },
    closeEditorsOf: async (uri) => {
      // An edited proposal is saved (into memory) first, so closing it asks nothing.
      for (const doc of vscode.workspace.textDocuments) if (doc.isDirty && sameUri(doc.uri, uri)) await doc.save();
      const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.input instanceof vscode.TabInputTextDiff && sameUri(t.input.modified, uri));
      if (tabs.length) await vscode.window.tabGroups.close(tabs);
      for (const provider of editable) provider.forget(vscode.Uri.parse(uri));
    },

    activeEditor: () => {
      const editor = fileEditor();
      return editor ? editorState(editor) : undefined;
    },
    onActiveEditorChanged: (listener) => {
      const d = vscode.Disposable.from(
        vscode.window.onDidChangeActiveTextEditor(() => listener()),
        vscode.window.onDidChangeTextEditorSelection(() => listener()),
        vscode.languages.onDidChangeDiagnostics(() => listener()),
      );
      context.subscriptions.push(d);
      return d;
    },
    diagnostics: (path) => {
      if (path === undefined) {
        return vscode.languages.getDiagnostics().filter(([uri]) => uri.scheme === "file").flatMap(([uri, list]) => list.map((d) => diagnosticOf(uri.fsPath, d)));
      }
      const uri = fileDocument(path)?.uri ?? vscode.Uri.file(path);
      let list = vscode.languages.getDiagnostics(uri);
      // Known under another spelling of the path (a symlink): look among every file's.
      if (!list.length) list = vscode.languages.getDiagnostics().find(([u, l]) => l.length && isFile(u, path))?.[1] ?? [];
      return list.map((d) => diagnosticOf(path, d));
    },
    openFiles: () => {
      const active = fileEditor()?.document.uri.toString();
      const files = new Map<string, OpenFile>();
      for (const tab of vscode.window.tabGroups.all.flatMap((g) => g.tabs)) {
        const uri = tabFile(tab);
        if (!uri) continue;
        const file = files.get(uri.fsPath) ?? { path: uri.fsPath, modified: false, active: false };
        file.modified ||= tab.isDirty;
        file.active ||= uri.toString() === active;
        files.set(uri.fsPath, file);
      }
      for (const doc of vscode.workspace.textDocuments) {
        if (doc.uri.scheme === "file" && doc.isDirty && !files.has(doc.uri.fsPath)) files.set(doc.uri.fsPath, { path: doc.uri.fsPath, modified: true, active: false });
      }
      return [...files.values()];
    },
    symbolLocations: async (action: EditorSymbolParams["action"], path, line, character) => {
      const uri = fileDocument(path)?.uri ?? vscode.Uri.file(path);
      // The language servers answer about documents they were given.
      await vscode.workspace.openTextDocument(uri);
      const command = action === "definition" ? "vscode.executeDefinitionProvider" : "vscode.executeReferenceProvider";
      const found = (await vscode.commands.executeCommand<(vscode.Location | vscode.LocationLink)[] | undefined>(command, uri, new vscode.Position(line, character))) ?? [];
      const places = found
        .map((l) => ("targetUri" in l ? { uri: l.targetUri, range: l.targetSelectionRange ?? l.targetRange } : { uri: l.uri, range: l.range }))
        .filter((l) => l.uri.scheme === "file")
        .slice(0, LOCATIONS);
      return locationLines(places);
    },
    unsavedBuffers: () => vscode.workspace.textDocuments
      .filter((d) => d.uri.scheme === "file" && d.isDirty && !d.isClosed)
      .map((d) => ({ path: d.uri.fsPath, text: d.getText() })),
    fileDocument: (path) => {
      const doc = fileDocument(path);
      return doc ? { dirty: doc.isDirty, text: doc.getText() } : undefined;
    },
    revertDocument: async (path) => {
      const doc = fileDocument(path);
      return doc ? revertDocument(doc) : true;
    },
  };
  return host;
}
