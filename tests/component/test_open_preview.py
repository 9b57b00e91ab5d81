"""open_preview at the tool level: targets, kinds, caps, attachments, the store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.web import Internet, Reply, page
from tests.tooling import prepare, tool_ctx
from turnstoned.net.fetch import GuardedFetcher
from turnstoned.net.services import WebServices, WebSettings
from turnstoned.store.previews import PreviewRecord, PreviewStore
from turnstoned.tools import open_preview
from turnstoned.tools.base import ToolContext, ToolOutput

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32


@pytest.fixture
def internet() -> Iterator[Internet]:
    net = Internet()
    site = net.site("files", "93.184.216.34")
    site.routes["/report.pdf"] = Reply(200, b"%PDF-1.7\n...", {"Content-Type": "application/pdf"})
    site.routes["/fake.pdf"] = Reply(200, b"<html>not a pdf</html>",
                                     {"Content-Type": "application/pdf"})
    site.routes["/latin"] = Reply(200, "<title>Caf\xe9</title>".encode("latin-1"),
                                  {"Content-Type": "text/html; charset=iso-8859-1"})
    site.routes["/huge"] = page("x" * (4 << 20))
    net.name("files.test", "93.184.216.34")
    net.name("nas.test", "10.1.1.1")
    yield net
    net.close()


@pytest.fixture
def ctx(tmp_path: Path, internet: Internet) -> ToolContext:
    ctx = tool_ctx(tmp_path / "work")
    (tmp_path / "work").mkdir()
    web = WebServices(settings=WebSettings(timeout=10))
    web.fetcher = GuardedFetcher(resolver=internet.resolve, dialer=internet.dial, proxies={})
    ctx.env.services.web = web
    ctx.env.services.previews = PreviewStore(tmp_path / "previews")
    opened: list[PreviewRecord] = []
    ctx.env.services.preview_opened = lambda sid, call, record, csp: opened.append(record)
    ctx.env.state["opened"] = opened
    return ctx


async def show(ctx: ToolContext, **args: str) -> ToolOutput:
    call = prepare(open_preview, ctx, **args)
    if call.error:
        return ToolOutput(call.error, is_error=True)
    return await open_preview.execute(call, ctx)


def opened(ctx: ToolContext) -> list[PreviewRecord]:
    return list(ctx.env.state["opened"])


async def test_local_targets_by_their_bytes(ctx: ToolContext) -> None:
    (ctx.env.cwd / "chart.txt").write_bytes(PNG)
    out = await show(ctx, target="chart.txt")
    assert out.text() == f"Preview shown to the user: chart.txt (image, {len(PNG)} bytes)"
    record = opened(ctx)[0]
    assert (record.kind, record.content_type) == ("image", "image/png")
    again = await show(ctx, target=f"attachment:{record.id}", title="Again")
    assert not again.is_error and opened(ctx)[1].id == record.id
    assert opened(ctx)[1].title == "Again"
    assert prepare(open_preview, ctx, target="chart.txt").needs_approval is False


@pytest.mark.parametrize(("args", "says"), [
    ({"target": ""}, "Error: missing target"),
    ({"target": "x", "kind": "video"}, "Error: kind must be one of"),
    ({"target": "attachment:"}, "Error: attachment:<id> requires an id"),
    ({"target": "attachment:" + "a" * 64}, "Error: attachment not found"),
    ({"target": "missing.md"}, "Error: file not found: missing.md"),
    ({"target": "empty.txt"}, "Error: nothing to preview (empty content)"),
    ({"target": "big.md"}, "Error: markdown content too large to preview"),
    ({"target": "tool.bin"}, "Error: content is not previewable"),
    ({"target": "notes.md", "kind": "pdf"}, "Error: the content is not a valid pdf"),
    ({"target": "http://nas.test/"}, "allow_private_network"),
    ({"target": "http://169.254.169.254/"}, "never allowed"),
])
async def test_refusals(ctx: ToolContext, args: dict[str, str], says: str) -> None:
    (ctx.env.cwd / "empty.txt").write_bytes(b"")
    (ctx.env.cwd / "big.md").write_text("# big\n" + "x" * (512 << 10))
    (ctx.env.cwd / "tool.bin").write_bytes(b"\x7fELF\x02\x01\x01\0")
    (ctx.env.cwd / "notes.md").write_text("# notes\n")
    out = await show(ctx, **args)
    assert out.is_error and says in out.text(), out.text()
    assert opened(ctx) == []


async def test_url_targets_ask_and_are_read_by_their_bytes(ctx: ToolContext) -> None:
    call = prepare(open_preview, ctx, target="http://files.test/report.pdf")
    assert call.needs_approval and call.approval_label == "open_preview" and call.grantable
    out = await open_preview.execute(call, ctx)
    assert out.text() == "Preview shown to the user: report.pdf (pdf, 12 bytes)"
    assert opened(ctx)[0].source == "http://files.test/report.pdf"
    fake = await show(ctx, target="http://files.test/fake.pdf")
    assert fake.is_error and "claims to be application/pdf" in fake.text()
    latin = await show(ctx, target="http://files.test/latin")
    assert latin.text().startswith("Preview shown to the user: Café (web, ")
    huge = await show(ctx, target="http://files.test/huge")
    assert "web content too large to preview" in huge.text()


async def test_files_outside_the_workspace_ask_and_credential_stores_are_refused(
        ctx: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n")
    monkeypatch.setenv("HOME", str(home))
    (ctx.env.cwd / "key").symlink_to(home / ".ssh" / "id_ed25519")
    out = await show(ctx, target="key")
    assert out.is_error and "credential store" in out.text() and opened(ctx) == []
    (tmp_path / "elsewhere.md").write_text("# elsewhere\n")
    call = prepare(open_preview, ctx, target=str(tmp_path / "elsewhere.md"))
    assert call.needs_approval and call.approval_label == "read_outside_workspace"
    assert "outside the workspace" in call.header
