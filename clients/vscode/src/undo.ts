/**
 * Undo and review of turns (protocol 1.10): a turn's changes in the diff editor, undoing a
 * file or a whole turn (its conversation rewound or kept), conflicts asked file by file,
 * redo, and an earlier prompt edited and run again (rewound here, or in a fork).
 */
import * as fs from "node:fs/promises";
import type { TurnstonedClient } from "./client";
import { rpcError } from "./connection";
import type { Host } from "./host";
import type { Rerun, ToWebview, UndoInfo } from "./messages/chat";
import type { ChangedFile, Item, Resolution, TurnCheckpoint, TurnUndoResult, UndoConflict } from "./protocol";
import { ErrorKind } from "./protocol";

export const TEXT_SCHEME = "turnstoned-text";

const TURNS_KEY = "turnstoned.turns:";
/** How many prompts' turns are remembered per session. */
const REMEMBERED = 200;
/** How many of a redrawn session's last turns are asked what they changed. */
const ASKED = 5;
/** How many rounds of conflicts are asked before giving up (each answer is sent back). */
const ROUNDS = 4;

/** A prompt this window sent and the turn it started; `rewound` by an undo, until redone. */
export interface TurnRecord {
  turnId: string;
  text: string;
  rewound?: string;
}

/**
 * Which history prompts started which turns: the turn a prompt names (`turnId`, 1.12), else
 * the remembered turns, prompts and records in order, a prompt matched to the next record
 * with its text (prompts from elsewhere match none).
 */
export function matchTurns(items: readonly Item[], records: readonly TurnRecord[]): Record<string, string> {
  const live = records.filter((r) => !r.rewound);
  const out: Record<string, string> = {};
  let next = 0;
  for (const item of items) {
    if (item.type !== "userMessage" || item.queued) continue;
    if (item.turnId) {
      out[item.id] = item.turnId;
      const known = live.findIndex((r) => r.turnId === item.turnId);
      if (known >= next) next = known + 1;
      continue;
    }
    const at = live.findIndex((r, i) => i >= next && r.text === item.text);
    if (at < 0) continue;
    out[item.id] = live[at]!.turnId;
    next = at + 1;
  }
  return out;
}

interface Hunk {
  newStart: number;
  oldLines: string[];
  newLines: string[];
}

function hunksOf(diff: string): Hunk[] | null {
  const hunks: Hunk[] = [];
  let hunk: Hunk | null = null;
  let last: "old" | "new" | "both" | null = null;
  const lines = diff.split("\n");
  if (lines.at(-1) === "") lines.pop();
  for (const line of lines) {
    const head = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/.exec(line);
    if (head) {
      const start = Number(head[1]);
      const count = head[2] === undefined ? 1 : Number(head[2]);
      hunk = { newStart: count === 0 ? start : start - 1, oldLines: [], newLines: [] };
      hunks.push(hunk);
      last = null;
      continue;
    }
    if (!hunk) continue; // the file header
    const body = line.slice(1);
    if (line.startsWith("\\")) {
      // "\ No newline at end of file": the line before has no line break.
      const strip = (list: string[]) => { list[list.length - 1] = list[list.length - 1]!.replace(/\n$/, ""); };
      if (last === "old" || last === "both") strip(hunk.oldLines);
      if (last === "new" || last === "both") strip(hunk.newLines);
    } else if (line.startsWith("-")) {
      hunk.oldLines.push(`${body}\n`);
      last = "old";
    } else if (line.startsWith("+")) {
      hunk.newLines.push(`${body}\n`);
      last = "new";
    } else if (line.startsWith(" ") || line === "") {
      hunk.oldLines.push(`${body}\n`);
      hunk.newLines.push(`${body}\n`);
      last = "both";
    } else {
      return null;
    }
  }
  return hunks;
}

function linesOf(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

/**
 * The text a unified diff started from, given the text it led to; null when `now` is not
 * what the diff ends with (the file changed again since).
 */
export function reverseApply(diff: string, now: string): string | null {
  const hunks = hunksOf(diff);
  if (!hunks) return null;
  const current = linesOf(now);
  const out: string[] = [];
  let pos = 0;
  for (const hunk of hunks) {
    if (hunk.newStart < pos) return null;
    const there = current.slice(hunk.newStart, hunk.newStart + hunk.newLines.length);
    if (there.length !== hunk.newLines.length || there.some((l, i) => l !== hunk.newLines[i])) return null;
    out.push(...current.slice(pos, hunk.newStart), ...hunk.oldLines);
    pos = hunk.newStart + hunk.newLines.length;
  }
  out.push(...current.slice(pos));
  return out.join("");
}

function basename(path: string): string {
  return path.split("/").filter(Boolean).pop() ?? path;
}

function fileUri(path: string): string {
  return `file://${path.split("/").map(encodeURIComponent).join("/")}`;
}

async function readText(path: string): Promise<string | null> {
  try {
    return await fs.readFile(path, "utf8");
  } catch {
    return null;
  }
}

/** The first lines of a diff, for a dialog. */
function excerpt(diff: string, lines = 24): string {
  const all = diff.split("\n").filter((l) => !/^(diff --git|index |--- |\+\+\+ )/.test(l));
  return all.length > lines ? `${all.slice(0, lines).join("\n")}\n…` : all.join("\n");
}

/** What the chat does for the undo side: post to its page, redraw a session, send a prompt. */
export interface UndoView {
  post(message: ToWebview): void;
  /** Show this session in the chat again (its history redrawn). */
  show(sessionId: string): Promise<void>;
  /** Send a prompt in the chat's session. */
  send(text: string): Promise<void>;
  /** The session the chat shows. */
  current(): string | null;
}

export class Checkpoints {
  private readonly texts = new Map<string, string>();
  private seq = 0;
  /** The undos of each session this window made or heard of (replayed after a redraw). */
  private readonly undos = new Map<string, UndoInfo[]>();
  /** What each turn this window saw end changed (history has no turn/completed to carry it). */
  private readonly checkpoints = new Map<string, Map<string, TurnCheckpoint>>();

  constructor(
    private readonly host: Host,
    private readonly client: () => Promise<TurnstonedClient | null>,
    private readonly view: UndoView,
  ) {}

  /** Serve a virtual document of this module (a side of a diff). */
  provide(uri: string): string {
    const key = /[?&]k=(\d+)/.exec(uri)?.[1];
    return (key && this.texts.get(key)) ?? "";
  }

  private textUri(path: string, text: string, what: string): string {
    const key = String(++this.seq);
    this.texts.set(key, text);
    const encoded = path.split("/").map(encodeURIComponent).join("/");
    return `${TEXT_SCHEME}:${encoded.startsWith("/") ? "" : "/"}${encoded}?${new URLSearchParams({ k: key, side: what }).toString()}`;
  }

  // ------------------------------------------------------------ turns of prompts

  private records(sessionId: string): TurnRecord[] {
    return this.host.memento<TurnRecord[]>(TURNS_KEY + sessionId) ?? [];
  }

  private async saveRecords(sessionId: string, records: TurnRecord[]): Promise<void> {
    await this.host.setMemento(TURNS_KEY + sessionId, records.slice(-REMEMBERED));
  }

  /** A prompt sent from this window started a turn. */
  async sent(sessionId: string, turnId: string, text: string): Promise<void> {
    const records = this.records(sessionId).filter((r) => r.turnId !== turnId);
    records.push({ turnId, text });
    await this.saveRecords(sessionId, records);
  }

  /** The turns of a session's history prompts, as far as this window knows them. */
  turnsOf(sessionId: string, items: readonly Item[]): Record<string, string> {
    return matchTurns(items, this.records(sessionId));
  }

  /** A turn ended: remember what it changed. */
  completed(sessionId: string, turnId: string, checkpoint: TurnCheckpoint | null | undefined): void {
    if (!checkpoint?.files?.length) return;
    const turns = this.checkpoints.get(sessionId) ?? new Map<string, TurnCheckpoint>();
    turns.set(turnId, checkpoint);
    this.checkpoints.set(sessionId, turns);
  }

  /** An undo or redo notice from the daemon (this window's or another client's). */
  noticed(sessionId: string, kind: string, data: Record<string, unknown> | undefined): void {
    const undoId = typeof data?.undoId === "string" ? data.undoId : null;
    if (!undoId) return;
    const list = this.undos.get(sessionId) ?? [];
    const known = list.find((u) => u.undoId === undoId);
    if (kind === "redo") {
      if (known) known.redone = true;
      return;
    }
    if (known) return;
    const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
    list.push({ undoId, turnIds: strings(data?.turnIds), restored: strings(data?.restored), kept: [], rewound: data?.rewound === true, redone: false });
    this.undos.set(sessionId, list);
  }

  /**
   * After the page was given a session's history: what its turns changed (known from this
   * window, else asked for the last few), and its undos.
   */
  async replay(sessionId: string, turns: Record<string, string>): Promise<void> {
    const present = [...new Set(Object.values(turns))];
    const known = this.checkpoints.get(sessionId) ?? new Map<string, TurnCheckpoint>();
    const post = (turnId: string, c: TurnCheckpoint) => this.view.post({ type: "changes", turnId, files: c.files ?? [], undoable: c.undoable ?? true, note: c.note ?? null });
    for (const turnId of present) {
      const c = known.get(turnId);
      if (c) post(turnId, c);
    }
    for (const undo of this.undos.get(sessionId) ?? []) this.view.post({ type: "undone", ...undo });
    const asked = present.filter((id) => !known.has(id)).slice(-ASKED);
    const client = asked.length ? await this.client() : null;
    if (!client) return;
    /** The turns an undo took back (`undoneBy`, 1.12), by undo: a window that reloads still offers Redo. */
    const undoneBy = new Map<string, { turnIds: string[]; files: string[] }>();
    await Promise.all(asked.map(async (turnId) => {
      try {
        const result = await client.turnChanges(sessionId, turnId);
        if (!result.files.length || this.view.current() !== sessionId) return;
        // The diffs are read again when one is opened; the list is what the page needs.
        const checkpoint: TurnCheckpoint = { files: result.files.map(({ diff: _diff, ...f }) => f), undoable: result.undoable ?? true, note: result.note ?? null };
        this.completed(sessionId, turnId, checkpoint);
        post(turnId, checkpoint);
        if (result.undoneBy) {
          const undo = undoneBy.get(result.undoneBy) ?? { turnIds: [], files: [] };
          undo.turnIds.push(turnId);
          undo.files.push(...result.files.map((f) => f.path));
          undoneBy.set(result.undoneBy, undo);
        }
      } catch { /* a turn the daemon has no checkpoint of: nothing to show */ }
    }));
    if (this.view.current() !== sessionId) return;
    const list = this.undos.get(sessionId) ?? [];
    for (const [undoId, undo] of undoneBy) {
      if (list.some((u) => u.undoId === undoId)) continue;
      const turnIds = present.filter((id) => undo.turnIds.includes(id));
      list.push({ undoId, turnIds, restored: [...new Set(undo.files)], kept: [], rewound: false, redone: false });
    }
    if (list.length) this.undos.set(sessionId, list);
    for (const undo of this.undos.get(sessionId) ?? []) this.view.post({ type: "undone", ...undo });
  }

  private remember(sessionId: string, result: TurnUndoResult, rewound: boolean): UndoInfo | null {
    if (!result.undoId) return null;
    const list = this.undos.get(sessionId) ?? [];
    const info: UndoInfo = {
      undoId: result.undoId, turnIds: result.turnIds ?? [], restored: (result.restored ?? []).map((f) => f.path),
      kept: result.kept ?? [], rewound, redone: false,
    };
    const known = list.find((u) => u.undoId === info.undoId);
    if (known) Object.assign(known, { ...info, redone: known.redone });
    else list.push(info);
    this.undos.set(sessionId, list);
    return info;
  }

  // ------------------------------------------------------------ actions

  private async ready(): Promise<TurnstonedClient | null> {
    const client = await this.client();
    if (!client) void this.host.info("The daemon is not running.");
    return client;
  }

  /** Tell the user why a request failed, in words for the two errors that are theirs to fix. */
  private failed(what: string, err: unknown): void {
    const e = rpcError(err);
    if (e.kind === ErrorKind.TURN_RUNNING) void this.host.info(`A turn is running in this chat: stop it (or wait for it to end), then ${what} again.`);
    else if (e.kind === ErrorKind.CHECKPOINT_NOT_FOUND) void this.host.warn(`Nothing to ${what}: ${e.message}`);
    else void this.host.warn(`Could not ${what}: ${e.message}${e.kind ? ` (${e.kind})` : ""}`);
  }

  /** The diff editor: the file before the turn ↔ the file now. */
  async showChange(sessionId: string, turnId: string, path: string): Promise<void> {
    const client = await this.ready();
    if (!client) return;
    let file: ChangedFile | undefined;
    try {
      file = (await client.turnChanges(sessionId, turnId)).files.find((f) => f.path === path);
    } catch (err) {
      this.failed("show the change", err);
      return;
    }
    if (!file) {
      void this.host.info(`${basename(path)} is no longer among this turn's changes.`);
      return;
    }
    if (file.binary || !file.diff) {
      void this.host.info(`${basename(path)} is a binary file: there is no text diff to show.`);
      return;
    }
    const now = await readText(path);
    const before = file.kind === "create" ? "" : reverseApply(file.diff, now ?? "");
    if (before === null || file.truncated) {
      // The file changed again since (or the diff was cut): the turn's own diff, as text.
      await this.host.showDocument(this.textUri(`${path}.diff`, file.diff, "diff"));
      return;
    }
    const left = this.textUri(path, before, "before");
    const right = now === null ? this.textUri(path, "", "deleted") : fileUri(path);
    await this.host.diff(left, right, `${basename(path)}: before the turn ↔ now (turnstoned)`);
  }

  /** Ask about each conflict until the daemon applies the undo (or redo); null: the user stopped. */
  private async settle(verb: "undo" | "redo", first: TurnUndoResult, again: (resolutions: Record<string, Resolution>) => Promise<TurnUndoResult>): Promise<TurnUndoResult | null> {
    let result = first;
    const resolutions: Record<string, Resolution> = {};
    for (let round = 0; !result.applied && round < ROUNDS; round++) {
      const conflicts = result.conflicts ?? [];
      if (!conflicts.length) break;
      for (const conflict of conflicts) {
        if (resolutions[conflict.path]) continue;
        const choice = await this.askConflict(verb, conflict);
        if (!choice) return null;
        resolutions[conflict.path] = choice;
      }
      result = await again({ ...resolutions });
    }
    return result.applied ? result : null;
  }

  private async askConflict(verb: "undo" | "redo", conflict: UndoConflict): Promise<Resolution | undefined> {
    const name = basename(conflict.path);
    const replaced = verb === "undo" ? "the version from before the turn" : "the turn's version";
    for (;;) {
      const choice = await this.host.modal(
        `${name} changed since the turn: keep your version?`,
        `${conflict.path} was changed after the turn left it (by you or a program). ${verb === "undo" ? "Undo" : "Redo"} would replace it with ${replaced}.\n\nYour changes since the turn:\n${excerpt(conflict.diff)}${conflict.truncated ? "\n(diff cut)" : ""}`,
        "Keep Mine", "Take Checkpoint", "Show Diff");
      if (choice === "Keep Mine") return "mine";
      if (choice === "Take Checkpoint") return "checkpoint";
      if (choice !== "Show Diff") return undefined;
      const now = await readText(conflict.path);
      const theirs = reverseApply(conflict.diff, now ?? "");
      if (theirs === null) await this.host.showDocument(this.textUri(`${conflict.path}.diff`, conflict.diff, "diff"));
      else await this.host.diff(this.textUri(conflict.path, theirs, "turn"), now === null ? this.textUri(conflict.path, "", "deleted") : fileUri(conflict.path), `${name}: the turn's version ↔ yours (turnstoned)`);
    }
  }

  /** Undo turns (from `turnId` on; null: the last undoable turn), only `paths` when given; the applied result, or null. */
  private async undo(sessionId: string, turnId: string | null, options: { rewind?: boolean; paths?: string[] }): Promise<TurnUndoResult | null> {
    const client = await this.ready();
    if (!client) return null;
    const params = { sessionId, turnId, rewind: options.rewind ?? false, ...(options.paths ? { paths: options.paths } : {}) };
    try {
      const result = await this.settle("undo", await client.undo(params), (resolutions) => client.undo({ ...params, resolutions }));
      if (!result) {
        void this.host.info("Nothing was undone.");
        return null;
      }
      return result;
    } catch (err) {
      this.failed("undo", err);
      return null;
    }
  }

  /** What an applied undo changes in the chat: the page, the turns of prompts, a redraw. */
  private async undone(sessionId: string, result: TurnUndoResult, rewound: boolean): Promise<void> {
    const info = this.remember(sessionId, result, rewound);
    if (rewound && result.undoId) {
      const gone = new Set(result.turnIds ?? []);
      await this.saveRecords(sessionId, this.records(sessionId).map((r) => (gone.has(r.turnId) ? { ...r, rewound: result.undoId! } : r)));
      await this.view.show(sessionId);
    } else if (info) {
      this.view.post({ type: "undone", ...info });
    }
  }

  async undoFile(sessionId: string, turnId: string, path: string): Promise<void> {
    const result = await this.undo(sessionId, turnId, { paths: [path] });
    if (result) await this.undone(sessionId, result, false);
  }

  /**
   * Undo a whole turn (and the ones after it; null: the last turn not undone yet): the user
   * chooses whether the conversation goes back too.
   */
  async undoTurn(sessionId: string, turnId: string | null): Promise<void> {
    const how = await this.host.pick([
      { label: "Undo and rewind the conversation", detail: "The files go back, and the turn (with the ones after it) leaves the conversation: the model never saw it.", value: "rewind" as const },
      { label: "Undo the files, keep the conversation", detail: "The files go back; the model is told what you undid.", value: "keep" as const },
    ], turnId ? { title: "Undo this turn", placeHolder: "The turns after it are undone too" } : { title: "Undo the last turn", placeHolder: "The last turn that changed files and is not undone yet" });
    if (!how) return;
    const result = await this.undo(sessionId, turnId, { rewind: how === "rewind" });
    if (!result) return;
    await this.undone(sessionId, result, how === "rewind");
    // The rewound prompt goes back into the composer, to edit and send again.
    if (how === "rewind" && result.prompt) this.view.post({ type: "draft", text: result.prompt });
  }

  /** Bring back what an undo took back (null: the session's latest undo not redone yet). */
  async redo(sessionId: string, which: string | null): Promise<void> {
    const client = await this.ready();
    if (!client) return;
    let result: TurnUndoResult | null;
    try {
      const first = await client.redo(sessionId, which);
      // Conflicts are resolved for the undo the daemon picked.
      const picked = which ?? first.undoId ?? null;
      result = await this.settle("redo", first, (resolutions) => client.redo(sessionId, picked, resolutions));
    } catch (err) {
      this.failed("redo", err);
      return;
    }
    if (!result) {
      void this.host.info("Nothing was redone.");
      return;
    }
    const undoId = which ?? result.undoId;
    if (!undoId) return;
    const info = this.undos.get(sessionId)?.find((u) => u.undoId === undoId);
    if (info) info.redone = true;
    if (result.rewound) {
      await this.saveRecords(sessionId, this.records(sessionId).map((r) => (r.rewound === undoId ? { turnId: r.turnId, text: r.text } : r)));
      await this.view.show(sessionId);
    } else if (info) {
      this.view.post({ type: "undone", ...info });
    }
  }

  /** Run an earlier prompt again, edited: here (the turn and those after it undone and rewound) or in a fork. */
  async rerun(sessionId: string, turnId: string, text: string, how: Rerun): Promise<void> {
    if (how === "rewind") {
      const result = await this.undo(sessionId, turnId, { rewind: true });
      if (!result) return;
      await this.undone(sessionId, result, true);
      await this.view.send(text);
      return;
    }
    const client = await this.ready();
    if (!client) return;
    try {
      const params = { sessionId, turnId, restoreFiles: true };
      let forked = await client.fork(params);
      if (!forked.session && forked.undo) {
        const undo = forked.undo;
        const settled = await this.settle("undo", undo, async (resolutions) => {
          forked = await client.fork({ ...params, resolutions });
          return forked.session ? { ...(forked.undo ?? { applied: true }), applied: true } : forked.undo ?? { applied: false };
        });
        if (!settled) {
          void this.host.info("Nothing was forked.");
          return;
        }
      }
      const session = forked.session;
      if (!session) {
        void this.host.warn("The daemon made no new session for the fork.");
        return;
      }
      if (forked.undo?.applied) this.remember(sessionId, forked.undo, false);
      // The fork has the conversation before the turn: its prompts' turns are the source's.
      const before = this.records(sessionId);
      const cut = before.findIndex((r) => r.turnId === turnId);
      await this.saveRecords(session.sessionId, (cut < 0 ? [] : before.slice(0, cut)).filter((r) => !r.rewound));
      await this.view.show(session.sessionId);
      await this.view.send(text);
    } catch (err) {
      this.failed("fork the chat", err);
    }
  }
}
