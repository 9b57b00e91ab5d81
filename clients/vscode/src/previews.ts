/**
 * Previews the model opened (`preview/open`): each in a webview panel beside the editor, its
 * bytes read from the daemon with `preview/read` in ranges and handed to the panel as they come.
 */
import { rpcError } from "./connection";
import type { Host, PreviewPanel } from "./host";
import type { PreviewInfo, ToPreview } from "./messages/preview";
import type { PreviewKind, PreviewOpen, PreviewReadResult } from "./protocol";

/** Bytes asked for per `preview/read`: a PDF of 32 MiB travels in 32 frames, not one. */
export const PREVIEW_CHUNK = 1 << 20;

/** What the protocol says to render each kind under, for a preview known only by its id. */
const DEFAULT_CSP: Record<PreviewKind, string> = {
  web: "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; sandbox",
  pdf: "",
  image: "default-src 'none'; sandbox",
  table: "default-src 'none'; sandbox",
  text: "default-src 'none'; sandbox",
  markdown: "default-src 'none'; sandbox",
};

export type PreviewReader = (sessionId: string, previewId: string, offset: number, length: number) => Promise<PreviewReadResult>;

function infoOf(sessionId: string, read: PreviewReadResult): PreviewInfo {
  return { sessionId, previewId: read.previewId, kind: read.kind, title: read.title, source: read.source, contentType: read.contentType, size: read.size, csp: DEFAULT_CSP[read.kind] };
}

/** Where "Open source" leads: a web URL to the browser, a local file to the editor. */
export function sourceTarget(source: string): { url: string } | { path: string } | null {
  if (/^https?:\/\//i.test(source)) return { url: source };
  if (source.startsWith("/")) return { path: source };
  return null;
}

export class PreviewController {
  private readonly known = new Map<string, PreviewInfo>();
  private readonly panels = new Map<string, PreviewPanel>();

  constructor(private readonly host: Host, private readonly read: PreviewReader, private readonly chunk = PREVIEW_CHUNK) {}

  /** `preview/open`: remember it and show it. */
  async opened(event: PreviewOpen): Promise<void> {
    const info: PreviewInfo = { ...event, csp: event.csp ?? DEFAULT_CSP[event.kind] };
    this.known.set(event.previewId, info);
    await this.show(event.sessionId, event.previewId);
  }

  /** Show a preview (again): its panel comes forward, or a new one opens and loads it. */
  async show(sessionId: string, previewId: string): Promise<void> {
    const open = this.panels.get(previewId);
    if (open) {
      open.reveal();
      return;
    }
    let info = this.known.get(previewId);
    let first: PreviewReadResult | undefined;
    if (!info) {
      try {
        first = await this.read(sessionId, previewId, 0, this.chunk);
      } catch (err) {
        void this.host.warn(`The preview is no longer available (${rpcError(err).message}).`);
        return;
      }
      info = infoOf(sessionId, first);
      this.known.set(previewId, info);
    }
    const known = info;
    const panel = this.host.openPreviewPanel(known.kind, known.title, {
      // A (re)loaded page asks for everything again.
      onMessage: (message) => {
        if (message.type === "ready") void this.stream(panel, known, first);
        else if (message.type === "openSource") this.openSource(known.source);
      },
      onDispose: () => this.panels.delete(previewId),
    });
    this.panels.set(previewId, panel);
  }

  /** Send the preview to its panel, range by range, until the daemon says it reached the end. */
  private async stream(panel: PreviewPanel, info: PreviewInfo, first?: PreviewReadResult): Promise<void> {
    const post = (message: ToPreview) => panel.post(message);
    post({ type: "open", preview: info });
    let offset = 0;
    let part = first;
    try {
      for (;;) {
        part ??= await this.read(info.sessionId, info.previewId, offset, this.chunk);
        post({ type: "chunk", offset, data: part.data, eof: part.eof });
        if (part.eof || !part.data) return;
        offset += byteLength(part.data);
        part = undefined;
      }
    } catch (err) {
      post({ type: "failed", message: rpcError(err).message });
    }
  }

  private openSource(source: string): void {
    const target = sourceTarget(source);
    if (target && "url" in target) void this.host.openExternal(target.url);
    else if (target) void this.host.openFile(target.path);
  }

  /** Panels showing a session's previews close with it (the daemon removed their content). */
  closeSession(sessionId: string): void {
    for (const [previewId, info] of this.known) {
      if (info.sessionId !== sessionId) continue;
      this.panels.get(previewId)?.dispose();
      this.known.delete(previewId);
    }
  }
}

/** How many bytes a base64 text holds. */
export function byteLength(base64: string): number {
  const padding = base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0;
  return (base64.length / 4) * 3 - padding;
}
