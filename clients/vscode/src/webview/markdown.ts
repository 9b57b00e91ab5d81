/**
 * Markdown for streamed text: markdown-it (raw HTML off) then DOMPurify, patched into the
 * live DOM block by block so a growing answer never re-creates what is already shown.
 */
import DOMPurify from "dompurify";
import MarkdownIt from "markdown-it";
import { h } from "./dom";

const md = new MarkdownIt({ html: false, linkify: true, breaks: false });

/** Sanitized HTML for a markdown text. */
export function renderMarkdown(text: string): string {
  return DOMPurify.sanitize(md.render(text), { USE_PROFILES: { html: true }, FORBID_ATTR: ["style"] });
}

/** Wrap each code block with its language and the Copy / Insert buttons. */
function decorateCodeBlocks(root: DocumentFragment): void {
  for (const pre of Array.from(root.querySelectorAll("pre"))) {
    const code = pre.querySelector("code");
    const lang = /language-([\w+#.-]+)/.exec(code?.className ?? "")?.[1] ?? "";
    const bar = h("div", { class: "code-bar" },
      h("span", { class: "code-lang" }, lang),
      h("button", { class: "link", "data-action": "copy", title: "Copy to the clipboard" }, "Copy"),
      h("button", { class: "link", "data-action": "insert", title: "Insert at the cursor in the editor" }, "Insert"));
    const wrapper = h("div", { class: "code" }, bar);
    pre.replaceWith(wrapper);
    wrapper.append(pre);
  }
}

/**
 * Replace `container`'s children with the rendering of `text`, touching only the top-level
 * blocks that changed (usually just the last one while an answer streams).
 */
export function patchMarkdown(container: HTMLElement, text: string): void {
  const template = document.createElement("template");
  template.innerHTML = renderMarkdown(text);
  decorateCodeBlocks(template.content);
  const next = Array.from(template.content.childNodes).filter((n) => !(n.nodeType === Node.TEXT_NODE && !n.textContent?.trim()));
  const current = Array.from(container.childNodes);
  next.forEach((node, i) => {
    const old = current[i];
    if (!old) container.append(node);
    else if (!old.isEqualNode(node)) old.replaceWith(node);
  });
  for (const extra of current.slice(next.length)) extra.remove();
}

/** The text of the code block a Copy/Insert button belongs to. */
export function codeOf(button: Element): string | null {
  return button.closest(".code")?.querySelector("pre code, pre")?.textContent ?? null;
}
