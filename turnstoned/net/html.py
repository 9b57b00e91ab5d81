"""HTML for people who read text: page text, the page title, a ``<base>`` for previews.

``to_text`` costs linear time on any input (a million ``<``, unclosed
comments, quotes or ``<script>``): comments, declarations and ``<script>``,
``<style>``, ``<template>``, ``<noscript>`` blocks are cut in one forward pass
whose every scan starts where the last one ended (an unclosed one ends the
text); then block-level tags become line breaks and other tags vanish, by
regular expressions that cannot backtrack; then entities are decoded and runs
of blanks collapse. Something that only looks like a tag (an unclosed ``<a``,
a ``<`` inside a quoted attribute) stays as text.
"""

from __future__ import annotations

import html
import re

DROPPED = ("script", "style", "template", "noscript")
BLOCK = frozenset({
    "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "fieldset",
    "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr",
    "li", "main", "nav", "ol", "p", "pre", "section", "table", "tbody", "td", "tfoot", "th",
    "thead", "tr", "ul"})

# A tag: name, then attributes (quoted values may hold ">" but not "<"). Possessive
# quantifiers never backtrack and a match cannot run past the next "<", so all the
# attempts over a page together read it about once.
_TAG_BODY = r"""(?:[^<>"']++|"[^"<]*+"|'[^'<]*+')*+>"""
_ANY_TAG = re.compile(r"</?([A-Za-z][A-Za-z0-9-]*+)" + _TAG_BODY)

# Comments, declarations and the blocks whose content is not text.
_HIDDEN = re.compile(r"<(?:[!?]|([nNsStT][A-Za-z0-9-]*+))")
_TAG_PLAIN = re.compile(r"[^>\"']*")
_CLOSERS = {name: re.compile(rf"</{name}\s*>", re.IGNORECASE) for name in DROPPED}
_BLANKS = re.compile(r"[ \t\r\f\v\u00a0]+")
_AROUND_NEWLINE = re.compile(r" ?\n ?")
_MANY_NEWLINES = re.compile(r"\n{3,}")
_TITLE_OPEN = re.compile(r"<title\b[^>]{0,2000}>", re.IGNORECASE)
_TITLE_CLOSE = re.compile(r"</title\s*>", re.IGNORECASE)
_HEAD = re.compile(r"<head\b[^>]{0,2000}>", re.IGNORECASE)
_HTML = re.compile(r"<html\b[^>]{0,2000}>", re.IGNORECASE)
_DOCTYPE = re.compile(r"<!doctype\b[^>]{0,2000}>", re.IGNORECASE)


def _tag_end(text: str, start: int) -> int:
    """Index just past the ``>`` closing the tag opened before ``start``; -1 if none.

    Quoted attribute values may contain ``>``. Each character is looked at once.
    """
    n = len(text)
    i = start
    while True:
        i = _TAG_PLAIN.match(text, i).end()  # type: ignore[union-attr]  # matches ""
        if i >= n:
            return -1
        if text[i] == ">":
            return i + 1
        close = text.find(text[i], i + 1)  # the quote's end
        if close < 0:
            return -1
        i = close + 1


def _tag_text(tag: re.Match[str]) -> str:
    return "\n" if tag.group(1).lower() in BLOCK else ""


def _strip_hidden(page: str) -> str:
    """``page`` without comments, declarations and script/style/template/noscript blocks."""
    out: list[str] = []
    i, n = 0, len(page)
    while i < n:
        found = _HIDDEN.search(page, i)
        if found is None:
            out.append(page[i:])
            break
        name = (found.group(1) or "").lower()
        if name and name not in _CLOSERS:  # <span>, <table>, ...: ordinary tags
            out.append(page[i:found.end()])
            i = found.end()
            continue
        out.append(page[i:found.start()])
        if not name:  # "<!" or "<?": a comment or a declaration
            stop = "-->" if page.startswith("<!--", found.start()) else ">"
            end = page.find(stop, found.end())
            i = n if end < 0 else end + len(stop)
            continue
        end = _tag_end(page, found.end())
        if end < 0:
            break  # an opening tag that never closes: nothing after it is text
        if not page.endswith("/>", 0, end):
            closer = _CLOSERS[name].search(page, end)
            end = n if closer is None else closer.end()
        i = end
    return "".join(out)


def to_text(page: str) -> str:
    """The readable text of an HTML page."""
    text = _ANY_TAG.sub(_tag_text, _strip_hidden(page))
    text = html.unescape(text)
    text = _BLANKS.sub(" ", text)
    text = _AROUND_NEWLINE.sub("\n", text)
    return _MANY_NEWLINES.sub("\n\n", text).strip()


def title(page: str) -> str:
    """The ``<title>`` text (entities decoded, blanks collapsed, at most 200 chars), or ""."""
    window = page[: 1 << 20]
    start = _TITLE_OPEN.search(window)
    if start is None:
        return ""
    end = _TITLE_CLOSE.search(window, start.end())
    if end is None:
        return ""
    return " ".join(html.unescape(window[start.end():end.start()]).split())[:200]


def with_base(page: str, url: str) -> str:
    """``page`` with ``<base href=url>`` so its relative links point at where it came from.

    Goes after ``<head>``, else after ``<html>``, else after the doctype, else
    first; a page that already has a ``<base`` in its first 64 KiB is left alone.
    """
    if "<base" in page[: 1 << 16].lower():
        return page
    tag = f'<base href="{html.escape(url, quote=True)}">'
    for pattern in (_HEAD, _HTML, _DOCTYPE):
        m = pattern.search(page, 0, min(len(page), 1 << 16))
        if m is not None:
            return page[: m.end()] + tag + page[m.end():]
    return tag + page
