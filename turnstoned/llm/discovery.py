"""Which model to use when none is configured: ask the server what it serves.

A first run often has only ``OPENAI_BASE_URL`` set, pointing at a local server
(llama-server, vLLM, Ollama) that serves exactly one model: that model is used.
"""

from __future__ import annotations

import logging

import openai

log = logging.getLogger(__name__)

TIMEOUT = 5.0


def only_model(base_url: str, api_key: str, timeout: float = TIMEOUT) -> str | None:
    """The one model ``base_url`` lists at ``/models``; None (and a log line why) otherwise.

    Blocking: run it in a thread.
    """
    client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)
    url = f"{str(client.base_url).rstrip('/')}/models"
    try:
        ids = [m.id for m in client.models.list()]
    except openai.OpenAIError as exc:
        log.warning("no model is configured, and the model server at %s could not be asked "
                    "for its models: %s", url, exc)
        return None
    finally:
        client.close()
    if len(ids) != 1:
        listed = ", ".join(ids[:10]) + (", ..." if len(ids) > 10 else "")
        log.warning("no model is configured, and the model server at %s lists %d models (%s): "
                    "set [model] name or TURNSTONED_MODEL", url, len(ids), listed or "none")
        return None
    log.warning("no model is configured: using %s, the only model listed at %s", ids[0], url)
    return ids[0]
