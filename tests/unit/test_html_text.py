"""HTML to text: what is kept, what is dropped, and linear time on hostile pages."""

from __future__ import annotations

import pytest

from turnstoned.net.html import title, to_text, with_base

PAGE = """<!DOCTYPE html><html><head><title> The  &amp; Title </title>
<style>body { color: red } p > a { }</style><script>var s = "</div>"; if (a < b) {}</script>
</head><body><nav>Home | About</nav><!-- a comment with <p>markup</p> -->
<h1>Heading</h1><p>First   paragraph with <a href="x?a=1&amp;b=2" title='a > b'>a link</a>
and&nbsp;an&nbsp;entity &eacute; &#233; &#xE9;.</p><div>Second<br>line</div>
<SCRIPT type="text/javascript">document.write("hidden")</SCRIPT ><noscript>no js</noscript>
<template><p>template</p></template><ul><li>one</li><li>two</li></ul>
<p>1 &lt; 2 and 3 > 2 and a < b</p></body></html>"""


def test_page_text() -> None:
    text = to_text(PAGE)
    assert text == (
        "The & Title\n\nHome | About\n\nHeading\n\nFirst paragraph with a link\n"
        "and an entity é é é.\n\nSecond\nline\n\none\n\ntwo\n\n1 < 2 and 3 > 2 and a < b")
    for hidden in ("color: red", "hidden", "no js", "template", "markup", "var s"):
        assert hidden not in text


def test_title_and_base() -> None:
    assert title(PAGE) == "The & Title"
    assert title("<p>no title</p>") == "" and title("<title>unclosed") == ""
    based = with_base(PAGE, 'https://example.com/a"b')
    assert '<head><base href="https://example.com/a&quot;b">' in based
    assert with_base("<html lang=en><body>x", "u").startswith('<html lang=en><base href="u">')
    assert with_base("plain", "u") == '<base href="u">plain'
    assert with_base('<head><base href="/x"></head>', "u") == '<head><base href="/x"></head>'


def test_unclosed_constructs() -> None:
    """Hidden blocks that never close hide the rest; a tag that never closes is text."""
    assert to_text("text <!-- never closed <p>x</p>") == "text"
    assert to_text("a <script>never closed</p>") == "a"
    assert to_text("a <style x='never closed</p>") == "a"
    assert to_text('b <a href="unclosed>c</a>') == 'b <a href="unclosed>c'
    assert to_text("c <p class=x") == "c <p class=x"
    assert to_text("<a title='1 > 0'>ok</a> <br/> <x-y>z</x-y>") == "ok\nz"


HOSTILE = {
    "lt": "<" * 2_000_000,
    "open tags": "<a " * 700_000,
    "comments": "<!--" * 500_000,
    "scripts": "<script>" * 250_000,
    "quotes": '<a href="' * 250_000,
    "closers": "</script " * 250_000,
    "titles": "<title>" * 300_000,
    "entities": "&amp" * 500_000,
    "nested": "<div>" * 400_000 + "x" + "</div>" * 400_000,
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_pages_finish(name: str) -> None:
    """A quadratic pass over 2 MB would not end within the timeout."""
    page = HOSTILE[name]
    to_text(page)
    title(page)
    with_base(page, "https://example.com/")
