"""Preview kinds: explicit kind, magic bytes, content type, extension, UTF-8; caps."""

from __future__ import annotations

import pytest

from turnstoned.tools._preview import CAPS, NotPreviewable, as_utf8, check_cap, resolve

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 16
PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"
WEBP = b"RIFF\x24\0\0\0WEBPVP8 " + b"\0" * 8


@pytest.mark.parametrize(("explicit", "body", "ctype", "suffix", "kind", "out_type"), [
    ("", PNG, "text/plain", ".txt", "image", "image/png"),  # bytes beat the header
    ("", b"\xff\xd8\xff\xe0" + b"\0" * 8, "", "", "image", "image/jpeg"),
    ("", b"GIF89a" + b"\0" * 8, "", "", "image", "image/gif"),
    ("", WEBP, "", "", "image", "image/webp"),
    ("", PDF, "application/octet-stream", "", "pdf", "application/pdf"),
    ("", b"<p>x</p>", "text/html; charset=utf-8", "", "web", "text/html"),
    ("", b"a,b\n1,2\n", "text/csv", "", "table", "text/csv"),
    ("", b'{"a": 1}', "application/json", "", "table", "application/json"),
    ("", b"a\tb\n", "", ".tsv", "table", "text/tab-separated-values"),
    ("", b"# T\n", "text/markdown", "", "markdown", "text/markdown"),
    ("", b"# T\n", "", ".md", "markdown", "text/markdown"),
    ("", b"hello", "text/x-python", "", "text", "text/plain"),
    ("", b"<html>", "", ".htm", "web", "text/html"),
    ("", "plain ünïcode".encode(), "", "", "text", "text/plain"),
    ("text", b"<p>x</p>", "text/html", ".html", "text", "text/plain"),
    ("table", b'{"a": 1}', "", ".json", "table", "application/json"),
    ("markdown", b"x", "", "", "markdown", "text/markdown"),
    ("image", PNG, "", "", "image", "image/png"),
    ("pdf", PDF, "", "", "pdf", "application/pdf"),
])
def test_kind_resolution(explicit: str, body: bytes, ctype: str, suffix: str, kind: str,
                         out_type: str) -> None:
    got = resolve(explicit, body, ctype, suffix)
    assert (got.kind, got.content_type) == (kind, out_type)


@pytest.mark.parametrize(("explicit", "body", "ctype", "suffix", "says"), [
    ("pdf", b"not a pdf", "application/pdf", ".pdf", "not a valid pdf"),
    ("image", PDF, "image/png", ".png", "not a valid image"),
    ("text", b"a\0b", "", "", "binary content"),
    ("", b"%PDX", "application/pdf", ".pdf", "not previewable"),  # claims only
    ("", b"\x00\x01\x02\xff", "application/octet-stream", "", "not previewable"),
    ("", b"\xff\xfe\x00garbage", "", ".bin", "not previewable"),
    ("", b"text\0with nul", "text/plain", "", "not previewable"),
])
def test_refusals(explicit: str, body: bytes, ctype: str, suffix: str, says: str) -> None:
    with pytest.raises(NotPreviewable, match=says):
        resolve(explicit, body, ctype, suffix)


def test_caps_and_transcoding() -> None:
    assert CAPS == {"web": 4 << 20, "pdf": 32 << 20, "image": 4 << 20, "table": 2 << 20,
                    "text": 512 << 10, "markdown": 512 << 10}
    check_cap("text", 512 << 10)
    with pytest.raises(NotPreviewable, match="text content too large to preview"):
        check_cap("text", (512 << 10) + 1)
    assert as_utf8("café".encode("latin-1"), "text/plain; charset=iso-8859-1") == "café".encode()
    assert as_utf8("café".encode("cp1252"), "") == "café".encode()
    assert as_utf8(b"\xef\xbb\xbfbom", "") == b"bom"
