import { describe, expect, it } from "vitest";
import { fromHistory, type UserEntry } from "../../src/chat/state";
import { instructionLines } from "../../src/chat";
import { EditorServices, editorChip, lineSpan } from "../../src/editor";
import type { Item } from "../../src/protocol";
import { matchTurns } from "../../src/undo";
import { FakeHost } from "../support/fakeHost";

const range = (startLine: number, startCharacter: number, endLine: number, endCharacter: number) => ({ startLine, startCharacter, endLine, endCharacter });

describe("the editor state", () => {
  it("lines from 1; a selection ending at a line's start leaves that line out", () => {
    expect(lineSpan(range(9, 0, 19, 4))).toBe("lines 10-20");
    expect(lineSpan(range(9, 0, 10, 0))).toBe("line 10");
    expect(lineSpan(range(4, 2, 4, 8))).toBe("line 5");
  });

  it("the chip: the file, the selected lines, the problems; the cursor names the file only", () => {
    const file = "/w/src/app.py";
    expect(editorChip(null)).toBeNull();
    expect(editorChip({ activeFile: null })).toBeNull();
    const selected = editorChip({ activeFile: file, selection: { range: range(9, 0, 19, 3), text: "…" }, visible: range(0, 0, 40, 0), modified: true, diagnostics: [{ path: file, range: range(1, 0, 1, 1), message: "m" }, { path: file, range: range(2, 0, 2, 1), message: "n" }] });
    expect(selected?.label).toBe("app.py: lines 10-20 · 2 problems");
    expect(selected?.detail).toBe("Sent with the next prompt: /w/src/app.py (unsaved changes), the selected lines 10-20, the visible lines 1-40, the 2 problems the editor shows in it. × leaves it out of this prompt; the turnstoned.editorContext setting turns it off.");
    const cursor = editorChip({ activeFile: file, selection: { range: range(4, 2, 4, 2), text: "" } });
    expect(cursor?.label).toBe("app.py");
    expect(cursor?.detail).toContain("the cursor (line 5)");
  });

  it("the state of a prompt has the active file's diagnostics; the setting off sends none", () => {
    const host = new FakeHost({ command: "", args: [], model: "", baseUrl: "", logLevel: "INFO", skipPermissions: false, approvalMode: null, editorContext: true, shareDaemon: false }, { name: "w", path: "/w" });
    const editor = new EditorServices(host);
    expect(editor.state()).toBeNull();
    host.fileDocuments.set("/w/a.py", { text: "x\n", dirty: true, languageId: "python" });
    host.active = { path: "/w/a.py", selection: { range: range(0, 0, 0, 1), text: "x" }, visible: null };
    host.problems.set("/w/a.py", [{ path: "/w/a.py", range: range(0, 0, 0, 1), severity: "warning", message: "unused" }]);
    expect(editor.state()).toEqual({ activeFile: "/w/a.py", languageId: "python", modified: true, selection: { range: range(0, 0, 0, 1), text: "x" }, visible: null, diagnostics: [{ path: "/w/a.py", range: range(0, 0, 0, 1), severity: "warning", message: "unused" }] });
    host.changeSettings({ editorContext: false });
    expect(editor.state()).toBeNull();
    expect(editor.chip()).toBeNull();
  });
});

describe("instruction files and the turns of prompts", () => {
  it("named inside the session's folder relative to it, in the home folder with ~, else in full", () => {
    const lines = instructionLines([
      { path: "/home/me/.config/turnstoned/AGENTS.md", chars: 10 },
      { path: "/home/me/repo/AGENTS.md", chars: 2000, truncated: true },
      { path: "/home/me/repo/src/AGENTS.md", chars: 30 },
      { path: "/srv/CLAUDE.md", chars: 5 },
    ], "/home/me/repo", "/home/me");
    expect(lines.map((l) => [l.label, l.truncated])).toEqual([["~/.config/turnstoned/AGENTS.md", false], ["AGENTS.md", true], ["src/AGENTS.md", false], ["/srv/CLAUDE.md", false]]);
  });

  it("a prompt that names its turn (1.12) has it; others are matched to this window's records", () => {
    const items: Item[] = [
      { type: "userMessage", id: "u1", text: "one", turnId: "t1" },
      { type: "userMessage", id: "u2", text: "two" },
      { type: "userMessage", id: "u3", text: "queued", turnId: "t2", queued: true },
    ];
    expect(matchTurns(items, [{ turnId: "t1", text: "one" }, { turnId: "t2", text: "two" }])).toEqual({ u1: "t1", u2: "t2" });
    expect(matchTurns(items, [])).toEqual({ u1: "t1" });
    const users = fromHistory("s", "", items).entries.filter((e): e is UserEntry => e.kind === "user");
    expect(users.map((u) => u.turnId)).toEqual(["t1", null, null]);
  });
});
