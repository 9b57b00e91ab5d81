/** DOM for transcript entries: messages, reasoning, notices, errors, compactions and tool cards. */
import type { CompactionEntry, Entry, ErrorEntry, NoticeEntry, TextEntry, ToolEntry, UserEntry } from "../chat/state";
import { h, setText, toggle } from "./dom";
import { patchMarkdown } from "./markdown";

/** What the page lets the user do on a card; decided by the daemon's features. */
export interface CardFeatures {
  perCallDecisions: boolean;
  editReview: boolean;
  editArguments: boolean;
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

function userNode(entry: UserEntry, node: HTMLElement): void {
  once(node, `${entry.text}|${entry.queued}`, () => {
    node.replaceChildren(h("div", { class: "bubble" }, entry.text));
    if (entry.queued) node.append(h("div", { class: "queued" }, "queued: the model reads it at its next step"));
  });
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
  if (entry.policy) panel.append(h("div", { class: "approval-note" }, `Asked because of a policy: ${entry.policy}`));
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
  const head = part(node, "card-head", () => h("div", { class: "card-head" }, h("span", { class: "dot" }), h("span", { class: "header" }), h("span", { class: "status" })));
  setText(head.querySelector(".header")!, entry.header);
  setText(head.querySelector(".status")!, entry.decision && !entry.approval ? `${statusWord(entry)} · ${entry.decision}` : statusWord(entry));
  verdictPart(entry, node);
  const preview = part(node, "preview", () => h("pre", { class: "preview" }));
  setText(preview, entry.preview);
  // A one-line preview the header already shows (a bash command) is not repeated, and the
  // coloured diff of a file change replaces its plain-text preview.
  const repeated = entry.header.includes(entry.preview) && !entry.preview.includes("\n");
  toggle(preview, entry.preview !== "" && !repeated && !entry.fileChange);
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
  const key = entry.approval ? `${entry.approval.cycleId}|${entry.approval.lead}|${entry.approval.split}|${entry.error}|${features.editReview}|${features.editArguments}|${entry.grantRules?.join(",")}|${entry.policy}` : "";
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
export function drawEntry(entry: Entry, node: HTMLElement | undefined, features: CardFeatures): HTMLElement {
  const el = node ?? h("div", { class: `entry ${entry.kind}`, "data-id": entry.id });
  switch (entry.kind) {
    case "user": userNode(entry, el); break;
    case "agent":
    case "reasoning": textNode(entry, el); break;
    case "notice": noticeNode(entry, el); break;
    case "error": errorNode(entry, el); break;
    case "tool": toolNode(entry, el, features); break;
    case "compaction": compactionNode(entry, el); break;
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
