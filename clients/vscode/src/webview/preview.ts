/**
 * A preview panel's page: collects the bytes the host streams, then shows them by kind. All
 * of it is untrusted: text is drawn as text, markdown and pages are sanitized, a page sits in
 * a sandboxed frame under the daemon's policy, and nothing is fetched from anywhere.
 */
import DOMPurify from "dompurify";
import type { FromPreview, PreviewInfo, ToPreview } from "../messages/preview";
import { parseTable } from "./table";
import { h, setText } from "./dom";
import { renderMarkdown } from "./markdown";
import { renderPdf } from "./pdf";

interface VsCodeApi {
  postMessage(message: FromPreview): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const head = document.getElementById("head")!;
const content = document.getElementById("content")!;

const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const TABLE_ROWS = 2000;

let preview: PreviewInfo | null = null;
let bytes = new Uint8Array(0);
let received = 0;

function size(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1 << 20)).toFixed(1)} MiB`;
}

function drawHead(info: PreviewInfo): void {
  const source = /^https?:\/\//i.test(info.source) || info.source.startsWith("/")
    ? h("button", { class: "link source", "data-action": "openSource", title: "Open the source (a web page asks first)" }, info.source)
    : h("span", { class: "source" }, info.source);
  head.replaceChildren(
    h("div", { class: "title" }, info.title),
    h("div", { class: "meta" }, h("span", { class: "kind" }, info.kind), " ", source, ` · ${info.contentType} · ${size(info.size)}`));
}

function progress(): void {
  const total = preview?.size ?? 0;
  let bar = content.querySelector<HTMLProgressElement>("progress");
  if (!bar) content.replaceChildren(h("div", { class: "loading" }, h("span", {}, "Loading… "), (bar = h("progress", { max: "1" }))));
  bar.value = total ? received / total : 0;
  setText(content.querySelector(".loading span")!, `Loading… ${size(received)} of ${size(total)} `);
}

function text(): string {
  return new TextDecoder("utf-8").decode(bytes.subarray(0, received));
}

function base64Bytes(data: string): Uint8Array {
  const raw = atob(data);
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}

function chunk(offset: number, data: string): void {
  const part = base64Bytes(data);
  const end = offset + part.length;
  if (end > bytes.length) {
    const grown = new Uint8Array(Math.max(end, preview?.size ?? 0));
    grown.set(bytes.subarray(0, received));
    bytes = grown;
  }
  bytes.set(part, offset);
  received = Math.max(received, end);
}

function tableView(info: PreviewInfo): HTMLElement {
  const table = parseTable(text(), info.contentType, TABLE_ROWS);
  const thead = h("thead", {}, h("tr", {}, ...table.columns.map((c) => h("th", {}, c))));
  const tbody = h("tbody", {}, ...table.rows.map((row) => h("tr", {}, ...row.map((c) => h("td", {}, c)))));
  const note = table.total > table.rows.length ? `Showing the first ${table.rows.length} of ${table.total} rows.` : `${table.total} rows.`;
  return h("div", { class: "table" }, h("div", { class: "note" }, note), h("div", { class: "scroll" }, h("table", {}, thead, tbody)));
}

function markdownView(): HTMLElement {
  const template = document.createElement("template");
  template.innerHTML = renderMarkdown(text());
  const body = h("article", { class: "md" });
  body.append(template.content);
  return body;
}

/**
 * A web page: sanitized, then in a frame with no scripts, no same-origin access and the
 * daemon's policy first in its head (on top of this page's, which it inherits).
 */
function webView(info: PreviewInfo): HTMLElement {
  const clean = DOMPurify.sanitize(text(), { WHOLE_DOCUMENT: true, FORBID_TAGS: ["base", "form", "iframe", "object", "embed", "meta", "link"] });
  // `sandbox` cannot be given in a meta tag; the frame's attribute does that part.
  const policy = (info.csp || "default-src 'none'").replace(/;?\s*sandbox\b[^;]*/g, "").replace(/["<>]/g, "");
  const frame = h("iframe", { class: "web", sandbox: "", referrerpolicy: "no-referrer", title: info.title });
  frame.srcdoc = `<!DOCTYPE html><meta http-equiv="Content-Security-Policy" content="${policy}">${clean}`;
  return frame;
}

function imageView(info: PreviewInfo): HTMLElement {
  if (!IMAGE_TYPES.has(info.contentType)) return h("p", { class: "problem" }, `Not shown: ${info.contentType} is not an image type this view draws.`);
  let raw = "";
  for (let i = 0; i < received; i += 0x8000) raw += String.fromCharCode(...bytes.subarray(i, Math.min(received, i + 0x8000)));
  return h("div", { class: "image" }, h("img", { src: `data:${info.contentType};base64,${btoa(raw)}`, alt: info.title }));
}

async function show(info: PreviewInfo): Promise<void> {
  switch (info.kind) {
    case "text": content.replaceChildren(h("pre", { class: "text" }, text())); break;
    case "markdown": content.replaceChildren(markdownView()); break;
    case "table": content.replaceChildren(tableView(info)); break;
    case "web": content.replaceChildren(webView(info)); break;
    case "image": content.replaceChildren(imageView(info)); break;
    case "pdf": {
      const pages = h("div", { class: "pdf" });
      content.replaceChildren(pages);
      await renderPdf(bytes.slice(0, received), pages);
      break;
    }
  }
  document.body.dataset.state = "shown";
}

function failed(message: string): void {
  content.replaceChildren(h("p", { class: "problem" }, message));
  document.body.dataset.state = "failed";
}

function receive(message: ToPreview): void {
  switch (message.type) {
    case "open":
      preview = message.preview;
      bytes = new Uint8Array(0);
      received = 0;
      document.body.dataset.state = "loading";
      drawHead(preview);
      progress();
      break;
    case "chunk":
      if (!preview) return;
      chunk(message.offset, message.data);
      if (!message.eof) progress();
      else show(preview).catch((err: unknown) => failed(`This ${preview?.kind} could not be shown: ${err instanceof Error ? err.message : String(err)}`));
      break;
    case "failed":
      failed(`The preview could not be read: ${message.message}`);
      break;
  }
}

document.addEventListener("click", (event) => {
  const button = (event.target as HTMLElement).closest<HTMLElement>("[data-action]");
  if (button?.dataset.action === "openSource") vscode.postMessage({ type: "openSource" });
});
window.addEventListener("message", (event: MessageEvent<ToPreview>) => receive(event.data));
vscode.postMessage({ type: "ready" });
