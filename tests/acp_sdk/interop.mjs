// The official TypeScript ACP SDK (@agentclientprotocol/sdk) as the client of a real
// `turnstoned acp` process, with the scripted model of tests/acpkit.py playing the turns.
//
//   node interop.mjs [PYTHON]      (PYTHON: the interpreter with turnstoned; default
//                                   ../../.venv/bin/python)
//
// Each check prints one line; the exit code is 1 when one failed.
import * as acp from "@agentclientprotocol/sdk";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { Readable, Writable } from "node:stream";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..", "..");
const python = process.argv[2] ?? join(root, ".venv", "bin", "python");
const scratch = mkdtempSync(join(tmpdir(), "acp-sdk-"));
const home = join(scratch, "home");
const workspace = join(scratch, "workspace");
mkdirSync(join(home, "config"), { recursive: true });
mkdirSync(workspace);
// Every change and command asks (the tests' usual mode), so permissions are exercised; every
// tool is in the model's request (none deferred behind tool_search).
writeFileSync(join(home, "config", "config.toml"),
  '[approvals]\nmode = "read-only"\n[tools]\nsearch = "off"\n');

const children = [];
function cleanup() {
  for (const child of children) child.kill("SIGKILL");
  rmSync(scratch, { recursive: true, force: true });
}
process.on("exit", cleanup);

/** The scripted model server: its base URL is the first line it prints. */
async function startModel() {
  const child = spawn(python, ["-m", "tests.acpkit"], { cwd: root, stdio: ["pipe", "pipe", "inherit"] });
  children.push(child);
  const lines = createInterface({ input: child.stdout });
  for await (const line of lines) return line.trim();
  throw new Error("the scripted model did not start");
}

const baseUrl = await startModel();
const env = {
  ...process.env, TURNSTONED_HOME: home, OPENAI_BASE_URL: baseUrl, OPENAI_API_KEY: "sk-test",
  TURNSTONED_MODEL: "scripted",
};

/** A client app recording every update; permission questions answered from `answers`. */
function recorder() {
  const state = { updates: [], asked: [], answers: [] };
  const app = acp.client({ name: "turnstoned-interop" })
    .onRequest("session/request_permission", async ({ params }) => {
      state.asked.push(params);
      const choice = state.answers.shift() ?? "reject_once";
      if (choice === "cancelled") return { outcome: { outcome: "cancelled" } };
      return { outcome: { outcome: "selected", optionId: choice } };
    })
    .onNotification("session/update", ({ params }) => {
      state.updates.push(params);
    });
  state.of = (kind, sessionId) => state.updates
    .filter((u) => u.update.sessionUpdate === kind && (!sessionId || u.sessionId === sessionId))
    .map((u) => u.update);
  state.text = (sessionId, kind = "agent_message_chunk") => state.of(kind, sessionId)
    .map((u) => u.content.text).join("");
  state.calls = (sessionId) => {
    const calls = new Map();
    for (const { sessionId: sid, update } of state.updates) {
      if (sid !== sessionId) continue;
      if (update.sessionUpdate === "tool_call") calls.set(update.toolCallId, { ...update });
      if (update.sessionUpdate === "tool_call_update") {
        const call = calls.get(update.toolCallId) ?? {};
        for (const [k, v] of Object.entries(update)) if (v != null) call[k] = v;
        calls.set(update.toolCallId, call);
      }
    }
    return [...calls.values()];
  };
  return { app, state };
}

/** Run `op(agent)` against a fresh `turnstoned acp` process; the process ends with stdin. */
async function withAgent(client, op) {
  const child = spawn(python, ["-m", "turnstoned", "acp"], { cwd: root, env, stdio: ["pipe", "pipe", "inherit"] });
  children.push(child);
  const exited = new Promise((done) => child.on("exit", (code) => done(code)));
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  try {
    return await client.app.connectWith(stream, async (agent) => {
      const init = await agent.request("initialize", {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
        clientInfo: { name: "turnstoned-interop", version: "1" },
      });
      assert.equal(init.protocolVersion, 1);
      return await op(agent, init);
    });
  } finally {
    child.stdin.end();
    assert.equal(await exited, 0, "turnstoned acp exits 0 when its stdin closes");
  }
}

const wait = (ms) => new Promise((done) => setTimeout(done, ms));
async function until(pred, what, ms = 15000) {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await wait(50);
  }
}

let failed = 0;
async function check(name, fn) {
  const started = Date.now();
  try {
    await fn();
    console.log(`ok   ${name} (${Date.now() - started} ms)`);
  } catch (err) {
    failed += 1;
    console.log(`FAIL ${name}\n${err?.stack ?? err}`);
  }
}

const text = (t) => [{ type: "text", text: t }];
let sessionId;

await check("initialize, session/new and a prompt streamed to end_turn", async () => {
  const client = recorder();
  await withAgent(client, async (agent, init) => {
    assert.equal(init.agentCapabilities.loadSession, true);
    assert.equal(init.agentCapabilities.promptCapabilities.embeddedContext, true);
    assert.equal(init.agentCapabilities.mcpCapabilities.http, true);
    const session = await agent.request("session/new", { cwd: workspace, mcpServers: [] });
    sessionId = session.sessionId;
    assert.deepEqual(session.modes.availableModes.map((m) => m.id),
      ["read-only", "auto", "full-access", "plan"]);
    const done = await agent.request("session/prompt", { sessionId, prompt: text("hello") });
    assert.equal(done.stopReason, "end_turn");
    assert.equal(client.state.text(sessionId), "Hello from the scripted model.");
    await until(() => client.state.of("available_commands_update", sessionId).length, "commands");
  });
});

await check("bash through session/request_permission: allow once, reject, always", async () => {
  const client = recorder();
  await withAgent(client, async (agent) => {
    const { sessionId: sid } = await agent.request("session/new", { cwd: workspace, mcpServers: [] });
    client.state.answers.push("allow_once");
    await agent.request("session/prompt", { sessionId: sid, prompt: text("run `touch ts-once.txt`") });
    assert.ok(existsSync(join(workspace, "ts-once.txt")));
    const asked = client.state.asked[0];
    assert.equal(asked.toolCall.kind, "execute");
    assert.match(asked.toolCall.title, /risk/);
    assert.deepEqual(asked.options.map((o) => o.kind),
      ["allow_once", "allow_always", "reject_once", "reject_always"]);

    client.state.answers.push("reject_once");
    await agent.request("session/prompt", { sessionId: sid, prompt: text("run `touch ts-no.txt`") });
    assert.ok(!existsSync(join(workspace, "ts-no.txt")));

    client.state.answers.push("allow_always");
    await agent.request("session/prompt", { sessionId: sid, prompt: text("run `mkdir ts-dir1`") });
    const before = client.state.asked.length;
    await agent.request("session/prompt", { sessionId: sid, prompt: text("run `mkdir ts-dir2`") });
    assert.equal(client.state.asked.length, before, "the saved rule covers the second call");
    assert.ok(existsSync(join(workspace, "ts-dir2")));
    const calls = client.state.calls(sid);
    assert.deepEqual(calls.map((c) => c.status), ["completed", "failed", "completed", "completed"]);
  });
});

await check("an edit arrives as a diff tool call", async () => {
  writeFileSync(join(workspace, "ts.txt"), "one\ntwo\n");
  const client = recorder();
  await withAgent(client, async (agent) => {
    const { sessionId: sid } = await agent.request("session/new", { cwd: workspace, mcpServers: [] });
    client.state.answers.push("allow_once");
    await agent.request("session/prompt", { sessionId: sid, prompt: text("edit ts.txt: two -> TWO") });
    assert.equal(readFileSync(join(workspace, "ts.txt"), "utf8"), "one\nTWO\n");
    const edit = client.state.calls(sid).find((c) => c.kind === "edit");
    const diff = edit.content.find((c) => c.type === "diff");
    assert.deepEqual(diff, { type: "diff", path: join(workspace, "ts.txt"), oldText: "one\ntwo\n",
      newText: "one\nTWO\n" });
  });
});

await check("session/cancel during a running command: cancelled, the process gone", async () => {
  const client = recorder();
  const marker = join(workspace, "ts-pid.txt");
  await withAgent(client, async (agent) => {
    const { sessionId: sid } = await agent.request("session/new", { cwd: workspace, mcpServers: [] });
    client.state.answers.push("allow_once");
    const running = agent.request("session/prompt",
      { sessionId: sid, prompt: text(`run \`echo $$ > ${marker}; sleep 60\``) });
    await until(() => existsSync(marker) && readFileSync(marker, "utf8").trim(), "the command");
    const pid = Number(readFileSync(marker, "utf8"));
    const started = Date.now();
    await agent.notify("session/cancel", { sessionId: sid });
    assert.equal((await running).stopReason, "cancelled");
    assert.ok(Date.now() - started < 5000, "cancelled at once");
    await until(() => { try { process.kill(pid, 0); return false; } catch { return true; } },
      "the command's process to end", 5000);
  });
});

await check("modes: session/set_mode and current_mode_update", async () => {
  const client = recorder();
  await withAgent(client, async (agent) => {
    const { sessionId: sid } = await agent.request("session/new", { cwd: workspace, mcpServers: [] });
    await agent.request("session/set_mode", { sessionId: sid, modeId: "auto" });
    await until(() => client.state.of("current_mode_update", sid).length, "current_mode_update");
    await agent.request("session/prompt", { sessionId: sid, prompt: text("write ts-auto.txt: auto") });
    assert.equal(client.state.asked.length, 0, "auto mode writes in the workspace unasked");
    assert.equal(readFileSync(join(workspace, "ts-auto.txt"), "utf8"), "auto");
  });
});

await check("session/load replays the history in a new process", async () => {
  const client = recorder();
  await withAgent(client, async (agent) => {
    const listed = await agent.request("session/list", { cwd: workspace });
    assert.ok(listed.sessions.some((s) => s.sessionId === sessionId));
    const loaded = await agent.request("session/load", { sessionId, cwd: workspace, mcpServers: [] });
    assert.equal(loaded.modes.currentModeId, "read-only");
    assert.equal(client.state.text(sessionId, "user_message_chunk"), "hello");
    assert.equal(client.state.text(sessionId), "Hello from the scripted model.");
  });
});

await check("client mcpServers: the editor's own server is used", async () => {
  const client = recorder();
  await withAgent(client, async (agent) => {
    const { sessionId: sid } = await agent.request("session/new", {
      cwd: workspace,
      mcpServers: [{ name: "tsclient", command: python,
        args: [join(root, "tests", "mcp_servers", "everything.py")],
        env: [{ name: "FROM_TS", value: "typescript-said-so" }] }],
    });
    client.state.answers.push("allow_once");
    await agent.request("session/prompt", { sessionId: sid,
      prompt: text('call `mcp__tsclient__getenv` with `{"key": "FROM_TS"}`') });
    assert.equal(client.state.text(sid), "Done: typescript-said-so");
  });
});

console.log(failed ? `${failed} check(s) failed` : "all ACP SDK interop checks passed");
process.exit(failed ? 1 : 0); // ends the scripted model too (the exit handler)
