"""HTTP to the services the user configured: a SearxNG instance, a reranker.

These URLs come from the user's own config.toml, never from a model, a page
or a workspace, so they are trusted and not screened (they usually live on
the user's own machine or network). Still, every call has an overall
deadline, a cap on the answer's size, and no redirects; the environment's
proxy settings apply as for any client.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    import httpx2

MAX_ANSWER_BYTES = 8 << 20


class EndpointError(Exception):
    """The service could not be reached or answered badly; the message says how."""


class Endpoints:
    """One pooled client for the configured services, opened on first use."""

    def __init__(self) -> None:
        self._client: httpx2.AsyncClient | None = None

    def _http(self) -> httpx2.AsyncClient:
        if self._client is None:
            import httpx2

            self._client = httpx2.AsyncClient(trust_env=True, follow_redirects=False)
        return self._client

    async def get_json(self, url: str, params: dict[str, str], timeout: float) -> Any:
        return await self._call("GET", url, timeout, params=params)

    async def post_json(self, url: str, payload: dict[str, Any], headers: dict[str, str],
                        timeout: float) -> Any:
        return await self._call("POST", url, timeout, content=msgspec.json.encode(payload),
                                headers={"Content-Type": "application/json", **headers})

    async def _call(self, method: str, url: str, timeout: float, **kw: Any) -> Any:
        import httpx2

        try:
            async with asyncio.timeout(timeout):
                async with self._http().stream(method, url, timeout=timeout, **kw) as response:
                    if not response.is_success:
                        raise EndpointError(f"HTTP {response.status_code}")
                    body = bytearray()
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) > MAX_ANSWER_BYTES:
                            raise EndpointError("the answer is too large")
        except TimeoutError as exc:
            raise EndpointError(f"no answer within {timeout:g}s") from exc
        except httpx2.HTTPError as exc:
            raise EndpointError(f"{type(exc).__name__}: {exc}") from exc
        try:
            return msgspec.json.decode(bytes(body))
        except msgspec.DecodeError as exc:
            raise EndpointError(f"the answer is not JSON: {exc}") from exc

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
