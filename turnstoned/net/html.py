"""HTML for people who read text: page text, the page title, a ``<base>`` for previews.

``to_text`` is one forward pass over the page: every scan starts where the last
one ended and a failed scan ends the pass, so hostile input (a million ``<``,
unclosed comments, unclosed quotes, unclosed ``<script>``) costs linear time.
``<script>``, ``<style>``, ``<template>`` and ``<noscript>`` blocks are dropped
with their content; block-level tags become line breaks; other tags vanish;
entities are decoded; runs of blanks collapse.
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

_TAG_START = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)")
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
    i, n = start, len(text)
    while i < n:
        c = text[i]
        if c == ">":
            return i + 1
        if c in "\"'":
            close = text.find(c, i + 1)
            if close < 0:
                return -1
            i = close
        i += 1
    return -1


def to_text(page: str) -> str:
    """The readable text of an HTML page."""
    out: list[str] = []
    i, n = 0, len(page)
    while i < n:
        lt = page.find("<", i)
        if lt < 0:
            out.append(page[i:])
            break
        out.append(page[i:lt])
        if page.startswith("<!--", lt):
            end = page.find("-->", lt + 4)
            i = n if end < 0 else end + 3
            continue
        if page.startswith(("<!", "<?"), lt):
            end = page.find(">", lt + 2)
            i = n if end < 0 else end + 1
            continue
        m = _TAG_START.match(page, lt)
        if m is None:  # a bare "<" in text
            out.append("<")
            i = lt + 1
            continue
        end = _tag_end(page, m.end())
        if end < 0:  # never closed: the rest is not markup we can read
            break
        name = m.group(2).lower()
        if name in BLOCK:
            out.append("\n")
        i = end
        if not m.group(1) and name in _CLOSERS and not page.endswith("/>", 0, end):
            closer = _CLOSERS[name].search(page, i)
            i = n if closer is None else closer.end()
    text = html.unescape("".join(out))
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
