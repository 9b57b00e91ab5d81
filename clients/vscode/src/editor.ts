/**
 * The editor as the model sees it (protocol 1.12): the services declared at `initialize` and
 * served on the daemon's `editor/*` requests, the editor state sent with each prompt (and the
 * chat input's chip saying what that will be), and documents reloaded from the disk, or
 * warned about, after tools changed their files.
 */
import * as fs from "node:fs";
import * as nodePath from "node:path";
import type { EditorHandlers, TurnstonedClient } from "./client";
import type { Disposable } from "./connection";
import type { Host } from "./host";
import type { EditorChipInfo } from "./messages/chat";
import type { EditorRange, EditorState, InitializationOptions, WorkspaceFilesChanged } from "./protocol";

/** What this editor serves the daemon: every `editor/*` request, and its unsaved buffers. */
export const INITIALIZATION_OPTIONS: InitializationOptions = {
  turnstoned: { editor: { diagnostics: true, openFiles: true, symbols: true, buffers: true } },
};

/** At most this many diagnostics answer a request for every file's (the model reads a summary). */
const ALL_DIAGNOSTICS = 2000;
/** How long the editor has to settle (typing, dragging a selection) before the chip follows. */
const SETTLE_MS = 150;

/** What the chat input shows about the editor state the next prompt carries. */
export type EditorChip = EditorChipInfo;

function realPath(path: string): string {
  try {
    return fs.realpathSync.native(path);
  } catch {
    return path;
  }
}

function mtime(path: string): number | null {
  try {
    return fs.statSync(path).mtimeMs;
  } catch {
    return null;
  }
}

/** "line 10" or "lines 10-20", counted from 1; a selection ending at a line's start leaves that line out. */
export function lineSpan(range: EditorRange): string {
  const first = range.startLine + 1;
  const last = range.endLine > range.startLine && (range.endCharacter ?? 0) === 0 ? range.endLine : range.endLine + 1;
  return first === last ? `line ${first}` : `lines ${first}-${last}`;
}

function isEmpty(range: EditorRange): boolean {
  return range.startLine === range.endLine && (range.startCharacter ?? 0) === (range.endCharacter ?? 0);
}

/** The chip for an editor state: "app.py: lines 10-20 · 2 problems"; null without an active file. */
export function editorChip(state: EditorState | null): EditorChip | null {
  if (!state?.activeFile) return null;
  const name = nodePath.basename(state.activeFile);
  const selection = state.selection && !isEmpty(state.selection.range) ? state.selection : null;
  const problems = state.diagnostics?.length ?? 0;
  const label = `${name}${selection ? `: ${lineSpan(selection.range)}` : ""}${problems ? ` · ${problems} problem${problems === 1 ? "" : "s"}` : ""}`;
  const parts = [
    `${state.activeFile}${state.modified ? " (unsaved changes)" : ""}`,
    selection ? `the selected ${lineSpan(selection.range)}` : state.selection ? `the cursor (line ${state.selection.range.startLine + 1})` : "",
    state.visible ? `the visible ${lineSpan(state.visible)}` : "",
    problems ? `the ${problems} problem${problems === 1 ? "" : "s"} the editor shows in it` : "",
  ].filter(Boolean);
  return { label, detail: `Sent with the next prompt: ${parts.join(", ")}. × leaves it out of this prompt; the turnstoned.editorContext setting turns it off.` };
}

export class EditorServices {
  /** Each session's unsaved buffers as this window last served them, by real path. */
  private readonly served = new Map<string, Map<string, { text: string; mtime: number | null }>>();
  private settle: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly host: Host) {}

  /** Answer the daemon's `editor/*` requests on this client; a failure answers as an error. */
  serve(client: TurnstonedClient): void {
    const guard = <P, R>(method: string, run: (params: P) => R | Promise<R>) => async (params: P): Promise<R> => {
      try {
        return await run(params);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        this.host.log(`${method}: ${message}`);
        throw new Error(`the editor could not answer: ${message}`);
      }
    };
    const handlers: EditorHandlers = {
      "editor/diagnostics": guard("editor/diagnostics", (p) => ({ diagnostics: p.path ? this.host.diagnostics(p.path) : this.host.diagnostics().slice(0, ALL_DIAGNOSTICS) })),
      "editor/openFiles": guard("editor/openFiles", () => ({ files: this.host.openFiles() })),
      "editor/symbol": guard("editor/symbol", async (p) => ({ locations: await this.host.symbolLocations(p.action, p.path, p.line, p.character) })),
      "editor/buffers": guard("editor/buffers", (p) => {
        const buffers = this.host.unsavedBuffers();
        this.served.set(p.sessionId, new Map(buffers.map((b) => [realPath(b.path), { text: b.text, mtime: mtime(b.path) }])));
        return { buffers };
      }),
    };
    client.setEditorHandlers(handlers);
  }

  /** The editor state for a prompt sent now (null: none, or the setting leaves it out). */
  state(): EditorState | null {
    if (!this.host.settings().editorContext) return null;
    const active = this.host.activeEditor();
    if (!active?.activeFile) return null;
    return { ...active, diagnostics: this.host.diagnostics(active.activeFile) };
  }

  /** Call `listener` with the chip whenever it may have changed (the editor settled, or the setting). */
  onChip(listener: (chip: EditorChip | null) => void): Disposable {
    let last = "";
    const fire = () => {
      const chip = editorChip(this.state());
      const key = JSON.stringify(chip);
      if (key === last) return;
      last = key;
      listener(chip);
    };
    const editor = this.host.onActiveEditorChanged(() => {
      clearTimeout(this.settle);
      this.settle = setTimeout(fire, SETTLE_MS);
    });
    const settings = this.host.onSettingsChanged((affects) => { if (affects("editorContext")) fire(); });
    return { dispose: () => { clearTimeout(this.settle); editor.dispose(); settings.dispose(); } };
  }

  /** The chip as things are now. */
  chip(): EditorChip | null {
    return editorChip(this.state());
  }

  private shown(path: string): string {
    const folder = this.host.activeFolder();
    if (folder) {
      for (const root of new Set([folder.path, realPath(folder.path)])) {
        const rel = nodePath.relative(root, path);
        if (rel && !rel.startsWith("..") && !nodePath.isAbsolute(rel)) return rel;
      }
    }
    return nodePath.basename(path);
  }

  /** A file changed on disk under a document with unsaved changes that a reload would lose: say so, keep them. */
  private async keptUnsaved(path: string, why: string): Promise<void> {
    const choice = await this.host.warn(`${this.shown(path)} ${why}, but it has unsaved changes in the editor: they were kept, and the editor does not show the new text (saving would overwrite it).`, "Reload from Disk");
    if (choice === "Reload from Disk" && !(await this.host.revertDocument(path))) void this.host.warn(`${this.shown(path)} could not be reloaded from the disk.`);
  }

  /**
   * Tools changed files. VS Code reloads unmodified documents by itself; a modified one whose
   * unsaved text the change was made to (`fromBuffer`, and the text is still what the daemon
   * was given) is reloaded, since the disk now holds that text with the change; any other
   * modified one is left as the user has it, with a warning.
   */
  async filesChanged(params: WorkspaceFilesChanged): Promise<void> {
    const served = this.served.get(params.sessionId) ?? new Map<string, { text: string; mtime: number | null }>();
    // The next batch asks for the buffers again.
    this.served.delete(params.sessionId);
    const written = new Set<string>();
    for (const file of params.files ?? []) {
      const path = realPath(file.path);
      written.add(path);
      const doc = this.host.fileDocument(file.path);
      if (!doc?.dirty) continue;
      const given = served.get(path);
      if (file.fromBuffer && given?.text === doc.text) {
        if (!(await this.host.revertDocument(file.path))) void this.keptUnsaved(file.path, "was changed on disk by turnstoned");
      } else {
        void this.keptUnsaved(file.path, "was changed on disk by turnstoned");
      }
    }
    if (!params.commands) return;
    // A command may have changed any file: a modified buffer's file that changed since it was served.
    for (const buffer of this.host.unsavedBuffers()) {
      const path = realPath(buffer.path);
      const before = served.get(path);
      if (written.has(path) || !before || before.mtime === mtime(buffer.path)) continue;
      void this.keptUnsaved(buffer.path, "was changed on disk by a command turnstoned ran");
    }
  }
}
