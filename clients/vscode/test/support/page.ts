/**
 * Test support: the chat page and the preview panel's page exactly as the extension builds
 * them, served on 127.0.0.1 with a stub of the webview API (it records what the page posts)
 * and a dark theme's variables. Every request the server gets is logged.
 */
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { chatHtml } from "../../src/messages/html";
import { previewHtml } from "../../src/messages/html";
import type { PreviewKind } from "../../src/protocol";

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
  --vscode-statusBarItem-errorBackground: #c72e0f; --vscode-statusBarItem-errorForeground: #ffffff;
  --vscode-charts-purple: #b180d7; --vscode-descriptionForeground: #9d9d9d; --vscode-list-hoverBackground: #2a2d2e; }
`;

export interface PageServer {
  url: string;
  /** The preview panel's page for a kind. */
  previewUrl(kind: PreviewKind): string;
  /** Every path requested so far. */
  requests: string[];
  close(): Promise<void>;
}

export async function servePage(): Promise<PageServer> {
  const files: Record<string, [string, string]> = {
    "/webview.js": [fs.readFileSync(path.join(ROOT, "dist/webview.js"), "utf8"), "text/javascript"],
    "/chat.css": [fs.readFileSync(path.join(ROOT, "media/chat.css"), "utf8"), "text/css"],
    "/preview.js": [fs.readFileSync(path.join(ROOT, "dist/preview.js"), "utf8"), "text/javascript"],
    "/preview.css": [fs.readFileSync(path.join(ROOT, "media/preview.css"), "utf8"), "text/css"],
    "/theme.css": [THEME, "text/css"],
    "/stub.js": [STUB, "text/javascript"],
  };
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? "");
    const file = files[req.url ?? ""];
    if (req.url === "/favicon.ico") { res.writeHead(204).end(); return; }
    if (!file) { res.writeHead(404).end(); return; }
    res.writeHead(200, { "Content-Type": file[1] }).end(file[0]);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const withStub = (html: string) => html
    .replace(`<script nonce`, `<script nonce="${NONCE}" src="${origin}/stub.js"></script>\n<script nonce`)
    .replace(`<link rel="stylesheet"`, `<link rel="stylesheet" href="${origin}/theme.css">\n<link rel="stylesheet"`);
  files["/chat.html"] = [withStub(chatHtml({ cspSource: origin, nonce: NONCE, scriptUri: `${origin}/webview.js`, styleUri: `${origin}/chat.css` })), "text/html"];
  for (const kind of ["web", "pdf", "image", "table", "text", "markdown"] as const) {
    files[`/preview-${kind}.html`] = [withStub(previewHtml({ cspSource: origin, nonce: NONCE, scriptUri: `${origin}/preview.js`, styleUri: `${origin}/preview.css` }, kind, "preview")), "text/html"];
  }
  return {
    url: `${origin}/chat.html`,
    previewUrl: (kind) => `${origin}/preview-${kind}.html`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

/** The pages' server and a headless Chromium, started before a file's tests and stopped after. */
export interface BrowserRig {
  browser: Browser;
  server: PageServer;
}

export function browserRig(): BrowserRig {
  const rig = {} as BrowserRig;
  beforeAll(async () => {
    rig.server = await servePage();
    rig.browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });
  afterAll(async () => {
    await rig.browser?.close();
    await rig.server?.close();
  });
  return rig;
}

/**
 * Posts messages to a page as the extension does (one task each) and returns once the page has
 * received the last of them and drawn a frame after it: the pages draw once per animation frame,
 * so without this a check could see the first messages drawn and not the rest.
 */
export async function postAll(page: Page, messages: unknown[]): Promise<void> {
  await page.evaluate(async (ms) => {
    const marker = `posted-${Math.random()}`;
    const received = new Promise<void>((resolve) => {
      const seen = (event: MessageEvent): void => {
        if (event.data !== marker) return;
        window.removeEventListener("message", seen);
        resolve();
      };
      window.addEventListener("message", seen);
    });
    for (const m of ms) window.postMessage(m, "*");
    window.postMessage(marker, "*");
    await received;
    // Registered after the page's own frame callback, so it runs once that draw is done.
    await new Promise<void>((resolve) => requestAnimationFrame(() => resolve()));
  }, messages);
}
