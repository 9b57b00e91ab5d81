/** Entry point: activate and deactivate only. */
import type * as vscode from "vscode";
import { startApp, type App } from "./app";
import { createHost } from "./vsc";

let app: App | undefined;

export function activate(context: vscode.ExtensionContext): void {
  app = startApp(createHost(context));
}

export async function deactivate(): Promise<void> {
  await app?.dispose();
  app = undefined;
}
