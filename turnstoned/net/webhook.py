"""POSTs to the webhooks the user configured for ``notify`` (generic JSON, Slack, Discord).

The URLs come from the user's own config.toml (or an environment variable it
names), never from a model, a page or a workspace: they are trusted like the
other services the user configures and are not screened for private
addresses: unlike the fetcher's, these requests go to endpoints the user named.

A delivery is tried three times: at once, after 1 s, then after 3 s more.
A webhook URL can embed a token (Slack's do), so neither the URL nor the
answer's body ever appears in what the model or the editor is told.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from turnstoned.config import ChannelConfig

RETRY_DELAYS = (1.0, 3.0)
DISCORD_LIMIT = 2000  # characters of a Discord message


class WebhookError(Exception):
    """One attempt failed; the message says how (without the URL)."""


def payload(fmt: str, title: str | None, message: str, context: dict[str, str]) -> dict[str, Any]:
    """The body for a channel's format: Slack ``text``, Discord ``content``, or generic JSON."""
    if fmt == "slack":
        return {"text": f"*{title}*\n{message}" if title else message}
    if fmt == "discord":
        content = f"**{title}**\n{message}" if title else message
        return {"content": content[:DISCORD_LIMIT]}
    return {"title": title, "message": message, "source": "turnstoned", **context}


def channel_url(channel: ChannelConfig) -> str:
    """The channel's URL; WebhookError when its environment variable is not set."""
    if channel.url:
        return channel.url
    url = os.environ.get(channel.url_env or "", "")
    if not url.lower().startswith(("http://", "https://")):
        raise WebhookError(f"the environment variable {channel.url_env} does not hold an "
                           "http(s) URL")
    return url


async def post(url: str, body: dict[str, Any], headers: dict[str, str], timeout: float) -> None:
    """One POST; any 2xx answer is success."""
    import httpx2

    try:
        async with httpx2.AsyncClient(trust_env=True, follow_redirects=False) as client:
            async with asyncio.timeout(timeout):
                response = await client.post(
                    url, content=msgspec.json.encode(body), timeout=timeout,
                    headers={"Content-Type": "application/json", **headers})
    except TimeoutError as exc:
        raise WebhookError(f"no answer within {timeout:g}s") from exc
    except httpx2.HTTPError as exc:
        raise WebhookError(type(exc).__name__) from exc
    if not response.is_success:
        raise WebhookError(f"HTTP {response.status_code}")


async def deliver(channel: ChannelConfig, body: dict[str, Any], timeout: float) -> str | None:
    """Post ``body`` with retries; None on success, else why the last attempt failed."""
    try:
        url = channel_url(channel)
    except WebhookError as exc:
        return str(exc)
    error = ""
    for delay in (0.0, *RETRY_DELAYS):
        if delay:
            await asyncio.sleep(delay)
        try:
            await post(url, body, channel.headers, timeout)
            return None
        except WebhookError as exc:
            error = str(exc)
    return f"{error} after {len(RETRY_DELAYS) + 1} attempts"
