"""Asking the model server what it serves: which model to use when none is configured,
and whether it answers at all (``daemon/health`` with ``probe``).

A first run often has only ``OPENAI_BASE_URL`` set, pointing at a local server
(llama-server, vLLM, Ollama) that serves exactly one model: that model is used.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import openai

log = logging.getLogger(__name__)

TIMEOUT = 5.0


@dataclass(frozen=True)
class Listing:
    """What ``/models`` answered: the ids, or the error (``reached``: the server answered,
    with an HTTP error; otherwise it could not be reached in time)."""

    base_url: str
    ids: list[str]
    error: openai.OpenAIError | None = None
    reached: bool = True

    @property
    def url(self) -> str:
        return f"{self.base_url}/models"

    def problem(self) -> str | None:
        """The error as the user should read it, or None."""
        if self.error is None:
            return None
        from turnstoned.llm.openai_chat import classify

        return classify(self.error).message


def list_models(base_url: str | None, api_key: str, timeout: float = TIMEOUT) -> Listing:
    """Ask ``base_url`` (the SDK's default when None) for ``/models``, once, within
    ``timeout`` seconds. Blocking: run it in a thread."""
    client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)
    base = str(client.base_url).rstrip("/")
    try:
        return Listing(base, [m.id for m in client.models.list()])
    except openai.APIStatusError as exc:
        return Listing(base, [], exc)
    except openai.OpenAIError as exc:
        return Listing(base, [], exc, reached=False)
    finally:
        client.close()


def only_model(base_url: str, api_key: str, timeout: float = TIMEOUT) -> str | None:
    """The one model ``base_url`` lists at ``/models``; None (and a log line why) otherwise.

    Blocking: run it in a thread.
    """
    listing = list_models(base_url, api_key, timeout)
    if listing.error is not None:
        log.warning("no model is configured, and the model server at %s could not be asked "
                    "for its models: %s", listing.url, listing.error)
        return None
    ids = listing.ids
    if len(ids) != 1:
        listed = ", ".join(ids[:10]) + (", ..." if len(ids) > 10 else "")
        log.warning("no model is configured, and the model server at %s lists %d models (%s): "
                    "set [model] name or TURNSTONED_MODEL", listing.url, len(ids), listed or "none")
        return None
    log.warning("no model is configured: using %s, the only model listed at %s", ids[0], listing.url)
    return ids[0]
