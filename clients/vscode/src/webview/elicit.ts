/** An MCP server's question in the chat: a small form under the call of its tool that is running. */
import { fieldHint, formFields, readForm, type ElicitField, type ElicitRequest } from "../messages/elicit";
import type { McpElicitResponse } from "../protocol";
import { walk, type ChatState } from "../chat/state";
import { h, setText } from "./dom";

export type ElicitAnswer = (id: string, response: McpElicitResponse) => void;

function input(field: ElicitField, id: string): HTMLElement {
  const attrs = { id, name: field.name, class: "elicit-input", "aria-required": field.required ? "true" : undefined, title: field.description || undefined };
  switch (field.kind) {
    case "boolean":
      return h("input", { ...attrs, type: "checkbox", checked: field.initial === true });
    case "enum": {
      const select = h("select", attrs, ...(field.initial === "" ? [h("option", { value: "" }, field.required ? "Choose…" : "—")] : []),
        ...field.options.map((o, i) => h("option", { value: String(i) }, o.label)));
      select.value = String(field.initial);
      return select;
    }
    case "number":
    case "integer": {
      const el = h("input", { ...attrs, type: "text", inputmode: field.kind === "integer" ? "numeric" : "decimal" });
      el.value = String(field.initial);
      return el;
    }
    default: {
      const el = h("input", { ...attrs, type: "text" });
      el.value = String(field.initial);
      return el;
    }
  }
}

/** The form's values as `readForm` takes them. */
function values(form: HTMLFormElement, fields: readonly ElicitField[]): Record<string, string | boolean> {
  const out: Record<string, string | boolean> = {};
  for (const field of fields) {
    const el = form.querySelector<HTMLInputElement | HTMLSelectElement>(`[name="${CSS.escape(field.name)}"]`);
    if (!el) continue;
    out[field.name] = el instanceof HTMLInputElement && el.type === "checkbox" ? el.checked : el.value;
  }
  return out;
}

/** The card of one question: the server, its message, one input per property, Submit / Decline / Cancel. */
export function elicitCard(request: ElicitRequest, answer: ElicitAnswer): HTMLElement {
  const { params } = request;
  const fields = formFields(params.requestedSchema, params.propertyOrder);
  const rows = fields.map((field, i) => {
    const id = `${request.id}-f${i}`;
    const hint = fieldHint(field);
    const control = input(field, id);
    const label = h("label", { for: id, class: "elicit-label" }, field.label, ...(field.required ? [h("span", { class: "required", title: "Required" }, " *")] : []));
    const row = h("div", { class: `elicit-field kind-${field.kind}`, "data-field": field.name },
      ...(field.kind === "boolean" ? [h("div", { class: "elicit-check" }, control, label)] : [label, control]),
      ...(field.description ? [h("div", { class: "elicit-description" }, field.description)] : []),
      ...(hint && field.kind !== "boolean" ? [h("div", { class: "elicit-hint" }, hint)] : []),
      h("div", { class: "elicit-error", role: "alert" }));
    return row;
  });
  const form = h("form", { class: "elicit-form", novalidate: true }, ...rows,
    h("div", { class: "buttons" },
      h("button", { type: "submit", "data-elicit": "accept" }, "Submit"),
      h("button", { type: "button", class: "secondary", "data-elicit": "decline", title: "Say no to the server's question" }, "Decline"),
      h("button", { type: "button", class: "secondary", "data-elicit": "cancel", title: "Dismiss the question without answering" }, "Cancel")));
  const card = h("div", { class: "elicit", "data-elicit-id": request.id },
    h("div", { class: "elicit-head" }, h("span", { class: "elicit-server" }, `MCP server “${params.server}” asks`)),
    h("div", { class: "elicit-message" }, params.message),
    form);
  const done = (response: McpElicitResponse) => {
    for (const b of form.querySelectorAll<HTMLButtonElement>("button")) b.disabled = true;
    card.classList.add("answered");
    answer(request.id, response);
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const read = readForm(fields, values(form, fields));
    for (const row of form.querySelectorAll<HTMLElement>(".elicit-field")) {
      const error = read.errors?.[row.dataset.field ?? ""] ?? "";
      setText(row.querySelector(".elicit-error")!, error);
      row.classList.toggle("invalid", Boolean(error));
    }
    if (read.errors) {
      form.querySelector<HTMLElement>(".elicit-field.invalid .elicit-input")?.focus();
      return;
    }
    done({ action: "accept", content: read.content });
  });
  form.addEventListener("click", (event) => {
    const action = (event.target as HTMLElement).closest<HTMLElement>("button[data-elicit]")?.dataset.elicit;
    if (action === "decline" || action === "cancel") done({ action });
  });
  return card;
}

/** The card of the running call of the server's tool (the newest), where the question belongs. */
function callOf(state: ChatState, server: string): string | null {
  let found: string | null = null;
  for (const e of walk(state.entries)) {
    if (e.kind === "tool" && (e.status === "running" || e.status === "pending") && e.tool.startsWith(`mcp__${server}__`)) found = e.id;
  }
  return found;
}

/** The cards drawn, by question id (kept across draws: what the user typed stays). */
const cards = new Map<string, HTMLElement>();

/** Put each pending question's card under its call (or at the transcript's end); drop the others'. */
export function drawElicits(transcript: HTMLElement, state: ChatState, requests: readonly ElicitRequest[], answer: ElicitAnswer): void {
  const wanted = new Set(requests.map((r) => r.id));
  for (const [id, card] of cards) {
    if (!wanted.has(id)) {
      card.remove();
      cards.delete(id);
    }
  }
  for (const request of requests) {
    if (request.params.sessionId !== state.sessionId) continue;
    let card = cards.get(request.id);
    if (!card) cards.set(request.id, (card = elicitCard(request, answer)));
    const callId = callOf(state, request.params.server);
    const call = callId ? transcript.querySelector<HTMLElement>(`.entry.tool[data-id="${CSS.escape(callId)}"]`) : null;
    const parent = call ?? transcript;
    if (card.parentElement !== parent || (!call && card.nextElementSibling)) parent.append(card);
  }
}
