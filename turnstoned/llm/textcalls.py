"""Tool calls written as text, for servers and models without native tool calling.

Some local setups return no ``delta.tool_calls``: llama.cpp's server without ``--jinja``,
Ollama models whose template has no tools ("does not support tools"), vLLM without a
tool parser, small models that write the call in their reply. In text mode the daemon
describes the tools in the system message (``describe``), sends the conversation with
calls and results as text (``as_text``), and reads the calls out of the reply
(``Scanner``) while the visible text streams without the call markup. Formats read:

- ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (Hermes, Qwen), several;
- a fenced JSON block (```` ```json ````) holding ``{"name", "arguments"}`` of a known tool;
- ``[TOOL_CALLS] [{"name": ..., "arguments": {...}}, ...]`` (Mistral);
- ``<|python_tag|>{"name": ..., "parameters": {...}}`` (Llama 3.1);
- a reply that is nothing but such a JSON object (small models write
  ``{{"name": ..., "arguments": {...}}}`` with doubled braces, too).

Lenient: whitespace, ``parameters`` for ``arguments``, arguments given as a JSON string,
and broken JSON (a trailing brace missing, single quotes) are accepted where the name
can still be read.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from turnstoned import paths
from turnstoned.llm.types import RawToolCall

log = logging.getLogger(__name__)

OPEN, CLOSE = "<tool_call>", "</tool_call>"
MISTRAL = "[TOOL_CALLS]"
PYTHON_TAG = "<|python_tag|>"
FENCE = "```"
_MARKERS = (OPEN, MISTRAL, PYTHON_TAG)
BARE = "{"  # the block of a reply that is a bare JSON object

INSTRUCTIONS = """# Calling tools
You can call the tools below. To call one, write a block like this (nothing else on its \
lines), one block per call; several blocks call several tools:
<tool_call>
{"name": "read_file", "arguments": {"path": "src/app.py"}}
</tool_call>
Then stop: the results come back in the next message, inside <tool_response> tags. Write \
no call when you can answer without one.

## Tools"""


def describe(tools: Sequence[dict[str, Any]]) -> str:
    """The tools as the system message describes them in text mode."""
    lines = [INSTRUCTIONS]
    for tool in tools:
        fn = tool.get("function") or {}
        params = fn.get("parameters") or {}
        props = params.get("properties") or {}
        required = set(params.get("required") or ())
        args = []
        for name, spec in props.items():
            kind = spec.get("type", "any") if isinstance(spec, dict) else "any"
            desc = spec.get("description", "") if isinstance(spec, dict) else ""
            enum = spec.get("enum") if isinstance(spec, dict) else None
            shown = f"{name} ({kind}{', required' if name in required else ''})"
            if enum:
                shown += f" one of {', '.join(map(str, enum))}"
            args.append(f"  - {shown}: {desc}" if desc else f"  - {shown}")
        lines.append(f"- {fn.get('name')}: {fn.get('description', '')}")
        lines += args
    return "\n".join(lines)


def as_text(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
            ) -> list[dict[str, Any]]:
    """The conversation for a server that takes no tools: the tools described in the
    system message, calls as ``<tool_call>`` blocks in the assistant's text, results as
    ``<tool_response>`` blocks in user messages (folded into the next user message, since
    strict templates refuse two in a row)."""
    out: list[dict[str, Any]] = []
    described = False
    for msg in messages:
        role = msg.get("role")
        if role == "system" and not described:
            out.append({"role": "system", "content": f"{msg.get('content') or ''}\n\n"
                                                     f"{describe(tools)}"})
            described = True
        elif role == "assistant":
            parts = [msg.get("content") or ""]
            for call in msg.get("tool_calls") or ():
                fn = call.get("function") or {}
                try:
                    arguments = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    arguments = {}
                parts.append(f"{OPEN}\n{json.dumps({'name': fn.get('name'), 'arguments': arguments})}"
                             f"\n{CLOSE}")
            out.append({"role": "assistant", "content": "\n".join(p for p in parts if p)})
        elif role == "tool":
            block = f"<tool_response>\n{_text(msg.get('content'))}\n</tool_response>"
            _user(out, block)
        elif role == "user":
            _user(out, msg.get("content") or "")
        else:
            out.append(dict(msg))
    if not described:
        out.insert(0, {"role": "system", "content": describe(tools)})
    return out


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content or "")


def _user(out: list[dict[str, Any]], content: Any) -> None:
    before = out[-1] if out else None
    if before is not None and before["role"] == "user" and isinstance(before["content"], str) \
            and isinstance(content, str):
        before["content"] += "\n\n" + content
    else:
        out.append({"role": "user", "content": content})


# ---------------------------------------------------------------- reading calls


def _loads(text: str) -> Any:
    """JSON, repaired where a small model's slip is plain (a missing closing brace,
    single quotes, a trailing comma); None when it cannot be read."""
    text = text.strip()
    for attempt in (text, text + "}", text + "}}", text + "]"):
        try:
            return json.loads(attempt)
        except ValueError:
            pass
    loose = re.sub(r",\s*([}\]])", r"\1", text.replace("'", '"'))
    for attempt in (loose, loose + "}", loose + "}}"):
        try:
            return json.loads(attempt)
        except ValueError:
            pass
    return None


def _calls(value: Any, names: set[str] | None) -> list[RawToolCall]:
    """Tool calls from a parsed object (or a list of them)."""
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if not isinstance(item, dict):
            continue
        name = item.get("name")
        if not isinstance(name, str) and isinstance(item.get("function"), dict):
            item = {**item["function"], **{k: v for k, v in item.items() if k != "function"}}
            name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            continue
        if names is not None and name.strip() not in names:
            continue
        arguments = item.get("arguments", item.get("parameters", {}))
        if isinstance(arguments, str):
            parsed = _loads(arguments)
            arguments = parsed if isinstance(parsed, dict) else arguments
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        out.append(RawToolCall(id=f"call_{secrets.token_hex(12)}", name=name.strip(),
                               arguments=text))
    return out


def _named(text: str) -> list[RawToolCall]:
    """A call whose JSON is too broken to parse, if its name can still be read."""
    m = re.search(r'"name"\s*:\s*"([\w.-]+)"', text)
    if m is None:
        return []
    args = re.search(r'"(?:arguments|parameters)"\s*:\s*(\{.*)', text, re.DOTALL)
    raw = args.group(1).rstrip().removesuffix("}") if args else "{}"
    return [RawToolCall(id=f"call_{secrets.token_hex(12)}", name=m.group(1), arguments=raw)]


def _undoubled(text: str) -> str:
    """``{{…}}`` as ``{…}`` (a chat template's escaping copied by a small model)."""
    text = text.strip()
    while text.startswith("{{") and text.endswith("}}"):
        text = text[1:-1].strip()
    return text


def parse_block(text: str, names: set[str] | None) -> list[RawToolCall]:
    text = _undoubled(text)
    value = _loads(text)
    if value is None:
        return _named(text) if names is None or any(n in text for n in names) else []
    return _calls(value, names)


@dataclass(slots=True)
class Scanner:
    """Reads a streamed reply: ``feed`` returns the text to show (markup withheld),
    ``finish`` the rest of it and the calls found.

    ``fences``: also read fenced JSON blocks naming a known tool (text mode; in native
    mode a fenced block is the model's text, read only when the reply has no native call
    and ends, see ``calls_in``).
    """

    names: set[str]
    fences: bool = True
    calls: list[RawToolCall] = field(default_factory=list)
    _held: str = ""
    _inside: str | None = None  # the marker of the block being read
    _body: list[str] = field(default_factory=list)
    _started: bool = False  # text other than whitespace has come

    def feed(self, text: str) -> str:
        shown: list[str] = []
        buf = self._held + text
        self._held = ""
        if not self._started and self.fences:
            if not buf.strip():
                self._held = buf
                return ""
            self._started = True
            if buf.lstrip().startswith("{"):  # a bare JSON reply: a call, or text at the end
                self._inside, self._body = BARE, []
        while buf:
            if self._inside is None:
                at, marker = self._next_marker(buf)
                if marker is None:
                    keep = self._partial_suffix(buf)
                    shown.append(buf[:len(buf) - keep])
                    self._held = buf[len(buf) - keep:]
                    break
                shown.append(buf[:at])
                buf = buf[at + len(marker):]
                self._inside, self._body = marker, []
            else:
                end = self._closing(buf)
                if end is None:
                    keep = self._partial_close(buf)
                    self._body.append(buf[:len(buf) - keep])
                    self._held = buf[len(buf) - keep:]
                    break
                at, length = end
                self._body.append(buf[:at])
                shown.append(self._close())
                buf = buf[at + length:]
        return "".join(shown)

    def finish(self) -> tuple[str, list[RawToolCall]]:
        rest = self._held
        self._held = ""
        if self._inside is not None:
            self._body.append(rest)
            rest = self._close(final=True)
        return rest, self.calls

    # ------------------------------------------------------------------ markers

    def _opens(self) -> Iterable[str]:
        yield from _MARKERS
        if self.fences:
            yield FENCE

    def _next_marker(self, buf: str) -> tuple[int, str | None]:
        best, found = len(buf), None
        for marker in self._opens():
            at = buf.find(marker)
            if at != -1 and at < best:
                best, found = at, marker
        return best, found

    def _partial_suffix(self, buf: str) -> int:
        """How much of ``buf``'s end may be the start of a marker (held back)."""
        for n in range(min(len(buf), max(map(len, self._opens())) - 1), 0, -1):
            tail = buf[-n:]
            if any(m.startswith(tail) for m in self._opens()):
                return n
        return 0

    def _closing(self, buf: str) -> tuple[int, int] | None:
        if self._inside == OPEN:
            at = buf.find(CLOSE)
            return (at, len(CLOSE)) if at != -1 else None
        if self._inside == FENCE:
            at = buf.find(FENCE)
            return (at, len(FENCE)) if at != -1 else None
        return None  # [TOOL_CALLS], <|python_tag|> and a bare JSON reply run to the end

    def _partial_close(self, buf: str) -> int:
        close = CLOSE if self._inside == OPEN else FENCE if self._inside == FENCE else ""
        for n in range(min(len(buf), len(close) - 1), 0, -1):
            if close.startswith(buf[-n:]):
                return n
        return 0

    def _close(self, final: bool = False) -> str:
        """End the block being read: its calls, or (a fence that is no call) its text."""
        marker, body = self._inside, "".join(self._body)
        self._inside, self._body = None, []
        if marker == FENCE:
            head, _, rest = body.partition("\n")
            found = parse_block(rest, self.names) if head.strip() in ("json", "") else []
            if found:
                self.calls += found
                return ""
            return FENCE + body + ("" if final else FENCE)
        found = parse_block(body, self.names if marker == BARE else None)
        if found:
            self.calls += found
            return ""
        opened = "" if marker == BARE else (marker or "")
        return opened + body + (CLOSE if marker == OPEN and not final else "")


def calls_in(text: str, names: set[str]) -> tuple[str, list[RawToolCall]]:
    """A finished reply's text without call markup, and the calls it wrote (native mode:
    a model that wrote its calls in the text)."""
    scanner = Scanner(names, fences=True)  # fences on: a bare JSON reply is read too
    shown = scanner.feed(text)
    rest, calls = scanner.finish()
    return (shown + rest).strip() if calls else text, calls


# ---------------------------------------------------------------- choosing the mode

_REFUSALS = re.compile(
    r"does not support tools|tools? (?:param|parameter|calling|use)?\s*(?:is |are )?not supported"
    r"|requires --jinja|--enable-auto-tool-choice|tool-call-parser|tool choice|"
    r"unknown (?:field|parameter|argument)[^.]*tools|unexpected keyword argument 'tools'",
    re.IGNORECASE)


def refuses_tools(message: str) -> bool:
    """A server's error says it takes no ``tools`` (text mode will work instead)."""
    return bool(_REFUSALS.search(message))


def _memory_file() -> str:
    return str(paths.data_dir() / "tool-calling.json")


_memory: dict[str, dict[str, str]] = {}  # memory file -> {model key: "text"}


def _known() -> dict[str, str]:
    where = _memory_file()
    if where not in _memory:
        try:
            with open(where, encoding="utf-8") as f:
                loaded = json.load(f)
            _memory[where] = {k: v for k, v in loaded.items() if v in ("text", "native")} \
                if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            _memory[where] = {}
    return _memory[where]


def _key(base_url: str | None, name: str) -> str:
    return f"{base_url or 'https://api.openai.com/v1'} {name}"


def mode_for(base_url: str | None, name: str, configured: str) -> str:
    """``native`` or ``text``: what the config says, else what was found for this model."""
    if configured in ("native", "text"):
        return configured
    return _known().get(_key(base_url, name), "native")


def remember(base_url: str | None, name: str, why: str) -> None:
    """This model's calls travel as text from now on (kept across restarts)."""
    known = _known()
    key = _key(base_url, name)
    if known.get(key) == "text":
        return
    known[key] = "text"
    log.info("model %s: tool calls as text from now on (%s)", key, why)
    where = _memory_file()
    try:
        os.makedirs(os.path.dirname(where), mode=0o700, exist_ok=True)
        tmp = f"{where}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(known, f, indent=1)
        os.replace(tmp, where)
    except OSError as exc:
        log.warning("could not keep the tool-calling mode in %s: %s", where, exc)
