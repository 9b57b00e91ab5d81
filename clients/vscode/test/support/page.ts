/**
 * Test support: the chat page exactly as the extension builds it, served on 127.0.0.1 with a
 * stub of the webview API (it records what the page posts) and a dark theme's variables.
 */
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as path from "node:path";
import { chatHtml } from "../../src/chat/html";

const ROOT = path.resolve(__dirname, "../..");
const NONCE = "testnonce0123456789abcdefABCDEF0";

const STUB = `
window.__posted = [];
window.acquireVsCodeApi = () => ({ postMessage: (m) => window.__posted.push(m), getState: () => undefined, setState: () => undefined });
`;

/** Variables VS Code's Dark Modern theme sets on a webview (a subset the stylesheet uses). */
const THEME = `
html { --vscode-font-family: system-ui, "DejaVu Sans", sans-serif; --vscode-font-size: 13px;
  --vscode-editor-font-family: "DejaVu Sans Mono", monospace; --vscode-editor-font-size: 12px;
  --vscode-foreground: #cccccc; --vscode-sideBar-background: #181818; --vscode-editor-background: #1f1f1f;
  --vscode-button-background: #0078d4; --vscode-button-foreground: #ffffff; --vscode-button-hoverBackground: #026ec1;
  --vscode-button-secondaryBackground: #313131; --vscode-button-secondaryForeground: #cccccc; --vscode-button-secondaryHoverBackground: #3c3c3c;
  --vscode-input-background: #313131; --vscode-input-foreground: #cccccc; --vscode-input-border: #3c3c3c; --vscode-focusBorder: #0078d4;
  --vscode-textLink-foreground: #4daafc; --vscode-textCodeBlock-background: #2b2b2b; --vscode-panel-border: #2b2b2b;
  --vscode-badge-background: #616161; --vscode-badge-foreground: #f8f8f8; --vscode-errorForeground: #f85149;
  --vscode-editorWarning-foreground: #cca700; --vscode-charts-blue: #3794ff; --vscode-charts-green: #89d185;
  --vscode-charts-yellow: #cca700; --vscode-charts-red: #f14c4c; --vscode-editorGroupHeader-tabsBackground: #181818;
  --vscode-inputValidation-warningBackground: #352a05; --vscode-inputValidation-warningBorder: #b89500;
  --vscode-inputValidation-errorBackground: #5a1d1d; --vscode-inputValidation-errorBorder: #be1100;
  --vscode-statusBarItem-errorBackground: #c72e0f; --vscode-statusBarItem-errorForeground: #ffffff; }
`;

export interface PageServer {
  url: string;
  close(): Promise<void>;
}

export async function servePage(): Promise<PageServer> {
  const files: Record<string, [string, string]> = {
    "/webview.js": [fs.readFileSync(path.join(ROOT, "dist/webview.js"), "utf8"), "text/javascript"],
    "/chat.css": [fs.readFileSync(path.join(ROOT, "media/chat.css"), "utf8"), "text/css"],
    "/theme.css": [THEME, "text/css"],
    "/stub.js": [STUB, "text/javascript"],
  };
  const server = http.createServer((req, res) => {
    const file = files[req.url ?? ""];
    if (req.url === "/favicon.ico") { res.writeHead(204).end(); return; }
    if (!file) { res.writeHead(404).end(); return; }
    res.writeHead(200, { "Content-Type": file[1] }).end(file[0]);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const page = chatHtml({ cspSource: origin, nonce: NONCE, scriptUri: `${origin}/webview.js`, styleUri: `${origin}/chat.css` })
    .replace(`<script nonce`, `<script nonce="${NONCE}" src="${origin}/stub.js"></script>\n<script nonce`)
    .replace(`<link rel="stylesheet"`, `<link rel="stylesheet" href="${origin}/theme.css">\n<link rel="stylesheet"`);
  files["/chat.html"] = [page, "text/html"];
  return { url: `${origin}/chat.html`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

export const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
