"""web_search through a SearxNG instance's JSON API, and the result text the model reads."""

from __future__ import annotations

from typing import Any

from turnstoned.net.endpoints import Endpoints

CATEGORIES = ("general", "news", "it", "science")
SNIPPET = 500


async def search(endpoints: Endpoints, base_url: str, query: str, category: str, engines: str,
                 timeout: float) -> dict[str, Any]:
    """``GET <base>/search?q=…&format=json``; ``EndpointError`` when it cannot answer."""
    params = {"q": query, "format": "json"}
    if category != "general":
        params["categories"] = category
    if engines.strip():
        params["engines"] = engines.strip()
    data = await endpoints.get_json(base_url.rstrip("/") + "/search", params, timeout)
    return data if isinstance(data, dict) else {}


def results(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in data.get("results") or () if isinstance(r, dict)]


def document(result: dict[str, Any]) -> str:
    """A result's text for a reranker: title and snippet."""
    return f"{_str(result.get('title'))}\n{_str(result.get('content'))}".strip()


def _str(value: Any) -> str:
    return "" if value is None else str(value)


def _answers(data: dict[str, Any]) -> str:
    found = []
    for answer in data.get("answers") or ():
        text = _str(answer.get("answer") if isinstance(answer, dict) else answer).strip()
        if text:
            found.append(text)
    return f"Answer: {' '.join(found)}" if found else ""


def _infobox(data: dict[str, Any]) -> str:
    for box in data.get("infoboxes") or ():
        content = _str(box.get("content")).strip() if isinstance(box, dict) else ""
        if content:
            return content[:SNIPPET]
    return ""


def _unresponsive(data: dict[str, Any]) -> list[str]:
    names = []
    for entry in data.get("unresponsive_engines") or ():
        name = entry[0] if isinstance(entry, list) and entry else entry
        if name:
            names.append(_str(name))
    return names


def render(data: dict[str, Any], ordered: list[dict[str, Any]], query: str,
           max_results: int) -> str:
    """Answers, the first infobox, then the top results as a numbered list."""
    lines = []
    for n, result in enumerate(ordered[:max_results], 1):
        title = " ".join(_str(result.get("title")).split()) or _str(result.get("url"))
        snippet = " ".join(_str(result.get("content")).split())[:SNIPPET]
        lines.append(f"{n}. [{title}]({_str(result.get('url'))})" +
                     (f"\n   {snippet}" if snippet else ""))
    sections = [s for s in (_answers(data), _infobox(data), "\n".join(lines)) if s]
    if sections:
        return "\n\n".join(sections)
    dead = _unresponsive(data)
    return f"No results for '{query}'." + (
        f" Unresponsive engines: {', '.join(dead)}." if dead else "")
