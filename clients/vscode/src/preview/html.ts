/** A preview panel's HTML: one nonce'd script, one stylesheet, no network at all. */
import type { PreviewKind } from "../protocol";
import { webviewPage, type PageSources } from "../chat/html";

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
