/** @-mentions in a prompt: `@path` or `@path:10-40` (lines from 1), after a space or at the start. */
import type { Mention } from "./chat";

const MENTION = /(?:^|(?<=\s))@([^\s@:]+)(?::(\d+)(?:-(\d+))?)?(?=[\s,.;!?)]*(?:\s|$))/g;

/**
 * The mentions in `text`, each path once (its first range). `known`: only paths it holds (the
 * files the @ list offered), so an `@name` that is no file stays plain text.
 */
export function mentionsIn(text: string, known?: ReadonlySet<string>): Mention[] {
  const out: Mention[] = [];
  for (const m of text.matchAll(MENTION)) {
    const path = m[1]!.replace(/[,.;!?)]+$/, "");
    if (!path || (known && !known.has(path)) || out.some((o) => o.path === path)) continue;
    const mention: Mention = { path };
    if (m[2]) {
      const start = Number(m[2]);
      const end = m[3] ? Number(m[3]) : start;
      mention.startLine = Math.min(start, end);
      mention.endLine = Math.max(start, end);
    }
    out.push(mention);
  }
  return out;
}

/** The @-word the cursor is in (`at`: the index of its @), for the completion list; null when none. */
export function mentionAt(text: string, cursor: number): { at: number; query: string } | null {
  const before = text.slice(0, cursor);
  const m = /(?:^|\s)@([^\s@]*)$/.exec(before);
  if (!m) return null;
  const at = cursor - m[1]!.length - 1;
  return { at, query: m[1]!.replace(/:[\d-]*$/, "") };
}

/** The slash command being typed at the start of the input (before any space), or null. */
export function slashAt(text: string, cursor: number): string | null {
  const m = /^\/(\S*)$/.exec(text.slice(0, cursor));
  return m && !text.slice(0, cursor).includes("\n") ? m[1]! : null;
}

/** A sent prompt that names a command: `/name words`. */
export function slashCommand(text: string): { name: string; args: string } | null {
  const m = /^\/([^\s/]+)(?:\s+([\s\S]*))?$/.exec(text.trim());
  return m ? { name: m[1]!, args: (m[2] ?? "").trim() } : null;
}
