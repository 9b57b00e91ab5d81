"""Reranking through a Cohere/Jina-compatible ``/rerank`` endpoint.

The endpoint is a ``[models.<alias>]`` entry with ``supports_rerank = true``
(its ``base_url`` is the full endpoint URL). Request: ``POST {"query",
"documents", "model"?}`` with a bearer key when one is configured. Answer:
``{"results": [{"index", "relevance_score"}]}`` or a bare list of ``{"index",
"score"}``. Reranking never fails a caller: any error (unreachable, an error
status, a hang past the timeout, nothing usable in the answer, the circuit
open) keeps the original order and logs a line. Three failures in a row open
the circuit for 30 s; then one call probes it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from turnstoned.net.endpoints import EndpointError, Endpoints

log = logging.getLogger(__name__)

T = TypeVar("T")
POOL = 50
MAX_TIMEOUT = 15.0
MAX_DOCUMENT_CHARS = 4000  # rerankers read a few hundred tokens; long memories are cut
FAILURES_TO_OPEN = 3
OPEN_SECONDS = 30.0


class RerankError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class RerankerSpec:
    url: str
    model: str = ""
    api_key: str = ""
    instruction: str = ""
    timeout: float = MAX_TIMEOUT
    max_concurrency: int = 4


def parse_scores(data: Any, count: int) -> list[tuple[int, float]]:
    """``(index, score)`` pairs from either answer shape; malformed entries are dropped."""
    rows = data.get("results") if isinstance(data, dict) else data
    hits: dict[int, float] = {}
    for row in rows if isinstance(rows, list) else ():
        if not isinstance(row, dict):
            continue
        index = row.get("index")
        score = row.get("relevance_score", row.get("score"))
        if (isinstance(index, int) and not isinstance(index, bool) and 0 <= index < count
                and isinstance(score, (int, float)) and not isinstance(score, bool)
                and index not in hits):
            hits[index] = float(score)
    return sorted(hits.items(), key=lambda hit: -hit[1])


class Reranker:
    """One configured endpoint, with a concurrency limit and a circuit breaker."""

    def __init__(self, spec: RerankerSpec, endpoints: Endpoints) -> None:
        self.spec = spec
        self._endpoints = endpoints
        self._slots = asyncio.Semaphore(spec.max_concurrency)
        self._failures = 0
        self._open_until = 0.0
        self._probing = False

    def _admit(self) -> bool:
        """Closed: yes. Open: no, until the pause is over; then one probe at a time."""
        if self._failures < FAILURES_TO_OPEN:
            return True
        if time.monotonic() < self._open_until or self._probing:
            return False
        self._probing = True
        return True

    def _record(self, ok: bool) -> None:
        self._probing = False
        if ok:
            self._failures = 0
            return
        self._failures += 1
        if self._failures >= FAILURES_TO_OPEN:
            self._open_until = time.monotonic() + OPEN_SECONDS

    async def rank(self, query: str, documents: Sequence[str]) -> list[int]:
        """Document indices, most relevant first; ``RerankError`` when there is no ranking."""
        if not documents:
            return []
        if not self._admit():
            raise RerankError("the reranker failed repeatedly; paused for a while")
        if self.spec.instruction:
            query = f"<Instruct>: {self.spec.instruction}\n<Query>: {query}"
        payload: dict[str, Any] = {"query": query,
                                   "documents": [d[:MAX_DOCUMENT_CHARS] for d in documents]}
        if self.spec.model:
            payload["model"] = self.spec.model
        headers = {"Authorization": f"Bearer {self.spec.api_key}"} if self.spec.api_key else {}
        try:
            async with self._slots:
                data = await self._endpoints.post_json(self.spec.url, payload, headers,
                                                       self.spec.timeout)
            hits = parse_scores(data, len(documents))
            if not hits:
                raise RerankError("the answer held no usable scores")
        except (EndpointError, RerankError) as exc:
            self._record(False)
            raise RerankError(str(exc)) from exc
        except BaseException:
            self._record(False)
            raise
        self._record(True)
        return [index for index, _ in hits]


async def reorder(reranker: Reranker | None, query: str, items: Sequence[T],
                  text: Callable[[T], str], what: str) -> list[T]:
    """``items`` with the first ``POOL`` put in the reranker's order.

    Items the reranker left out follow in their original order, then the items
    past the pool. Without a reranker, with fewer than two items, or on any
    failure: the original order (and a log line for the failure).
    """
    if reranker is None or len(items) < 2:
        return list(items)
    pool, rest = list(items[:POOL]), list(items[POOL:])
    try:
        order = await reranker.rank(query, [text(item) for item in pool])
    except RerankError as exc:
        log.warning("reranking %s failed (%s); keeping the original order", what, exc)
        return list(items)
    chosen = dict.fromkeys(i for i in order if 0 <= i < len(pool))
    left = [item for i, item in enumerate(pool) if i not in chosen]
    return [pool[i] for i in chosen] + left + rest
