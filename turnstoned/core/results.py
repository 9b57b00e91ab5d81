"""What happens to a tool's output before the model reads it (the fold's three steps).

1. A third identical call in a row gets a warning appended (small models loop).
2. The output is cut to the context budget left for tool results.
3. The output guard redacts credentials and flags prompt injection; medium and
   high findings become an ``Advisory`` the model and the editor are told about.
   With ``[guard] llm_check`` a flagged result gets a second look (``second_look``):
   one bounded side call to the session's model, whose verdict rewords the advisory;
   when it fails, the heuristic advisory stands.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from turnstoned import guard
from turnstoned.config import Config, ModelSettings
from turnstoned.llm.types import ModelError, OnUsage
from turnstoned.tools.base import ToolOutput, truncate_middle

log = logging.getLogger(__name__)

REPEAT_WARNING = ("\n\n⚠ Warning: this is an identical repeat of a previous tool call. The "
                  "result is the same. Try a different approach.")
REPEAT_EXEMPT = frozenset({"bash_output"})  # polling a background shell is legitimate


@dataclass(slots=True)
class RepeatDetector:
    """Spots a model calling the same tool with the same arguments a third time in a row."""

    last: tuple[str, str] | None = None
    streak: int = 0
    limit: int = 3

    def see(self, tool: str, arguments: str) -> bool:
        """Record a call; True when it completes a streak (which then starts over)."""
        if tool in REPEAT_EXEMPT:
            return False
        key = (tool, arguments)
        self.streak = self.streak + 1 if key == self.last else 1
        self.last = key
        if self.streak >= self.limit:
            self.last, self.streak = None, 0
            return True
        return False

    def mark(self, output: ToolOutput) -> ToolOutput:
        """The output with the repeat warning appended (structured JSON results are left alone)."""
        if not isinstance(output.content, str) or output.content.lstrip().startswith(("{", "[")):
            return output
        return ToolOutput(output.content + REPEAT_WARNING, output.is_error, output.effect_status,
                          output.summary)


@dataclass(slots=True)
class Budget:
    """The remaining context budget for tool results, in characters."""

    remaining: int
    cap: int
    grace: int = 4096

    def fit(self, output: ToolOutput) -> ToolOutput:
        text = output.text()
        if not text:
            return output
        limit = min(self.cap, self.remaining)
        if output.is_error:
            limit = max(limit, 2048)
        if limit <= 0 and len(text) <= 2048 and self.grace >= len(text):
            self.grace -= len(text)
            return output
        if limit <= 0:
            dropped = (f"Error: tool result dropped — context budget exhausted. The call ran and "
                       f"produced a {len(text)}-char result, but none of it could be added to the "
                       "conversation. Narrow the request (fewer lines, a tighter pattern).")
            return ToolOutput(dropped, True, output.effect_status, output.summary)
        self.remaining -= min(len(text), limit)
        if len(text) <= limit:
            return output
        cut = truncate_middle(text, limit)
        if isinstance(output.content, list):
            parts = [part for part in output.content if part.get("type") != "text"]
            return ToolOutput([{"type": "text", "text": cut}, *parts], output.is_error,
                              output.effect_status, output.summary)
        return ToolOutput(cut, output.is_error, output.effect_status, output.summary)


@dataclass(frozen=True, slots=True)
class GuardSettings:
    enabled: bool = True  # [tools] output_guard
    redact: bool = True  # [tools] redact_secrets
    llm_check: bool = False  # [guard] llm_check: a second look at flagged results
    llm_timeout: float = 8.0  # [guard] llm_timeout, seconds


def guard_settings(config: Config) -> GuardSettings:
    """The output guard as ``[tools]`` and ``[guard]`` configure it for tool results."""
    return GuardSettings(config.tools.output_guard, config.tools.redact_secrets,
                         config.guard.llm_check, config.guard.llm_timeout)


@dataclass(frozen=True, slots=True)
class Advisory:
    """A guard finding worth telling: the model reads ``text``; the editor gets the rest too."""

    text: str
    risk: str | None
    flags: tuple[str, ...]
    redacted: bool
    label: str = ""  # the result it is about, as the text names it
    findings: tuple[guard.Finding, ...] = ()

    @property
    def flagged(self) -> bool:
        """Risky content was found (not only credentials): a second look may help."""
        return guard.rater.flagged(self.findings)


def guard_output(label: str, out: ToolOutput,
                 settings: GuardSettings) -> tuple[ToolOutput, Advisory | None]:
    """Redact credentials and flag injection in what the model is about to read.

    Medium and high findings (and any redaction) come back as an advisory; low ones
    (a private IP, a path like ``.ssh/``) only reach the log, so ordinary listings do
    not nag.
    """
    if not settings.enabled:
        return out, None
    texts = [out.content] if isinstance(out.content, str) else [
        part.get("text", "") for part in out.content if part.get("type") == "text"]
    results = [guard.check(t, redact=settings.redact) for t in texts]
    merged = guard.GuardResult("", tuple(f for r in results for f in r.findings),
                               any(r.redacted for r in results))
    if merged.redacted:
        out = replace_text(out, [r.text for r in results])
    if merged.risk not in ("medium", "high") and not merged.redacted:
        if merged.findings:
            log.debug("guard (low) on %s: %s", label, merged.flags)
        return out, None
    return out, Advisory(guard.advisory(label, merged), merged.risk, merged.flags, merged.redacted,
                         label, merged.findings)


# The side call of a second look: its messages -> the reply's text (raises ModelError).
Rate = Callable[[list[dict[str, Any]]], Awaitable[str]]
RATING_TOKENS = 256  # the longest answer a rater may give


async def rate_with(model: ModelSettings, messages: list[dict[str, Any]],
                    on_usage: OnUsage | None) -> str:
    """A second look asked of ``model`` (the session's): a side call without tools and with
    a short answer, whose tokens go to ``on_usage`` (the running turn's tally)."""
    from turnstoned.llm.openai_chat import complete  # imports openai: not at startup

    tokens = min(model.max_tokens or RATING_TOKENS, RATING_TOKENS)
    return await complete(replace(model, max_tokens=tokens), messages, on_usage)


async def second_look(advisory: Advisory, out: ToolOutput, rate: Rate,
                      timeout: float) -> Advisory:
    """``advisory`` reworded after a model rated ``out`` (what the model will read, so
    already redacted); unchanged when the rater fails, is late or answers nonsense.

    Never raises but for cancellation: the result is never held back by its rating.
    """
    messages = guard.rater.request(advisory.label, out.text(), advisory.findings)
    try:
        reply = await asyncio.wait_for(rate(messages), timeout)
    except TimeoutError:
        log.info("guard: no rating of %s within %gs", advisory.label, timeout)
        return advisory
    except ModelError as exc:
        log.info("guard: rating %s failed: %s", advisory.label, exc.message)
        return advisory
    except Exception:  # an advisory side call: whatever breaks, the heuristics stand
        log.exception("guard: rating %s failed", advisory.label)
        return advisory
    rating = guard.rater.parse(reply)
    if rating is None:
        log.info("guard: rating of %s not understood: %r", advisory.label, reply[:200])
        return advisory
    log.info("guard: %s rated %s", advisory.label, rating.verdict)
    return replace(advisory, text=guard.rater.rated_advisory(advisory.text, advisory.label,
                                                             rating))


def replace_text(out: ToolOutput, texts: list[str]) -> ToolOutput:
    """``out`` with its text (or its text parts, in order) replaced."""
    if isinstance(out.content, str):
        return ToolOutput(texts[0], out.is_error, out.effect_status, out.summary)
    it = iter(texts)
    parts = [{"type": "text", "text": next(it)} if part.get("type") == "text" else part
             for part in out.content]
    return ToolOutput(parts, out.is_error, out.effect_status, out.summary)
