/** Messages between the extension host and a preview panel. */
import type { PreviewKind } from "../protocol";

/** What a panel needs to know about the preview it shows. */
export interface PreviewInfo {
  sessionId: string;
  previewId: string;
  kind: PreviewKind;
  title: string;
  /** A URL, a path or an attachment name: where the content came from. */
  source: string;
  contentType: string;
  size: number;
  /** The policy the daemon gives for rendering it (applied to web pages inside the panel). */
  csp: string;
}

export type ToPreview =
  | { type: "open"; preview: PreviewInfo }
  /** Base64 of the bytes from `offset`, as `preview/read` gave them. */
  | { type: "chunk"; offset: number; data: string; eof: boolean }
  | { type: "failed"; message: string };

export type FromPreview =
  | { type: "ready" }
  | { type: "openSource" };
