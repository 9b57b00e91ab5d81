/** The chat webview: applies host messages to the transcript state and draws it once per frame. */
import type { ApprovalAnswer } from "../messages/chat";
import { composePrompt } from "../messages/attachments";
import type { Attachment, FromWebview, ToWebview } from "../messages/chat";
import { addUserMessage, applyApproval, applyEvent, clearCycle, confirmUserMessage, decideCall, dropUserMessage, emptyState, fromHistory, walk, type ChatState, type ToolEntry } from "../chat/state";
import type { Decision } from "../protocol";
import { h, setText, toggle } from "./dom";
import { drawList, editedArguments, type CardFeatures } from "./entries";
import { codeOf } from "./markdown";

interface VsCodeApi {
  postMessage(message: FromWebview): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const transcript = $<HTMLElement>("transcript");
const input = $<HTMLTextAreaElement>("input");
const sendButton = $<HTMLButtonElement>("send");
const stopButton = $<HTMLButtonElement>("stop");
const banner = $<HTMLElement>("banner");
const chips = $<HTMLElement>("attachments");

let state: ChatState = emptyState();
let features: CardFeatures = { perCallDecisions: false, editReview: false, editArguments: false };
let attachments: Attachment[] = [];
let scheduled = false;
/** The next draw scrolls to the end whatever was in sight (the user just sent something). */
let toEnd = false;

function post(message: FromWebview): void {
  vscode.postMessage(message);
}

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(draw);
}

function draw(): void {
  scheduled = false;
  const stick = toEnd || transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40;
  toEnd = false;
  if (state.entries.length) transcript.querySelector(":scope > .empty")?.remove();
  drawList(transcript, state.entries, features);
  if (!state.entries.length) transcript.replaceChildren(h("div", { class: "empty" }, "Ask about this workspace, or add a selection or file to the chat from the editor’s context menu."));
  drawComposer();
  if (stick) transcript.scrollTop = transcript.scrollHeight;
}

function drawComposer(): void {
  const running = state.turnId !== null;
  toggle(stopButton, running);
  setText($("turn-state"), running ? "working…" : "");
  const u = state.lastUsage;
  const c = state.context;
  const usage = [
    c && c.window > 0 ? `context ${Math.round((100 * c.tokens) / c.window)}% of ${Math.round(c.window / 1000)}k${c.estimated ? " (estimated)" : ""}` : "",
    u ? `last turn: ${u.promptTokens ?? 0} in · ${u.completionTokens ?? 0} out tokens` : "",
  ].filter(Boolean);
  setText($("usage"), usage.join(" · "));
  chips.replaceChildren(...attachments.map((a, i) => h("span", { class: "chip", title: a.text }, a.label, h("button", { class: "link", "data-remove": String(i), title: "Remove" }, "×"))));
}

function showBanner(text: string | null, withOutput = false): void {
  toggle(banner, text !== null);
  if (text === null) return;
  banner.replaceChildren(h("span", {}, text));
  if (withOutput) banner.append(" ", h("button", { class: "link", "data-action": "showOutput" }, "Show output"));
}

function receive(message: ToWebview): void {
  switch (message.type) {
    case "reset":
      state = message.sessionId ? fromHistory(message.sessionId, message.title, message.items, message.running) : emptyState();
      break;
    case "event": state = applyEvent(state, message.event); break;
    case "approval": state = applyApproval(state, message.cycle, features.perCallDecisions); break;
    case "approvalCleared": state = clearCycle(state, message.cycleId, message.decision, message.calls); break;
    case "callDecided": state = decideCall(state, message.cycleId, message.callId, message.decision); break;
    case "attach": attachments.push(message.attachment); input.focus(); break;
    case "session": state.sessionId = message.sessionId; break;
    case "sent": state = confirmUserMessage(state, message.text, message.queued); break;
    case "sendFailed":
      state = dropUserMessage(state, message.text);
      if (state.turnId === STARTING) state.turnId = null;
      input.value ||= message.text;
      showBanner(message.message, true);
      break;
    case "features": features = { perCallDecisions: message.perCallDecisions, editReview: message.editReview, editArguments: message.editArguments }; break;
    case "daemon":
      showBanner(message.state === "ready" ? null : message.message ?? (message.state === "starting" ? "Starting the daemon…" : "The daemon is not running."), message.state === "stopped");
      break;
  }
  schedule();
}

/** The turn id shown between Send and the daemon's turn/started. */
const STARTING = "(starting)";

function send(): void {
  const prompt = composePrompt(attachments, input.value);
  if (!prompt) return;
  // Shown at once, before anything the turn produces; the daemon's answer confirms it.
  const running = state.turnId !== null;
  state = addUserMessage(state, prompt, running);
  if (!running) state.turnId = STARTING;
  post({ type: "send", text: prompt });
  toEnd = true;
  input.value = "";
  attachments = [];
  schedule();
}

function cardOf(el: Element): ToolEntry | undefined {
  const id = el.closest<HTMLElement>(".entry.tool")?.dataset.id;
  // A task agent's cards are nested in its call's card.
  for (const e of walk(state.entries)) if (e.kind === "tool" && e.id === id) return e;
  return undefined;
}

function answer(button: HTMLElement, action: string): void {
  const panel = button.closest<HTMLElement>(".approval");
  const card = cardOf(button);
  if (!panel || !card?.approval) return;
  const cycleId = card.approval.cycleId;
  const feedback = panel.querySelector<HTMLInputElement>(".feedback")?.value.trim() || undefined;
  const decision: Decision = action === "always" ? "always" : action === "deny" ? "deny" : "approve";
  let edited: Record<string, unknown> | undefined;
  if (action === "runEdited") {
    const text = panel.querySelector<HTMLTextAreaElement>(".edit-args")?.value ?? "";
    const parsed = editedArguments(card, text);
    if (typeof parsed === "string") {
      setText(panel.querySelector(".edit-error")!, parsed);
      return;
    }
    edited = parsed;
  }
  if (card.approval.split && action !== "approveAll") {
    post({ type: "decideCall", cycleId, callId: card.callId, decision, ...(feedback ? { feedback } : {}), ...(edited ? { arguments: edited } : {}) });
    return;
  }
  if (edited) {
    // This call runs edited; the rest of the batch takes the cycle's answer.
    post({ type: "answer", cycleId, answer: { decision, ...(feedback ? { feedback } : {}), calls: { [card.callId]: { decision, arguments: edited } } } });
    return;
  }
  const whole: ApprovalAnswer = { decision, ...(feedback ? { feedback } : {}) };
  post({ type: "answer", cycleId, answer: whole });
}

document.addEventListener("click", (event) => {
  const target = event.target as HTMLElement;
  // A section the user opened or closed stays so (see agentPart).
  target.closest("summary")?.parentElement?.setAttribute("data-user", "");
  const button = target.closest<HTMLElement>("[data-action], [data-remove]");
  if (!button) return;
  if (button.dataset.remove !== undefined) {
    attachments.splice(Number(button.dataset.remove), 1);
    schedule();
    return;
  }
  const action = button.dataset.action!;
  if (action === "copy" || action === "insert") {
    const text = codeOf(button);
    if (text !== null) post({ type: action, text });
  } else if (action === "review") {
    const card = cardOf(button);
    if (card) post({ type: "review", callId: card.callId });
  } else if (action === "showOutput") {
    post({ type: "showOutput" });
  } else if (action === "openPreview") {
    post({ type: "openPreview", previewId: button.dataset.preview ?? "" });
  } else if (action === "edit") {
    const editor = button.closest(".approval")?.querySelector<HTMLElement>(".edit");
    if (editor) {
      toggle(editor, Boolean(editor.hidden));
      if (!editor.hidden) editor.querySelector("textarea")?.focus();
    }
  } else {
    answer(button, action);
  }
});
transcript.addEventListener("toggle", (event) => (event.target as Element).setAttribute("data-touched", ""), true);
sendButton.addEventListener("click", send);
stopButton.addEventListener("click", () => post({ type: "interrupt" }));
input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
  }
});
window.addEventListener("message", (event: MessageEvent<ToWebview>) => receive(event.data));
post({ type: "ready" });
schedule();
