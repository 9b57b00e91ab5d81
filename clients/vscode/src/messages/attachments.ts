/** Formatting of "Add selection / file to chat" attachments into prompt text. */
import type { Attachment } from "./chat";

export interface Excerpt {
  /** Path relative to the workspace folder (or absolute outside one). */
  path: string;
  languageId: string;
  text: string;
  /** 1-based inclusive line range; absent for a whole file. */
  lines?: { start: number; end: number };
}

function fence(text: string): string {
  let ticks = "```";
  while (text.includes(ticks)) ticks += "`";
  return ticks;
}

/** An attachment: a label for the chip and the text the model reads. */
export function attachment(excerpt: Excerpt): Attachment {
  const where = excerpt.lines
    ? excerpt.lines.start === excerpt.lines.end
      ? `${excerpt.path}:${excerpt.lines.start}`
      : `${excerpt.path}:${excerpt.lines.start}-${excerpt.lines.end}`
    : excerpt.path;
  const what = excerpt.lines ? `Lines ${excerpt.lines.start}-${excerpt.lines.end} of \`${excerpt.path}\`` : `The file \`${excerpt.path}\``;
  const body = excerpt.text.endsWith("\n") ? excerpt.text : `${excerpt.text}\n`;
  const f = fence(body);
  return { label: where, text: `${what}:\n${f}${excerpt.languageId}\n${body}${f}` };
}

/** The prompt sent: the attachments first, then what the user typed. */
export function composePrompt(attachments: readonly Attachment[], typed: string): string {
  return [...attachments.map((a) => a.text), typed.trim()].filter(Boolean).join("\n\n");
}
