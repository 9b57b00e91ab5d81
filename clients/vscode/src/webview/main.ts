/** The chat webview: applies host messages to the transcript state and draws it once per frame. */
import type { ApprovalAnswer } from "../messages/chat";
import { composePrompt } from "../messages/attachments";
import type { Attachment, EditorChipInfo, FromWebview, InstructionLine, ModelInfo, ToWebview } from "../messages/chat";
import { mentionAt, mentionsIn, slashAt } from "../messages/mentions";
import { addUserMessage, applyApproval, applyChanges, applyEvent, applyUndo, clearCycle, confirmUserMessage, decideCall, dropUserMessage, emptyState, fromHistory, keepFile, walk, type ChangesEntry, type ChatState, type ToolEntry } from "../chat/state";
import type { PageFeatures, Rerun } from "../messages/chat";
import { MODE_LABELS, MODES, isMode, modeDescription } from "../messages/modes";
import type { Decision, FoundFile, ImageData, SessionCommand } from "../protocol";
import { h, setText, toggle } from "./dom";
import { drawList, editedArguments, type CardFeatures } from "./entries";
import { codeOf } from "./markdown";
import { drawElicits } from "./elicit";
import type { ElicitRequest } from "../messages/elicit";

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
const head = $<HTMLElement>("chat-head");
const modeSelect = $<HTMLSelectElement>("mode");
const sandboxState = $<HTMLElement>("sandbox-state");
const instructionsLine = $<HTMLElement>("instructions");
const modelButton = $<HTMLButtonElement>("model");
const completeList = $<HTMLUListElement>("complete");

let state: ChatState = emptyState();
/** The MCP servers' questions waiting for an answer (their forms, under their calls). */
let elicits: ElicitRequest[] = [];
let features: PageFeatures = { perCallDecisions: false, editReview: false, editArguments: false };
let attachments: Attachment[] = [];
/** The project instruction files the shown session's model follows. */
let instructions: InstructionLine[] = [];
/** What of the editor the next prompt carries, and whether the user left it out of this one. */
let editorChip: EditorChipInfo | null = null;
let editorLeftOut = false;
let scheduled = false;
/** The next draw scrolls to the end whatever was in sight (the user just sent something). */
let toEnd = false;
/** The chat's model, for the header (null: not known, or the daemon has no model picker). */
let model: ModelInfo | null = null;
/** Pictures pasted or dropped into the input, sent with the next prompt; those of the prompt in flight. */
let images: ImageData[] = [];
let sending: { text: string; images: ImageData[] } | null = null;
/** The slash commands, as the host last listed them (null: not asked yet). */
let commands: SessionCommand[] | null = null;
/** Every path the @ list offered: an @word naming one of them is sent as a mention. */
const knownFiles = new Set<string>();

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
  const card: CardFeatures = { ...features, running: state.turnId !== null };
  drawList(transcript, state.entries, card);
  if (!state.entries.length) transcript.replaceChildren(h("div", { class: "empty" }, "Ask about this workspace, or add a selection or file to the chat from the editor’s context menu."));
  drawElicits(transcript, state, elicits, (id, response) => post({ type: "elicitAnswer", id, response }));
  drawComposer();
  drawHead();
  drawInstructions();
  if (stick) transcript.scrollTop = transcript.scrollHeight;
}

/** The mode picker: the session's approval mode (or the next session's), and the sandbox. */
function drawHead(): void {
  const info = state.mode;
  const modes = Boolean(features.approvalModes && info);
  const showModel = Boolean(features.composer && model);
  toggle(head, modes || showModel);
  toggle(modelButton, showModel);
  if (model) {
    setText(modelButton, `${model.model ?? "default model"} ▾`);
    modelButton.title = `${model.pending ? "The model the next chat starts with" : "This chat's model"}: ${model.model ?? "the daemon's configured model"}. Click to pick another.`;
  }
  for (const el of [modeSelect, sandboxState, head.querySelector<HTMLElement>("label")!]) toggle(el, modes);
  if (!info || !modes) return;
  const value = info.mode ?? "";
  const wanted = [...(info.mode ? [] : [""]), ...MODES].join(",");
  if ([...modeSelect.options].map((o) => o.value).join(",") !== wanted) {
    modeSelect.replaceChildren(...(info.mode ? [] : [h("option", { value: "" }, "Default (config)")]),
      ...MODES.map((m) => h("option", { value: m, title: modeDescription(m, info.sandbox) }, MODE_LABELS[m])));
  }
  if (modeSelect.value !== value) modeSelect.value = value;
  modeSelect.title = `${info.pending ? "The next chat starts in this mode. " : ""}${info.mode ? modeDescription(info.mode, info.sandbox) : "The daemon's configured mode ([approvals] mode)."}`;
  const sandbox = info.sandbox;
  setText(sandboxState, sandbox ? (sandbox.available ? "sandbox on" : "no sandbox") : "");
  sandboxState.className = sandbox ? (sandbox.available ? "sandbox-on" : "sandbox-off") : "";
  sandboxState.title = sandbox ? (sandbox.available ? `Commands in auto mode run in the sandbox. ${sandbox.detail ?? ""}` : `No sandbox on this machine: commands ask in auto mode. ${sandbox.detail ?? ""}`).trim() : "";
}

/** "Instructions: AGENTS.md, src/AGENTS.md (cut)", each opening its file. */
function drawInstructions(): void {
  toggle(instructionsLine, instructions.length > 0);
  const key = JSON.stringify(instructions);
  if (instructionsLine.dataset.key === key) return;
  instructionsLine.dataset.key = key;
  const links = instructions.flatMap((f, i) => [
    ...(i ? [", "] : []),
    h("button", { class: "link", "data-action": "openInstruction", "data-path": f.path, title: `${f.path}: ${f.truncated ? `cut to ${f.chars.toLocaleString("en")} characters (the instructions are capped)` : `${f.chars.toLocaleString("en")} characters`}` }, f.label),
    ...(f.truncated ? [h("span", { class: "cut" }, " (cut)")] : []),
  ]);
  instructionsLine.replaceChildren(h("span", { title: "The project instruction files the model follows in this chat" }, "Instructions: "), ...links);
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
  const editor = editorChip
    ? [h("span", { class: `chip editor-chip${editorLeftOut ? " left-out" : ""}`, title: editorLeftOut ? "Left out of this prompt: + sends it again" : editorChip.detail },
      h("span", { class: "editor-label" }, editorChip.label),
      h("button", { class: "link", "data-action": "toggleEditor", title: editorLeftOut ? "Send it with this prompt" : "Leave it out of this prompt" }, editorLeftOut ? "+" : "×"))]
    : [];
  const pictures = images.map((img, i) => h("span", { class: "chip image-chip", title: `A picture (${img.mimeType}, ${Math.round((img.data.length * 3) / 4 / 1024)} KB) sent with this prompt` },
    h("img", { class: "thumb", src: `data:${img.mimeType};base64,${img.data}`, alt: `picture ${i + 1}` }),
    h("button", { class: "link", "data-remove-image": String(i), title: "Remove the picture" }, "×")));
  chips.replaceChildren(...editor, ...attachments.map((a, i) => h("span", { class: "chip", title: a.text }, a.label, h("button", { class: "link", "data-remove": String(i), title: "Remove" }, "×"))), ...pictures);
}

function showBanner(text: string | null, withOutput = false): void {
  toggle(banner, text !== null);
  if (text === null) return;
  banner.replaceChildren(h("span", {}, text));
  if (withOutput) banner.append(" ", h("button", { class: "link", "data-action": "showOutput" }, "Show output"));
}

function receive(message: ToWebview): void {
  switch (message.type) {
    case "reset": {
      const mode = state.mode;
      state = message.sessionId ? fromHistory(message.sessionId, message.title, message.items, message.running, message.turns, message.plan) : emptyState();
      state.mode = mode;
      instructions = [];
      commands = null;
      break;
    }
    case "instructions": instructions = message.files; break;
    case "editor": editorChip = message.chip; break;
    case "mode": state.mode = { mode: message.mode, pending: message.pending, sandbox: message.sandbox }; break;
    case "changes": state = applyChanges(state, message.turnId, message.files, message.undoable, message.note); break;
    case "undone": state = applyUndo(state, message); break;
    case "draft":
      if (!input.value.trim()) input.value = message.text;
      input.focus();
      break;
    case "event": state = applyEvent(state, message.event); break;
    case "approval": state = applyApproval(state, message.cycle, features.perCallDecisions); break;
    case "approvalCleared": state = clearCycle(state, message.cycleId, message.decision, message.calls); break;
    case "callDecided": state = decideCall(state, message.cycleId, message.callId, message.decision); break;
    case "elicit":
      elicits = [...elicits.filter((r) => r.id !== message.request.id), message.request];
      toEnd = true;
      break;
    case "elicitCleared": elicits = elicits.filter((r) => r.id !== message.id); break;
    case "attach": attachments.push(message.attachment); input.focus(); break;
    case "session": state.sessionId = message.sessionId; break;
    case "sent":
      state = confirmUserMessage(state, message.text, message.queued, message.turnId);
      if (sending?.text === message.text) sending = null;
      showBanner(null);
      break;
    case "sendFailed":
      state = dropUserMessage(state, message.text);
      if (state.turnId === STARTING) state.turnId = null;
      input.value ||= message.text;
      // The pictures come back with the text, to send again (to a model that takes them).
      if (sending?.text === message.text && !images.length) images = sending.images;
      sending = null;
      showBanner(message.message, true);
      break;
    case "commandRan":
      state = dropUserMessage(state, message.text);
      if (state.turnId === STARTING) state.turnId = null;
      if (sending?.text === message.text) sending = null;
      break;
    case "files": showFiles(message.seq, message.files); break;
    case "commands":
      commands = message.commands;
      if (completion?.kind === "command") updateCompletion();
      break;
    case "model": model = { model: message.model, pending: message.pending }; break;
    case "features":
      features = { perCallDecisions: message.perCallDecisions, editReview: message.editReview, editArguments: message.editArguments, approvalModes: message.approvalModes ?? false, checkpoints: message.checkpoints ?? false, composer: message.composer ?? false };
      break;
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
  if (!prompt && !images.length) return;
  closeCompletion();
  const text = prompt || "(picture)";
  // Shown at once, before anything the turn produces; the daemon's answer confirms it.
  const running = state.turnId !== null;
  state = addUserMessage(state, text, running, null, images);
  if (!running) state.turnId = STARTING;
  // Each @path the list offered (or a path with a line range) goes as a mention beside the text.
  const mentions = features.composer ? mentionsIn(input.value, knownFiles) : [];
  post({ type: "send", text, ...(editorChip && editorLeftOut ? { editor: false } : {}), ...(mentions.length ? { mentions } : {}), ...(images.length ? { images } : {}) });
  sending = { text, images };
  toEnd = true;
  input.value = "";
  attachments = [];
  images = [];
  editorLeftOut = false;
  schedule();
}

// ---------------------------------------------------------------- the @ and / completion list

interface Choice { label: string; insert: string; description: string; positions: number[] }
/** The open list: files for an @ (from `at`, the @'s index) or commands for a leading /. */
let completion: { kind: "file" | "command"; at: number; choices: Choice[]; active: number } | null = null;
let findSeq = 0;
let findTimer: ReturnType<typeof setTimeout> | undefined;
/** The query of each findFiles still wanted (an answer to an older one is dropped). */
let lastQuery = "";

function closeCompletion(): void {
  completion = null;
  clearTimeout(findTimer);
  findSeq++;
  toggle(completeList, false);
}

/** Open, refresh or close the list for what is before the cursor. */
function updateCompletion(): void {
  if (!features.composer) return;
  const cursor = input.selectionStart ?? input.value.length;
  const slash = slashAt(input.value, cursor);
  if (slash !== null) {
    if (commands === null) {
      commands = [];
      post({ type: "listCommands" });
    }
    const word = slash.toLowerCase();
    const choices = commands.filter((c) => c.name.toLowerCase().startsWith(word)).map((c) => ({
      label: `/${c.name}`, insert: `/${c.name} `, description: c.description, positions: [...Array(word.length).keys()].map((i) => i + 1),
    }));
    completion = { kind: "command", at: 0, choices, active: Math.min(completion?.kind === "command" ? completion.active : 0, Math.max(0, choices.length - 1)) };
    drawCompletion();
    return;
  }
  const mention = mentionAt(input.value, cursor);
  if (!mention) {
    if (completion) closeCompletion();
    return;
  }
  if (completion?.kind !== "file" || completion.at !== mention.at) completion = { kind: "file", at: mention.at, choices: [], active: 0 };
  if (mention.query === lastQuery && completion.choices.length) return;
  lastQuery = mention.query;
  clearTimeout(findTimer);
  const seq = ++findSeq;
  // Typing fast asks once, ~30 ms after the last key.
  findTimer = setTimeout(() => post({ type: "findFiles", seq, query: mention.query }), 30);
}

/** The host's answer to a findFiles; one to a query since typed over is dropped. */
function showFiles(seq: number, files: FoundFile[]): void {
  if (seq !== findSeq || completion?.kind !== "file") return;
  for (const f of files) knownFiles.add(f.path);
  completion.choices = files.map((f) => ({ label: f.path, insert: `@${f.path} `, description: "", positions: f.positions ?? [] }));
  completion.active = 0;
  drawCompletion();
}

/** A label with its matched characters highlighted (text nodes only, never HTML). */
function highlighted(label: string, positions: readonly number[]): HTMLElement {
  const hit = new Set(positions);
  const span = h("span", { class: "name" });
  let run = "";
  let inHit = false;
  const flush = () => {
    if (run) span.append(inHit ? h("span", { class: "hit" }, run) : run);
    run = "";
  };
  [...label].forEach((ch, i) => {
    if (hit.has(i) !== inHit) {
      flush();
      inHit = hit.has(i);
    }
    run += ch;
  });
  flush();
  return span;
}

function drawCompletion(): void {
  const c = completion;
  toggle(completeList, Boolean(c));
  if (!c) return;
  if (!c.choices.length) {
    const none = c.kind === "file" ? (findSeq && lastQuery ? "No matching file" : "Type to find a file") : commands?.length ? "No such command" : "Loading the commands…";
    completeList.replaceChildren(h("li", { class: "none" }, none));
    return;
  }
  completeList.replaceChildren(...c.choices.map((choice, i) => h("li", { role: "option", class: i === c.active ? "active" : "", "data-choice": String(i), "aria-selected": i === c.active ? "true" : "false" },
    highlighted(choice.label, choice.positions), ...(choice.description ? [h("span", { class: "desc" }, choice.description)] : []))));
  completeList.querySelector("li.active")?.scrollIntoView({ block: "nearest" });
}

/** Put the chosen file or command into the input where the @ or / word is. */
function pick(index: number): void {
  const c = completion;
  const choice = c?.choices[index];
  if (!c || !choice) return;
  const cursor = input.selectionStart ?? input.value.length;
  // `@path:10-40` typed before picking keeps its range.
  const typed = input.value.slice(c.at, cursor);
  const range = c.kind === "file" ? /:[\d-]+$/.exec(typed)?.[0] ?? "" : "";
  const insert = range ? `${choice.insert.trimEnd()}${range} ` : choice.insert;
  input.value = input.value.slice(0, c.at) + insert + input.value.slice(cursor);
  const at = c.at + insert.length;
  input.setSelectionRange(at, at);
  closeCompletion();
  input.focus();
}

// ---------------------------------------------------------------- pictures

const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const IMAGE_BYTES = 4 * 1024 * 1024;

/** A pasted or dropped picture becomes a chip (base64, as the daemon takes it). */
function addImage(file: File): void {
  if (!IMAGE_TYPES.has(file.type)) {
    showBanner(`Not added: ${file.name || "the file"} is ${file.type || "not a picture"} (PNG, JPEG, GIF or WebP only).`);
    return;
  }
  if (file.size > IMAGE_BYTES) {
    showBanner(`Not added: the picture is ${(file.size / 1024 / 1024).toFixed(1)} MB (4 MB at most).`);
    return;
  }
  const reader = new FileReader();
  reader.onload = () => {
    const url = String(reader.result);
    const data = url.slice(url.indexOf(",") + 1);
    images.push({ mimeType: file.type, data });
    schedule();
  };
  reader.readAsDataURL(file);
}

function imageFiles(list: DataTransfer | null): File[] {
  if (!list) return [];
  const files = [...list.files].filter((f) => f.type.startsWith("image/"));
  if (files.length) return files;
  return [...list.items].filter((i) => i.kind === "file" && i.type.startsWith("image/")).map((i) => i.getAsFile()).filter((f): f is File => f !== null);
}

function cardOf(el: Element): ToolEntry | undefined {
  const id = el.closest<HTMLElement>(".entry.tool")?.dataset.id;
  // A task agent's cards are nested in its call's card.
  for (const e of walk(state.entries)) if (e.kind === "tool" && e.id === id) return e;
  return undefined;
}

/** The changes entry a button is in, and the file of its row (if any). */
function changeOf(el: Element): { turnId: string; path: string | undefined } | undefined {
  const id = el.closest<HTMLElement>(".entry.changes")?.dataset.id;
  const entry = state.entries.find((e): e is ChangesEntry => e.kind === "changes" && e.id === id);
  if (!entry) return undefined;
  return { turnId: entry.turnId, path: el.closest<HTMLElement>("li[data-path]")?.dataset.path };
}

/** The turn a prompt's button belongs to. */
function promptTurn(el: Element): string | null {
  const id = el.closest<HTMLElement>(".entry.user")?.dataset.id;
  const entry = state.entries.find((e) => e.kind === "user" && e.id === id);
  return entry?.kind === "user" ? entry.turnId : null;
}

/** Buttons of the changes list, the undo notes and the prompts; true when it was one. */
function undoAction(button: HTMLElement, action: string): boolean {
  switch (action) {
    case "showChange":
    case "undoFile":
    case "keepFile": {
      const at = changeOf(button);
      if (!at?.path) return true;
      if (action === "keepFile") {
        state = keepFile(state, at.turnId, at.path);
        schedule();
      } else {
        post({ type: action, turnId: at.turnId, path: at.path });
      }
      return true;
    }
    case "undoTurn": {
      const at = changeOf(button);
      if (at) post({ type: "undoTurn", turnId: at.turnId });
      return true;
    }
    case "redo":
      if (button.dataset.undo) post({ type: "redo", undoId: button.dataset.undo });
      return true;
    case "editPrompt":
    case "cancelRerun": {
      const box = button.closest(".entry.user")?.querySelector<HTMLElement>(".rerun");
      if (box) {
        toggle(box, action === "editPrompt");
        if (action === "editPrompt") box.querySelector("textarea")?.focus();
      }
      return true;
    }
    case "rerun": {
      const turnId = promptTurn(button);
      const text = button.closest(".entry.user")?.querySelector<HTMLTextAreaElement>(".rerun-text")?.value.trim() ?? "";
      if (turnId && text) {
        post({ type: "rerun", turnId, text, how: (button.dataset.how === "fork" ? "fork" : "rewind") as Rerun });
        toggle(button.closest<HTMLElement>(".rerun")!, false);
      }
      return true;
    }
  }
  return false;
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
  const choice = target.closest<HTMLElement>("#complete li[data-choice]");
  if (choice) {
    pick(Number(choice.dataset.choice));
    return;
  }
  const button = target.closest<HTMLElement>("[data-action], [data-remove], [data-remove-image]");
  if (!button) return;
  if (button.dataset.remove !== undefined) {
    attachments.splice(Number(button.dataset.remove), 1);
    schedule();
    return;
  }
  if (button.dataset.removeImage !== undefined) {
    images.splice(Number(button.dataset.removeImage), 1);
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
  } else if (action === "openInstruction") {
    if (button.dataset.path) post({ type: "openFile", path: button.dataset.path });
  } else if (action === "toggleEditor") {
    editorLeftOut = !editorLeftOut;
    schedule();
  } else if (action === "openPreview") {
    post({ type: "openPreview", previewId: button.dataset.preview ?? "" });
  } else if (action === "edit") {
    const editor = button.closest(".approval")?.querySelector<HTMLElement>(".edit");
    if (editor) {
      toggle(editor, Boolean(editor.hidden));
      if (!editor.hidden) editor.querySelector("textarea")?.focus();
    }
  } else if (!undoAction(button, action)) {
    answer(button, action);
  }
});
modeSelect.addEventListener("change", () => {
  const mode = modeSelect.value;
  if (isMode(mode)) post({ type: "setMode", mode });
});
transcript.addEventListener("toggle", (event) => (event.target as Element).setAttribute("data-touched", ""), true);
sendButton.addEventListener("click", send);
stopButton.addEventListener("click", () => post({ type: "interrupt" }));
modelButton.addEventListener("click", () => post({ type: "pickModel" }));
input.addEventListener("input", () => updateCompletion());
input.addEventListener("click", () => updateCompletion());
input.addEventListener("blur", () => setTimeout(() => { if (document.activeElement !== input) closeCompletion(); }, 150));
input.addEventListener("paste", (event) => {
  const files = imageFiles(event.clipboardData);
  if (!files.length || !features.composer) return;
  event.preventDefault();
  for (const f of files) addImage(f);
});
input.addEventListener("dragover", (event) => {
  if (features.composer && event.dataTransfer && [...event.dataTransfer.items].some((i) => i.kind === "file")) event.preventDefault();
});
input.addEventListener("drop", (event) => {
  const files = imageFiles(event.dataTransfer);
  if (!files.length || !features.composer) return;
  event.preventDefault();
  for (const f of files) addImage(f);
});
input.addEventListener("keydown", (event) => {
  const c = completion;
  if (c && !event.isComposing) {
    const n = c.choices.length;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      if (n) c.active = (c.active + (event.key === "ArrowDown" ? 1 : n - 1)) % n;
      drawCompletion();
      return;
    }
    if ((event.key === "Enter" || event.key === "Tab") && !event.shiftKey && n) {
      // A command typed out in full runs on Enter; a partial one is completed first.
      const whole = c.kind === "command" && c.choices[c.active]?.label === input.value.trim();
      if (!whole) {
        event.preventDefault();
        pick(c.active);
        return;
      }
    }
    if (event.key === "Escape") {
      event.preventDefault();
      closeCompletion();
      return;
    }
  }
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
  }
});
window.addEventListener("message", (event: MessageEvent<ToWebview>) => receive(event.data));
post({ type: "ready" });
schedule();
