"""web_fetch, web_search and open_preview through whole turns of a real engine.

The scripted model server is on 127.0.0.1; "the internet" is loopback sites
reached through the fetcher's test-only resolver and dialer (tests/fakes/web.py).
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.conftest import RecordingSink, write_config
from tests.fakes.model_server import ScriptedModel, error, prompt_tokens, text, tool_calls
from tests.fakes.web import Internet, Reply, Site, page
from tests.turnkit import completed_tools, run, start, tool_messages
from turnstoned import config, paths
from turnstoned import protocol as p
from turnstoned.core.engine import Engine
from turnstoned.core.errors import EngineError
from turnstoned.daemon.handlers import build
from turnstoned.net.fetch import GuardedFetcher
from turnstoned.store import Store

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "searxng"
SEARCH_SERVER = Path(__file__).resolve().parent.parent / "mcp_servers" / "search.py"
PUB, NAS = "93.184.216.34", "192.168.1.20"
GUIDE = """<html><head><title>Server guide</title><script>stealCookies()</script></head>
<body><h1>Configuration</h1><p>The default port is <b>8080</b>.</p></body></html>"""

MakeEngine = Callable[[str], Awaitable[Engine]]


@pytest.fixture
def internet() -> Iterator[Internet]:
    net = Internet()
    docs = net.site("docs", PUB)
    docs.routes["/guide"] = page(GUIDE)
    net.site("nas", NAS).routes["/status"] = page("<p>disks: healthy</p>")
    net.name("docs.test", PUB)
    net.name("nas.test", NAS)
    yield net
    net.close()


@pytest.fixture
async def make_engine(sink: RecordingSink, model: ScriptedModel, isolated_home: Path,
                      internet: Internet) -> AsyncIterator[MakeEngine]:
    engines: list[Engine] = []

    async def make(toml: str) -> Engine:
        write_config(isolated_home, toml)
        engine = Engine(config.load(), Store(paths.database_file()), sink)
        engine.start()
        assert engine.services.web is not None
        engine.services.web.fetcher = GuardedFetcher(
            resolver=internet.resolve, dialer=internet.dial, proxies={})
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        await engine.shutdown()
        engine.terminate()


def call(name: str, **args: Any) -> list[tuple[str, str, str]]:
    return [(f"c-{name}", name, json.dumps(args))]


def tool_names(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools", [])}


async def test_a_public_page_is_fetched_and_answered(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        internet: Internet, tmp_path: Path) -> None:
    engine = await make_engine("")
    model.push(tool_calls(call("web_fetch", url="http://docs.test/guide",
                               question="What is the default port?")),
               text("The default port is 8080."), text("It is 8080."))
    done = await run(engine, sink, start(engine, tmp_path), "what port?")
    assert done["status"] == "completed"
    asked = sink.approvals[0]["items"][0]
    assert asked["header"] == "⚙ web_fetch: http://docs.test/guide"
    assert f"Resolves to: {PUB} (public)" in asked["preview"]
    assert "What is the default port?" in asked["preview"]
    _, side, after = model.requests
    assert "tools" not in side and side["max_tokens"] == 32768 // 4
    page_text = side["messages"][1]["content"]
    assert "The default port is 8080." in page_text and "Server guide" in page_text
    assert "stealCookies" not in page_text and "<b>" not in page_text
    result = tool_messages(after)[0]["content"]
    assert result == "The default port is 8080.\n\nSource: http://docs.test/guide"
    assert "Configuration" not in json.dumps(after["messages"])  # the page never reaches it
    assert internet.dials == [PUB]
    # Reading the page is the turn's spend too.
    assert done["usage"]["promptTokens"] == sum(prompt_tokens(r) for r in model.requests)


async def test_a_page_reaches_the_extraction_call_with_its_secrets_redacted(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        internet: Internet, tmp_path: Path) -> None:
    """A page is untrusted and may carry keys (a leaked .env, a paste): the side call that
    reads it goes to the model server too, so it gets the page as the guard left it."""
    planted = {
        "aws": "AKIAIOSFODNN7EXAMPLQ",
        "github": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "openai": "sk-proj-" + "Zx9" * 16,
        "env": "DATABASE_PASSWORD=hunter2-S3cret!",
        "pem": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAE"
               "bm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZWQyNTUxOQ\n-----END OPENSSH PRIVATE KEY-----",
        "url": "postgres://admin:pa55w0rd-x@db.internal:5432/app",
    }
    body = "<html><body><pre>" + "\n".join(planted.values()) + "</pre></body></html>"
    internet.site("paste", PUB).routes["/leak"] = page(body)
    internet.name("paste.test", PUB)
    engine = await make_engine("")
    model.push(tool_calls(call("web_fetch", url="http://paste.test/leak",
                               question="What is on this page?")),
               text("Some credentials."), text("done"))
    sink.answers.append(p.ApprovalResponse(decision="approve"))
    await run(engine, sink, start(engine, tmp_path), "read it")
    side = model.requests[1]["messages"][1]["content"]
    leaked = {name: value for name, value in planted.items()
              if value.split("=")[-1].split("@")[0][-12:] in side}
    assert leaked == {}
    assert "REDACTED" in side


async def test_private_targets_need_the_opt_in_and_ask_even_when_granted(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        internet: Internet, tmp_path: Path) -> None:
    engine = await make_engine('[tools]\nauto_approve_tools = ["web_fetch"]\n')
    model.push(tool_calls(call("web_fetch", url="http://nas.test/status", question="ok?")),
               text("refused"))
    await run(engine, sink, start(engine, tmp_path), "check the nas")
    result = tool_messages(model.requests[1])[0]["content"]
    assert "private/internal address" in result and "allow_private_network" in result
    assert sink.approvals == [] and internet.dials == []

    engine = await make_engine(
        '[tools]\nallow_private_network = true\nauto_approve_tools = ["web_fetch"]\n')
    model.push(tool_calls(call("web_fetch", url="http://docs.test/guide", question="port?")),
               text("8080"), text("ok"),
               tool_calls(call("web_fetch", url="http://nas.test/status", question="ok?")),
               text("The disks are healthy."), text("fine"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "public first")
    assert sink.approvals == []  # granted by auto_approve_tools
    await run(engine, sink, sid, "then the nas")
    asked = sink.approvals[0]["items"][0]
    assert asked["header"] == "⚙ web_fetch: http://nas.test/status (private network)"
    assert "private network" in asked["preview"] and f"{NAS} (private (RFC 1918))" in asked["preview"]
    assert internet.dials == [PUB, NAS]


async def test_web_search_is_offered_only_when_a_backend_resolves(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        tmp_path: Path) -> None:
    engine = await make_engine("")
    model.push(text("no search here"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "hi")
    assert "web_search" not in tool_names(model.requests[0])
    assert "web_fetch" in tool_names(model.requests[0])
    assert "web_search" not in {t.name for t in engine.tool_list(sid)}

    searx = Site("searxng")
    try:
        engine = await make_engine(f'[tools]\nsearxng_url = "{searx.url}"\n')
        sid = start(engine, tmp_path)
        assert "web_search" in {t.name for t in engine.tool_list(sid)}
    finally:
        searx.close()


async def test_searxng_results_are_formatted_for_the_model(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        tmp_path: Path) -> None:
    searx = Site("searxng")
    searx.routes["/search"] = Reply(200, (FIXTURES / "rust_async.json").read_bytes(),
                                    {"Content-Type": "application/json"})
    try:
        engine = await make_engine(
            f'[tools]\nsearxng_url = "{searx.url}/"\nsearxng_engines = "duckduckgo,brave"\n')
        model.push(tool_calls(call("web_search", query="rust async runtime", max_results=3,
                                   category="it")), text("done"))
        await run(engine, sink, start(engine, tmp_path), "search")
    finally:
        searx.close()
    assert sink.approvals[0]["items"][0]["header"] == "⚙ web_search: rust async runtime"
    sent = searx.requests[0]["path"]
    assert sent.startswith("/search?") and "q=rust+async+runtime" in sent
    assert "format=json" in sent and "categories=it" in sent
    assert "engines=duckduckgo%2Cbrave" in sent
    assert tool_messages(model.requests[1])[0]["content"] == (
        "Answer: Tokio is the most widely used async runtime.\n\n"
        "Tokio is a software library for the Rust programming language. It provides a runtime "
        "and functions that enable the use of asynchronous I/O.\n\n"
        "1. [Tokio - An asynchronous Rust runtime](https://tokio.rs/)\n"
        "   Tokio is an asynchronous runtime for the Rust programming language. It provides the "
        "building blocks needed for writing network applications.\n"
        "2. [async-std](https://async.rs/)\n"
        "   Async version of the Rust standard library.\n"
        "3. [Asynchronous Programming in Rust](https://rust-lang.github.io/async-book/)\n"
        "   This book aims to be a thorough guide to asynchronous programming in Rust, from "
        "beginner to advanced.")


async def test_mcp_search_backend(make_engine: MakeEngine, sink: RecordingSink,
                                  model: ScriptedModel, tmp_path: Path) -> None:
    engine = await make_engine(
        '[tools]\nweb_search_backend = "mcp:find:search"\nsearch = "off"\n'
        f'[mcp.servers.find]\ncommand = "{sys.executable}"\nargs = ["{SEARCH_SERVER}"]\n')
    await engine.mcp.wait_ready(20)
    model.push(tool_calls(call("web_search", query="turnstone", max_results=2)), text("done"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "search")
    assert "web_search" in tool_names(model.requests[0])
    assert "sent to MCP find/search" in sink.approvals[0]["items"][0]["preview"]
    assert tool_messages(model.requests[1])[0]["content"] == (
        "1. result 1 for 'turnstone'\n2. result 2 for 'turnstone'")


async def preview_read(engine: Engine, session_id: str, preview_id: str) -> dict[str, Any]:
    handler = build(lambda: engine)["preview/read"]
    result = await handler(p.PreviewReadParams(session_id=session_id, preview_id=preview_id))
    return dict(msgspec.to_builtins(result))


async def test_open_preview_of_a_file_and_a_url(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        internet: Internet, tmp_path: Path, isolated_home: Path) -> None:
    engine = await make_engine("")
    notes = "# Notes\n\nSome *markdown* here.\n"
    (tmp_path / "notes.md").write_text(notes)
    model.push(tool_calls(call("open_preview", target="notes.md")), text("shown"),
               tool_calls(call("open_preview", target="http://docs.test/guide")), text("shown"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "show my notes")
    assert sink.approvals == []  # a local file does not ask
    opened = sink.of("preview/open")[0]
    digest = hashlib.sha256(b"preview:" + notes.encode()).hexdigest()
    assert (opened["previewId"], opened["kind"], opened["title"]) == (digest, "markdown",
                                                                      "notes.md")
    assert opened["csp"] == "default-src 'none'; sandbox"
    assert opened["callId"] == completed_tools(sink)[0]["callId"]  # the call that opened it
    assert tool_messages(model.requests[1])[0]["content"] == (
        f"Preview shown to the user: notes.md (markdown, {len(notes)} bytes)")
    got = await preview_read(engine, sid, digest)
    assert base64.b64decode(got["data"]).decode() == notes and got["eof"] is True

    await run(engine, sink, sid, "show the guide")
    assert sink.approvals[0]["items"][0]["header"] == "⚙ open_preview: http://docs.test/guide"
    web = sink.of("preview/open")[1]
    assert (web["kind"], web["title"], web["source"]) == ("web", "Server guide",
                                                          "http://docs.test/guide")
    assert "default-src 'none'" in web["csp"] and "script" not in web["csp"]
    body = base64.b64decode((await preview_read(engine, sid, web["previewId"]))["data"]).decode()
    assert body.startswith('<html><head><base href="http://docs.test/guide"><title>')

    folder = isolated_home / "data" / "previews" / sid
    assert (folder / digest).read_bytes() == notes.encode()
    await engine.close_session(sid)
    assert not folder.exists()  # removed with its session
    with pytest.raises(EngineError) as info:
        await preview_read(engine, sid, digest)
    assert info.value.code == p.ErrorCode.SESSION_CLOSED


async def test_preview_read_in_pieces_and_unknown_ids(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        tmp_path: Path) -> None:
    engine = await make_engine("")
    (tmp_path / "blob.csv").write_text("a,b\n" + "1,2\n" * 100)
    model.push(tool_calls(call("open_preview", target="blob.csv", title="Numbers")), text("ok"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "table")
    opened = sink.of("preview/open")[0]
    assert (opened["kind"], opened["contentType"], opened["title"]) == ("table", "text/csv",
                                                                       "Numbers")
    handler = build(lambda: engine)["preview/read"]
    part = await handler(p.PreviewReadParams(session_id=sid, preview_id=opened["previewId"],
                                             offset=4, length=8))
    assert base64.b64decode(part.data) == b"1,2\n1,2\n" and part.eof is False
    with pytest.raises(EngineError) as info:
        await handler(p.PreviewReadParams(session_id=sid, preview_id="0" * 64))
    assert info.value.code == p.ErrorCode.PREVIEW_NOT_FOUND
    with pytest.raises(EngineError):
        await handler(p.PreviewReadParams(session_id=sid, preview_id="../../etc/passwd"))


async def test_closed_sessions_previews_are_swept_at_start(
        make_engine: MakeEngine, isolated_home: Path, tmp_path: Path) -> None:
    engine = await make_engine("")
    live = start(engine, tmp_path)
    store = engine.services.previews
    assert store is not None
    store.put(live, b"kept", kind="text", title="t", source="s", content_type="text/plain")
    store.put("0" * 32, b"orphan", kind="text", title="t", source="s", content_type="text/plain")
    again = await make_engine("")
    assert again.services.previews is not None
    assert (isolated_home / "data" / "previews" / live).is_dir()
    assert not (isolated_home / "data" / "previews" / ("0" * 32)).exists()


async def test_web_fetch_failures_are_results_the_model_reads(
        make_engine: MakeEngine, sink: RecordingSink, model: ScriptedModel,
        internet: Internet, tmp_path: Path) -> None:
    docs = internet.owners[PUB]
    docs.routes["/logo.png"] = Reply(200, b"\x89PNG\r\n\x1a\n....", {"Content-Type": "image/png"})
    docs.routes["/empty"] = page("<html><script>x()</script></html>")
    docs.routes["/old"] = Reply(301, b"", {"Location": "/guide"})
    docs.routes["/nothing-here"] = page("gone", status=404)
    engine = await make_engine("")
    model.push(tool_calls(call("web_fetch", url="http://docs.test/logo.png", question="?")),
               tool_calls(call("web_fetch", url="http://docs.test/empty", question="?")),
               tool_calls(call("web_fetch", url="http://docs.test/nothing-here", question="?")),
               tool_calls(call("web_fetch", url="http://docs.test/old", question="port?")),
               error(400, "the extraction request was refused"),
               tool_calls(call("web_fetch", url="http://docs.test/old", question="port?")),
               text("8080"), text("done"))
    await run(engine, sink, start(engine, tmp_path), "fetch things")
    results = [m["content"] for m in tool_messages(model.requests[-1])]
    assert results[0].startswith("Error: http://docs.test/logo.png is not a text page (image/png)")
    assert results[1] == "Error: fetch returned empty response"
    assert results[2] == "Error: fetch failed: HTTP 404"
    assert results[3].startswith("Extraction failed (page was fetched but summarization "
                                 "errored): ")
    assert results[4] == "8080\n\nSource: http://docs.test/guide (redirected from " \
                         "http://docs.test/old)"
    items = [e["item"] for e in sink.of("item/completed") if e["item"]["type"] == "toolCall"]
    assert [i["isError"] for i in items] == [True, True, True, True, False]
