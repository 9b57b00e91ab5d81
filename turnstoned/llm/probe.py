"""The question ``turnstoned doctor --tool-call`` asks a model server: whether the
configured model calls a tool when asked to. Blocking, with a timeout."""

from __future__ import annotations

import json

import openai

from turnstoned.config import ModelSettings
from turnstoned.llm import textcalls
from turnstoned.llm.openai_chat import classify
from turnstoned.llm.types import ModelError

PING_TOOL = {
    "type": "function",
    "function": {
        "name": "ping",
        "description": "Send one word back to the user.",
        "parameters": {"type": "object", "properties": {"word": {"type": "string"}},
                       "required": ["word"]},
    },
}
PING_PROMPT = ('Call the tool `ping` with the word "pong". Answer with the tool call only, '
               "no text.")


def tool_round_trip(model: ModelSettings, timeout: float = 120.0) -> str:
    """Ask the model to call ``ping``; a description of the call it made. Raises
    ``ModelError`` when the request fails or the model does not call the tool properly."""
    client = openai.OpenAI(base_url=model.base_url, api_key=model.api_key, timeout=timeout,
                           max_retries=0)
    try:
        reply = client.chat.completions.create(
            model=model.name, messages=[{"role": "user", "content": PING_PROMPT}],
            tools=[PING_TOOL],  # type: ignore[list-item]
        )
    except openai.OpenAIError as exc:
        raise classify(exc) from exc
    finally:
        client.close()
    message = reply.choices[0].message if reply.choices else None
    calls = (message.tool_calls or []) if message is not None else []
    if not calls:
        said = ((message.content or "") if message is not None else "").strip()
        _, written = textcalls.calls_in(said, {"ping"})
        if written:
            return (f"{written[0].name}({written[0].arguments}) written as text, not as a "
                    "native call: the daemon reads such calls ([model] tool_calling = auto)")
        raise ModelError("badRequest", "the model answered without calling the tool"
                         + (f": {said[:200]!r}" if said else ""))
    call = calls[0]
    fn = getattr(call, "function", None)
    if fn is None or fn.name != "ping":
        named = getattr(fn, "name", None) or "(no name)"
        raise ModelError("badRequest", f"the model called {named!r}, not ping"[:300])
    try:
        args = json.loads(fn.arguments or "{}")
    except json.JSONDecodeError:
        raise ModelError("badRequest", f"the tool call's arguments are not JSON: "
                                       f"{fn.arguments[:200]!r}") from None
    return f"ping({json.dumps(args)})"
