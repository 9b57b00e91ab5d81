"""Reranking against a reranker served on 127.0.0.1: one that ranks, errors, hangs, answers junk."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.web import Reply, Site
from tests.tooling import prepare, tool_ctx
from turnstoned import config as cfg
from turnstoned.core.toolset import ToolSearchHandle
from turnstoned.mcp.models import MCPTool
from turnstoned.net import rerank
from turnstoned.net.endpoints import Endpoints
from turnstoned.net.rerank import Reranker, RerankError, RerankerSpec, parse_scores, reorder
from turnstoned.net.services import WebServices, WebSettings, reranker_spec
from turnstoned.tools import memory, skill, web_search
from turnstoned.tools.base import PreparedCall, ToolContext

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "searxng"


def by_length(request: dict[str, Any]) -> Reply:
    """Longest document first: a ranking unlike any input order used below."""
    body = json.loads(request["body"])
    scores = [{"index": i, "relevance_score": len(d) / 1000} for i, d in enumerate(body["documents"])]
    return Reply(200, json.dumps({"results": scores}).encode(), {"Content-Type": "application/json"})


@pytest.fixture
def ranker() -> Iterator[Site]:
    site = Site("reranker")
    site.routes["/v1/rerank"] = by_length
    yield site
    site.close()


def make(site: Site, **spec: Any) -> Reranker:
    return Reranker(RerankerSpec(url=f"{site.url}/v1/rerank", **spec), Endpoints())


def sent(site: Site, n: int = -1) -> dict[str, Any]:
    return dict(json.loads(site.requests[n]["body"]))


async def test_request_shape_and_instruction(ranker: Site) -> None:
    r = make(ranker, model="qwen3-reranker", api_key="k-1", instruction="Find the docs")
    assert await r.rank("q", ["a", "ccc", "bb"]) == [1, 2, 0]
    body = sent(ranker)
    assert body == {"query": "<Instruct>: Find the docs\n<Query>: q", "documents": ["a", "ccc", "bb"],
                    "model": "qwen3-reranker"}
    assert ranker.requests[-1]["headers"]["Authorization"] == "Bearer k-1"
    plain = make(ranker)
    await plain.rank("q", ["x", "yy"])
    assert sent(ranker) == {"query": "q", "documents": ["x", "yy"]}
    assert "Authorization" not in ranker.requests[-1]["headers"]
    assert await plain.rank("q", []) == [] and len(ranker.requests) == 2  # no request


def test_both_answer_shapes_and_junk_entries() -> None:
    assert parse_scores({"results": [{"index": 1, "relevance_score": 0.9},
                                     {"index": 0, "relevance_score": 0.1, "score": 5}]}, 2) == [
        (1, 0.9), (0, 0.1)]
    assert parse_scores([{"index": 0, "score": 2}, {"index": 1, "score": 3}], 2) == [(1, 3.0),
                                                                                     (0, 2.0)]
    junk = [{"index": True, "score": 1}, {"index": 5, "score": 1}, {"index": 0, "score": "1"},
            {"index": -1, "score": 1}, "x", {"index": 1, "score": False}, {"index": 1, "score": 2},
            {"index": 1, "score": 9}]
    assert parse_scores(junk, 2) == [(1, 2.0)]
    assert parse_scores({"error": "x"}, 2) == []


async def test_failures_keep_the_original_order_with_a_log_line(
        ranker: Site, caplog: pytest.LogCaptureFixture) -> None:
    items = ["a", "ccc", "bb"]
    ranker.routes["/v1/rerank"] = Reply(500, b"boom")
    with caplog.at_level(logging.WARNING, logger="turnstoned.net.rerank"):
        assert await reorder(make(ranker), "q", items, str, "things") == items
    assert "reranking things failed (HTTP 500); keeping the original order" in caplog.text
    ranker.routes["/v1/rerank"] = Reply(200, b'{"results": []}')
    assert await reorder(make(ranker), "q", items, str, "things") == items
    ranker.routes["/v1/rerank"] = Reply(200, b"not json")
    assert await reorder(make(ranker), "q", items, str, "things") == items


async def test_a_hanging_reranker_is_given_up_on(ranker: Site,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    ranker.routes["/v1/rerank"] = Reply(hang=True)
    with caplog.at_level(logging.WARNING, logger="turnstoned.net.rerank"):
        assert await reorder(make(ranker, timeout=0.3), "q", ["a", "bb"], str, "x") == ["a", "bb"]
    assert "no answer within 0.3s" in caplog.text


async def test_the_circuit_opens_after_three_failures_then_probes(
        ranker: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    ranker.routes["/v1/rerank"] = Reply(503, b"down")
    r = make(ranker)
    for _ in range(3):
        with pytest.raises(RerankError):
            await r.rank("q", ["a", "bb"])
    with pytest.raises(RerankError, match="paused"):
        await r.rank("q", ["a", "bb"])
    assert len(ranker.requests) == 3
    monkeypatch.setattr(rerank, "OPEN_SECONDS", 0.0)
    r._open_until = 0.0  # the pause is over: one probe goes through
    ranker.routes["/v1/rerank"] = by_length
    assert await r.rank("q", ["a", "bb"]) == [1, 0] and len(ranker.requests) == 4
    assert await r.rank("q", ["a", "bb"]) == [1, 0]  # closed again


async def test_splice_keeps_omitted_and_pool_overflow_in_native_order(ranker: Site) -> None:
    ranker.routes["/v1/rerank"] = lambda req: Reply(200, json.dumps(
        [{"index": 3, "score": 0.9}, {"index": 1, "score": 0.5}, {"index": 3, "score": 0.1}]
    ).encode())
    items = [f"item{i}" for i in range(rerank.POOL + 3)]
    out = await reorder(make(ranker), "q", items, str, "x")
    assert out[:2] == ["item3", "item1"]
    assert out[2:5] == ["item0", "item2", "item4"] and out[-3:] == items[-3:]
    assert len(sent(ranker)["documents"]) == rerank.POOL and sorted(out) == sorted(items)


def reranked_ctx(tmp_path: Path, site: Site, **settings: Any) -> ToolContext:
    ctx = tool_ctx(tmp_path)
    ctx.env.services.web = WebServices(settings=WebSettings(**settings))
    ctx.env.services.web.reranker = Reranker(
        RerankerSpec(url=f"{site.url}/v1/rerank"), ctx.env.services.web.endpoints)
    return ctx


async def test_web_search_results_are_reranked(ranker: Site, tmp_path: Path) -> None:
    searx = Site("searxng")
    searx.routes["/search"] = Reply(200, (FIXTURES / "rust_async.json").read_bytes())
    try:
        ctx = reranked_ctx(tmp_path, ranker, searxng_url=searx.url)
        call = prepare(web_search, ctx, query="rust async runtime", max_results=2)
        assert call.needs_approval and call.error is None
        out = await web_search.execute(call, ctx)
    finally:
        searx.close()
    docs = sent(ranker)["documents"]
    assert docs[1] == "async-std\nAsync version of the Rust standard library."
    assert docs[3] == "smol-rs/smol: A small and fast async runtime for Rust"
    lines = [ln for ln in out.text().splitlines() if ln[:2] in ("1.", "2.")]
    assert lines == ["1. [Tokio - An asynchronous Rust runtime](https://tokio.rs/)",
                     "2. [Asynchronous Programming in Rust](https://rust-lang.github.io/async-book/)"]


async def test_searxng_with_nothing_names_the_unresponsive_engines(tmp_path: Path) -> None:
    searx = Site("searxng")
    searx.routes["/search"] = Reply(200, (FIXTURES / "nothing.json").read_bytes())
    searx.routes["/broken/search"] = Reply(502, b"bad gateway")
    try:
        ctx = tool_ctx(tmp_path)
        ctx.env.services.web = WebServices(settings=WebSettings(searxng_url=searx.url))
        out = await web_search.execute(prepare(web_search, ctx, query="zxqv flurble"), ctx)
        assert out.text() == "No results for 'zxqv flurble'. Unresponsive engines: google, brave."
        ctx.env.services.web = WebServices(settings=WebSettings(searxng_url=searx.url + "/broken"))
        out = await web_search.execute(prepare(web_search, ctx, query="x"), ctx)
        assert out.is_error and out.text() == "Error: web search failed: HTTP 502"
        ctx.env.services.web = WebServices(settings=WebSettings())
        assert prepare(web_search, ctx, query="x").error == web_search.NO_BACKEND
    finally:
        searx.close()


async def test_bm25_candidates_of_tool_search_skills_and_memory_are_reranked(
        ranker: Site, tmp_path: Path) -> None:
    ctx = reranked_ctx(tmp_path, ranker)
    tools = [MCPTool(name=f"mcp__gh__{n}", server="gh", tool=n, description=d) for n, d in [
        ("issue_get", "get an issue"), ("issue_list", "list every issue of a repository, paged"),
        ("issue_new", "create an issue")]]
    handle = ToolSearchHandle(tools, max_results=2)
    out = await handle.execute(PreparedCall(header="", data="issue"), ctx)
    assert out.text().splitlines()[1].startswith("- mcp__gh__issue_list")
    assert len(sent(ranker)["documents"]) == 3

    (tmp_path / ".turnstone" / "skills" / "a").mkdir(parents=True)
    (tmp_path / ".turnstone" / "skills" / "a" / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: deploy\n---\nbody\n")
    (tmp_path / ".turnstone" / "skills" / "b").mkdir(parents=True)
    (tmp_path / ".turnstone" / "skills" / "b" / "SKILL.md").write_text(
        "---\nname: deploy-staging\ndescription: deploy the app to the staging cluster\n---\nx\n")
    found = await skill.execute(prepare(skill, ctx, action="search", query="deploy"), ctx)
    assert found.text().splitlines()[1].startswith("- deploy-staging")


async def test_memory_search_is_reranked(ranker: Site, tmp_path: Path) -> None:
    from turnstoned.store import Store

    ctx = reranked_ctx(tmp_path, ranker)
    ctx.env.services.store = Store(tmp_path / "db.sqlite3")
    try:
        for name, content in [("port", "port"), ("port-notes", ("the dev server port is 8080, "
                                                               "the staging port is 9090"))]:
            out = await memory.execute(prepare(memory, ctx, action="save", name=name,
                                               description=name, content=content,
                                               scope="global"), ctx)
            assert not out.is_error, out.text()
        found = await memory.execute(prepare(memory, ctx, action="search", query="port",
                                             scope="global"), ctx)
        assert found.text().splitlines()[1].strip().startswith("[general:global] port_notes")
    finally:
        ctx.env.services.store.close()


def test_reranker_comes_from_a_models_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    def load(text: str) -> cfg.Config:
        import tomllib

        import msgspec

        return msgspec.convert(tomllib.loads(text), cfg.Config)

    entry = '[models.rr]\nbase_url = "http://127.0.0.1:9/rerank"\nname = "m"\nsupports_rerank = true\n'
    spec = reranker_spec(load(entry))
    assert spec is not None and (spec.url, spec.model, spec.api_key) == (
        "http://127.0.0.1:9/rerank", "m", "")
    assert reranker_spec(load(entry + '[tools]\nreranker_alias = "nope"\n')) is None
    assert reranker_spec(load(entry.replace("true", "false"))) is None
    keyed = entry + 'api_key_env = "RR_KEY"\n'
    assert reranker_spec(load(keyed)) is None
    monkeypatch.setenv("RR_KEY", "secret")
    spec = reranker_spec(load(keyed + '[tools]\nrerank_instruction = "Find"\ntimeout = 5\n'))
    assert spec is not None and (spec.api_key, spec.instruction, spec.timeout) == ("secret", "Find",
                                                                                   5.0)
