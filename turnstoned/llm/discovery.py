"""Asking the model server what it serves: which model to use when none is configured,
and whether it answers at all (``daemon/health`` with ``probe``).

A first run often has only ``OPENAI_BASE_URL`` set, pointing at a local server
(llama-server, vLLM, Ollama) that serves exactly one model: that model is used.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import socket
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import openai

log = logging.getLogger(__name__)

TIMEOUT = 5.0
# Local OpenAI-compatible servers on their default ports (127.0.0.1).
LOCAL_SERVERS: tuple[tuple[str, int], ...] = (
    ("Ollama", 11434), ("llama.cpp", 8080), ("vLLM", 8000), ("LM Studio", 1234))


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


@dataclass(frozen=True, slots=True)
class LocalServer:
    """An OpenAI-compatible server found on this machine."""

    name: str
    base_url: str
    models: tuple[str, ...]


def probe_local(host: str, port: int, name: str, timeout: float = 1.0) -> LocalServer | None:
    """The server on ``host:port`` when it answers ``GET /v1/models`` as OpenAI does."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError:
        return None
    conn = http.client.HTTPConnection(host, port, timeout=timeout * 3)
    try:
        conn.request("GET", "/v1/models")
        response = conn.getresponse()
        body = json.loads(response.read(1 << 20)) if response.status == 200 else None
    except (OSError, http.client.HTTPException, ValueError):
        body = None
    finally:
        conn.close()
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return LocalServer(name, f"http://{host}:{port}/v1", ())
    ids = tuple(str(m["id"]) for m in data if isinstance(m, dict) and "id" in m)
    return LocalServer(name, f"http://{host}:{port}/v1", ids)


def local_servers() -> tuple[tuple[str, int], ...]:
    """Where to look for local servers: ``LOCAL_SERVERS``, or the ``Name=port`` pairs of
    ``TURNSTONED_LOCAL_SERVERS`` (comma-separated; empty: look nowhere)."""
    raw = os.environ.get("TURNSTONED_LOCAL_SERVERS")
    if raw is None:
        return LOCAL_SERVERS
    found = []
    for pair in raw.split(","):
        name, _, port = pair.rpartition("=")
        if name.strip() and port.strip().isdigit():
            found.append((name.strip(), int(port)))
    return tuple(found)


def find_local(host: str = "127.0.0.1",
               servers: tuple[tuple[str, int], ...] | None = None) -> list[LocalServer]:
    """The local servers that answer (``local_servers()`` by default), asked side by side
    (about a second when none does). Blocking: run it in a thread."""
    servers = local_servers() if servers is None else servers
    if not servers:
        return []
    with ThreadPoolExecutor(max_workers=len(servers) or 1) as pool:
        found = pool.map(lambda s: probe_local(host, s[1], s[0]), servers)
    return [s for s in found if s is not None]
