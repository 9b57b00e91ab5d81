/**
 * PDFs drawn with pdf.js inside the page: its parser runs here rather than in a worker (a
 * webview may not start one from the extension's files), eval is off, no annotation or form
 * layer, no scripting, nothing fetched.
 */
import * as pdfjs from "pdfjs-dist";
import * as pdfWorker from "pdfjs-dist/build/pdf.worker.mjs";
import { h } from "./dom";

// pdf.js looks here for a parser already loaded in this thread before it tries a worker.
(globalThis as { pdfjsWorker?: unknown }).pdfjsWorker = pdfWorker;

/** Pages drawn at most (a longer document says so). */
export const MAX_PAGES = 100;

/** Draw each page of `data` as a canvas into `into`, one after the other. */
export async function renderPdf(data: Uint8Array, into: HTMLElement): Promise<number> {
  const task = pdfjs.getDocument({ data, isEvalSupported: false, enableXfa: false, disableAutoFetch: true, stopAtErrors: false, useSystemFonts: true });
  const doc = await task.promise;
  try {
    const pages = Math.min(doc.numPages, MAX_PAGES);
    const width = Math.max(320, into.clientWidth || document.body.clientWidth || 800) - 24;
    const scale = window.devicePixelRatio || 1;
    for (let n = 1; n <= pages; n++) {
      const page = await doc.getPage(n);
      const base = page.getViewport({ scale: 1 });
      const viewport = page.getViewport({ scale: (width / base.width) * scale });
      const canvas = h("canvas", { class: "page", "aria-label": `page ${n}` });
      canvas.width = Math.floor(viewport.width);
      canvas.height = Math.floor(viewport.height);
      canvas.style.width = `${Math.floor(viewport.width / scale)}px`;
      into.append(canvas);
      await page.render({ canvas, viewport }).promise;
      page.cleanup();
    }
    into.append(h("div", { class: "note" }, doc.numPages > pages ? `Showing the first ${pages} of ${doc.numPages} pages.` : `${doc.numPages} page${doc.numPages === 1 ? "" : "s"}.`));
    return doc.numPages;
  } finally {
    await task.destroy();
  }
}
