/**
 * Test support: the whole extension (startApp) over a FakeHost with the real daemon, per test
 * in its own directory, and the chat page's state rebuilt from what the host sent it.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach } from "vitest";
import { startApp, type App } from "../../src/app";
import type { ToWebview } from "../../src/messages/chat";
import { applyApproval, applyChanges, applyEvent, applyUndo, clearCycle, confirmUserMessage, decideCall, dropUserMessage, emptyState, fromHistory, type ChatState } from "../../src/chat/state";
import type { Settings } from "../../src/settings";
import { REPO, startModel, tempDir, writeConfig, type ModelServer } from "./daemon";
import type { FakeHost } from "./fakeHost";

export const DAEMON = process.env.TURNSTONED_DAEMON ?? path.join(REPO, ".venv/bin/turnstoned");

/** A test's directory (`work` is the workspace folder) and what to undo after it. */
export interface AppTest {
  dir: string;
  work: string;
  home: string;
  cleanups: (() => unknown)[];
}

/** Register the per-test setup: a fresh directory, daemon home and environment. */
export function appTests(): AppTest {
  const t: AppTest = { dir: "", work: "", home: "", cleanups: [] };
  beforeEach(() => {
    t.dir = tempDir("turnstoned-app-");
    t.work = path.join(t.dir, "work");
    t.home = path.join(t.dir, "home");
    fs.mkdirSync(t.work);
    fs.mkdirSync(t.home);
    writeConfig(t.home);
    process.env.TURNSTONED_HOME = t.home;
    for (const name of ["OPENAI_API_KEY", "OPENAI_BASE_URL", "TURNSTONED_MODEL", "TURNSTONED_CONFIG"]) delete process.env[name];
  });
  afterEach(async () => {
    for (const c of t.cleanups.splice(0).reverse()) await c();
  });
  return t;
}

export function settings(over: Partial<Settings> = {}): Settings {
  return { command: DAEMON, args: [], model: "scripted", baseUrl: "", logLevel: "INFO", skipPermissions: false, approvalMode: null, editorContext: true, shareDaemon: false, ...over };
}

export async function withModel(t: AppTest, replies: unknown[], extra: Record<string, unknown> = {}): Promise<ModelServer> {
  const model = await startModel(replies, t.dir, extra);
  t.cleanups.push(() => model.stop());
  return model;
}

export function launch(t: AppTest, host: FakeHost): App {
  const app = startApp(host);
  t.cleanups.push(() => app.dispose());
  return app;
}

/** The last message of a type the host sent the chat page. */
export const last = <T extends ToWebview["type"]>(host: FakeHost, type: T) =>
  [...host.posted].reverse().find((m): m is Extract<ToWebview, { type: T }> => m.type === type);

/** What the chat page shows after these messages (as its script applies them). */
export function pageState(messages: readonly ToWebview[], perCallDecisions = true): ChatState {
  let state = emptyState();
  for (const m of messages) {
    if (m.type === "reset") {
      const mode = state.mode;
      state = m.sessionId ? fromHistory(m.sessionId, m.title, m.items, m.running, m.turns, m.plan) : emptyState();
      state.mode = mode;
    } else if (m.type === "session") state.sessionId = m.sessionId;
    else if (m.type === "mode") state.mode = { mode: m.mode, pending: m.pending, sandbox: m.sandbox };
    else if (m.type === "sent") state = confirmUserMessage(state, m.text, m.queued, m.turnId);
    else if (m.type === "commandRan") state = dropUserMessage(state, m.text);
    else if (m.type === "changes") state = applyChanges(state, m.turnId, m.files, m.undoable, m.note);
    else if (m.type === "undone") state = applyUndo(state, m);
    else if (m.type === "event") state = applyEvent(state, m.event);
    else if (m.type === "approval") state = applyApproval(state, m.cycle, perCallDecisions);
    else if (m.type === "approvalCleared") state = clearCycle(state, m.cycleId, m.decision, m.calls);
    else if (m.type === "callDecided") state = decideCall(state, m.cycleId, m.callId, m.decision);
  }
  return state;
}

/** Whether the page was sent this notification (of its session). */
export function sawEvent(host: FakeHost, method: string, match: (params: Record<string, unknown>) => boolean = () => true): boolean {
  return host.posted.some((m) => m.type === "event" && m.event.method === method && match(m.event.params as unknown as Record<string, unknown>));
}
