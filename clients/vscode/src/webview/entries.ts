/** DOM for transcript entries: messages, reasoning, notices, errors, compactions and tool cards. */
import type { ChangesEntry, CompactionEntry, Entry, ErrorEntry, NoticeEntry, PlanEntry, TextEntry, ToolEntry, UndoEntry, UserEntry } from "../chat/state";
import type { PageFeatures } from "../messages/chat";
import type { SandboxUse } from "../protocol";
import { h, setText, toggle } from "./dom";
import { patchMarkdown } from "./markdown";

/** What the page lets the user do on a card: the daemon's features, and whether a turn runs. */
export interface CardFeatures extends PageFeatures {
  running?: boolean;
}

const DIFF_CLASS: [string, string][] = [["+++", "meta"], ["---", "meta"], ["@@", "hunk"], ["+", "add"], ["-", "del"]];

/** A unified diff as lines with their add/del/hunk class (built as text nodes, never HTML). */
function diffBlock(diff: string): HTMLElement {
  const pre = h("pre", { class: "diff" });
  for (const line of diff.replace(/\n$/, "").split("\n")) {
    const cls = DIFF_CLASS.find(([prefix]) => line.startsWith(prefix))?.[1] ?? "ctx";
    pre.append(h("span", { class: cls }, line), "\n");
  }
  return pre;
}

function fileChangePart(entry: ToolEntry, node: HTMLElement): void {
  const change = entry.fileChange;
  const old = node.querySelector<HTMLElement>(":scope > .file-change");
  const key = change ? `${change.kind}|${change.path}|${change.unifiedDiff.length}` : "";
  if ((old?.dataset.key ?? "") === key) return;
  old?.remove();
  if (!change) return;
  const details = h("details", { class: "file-change", "data-key": key, open: entry.status === "pending" },
    h("summary", {}, h("span", { class: `kind ${change.kind}` }, change.kind), " ", change.path, change.truncated ? " (diff truncated: Review shows all)" : ""),
    diffBlock(change.unifiedDiff));
  (node.querySelector(":scope > .preview") ?? node.querySelector(":scope > .card-head"))?.after(details);
}

const EDIT_TOOLS = new Set(["write_file", "edit_file"]);
const OUTPUT_TAIL = 60_000;

/** Remembers the last text rendered per node so unchanged entries cost nothing. */
const rendered = new WeakMap<HTMLElement, string>();

function once(node: HTMLElement, key: string, draw: () => void): void {
  if (rendered.get(node) === key) return;
  rendered.set(node, key);
  draw();
}

/** A prompt; one that started a known turn can be edited and run again (rewound or forked). */
function userNode(entry: UserEntry, node: HTMLElement, features: CardFeatures): void {
  const rerun = Boolean(features.checkpoints && entry.turnId && !entry.queued);
  once(node, `${entry.text}|${entry.queued}|${rerun}|${entry.images?.length ?? 0}`, () => {
    node.replaceChildren(h("div", { class: "bubble" }, entry.text));
    if (entry.images?.length) {
      node.append(h("div", { class: "images" }, ...entry.images.map((img, i) => h("img", { class: "thumb", src: `data:${img.mimeType};base64,${img.data}`, alt: `picture ${i + 1}`, title: `picture ${i + 1} (${img.mimeType})` }))));
    }
    if (entry.queued) node.append(h("div", { class: "queued" }, "queued: the model reads it at its next step"));
    if (!rerun) return;
    node.append(
      h("div", { class: "user-actions" }, h("button", { class: "link", "data-action": "editPrompt", title: "Change this prompt and run it again" }, "Edit and rerun")),
      h("div", { class: "rerun", hidden: true },
        h("textarea", { class: "rerun-text", rows: "3" }, entry.text),
        h("div", { class: "buttons" },
          h("button", { "data-action": "rerun", "data-how": "rewind", title: "Undo this turn and the ones after it (files and conversation), then send the edited prompt here" }, "Rerun here"),
          h("button", { class: "secondary", "data-action": "rerun", "data-how": "fork", title: "A new chat with the conversation before this prompt (the files put back as they were then), and the edited prompt sent there" }, "Rerun in a new chat"),
          h("button", { class: "secondary", "data-action": "cancelRerun" }, "Cancel"))));
  });
  const button = node.querySelector<HTMLButtonElement>("[data-action=editPrompt]");
  if (button) button.disabled = Boolean(features.running);
}

function textNode(entry: TextEntry, node: HTMLElement): void {
  if (entry.kind === "reasoning") {
    let details = node.querySelector("details");
    if (!details) {
      details = h("details", { class: "reasoning" }, h("summary", {}, "Reasoning"), h("div", { class: "md" }));
      node.append(details);
    }
    setText(details.querySelector("summary")!, entry.done ? "Reasoning" : "Reasoning…");
    once(node, entry.text, () => patchMarkdown(details!.querySelector<HTMLElement>(".md")!, entry.text));
    return;
  }
  let body = node.querySelector<HTMLElement>(".md");
  if (!body) node.append((body = h("div", { class: "md" })));
  once(node, entry.text, () => patchMarkdown(body!, entry.text));
  node.classList.toggle("streaming", !entry.done);
}

function noticeNode(entry: NoticeEntry, node: HTMLElement): void {
  once(node, `${entry.headline}|${entry.text}`, () => {
    const badge = h("span", { class: "notice-kind" }, entry.noticeKind);
    if (entry.noticeKind === "watch") {
      // A watch report carries the command's output: the headline, the report folded.
      node.replaceChildren(h("details", { class: "notice-body" }, h("summary", {}, badge, " ", entry.headline ?? "watch fired"), h("pre", {}, entry.text)));
    } else if (entry.headline) {
      node.replaceChildren(badge, " ", h("strong", {}, entry.headline), " ", entry.text);
    } else {
      node.replaceChildren(badge, " ", entry.text);
    }
  });
}

/** 12400 → "12.4k" */
function tokens(n: number): string {
  return n >= 1000 ? `${(n / 1000).toFixed(n >= 100_000 ? 0 : 1).replace(/\.0$/, "")}k` : String(n);
}

/** A divider where the older context became a summary; the summary folded under it. */
function compactionNode(entry: CompactionEntry, node: HTMLElement): void {
  once(node, `${entry.text}|${entry.summary}`, () => {
    const f = entry.figures;
    const label = f
      ? `Context compacted${f.trigger === "auto" ? "" : ` (${f.trigger})`} · ${tokens(f.before)} → ${tokens(f.after)} of ${tokens(f.window)} tokens · ${f.messages} messages ${f.mode === "summary" ? "summarised" : "dropped"}${f.cost ? ` · the summary cost ${tokens(f.cost)} tokens` : ""}`
      : "Context compacted";
    const body = h("div", { class: "compaction-body" }, h("p", { class: "compaction-text" }, entry.text));
    if (entry.summary) {
      const md = h("div", { class: "md" });
      patchMarkdown(md, entry.summary);
      body.append(md);
    }
    node.replaceChildren(
      h("div", { class: "divider", role: "separator", title: entry.text }, h("span", {}, label)),
      h("details", { class: "compaction-summary" }, h("summary", {}, entry.summary ? "Summary the model reads from here on" : "No summary (older messages dropped)"), body));
  });
}

function errorNode(entry: ErrorEntry, node: HTMLElement): void {
  once(node, entry.message, () =>
    node.replaceChildren(
      h("div", { class: "error-head" }, h("span", { class: "error-kind" }, entry.errorKind), " ", entry.message),
      h("div", { class: "hint" }, entry.hint),
    ));
}

function basename(path: string): string {
  return path.split("/").filter(Boolean).pop() ?? path;
}

function dirname(path: string): string {
  const cut = path.lastIndexOf("/");
  return cut > 0 ? path.slice(0, cut) : "";
}

const FILE_STATUS: Record<string, string> = { kept: "kept", undone: "undone" };

/** "Changes in this turn": each file with Diff / Keep / Undo, and Undo turn for all of them. */
function changesNode(entry: ChangesEntry, node: HTMLElement, features: CardFeatures): void {
  const key = JSON.stringify([entry.files, entry.undoable, entry.note, features.running]);
  once(node, key, () => {
    const live = entry.files.filter((f) => f.status !== "undone");
    const title = entry.files.length ? `Changes in this turn · ${entry.files.length} file${entry.files.length === 1 ? "" : "s"}` : "Changes in this turn";
    const head = h("div", { class: "changes-head" }, h("span", { class: "changes-title" }, title));
    if (entry.undoable && live.length) {
      head.append(h("button", { class: "secondary", "data-action": "undoTurn", title: "Put every file back as it was before this turn (and the turns after it)", disabled: Boolean(features.running) }, "Undo turn"));
    }
    const rows = entry.files.map((f) => {
      const row = h("li", { class: `changed-file status-${f.status}`, "data-path": f.path, title: f.path },
        h("span", { class: `kind ${f.kind}` }, f.kind), " ",
        h("span", { class: "file-name" }, basename(f.path)), " ",
        h("span", { class: "file-dir" }, dirname(f.path)));
      const actions = h("span", { class: "file-actions" });
      if (!f.binary && f.status !== "undone") actions.append(h("button", { class: "link", "data-action": "showChange", title: "Open the turn's change in the diff editor" }, "Diff"));
      if (f.status === "changed") {
        actions.append(h("button", { class: "link", "data-action": "keepFile", title: "Keep the file as the turn left it" }, "Keep"));
        if (entry.undoable) actions.append(h("button", { class: "link", "data-action": "undoFile", title: "Put this file alone back as it was before the turn", disabled: Boolean(features.running) }, "Undo"));
      } else {
        actions.append(h("span", { class: "file-status" }, FILE_STATUS[f.status] ?? f.status));
      }
      row.append(actions);
      return row;
    });
    node.replaceChildren(head, ...(rows.length ? [h("ul", { class: "changed-files" }, ...rows)] : []));
    if (entry.note) node.append(h("div", { class: "approval-note" }, entry.undoable ? entry.note : `Cannot be undone: ${entry.note}`));
  });
}

/** An undo of turns (or of files): what came back, and Redo until it is redone. */
function undoNode(entry: UndoEntry, node: HTMLElement, features: CardFeatures): void {
  once(node, JSON.stringify([entry.restored, entry.kept, entry.redone, entry.rewound, features.running]), () => {
    const turns = entry.turnIds.length === 1 ? "1 turn" : `${entry.turnIds.length} turns`;
    const files = entry.restored.length ? `${entry.restored.length} file${entry.restored.length === 1 ? "" : "s"} restored (${entry.restored.map(basename).join(", ")})` : "no files needed restoring";
    const parts = [`${entry.redone ? "Undid, then redid" : "Undid"} ${turns}: ${files}`];
    if (entry.kept.length) parts.push(`your version kept: ${entry.kept.map(basename).join(", ")}`);
    if (entry.rewound) parts.push("conversation rewound");
    node.replaceChildren(h("span", { class: "notice-kind" }, entry.redone ? "redone" : "undo"), " ", parts.join(" · "));
    if (!entry.redone) node.append(" ", h("button", { class: "secondary", "data-action": "redo", "data-undo": entry.undoId, title: "Bring back what this undo took back", disabled: Boolean(features.running) }, "Redo"));
  });
}

const SANDBOX_WORDS: Record<SandboxUse, [string, string]> = {
  sandboxed: ["sandboxed", "Runs in the sandbox: it writes only the workspace and its temp dir, reads no credentials and reaches no network"],
  unsandboxed: ["unsandboxed", "Runs outside the sandbox, with your permissions"],
  escalated: ["outside the sandbox", "Runs outside the sandbox because the model asked to leave it"],
};

function part(node: HTMLElement, cls: string, make: () => HTMLElement): HTMLElement {
  return node.querySelector<HTMLElement>(`:scope > .${cls}`) ?? node.appendChild(make());
}

function approvalPanel(entry: ToolEntry, features: CardFeatures): HTMLElement | null {
  const approval = entry.approval;
  if (!approval) return null;
  const own = approval.split || approval.lead;
  const scope = approval.split ? "" : approval.siblings > 0 ? ` all ${approval.siblings + 1}` : "";
  const panel = h("div", { class: "approval", "data-cycle": approval.cycleId, "data-call": entry.callId });
  if (!own) {
    panel.append(h("div", { class: "approval-note" }, "This batch is answered as a whole, with the first call."));
    return panel;
  }
  if (entry.error) panel.append(h("div", { class: "approval-error" }, entry.error));
  if (entry.escalation) {
    panel.append(h("div", { class: "escalation" }, h("strong", {}, "Asks to run outside the sandbox"), h("div", { class: "escalation-reason" }, entry.escalation)));
  }
  if (entry.policy) panel.append(h("div", { class: "approval-note" }, `Asked because of a policy: ${entry.policy}`));
  if (entry.tool === PLAN_TOOL) return planPanel(panel);
  const always = alwaysButton(entry, approval.label);
  const buttons = h("div", { class: "buttons" },
    h("button", { "data-action": "approve", title: "Run this" + scope }, "Approve" + scope),
    ...(always ? [always] : []),
    h("button", { class: "danger", "data-action": "deny", title: "Do not run; the model reads your feedback" }, "Deny"));
  if (features.editArguments) {
    buttons.append(h("button", { class: "secondary", "data-action": "edit", title: "Change the call before it runs" }, "Edit"));
  }
  if (features.editReview && (entry.fileChange || EDIT_TOOLS.has(entry.tool))) {
    buttons.prepend(h("button", { class: "secondary", "data-action": "review", title: "Open the change in the diff editor" }, "Review"));
  }
  if (approval.split && approval.lead) {
    buttons.append(h("button", { class: "secondary", "data-action": "approveAll", title: "Approve every call of this batch" }, `Approve all ${approval.siblings + 1}`));
  }
  const note = grantNote(entry);
  panel.append(buttons, ...(note ? [note] : []), h("input", { class: "feedback", type: "text", placeholder: "Feedback for the model (optional)" }));
  if (features.editArguments) {
    panel.append(h("div", { class: "edit", hidden: true },
      h("textarea", { class: "edit-args", rows: "3", spellcheck: "false" }, editableText(entry)),
      h("div", { class: "edit-error" }),
      h("button", { "data-action": "runEdited", title: "Run the edited call (the daemon checks it again)" }, "Run edited")));
  }
  return panel;
}

const PLAN_TOOL = "propose_plan";

/** A plan is approved or sent back with what should change; approving it switches to auto. */
function planPanel(panel: HTMLElement): HTMLElement {
  panel.classList.add("plan-approval");
  panel.append(
    h("div", { class: "plan-question" }, h("strong", {}, "Approve this plan?"), " The session then switches to auto mode and the model carries it out."),
    h("div", { class: "buttons" },
      h("button", { "data-action": "approve", title: "Approve the plan; the model carries it out in auto mode" }, "Approve plan"),
      h("button", { class: "secondary", "data-action": "deny", title: "Send the plan back; the model reads your feedback and proposes again" }, "Revise")),
    h("input", { class: "feedback", type: "text", placeholder: "What should change? (the model revises the plan)" }));
  return panel;
}

/** The plan a propose_plan call shows, as markdown. */
function planPart(entry: ToolEntry, node: HTMLElement): void {
  const isPlan = entry.tool === PLAN_TOOL && entry.preview !== "";
  const old = node.querySelector<HTMLElement>(":scope > .plan");
  if (!isPlan) {
    old?.remove();
    return;
  }
  const box = old ?? h("div", { class: "plan" }, h("div", { class: "md" }));
  if (!old) (node.querySelector(":scope > .preview") ?? node.querySelector(":scope > .card-head"))?.after(box);
  once(box, entry.preview, () => patchMarkdown(box.querySelector<HTMLElement>(".md")!, entry.preview));
}

function percent(value: number | undefined): string {
  return value === undefined ? "" : ` ${Math.round(value * 100)}%`;
}

/** The verdicts and what the daemon did on its own: risk badges, reasons, auto-approval, edits. */
function verdictPart(entry: ToolEntry, node: HTMLElement): void {
  const v = entry.verdict;
  const j = entry.judgeVerdict;
  const key = JSON.stringify([v, j, entry.judging, entry.autoApproved, entry.originalArguments]);
  const box = part(node, "verdicts", () => h("div", { class: "verdicts" }));
  once(box, key, () => {
    const lines: HTMLElement[] = [];
    if (v) lines.push(h("div", { class: "verdict" }, h("span", { class: `risk risk-${v.risk}`, title: `recommends ${v.recommendation}` }, v.risk), " ", h("span", { class: "rule" }, v.rule), ": ", v.reason));
    if (j) {
      const word = j.tier === "llm" ? `judge: ${j.recommendation}${percent(j.confidence)}` : "judge: no verdict";
      lines.push(h("div", { class: "verdict judge" }, h("span", { class: `risk risk-${j.risk}` }, word), " ", j.reason));
    } else if (entry.judging) {
      lines.push(h("div", { class: "verdict judge" }, "judge: rating…"));
    }
    if (entry.autoApproved) lines.push(h("div", { class: "auto" }, `ran without asking: ${entry.autoApproved}`));
    if (entry.originalArguments) lines.push(h("div", { class: "edited" }, `edited before it ran; the model asked for ${entry.originalArguments}`));
    box.replaceChildren(...lines);
  });
  toggle(box, box.childElementCount > 0);
}

/** What the user edits: a bash command as text, any other call as its JSON arguments. */
export function editableText(entry: ToolEntry): string {
  try {
    const args = JSON.parse(entry.arguments) as Record<string, unknown>;
    if (entry.tool === "bash" && typeof args.command === "string") return args.command;
    return JSON.stringify(args, null, 2);
  } catch {
    return entry.arguments;
  }
}

/** The arguments the edited text stands for; a string says what is wrong with it. */
export function editedArguments(entry: ToolEntry, text: string): Record<string, unknown> | string {
  let original: Record<string, unknown> = {};
  try {
    original = JSON.parse(entry.arguments) as Record<string, unknown>;
  } catch { /* the model sent no object: the edit is the whole of it */ }
  if (entry.tool === "bash" && typeof original.command === "string") {
    return text.trim() ? { ...original, command: text } : "The command is empty.";
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
    return "The arguments must be a JSON object.";
  } catch (err) {
    return `Not valid JSON: ${(err as Error).message}`;
  }
}

function alwaysButton(entry: ToolEntry, label: string): HTMLElement | null {
  const rules = entry.grantRules;
  if (rules === null) {
    return h("button", { class: "secondary", "data-action": "always", title: `Approve, and never ask again for “${label}” in this session` }, `Always allow ${label}`);
  }
  if (!rules.length) return null;
  return h("button", { class: "secondary", "data-action": "always", title: `Approve, and let these run unasked in this session: ${rules.join(", ")}` }, "Always allow");
}

function grantNote(entry: ToolEntry): HTMLElement | null {
  const rules = entry.grantRules;
  if (rules === null) return null;
  if (!rules.length) return h("div", { class: "approval-note grant-rules" }, "Asks every time: no “always” for this call.");
  return h("div", { class: "approval-note grant-rules" }, "“Always” saves: ", ...rules.map((r) => h("code", {}, r)));
}

function statusWord(entry: ToolEntry): string {
  if (entry.approval) return "waiting for approval";
  return entry.status;
}

/** Buttons that show again the previews the call opened. */
function previewsPart(entry: ToolEntry, node: HTMLElement): void {
  const key = entry.previews.map((p) => p.previewId).join(",");
  const old = node.querySelector<HTMLElement>(":scope > .previews");
  if ((old?.dataset.key ?? "") === key) return;
  old?.remove();
  if (!key) return;
  const row = h("div", { class: "previews", "data-key": key });
  for (const p of entry.previews) row.append(h("button", { class: "secondary", "data-action": "openPreview", "data-preview": p.previewId, title: `Show the ${p.kind} preview again` }, `Show preview: ${p.title}`));
  node.querySelector(":scope > .effect")?.after(row);
}

/** What a task agent did, nested in its call's card: open while it works or asks. */
function agentPart(entry: ToolEntry, node: HTMLElement, features: CardFeatures): void {
  let section = node.querySelector<HTMLDetailsElement>(":scope > details.agent-work");
  if (!entry.children.length) {
    section?.remove();
    return;
  }
  if (!section) {
    section = h("details", { class: "agent-work" }, h("summary", {}), h("div", { class: "agent-items" }));
    const effect = node.querySelector(":scope > .effect");
    if (effect) effect.after(section);
    else node.append(section);
  }
  const tools = entry.children.filter((e): e is ToolEntry => e.kind === "tool");
  const asking = tools.some((t) => t.approval !== null);
  const working = entry.status === "running" || entry.status === "pending";
  const state = asking ? " · waiting for approval" : working ? " · working" : "";
  setText(section.querySelector("summary")!, `Task agent · ${tools.length} tool call${tools.length === 1 ? "" : "s"}${state}`);
  // The user's own choice (clicking the summary) wins, except that a question always shows.
  if (asking) section.open = true;
  else if (!section.hasAttribute("data-user")) section.open = working;
  drawList(section.querySelector<HTMLElement>(".agent-items")!, entry.children, features);
}

function toolNode(entry: ToolEntry, node: HTMLElement, features: CardFeatures): void {
  node.className = `entry tool status-${entry.approval ? "asking" : entry.status}${entry.isError ? " is-error" : ""}`;
  const head = part(node, "card-head", () => h("div", { class: "card-head" }, h("span", { class: "dot" }), h("span", { class: "header" }), h("span", { class: "sandbox", hidden: true }), h("span", { class: "status" })));
  setText(head.querySelector(".header")!, entry.header);
  const badge = head.querySelector<HTMLElement>(".sandbox")!;
  const words = entry.sandbox ? SANDBOX_WORDS[entry.sandbox] : undefined;
  toggle(badge, Boolean(words));
  if (words) {
    badge.className = `sandbox sandbox-${entry.sandbox}`;
    setText(badge, words[0]);
    badge.title = words[1];
  }
  setText(head.querySelector(".status")!, entry.decision && !entry.approval ? `${statusWord(entry)} · ${entry.decision}` : statusWord(entry));
  verdictPart(entry, node);
  const preview = part(node, "preview", () => h("pre", { class: "preview" }));
  setText(preview, entry.preview);
  // A one-line preview the header already shows (a bash command) is not repeated, and the
  // coloured diff of a file change replaces its plain-text preview.
  const repeated = entry.header.includes(entry.preview) && !entry.preview.includes("\n");
  toggle(preview, entry.preview !== "" && !repeated && !entry.fileChange && entry.tool !== PLAN_TOOL);
  planPart(entry, node);
  const output = part(node, "output", () => h("details", { class: "output" }, h("summary", {}, "Output"), h("pre", {})));
  const text = entry.output.length > OUTPUT_TAIL ? `…\n${entry.output.slice(-OUTPUT_TAIL)}` : entry.output;
  setText(output.querySelector("pre")!, text);
  // A task agent's answer is its call's output: shown once, as the agent's last message.
  const answered = entry.children.some((c) => c.kind === "agent" && c.text.trim() === entry.output.trim());
  toggle(output, text !== "" && !answered);
  if (entry.status === "running" && !output.hasAttribute("data-touched")) (output as HTMLDetailsElement).open = true;
  const effect = part(node, "effect", () => h("div", { class: "effect" }));
  setText(effect, entry.effectStatus && entry.effectStatus !== "none" ? `effect: ${entry.effectStatus}` : entry.effectStatus === "none" ? "effect: none (it never ran)" : "");
  toggle(effect, Boolean(entry.effectStatus));
  fileChangePart(entry, node);
  previewsPart(entry, node);
  agentPart(entry, node, features);
  const key = entry.approval ? `${entry.approval.cycleId}|${entry.approval.lead}|${entry.approval.split}|${entry.error}|${features.editReview}|${features.editArguments}|${entry.grantRules?.join(",")}|${entry.policy}|${entry.escalation}` : "";
  const old = node.querySelector<HTMLElement>(":scope > .approval");
  if ((old?.getAttribute("data-key") ?? "") !== key) {
    old?.remove();
    const panel = approvalPanel(entry, features);
    if (panel) {
      panel.setAttribute("data-key", key);
      node.append(panel);
    }
  }
}

/** Create or update the DOM node of one entry. */
const PLAN_MARKS: Record<string, [string, string]> = { done: ["✓", "done"], in_progress: ["▸", "in progress"], pending: ["○", "pending"] };

/** The model's plan: a checklist, done ✓, in progress ▸, pending ○. */
function planNode(entry: PlanEntry, node: HTMLElement): void {
  once(node, JSON.stringify([entry.steps, entry.explanation]), () => {
    const done = entry.steps.filter((s) => s.status === "done").length;
    node.replaceChildren(
      h("div", { class: "plan-head" }, h("span", { class: "plan-title" }, "Plan"), h("span", { class: "plan-count" }, `${done} of ${entry.steps.length} done`)),
      ...(entry.explanation ? [h("div", { class: "plan-why" }, entry.explanation)] : []),
      h("ol", { class: "plan-steps" }, ...entry.steps.map((step) => {
        const [mark, word] = PLAN_MARKS[step.status ?? "pending"] ?? PLAN_MARKS.pending!;
        return h("li", { class: `step ${step.status ?? "pending"}`, title: word }, h("span", { class: "mark", "aria-label": word }, mark), h("span", { class: "text" }, step.step));
      })));
  });
}

export function drawEntry(entry: Entry, node: HTMLElement | undefined, features: CardFeatures): HTMLElement {
  const el = node ?? h("div", { class: `entry ${entry.kind}`, "data-id": entry.id });
  switch (entry.kind) {
    case "user": userNode(entry, el, features); break;
    case "agent":
    case "reasoning": textNode(entry, el); break;
    case "notice": noticeNode(entry, el); break;
    case "error": errorNode(entry, el); break;
    case "tool": toolNode(entry, el, features); break;
    case "compaction": compactionNode(entry, el); break;
    case "changes": changesNode(entry, el, features); break;
    case "undo": undoNode(entry, el, features); break;
    case "plan": planNode(entry, el); break;
  }
  return el;
}

/** The node drawn for each entry of a container, by kind and id. */
const drawn = new WeakMap<HTMLElement, Map<string, HTMLElement>>();

/** Draw `entries` into `container` in order, reusing the nodes already there. */
export function drawList(container: HTMLElement, entries: readonly Entry[], features: CardFeatures): void {
  let nodes = drawn.get(container);
  if (!nodes) drawn.set(container, (nodes = new Map()));
  const seen = new Set<string>();
  let previous: Element | null = null;
  for (const entry of entries) {
    const key = `${entry.kind}:${entry.id}`;
    seen.add(key);
    const node = drawEntry(entry, nodes.get(key), features);
    nodes.set(key, node);
    const expected: Element | null = previous ? previous.nextElementSibling : container.firstElementChild;
    if (expected !== node) container.insertBefore(node, expected);
    previous = node;
  }
  for (const [key, node] of nodes) if (!seen.has(key)) { node.remove(); nodes.delete(key); }
}
