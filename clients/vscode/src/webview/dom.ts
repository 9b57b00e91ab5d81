/** Tiny DOM helpers for the webview (no framework: the transcript is patched in place). */

type Attrs = Record<string, string | boolean | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (key === "class") el.className = String(value);
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children) el.append(child);
  return el;
}

/** Set text only when it changed (keeps selection and avoids layout work). */
export function setText(el: Element, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}

export function toggle(el: HTMLElement, visible: boolean): void {
  if (el.hidden === visible) el.hidden = !visible;
}
