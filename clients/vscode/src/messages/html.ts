/**
 * The webview pages' HTML (the chat and a preview panel): one nonce'd script, one stylesheet, a
 * strict Content-Security-Policy, no network.
 */
import type { PreviewKind } from "../protocol";

export interface PageSources {
  /** The webview's `cspSource` (which origins its resources come from). */
  cspSource: string;
  scriptUri: string;
  styleUri: string;
  nonce: string;
}

/** A random nonce for the page's one script tag. */
export function makeNonce(random: () => number = Math.random): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let out = "";
  for (let i = 0; i < 32; i++) out += alphabet.charAt(Math.floor(random() * alphabet.length));
  return out;
}

/** A value safe inside a double-quoted attribute (or as element text). */
export function escapeAttr(value: string): string {
  return value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
}

/**
 * Nothing runs but the bundled script; no inline style, no remote script, no eval. Images may
 * come from the extension or be data: URIs (markdown images from the web are not loaded).
 */
export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `img-src ${cspSource} data:`,
    `style-src ${cspSource}`,
    `font-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
  ].join("; ");
}

/** A webview page: the policy, the stylesheet, the body, and the one nonce'd script last. */
export function webviewPage(src: PageSources, policy: string, title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeAttr(policy)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escapeAttr(src.styleUri)}">
<title>${escapeAttr(title)}</title>
</head>
<body>
${body}
<script nonce="${escapeAttr(src.nonce)}" src="${escapeAttr(src.scriptUri)}"></script>
</body>
</html>`;
}

export function chatHtml(src: PageSources): string {
  return webviewPage(src, contentSecurityPolicy(src.cspSource, src.nonce), "turnstoned", `<header id="chat-head" hidden>
  <label for="mode">Approval mode</label>
  <select id="mode" title="What runs without asking in this chat"></select>
  <span id="sandbox-state"></span>
  <button id="model" class="link" hidden title="The model of this chat: click to pick another"></button>
</header>
<div id="instructions" hidden></div>
<div id="banner" hidden></div>
<main id="transcript" aria-live="polite"></main>
<footer id="composer">
  <ul id="complete" role="listbox" hidden></ul>
  <div id="attachments"></div>
  <textarea id="input" rows="3" placeholder="Ask turnstoned… (@ names a file, / a command; Enter sends, Shift+Enter adds a line)"></textarea>
  <div id="composer-bar">
    <span id="usage"></span>
    <span id="turn-state"></span>
    <button id="stop" class="secondary" hidden title="Interrupt the running turn">Stop</button>
    <button id="send" title="Send (Enter)">Send</button>
  </div>
</footer>`);
}

/**
 * Nothing is fetched: images are data: URIs, the PDF renderer runs in the page. A web page is
 * shown in a sandboxed frame that inherits this policy (and adds the daemon's), so inline
 * styles are allowed for that kind only.
 */
export function previewPolicy(cspSource: string, nonce: string, kind: PreviewKind): string {
  return [
    "default-src 'none'",
    "img-src data: blob:",
    `style-src ${cspSource}${kind === "web" ? " 'unsafe-inline'" : ""}`,
    "font-src data:",
    `script-src 'nonce-${nonce}'`,
  ].join("; ");
}

export function previewHtml(src: PageSources, kind: PreviewKind, title: string): string {
  return webviewPage(src, previewPolicy(src.cspSource, src.nonce, kind), title, `<header id="head"></header>
<main id="content" aria-live="polite"></main>`);
}
