/** DOM for transcript entries: messages, reasoning, notices, errors and tool cards. */
import type { Entry, ErrorEntry, NoticeEntry, TextEntry, ToolEntry, UserEntry } from "../chat/state";
import { h, setText, toggle } from "./dom";
import { patchMarkdown } from "./markdown";

/** What the page lets the user do on a card; decided by the daemon's features. */
export interface CardFeatures {
  perCallDecisions: boolean;
  editReview: boolean;
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
  once(node, entry.text, () => node.replaceChildren(h("span", { class: "notice-kind" }, entry.noticeKind), " ", entry.text));
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
  const own = features.perCallDecisions || approval.lead;
  const scope = features.perCallDecisions ? "" : approval.siblings > 0 ? ` all ${approval.siblings + 1} calls` : "";
  const panel = h("div", { class: "approval", "data-cycle": approval.cycleId, "data-call": entry.callId });
  if (!own) {
    panel.append(h("div", { class: "approval-note" }, "Answered with the first call of this batch."));
    return panel;
  }
  if (entry.error) panel.append(h("div", { class: "approval-error" }, entry.error));
  const buttons = h("div", { class: "buttons" },
    h("button", { "data-action": "approve", title: "Run this" + scope }, "Approve" + scope),
    h("button", { class: "secondary", "data-action": "always", title: `Approve, and never ask again for “${approval.label}” in this session` }, `Always allow ${approval.label}`),
    h("button", { class: "danger", "data-action": "deny", title: "Do not run; the model reads your feedback" }, "Deny"));
  if (features.editReview && EDIT_TOOLS.has(entry.tool)) {
    buttons.prepend(h("button", { class: "secondary", "data-action": "review", title: "Open the change in the diff editor" }, "Review"));
  }
  if (features.perCallDecisions && approval.lead && approval.siblings > 0) {
    buttons.append(h("button", { class: "secondary", "data-action": "approveAll", title: "Approve every call of this batch" }, `Approve all ${approval.siblings + 1}`));
  }
  panel.append(buttons, h("input", { class: "feedback", type: "text", placeholder: "Feedback for the model (optional)" }));
  return panel;
}

function statusWord(entry: ToolEntry): string {
  if (entry.approval) return "waiting for approval";
  return entry.status;
}

function toolNode(entry: ToolEntry, node: HTMLElement, features: CardFeatures): void {
  node.className = `entry tool status-${entry.approval ? "asking" : entry.status}${entry.isError ? " is-error" : ""}`;
  const head = part(node, "card-head", () => h("div", { class: "card-head" }, h("span", { class: "dot" }), h("span", { class: "header" }), h("span", { class: "status" })));
  setText(head.querySelector(".header")!, entry.header);
  setText(head.querySelector(".status")!, entry.decision && !entry.approval ? `${statusWord(entry)} · ${entry.decision}` : statusWord(entry));
  const preview = part(node, "preview", () => h("pre", { class: "preview" }));
  setText(preview, entry.preview);
  // A one-line preview the header already shows (a bash command) is not repeated.
  toggle(preview, entry.preview !== "" && !(entry.header.includes(entry.preview) && !entry.preview.includes("\n")));
  const output = part(node, "output", () => h("details", { class: "output" }, h("summary", {}, "Output"), h("pre", {})));
  const text = entry.output.length > OUTPUT_TAIL ? `…\n${entry.output.slice(-OUTPUT_TAIL)}` : entry.output;
  setText(output.querySelector("pre")!, text);
  toggle(output, text !== "");
  if (entry.status === "running" && !output.hasAttribute("data-touched")) (output as HTMLDetailsElement).open = true;
  const effect = part(node, "effect", () => h("div", { class: "effect" }));
  setText(effect, entry.effectStatus && entry.effectStatus !== "none" ? `effect: ${entry.effectStatus}` : entry.effectStatus === "none" ? "effect: none (it never ran)" : "");
  toggle(effect, Boolean(entry.effectStatus));
  const key = entry.approval ? `${entry.approval.cycleId}|${entry.approval.lead}|${entry.error}|${features.perCallDecisions}|${features.editReview}` : "";
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
  }
  return el;
}
