"""The web services a daemon gives its tools, built from the configuration."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from turnstoned.net.endpoints import Endpoints
from turnstoned.net.rerank import MAX_TIMEOUT, Reranker, RerankerSpec

if TYPE_CHECKING:
    from turnstoned.config import Config
    from turnstoned.net.fetch import GuardedFetcher

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WebSettings:
    allow_private_network: bool = False
    timeout: float = 120.0
    searxng_url: str = ""
    searxng_engines: str = ""
    web_search_backend: str = ""
    rerank_web_search: bool = True
    rerank_bm25: bool = True


@dataclass(slots=True)
class WebServices:
    """Fetcher, configured endpoints and reranker; the fetcher is built on first use."""

    settings: WebSettings = field(default_factory=WebSettings)
    endpoints: Endpoints = field(default_factory=Endpoints)
    reranker: Reranker | None = None
    _fetcher: GuardedFetcher | None = None

    @property
    def fetcher(self) -> GuardedFetcher:
        if self._fetcher is None:
            from turnstoned.net.fetch import GuardedFetcher

            self._fetcher = GuardedFetcher()
        return self._fetcher

    @fetcher.setter
    def fetcher(self, value: GuardedFetcher) -> None:
        self._fetcher = value

    def bm25_reranker(self) -> Reranker | None:
        """The reranker for memory, tool and skill candidates, if that is switched on."""
        return self.reranker if self.settings.rerank_bm25 else None

    async def aclose(self) -> None:
        await self.endpoints.aclose()


def reranker_spec(config: Config) -> RerankerSpec | None:
    """The ``[models.<alias>]`` entry the reranker uses: the one ``reranker_alias`` names,
    else the only entry with ``supports_rerank``; None when there is none or it is unusable."""
    tools = config.tools
    alias = tools.reranker_alias
    if not alias:
        candidates = [name for name, entry in config.models.items() if entry.supports_rerank]
        if len(candidates) != 1:
            return None
        alias = candidates[0]
    entry = config.models.get(alias)
    if entry is None or not entry.supports_rerank:
        log.warning("[tools] reranker_alias %r names no [models] entry with supports_rerank; "
                    "reranking is off", alias)
        return None
    key = os.environ.get(entry.api_key_env, "") if entry.api_key_env else ""
    if entry.api_key_env and not key:
        log.warning("[models.%s] api_key_env names %s, which is not set; reranking is off",
                    alias, entry.api_key_env)
        return None
    return RerankerSpec(url=entry.base_url, model=entry.name, api_key=key,
                        instruction=tools.rerank_instruction,
                        timeout=min(float(tools.timeout), MAX_TIMEOUT),
                        max_concurrency=entry.max_concurrency)


def web_settings(config: Config) -> WebSettings:
    tools = config.tools
    return WebSettings(
        allow_private_network=tools.allow_private_network, timeout=float(tools.timeout),
        searxng_url=tools.searxng_url.strip(), searxng_engines=tools.searxng_engines,
        web_search_backend=tools.web_search_backend, rerank_web_search=tools.rerank_web_search,
        rerank_bm25=tools.rerank_bm25)


def from_config(config: Config) -> WebServices:
    web = WebServices(settings=web_settings(config))
    spec = reranker_spec(config)
    if spec is not None:
        web.reranker = Reranker(spec, web.endpoints)
    return web
