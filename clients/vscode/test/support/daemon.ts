/**
 * Test support: the real daemon and the repository's scripted model server, as child
 * processes, and a vscode-jsonrpc connection to the daemon (what the extension's client runs on).
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from "vscode-jsonrpc/node";
import type { Connection } from "../../src/connection";

export const REPO = path.resolve(__dirname, "../../../..");
const VENV_PYTHON = path.join(REPO, ".venv/bin/python");
export const PYTHON = process.env.TURNSTONED_PYTHON ?? (fs.existsSync(VENV_PYTHON) ? VENV_PYTHON : "python3");

function firstLine(child: ChildProcess, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = "";
    const timer = setTimeout(() => reject(new Error(`no output within ${timeoutMs} ms`)), timeoutMs);
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      buffer += chunk;
      const nl = buffer.indexOf("\n");
      if (nl >= 0) {
        clearTimeout(timer);
        resolve(buffer.slice(0, nl).trim());
      }
    });
    child.on("exit", (code) => reject(new Error(`exited with ${code} before printing`)));
  });
}

export interface ModelServer {
  baseUrl: string;
  stop(): void;
}

/** Start the scripted model with these replies (see test/support/scripted_model.py). */
export async function startModel(replies: unknown[], dir: string, extra: Record<string, unknown> = {}): Promise<ModelServer> {
  const script = path.join(dir, "script.json");
  fs.writeFileSync(script, JSON.stringify({ replies, ...extra }));
  const child = spawn(PYTHON, ["-I", path.join(__dirname, "scripted_model.py"), script], { stdio: ["pipe", "pipe", "inherit"] });
  const baseUrl = await firstLine(child, 15000);
  return { baseUrl, stop: () => child.stdin!.end() };
}

export interface RunningDaemon {
  connection: Connection;
  raw: MessageConnection;
  child: ChildProcess;
  stderr: () => string;
  stop(): Promise<void>;
}

/**
 * The daemon's config.toml in `home` (`TURNSTONED_HOME`). Tests run in read-only mode unless
 * they name one: in the daemon's default (auto) commands run in the sandbox unasked, and a
 * test about asking would see no question.
 */
export function writeConfig(home: string, toml = READ_ONLY): void {
  fs.mkdirSync(path.join(home, "config"), { recursive: true });
  fs.writeFileSync(path.join(home, "config", "config.toml"), toml);
}

export const READ_ONLY = '[approvals]\nmode = "read-only"\n';

/** Start `python -I -m turnstoned` with its home in `home`, initialized like languageclient does. */
export async function startDaemon(env: Record<string, string>, home: string, config = READ_ONLY): Promise<RunningDaemon> {
  writeConfig(home, config);
  return connectDaemon(PYTHON, ["-I", "-m", "turnstoned"], { ...process.env, TURNSTONED_HOME: home, TURNSTONED_CONFIG: "", ...env } as Record<string, string>, REPO);
}

/** Spawn a daemon command and open an initialized vscode-jsonrpc connection to it. */
export async function connectDaemon(command: string, args: string[], env: Record<string, string>, cwd: string, onStderr?: (chunk: string) => void, onExit?: (code: number | null, signal: string | null) => void, initializationOptions?: unknown): Promise<RunningDaemon> {
  const child = spawn(command, args, { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => { stderr += chunk; onStderr?.(chunk); });
  if (onExit) child.on("exit", onExit);
  const raw = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
  raw.listen();
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  const died = exited.then(() => { throw new Error(`the daemon exited with ${child.exitCode ?? child.signalCode} before answering initialize`); });
  await Promise.race([raw.sendRequest("initialize", { processId: process.pid, rootUri: null, capabilities: {}, ...(initializationOptions ? { initializationOptions } : {}) }), died]);
  await raw.sendNotification("initialized", {});
  return {
    connection: raw as unknown as Connection,
    raw,
    child,
    stderr: () => stderr,
    stop: async () => {
      try {
        await raw.sendRequest("shutdown");
        await raw.sendNotification("exit");
      } catch {
        child.kill("SIGTERM");
      }
      raw.dispose();
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill("SIGKILL");
    },
  };
}

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}
