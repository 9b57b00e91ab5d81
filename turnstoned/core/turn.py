"""The turn runner: stream a reply, run its tool calls, fold, repeat.

A turn loops until the model answers without tool calls (or the round cap).
Results of one batch are folded in one generation-checked commit; an
interrupt cancels the runner's task, and the runner itself writes receipts for
the calls it had issued (``none`` if never started, ``unknown`` if started), so
the transcript never holds a tool call without a result.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from turnstoned import protocol as p
from turnstoned.config import Config, ModelSettings, resolve_model
from turnstoned.core import approvals, guard
from turnstoned.core import messages as m
from turnstoned.core.events import Coalescer, EventSink
from turnstoned.core.pipeline import (
    Budget,
    Execution,
    Outcome,
    apply_batch_policies,
    execute_all,
    prepare_one,
)
from turnstoned.core.session import Session, TurnState
from turnstoned.core.toolset import Toolset
from turnstoned.llm.types import ModelError, ModelReply
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Batch:
    """The tool calls of the assistant message being worked on."""

    calls: list[PreparedCall] = field(default_factory=list)
    track: Execution = field(default_factory=Execution)
    folded: bool = False


class TurnRunner:
    def __init__(self, session: Session, turn: TurnState, config: Config, sink: EventSink) -> None:
        self.s, self.turn, self.config, self.sink = session, turn, config, sink
        self.batch = _Batch()
        self.tools = Toolset()
        self._reply_id = ""
        self.usage = p.Usage()
        self._open_items: dict[str, p.Item] = {}

    # ----------------------------------------------------------- notifications

    def _ids(self) -> dict[str, str]:
        return {"session_id": self.s.id, "turn_id": self.turn.id}

    def _item_started(self, item: p.Item) -> None:
        self._open_items[item.id] = item
        self.sink.notify("item/started", p.ItemStarted(**self._ids(), item_id=item.id, item=item))

    def _item_completed(self, item: p.Item) -> None:
        self._open_items.pop(item.id, None)
        self.sink.notify("item/completed", p.ItemCompleted(**self._ids(), item_id=item.id, item=item))

    # ----------------------------------------------------------- the loop

    async def run(self) -> None:
        self.sink.notify("turn/started", p.TurnStarted(**self._ids()))
        status, error = "completed", None
        try:
            await self._loop()
        except ModelError as exc:
            status, error = "failed", p.TurnError(kind=exc.kind, message=exc.message)  # type: ignore[arg-type]
        except asyncio.CancelledError:
            status = "interrupted"
            self._write_receipts("Cancelled by user.")
        except Exception as exc:  # top-level boundary of a turn: log, report, stay alive
            log.exception("turn %s failed", self.turn.id)
            status = "failed"
            error = p.TurnError(kind="internal", message=f"{type(exc).__name__}: {exc}")
            self._write_receipts("The turn failed.")
        finally:
            self._close_open_items()
            self.s.turn = None
            usage = self.usage if self.usage.total_tokens else None
            self.sink.notify("turn/completed", p.TurnCompleted(
                **self._ids(), status=status, error=error, usage=usage))  # type: ignore[arg-type]

    async def _loop(self) -> None:
        model = resolve_model(self.config.model, self.s.model)
        if isinstance(model, str):
            raise ModelError("notConfigured", model)
        self.s.env.settings.context_window = model.context_window
        self.s.env.settings.supports_vision = model.supports_vision
        for _ in range(self.config.session.max_rounds):
            reply = await self._model_call(model)
            self.batch = _Batch()
            self._commit_assistant(reply)
            if not self.batch.calls:
                if self._fold_queued():
                    continue
                return
            await self._run_batch()
        raise ModelError("turnLimit", f"The turn stopped after {self.config.session.max_rounds} "
                                      "model calls ([session] max_rounds).")

    # ----------------------------------------------------------- model call

    async def _model_call(self, model: ModelSettings) -> ModelReply:
        from turnstoned.llm.openai_chat import stream_reply  # imports openai: not on startup

        msg_id, rsn_id = m.new_id("msg"), m.new_id("rsn")
        texts: dict[str, list[str]] = {msg_id: [], rsn_id: []}

        def channel(item_id: str, method: str, make: Any) -> Coalescer:
            def flush(delta: str) -> None:
                if item_id not in self._open_items:
                    self._item_started(make(id=item_id))
                self.sink.notify(method, p.ItemDelta(**self._ids(), item_id=item_id, delta=delta))
            return Coalescer(flush)

        text_out = channel(msg_id, "item/agentMessage/delta", p.AgentMessageItem)
        rsn_out = channel(rsn_id, "item/reasoning/delta", p.ReasoningItem)

        def on_text(delta: str) -> None:
            texts[msg_id].append(delta)
            text_out.push(delta)

        def on_reasoning(delta: str) -> None:
            texts[rsn_id].append(delta)
            rsn_out.push(delta)

        messages = [{"role": "system", "content": self.s.system_prompt(model.name)},
                    *m.to_openai(self.s.history)]
        self.tools = self.s.toolset()
        try:
            reply = await stream_reply(model, messages, self.tools.schemas, on_text, on_reasoning)
        except (asyncio.CancelledError, ModelError):
            partial = "".join(texts[msg_id])
            if partial:  # keep what the user already saw
                self.s.commit([m.Message(role="assistant", content=partial, id=msg_id,
                                         turn_id=self.turn.id)])
            raise
        finally:
            rsn_out.close()
            text_out.close()
            for item_id, make in ((rsn_id, p.ReasoningItem), (msg_id, p.AgentMessageItem)):
                if item_id in self._open_items:
                    self._item_completed(make(id=item_id, text="".join(texts[item_id])))
        if reply.usage:
            self.s.last_usage = reply.usage
            self.usage.prompt_tokens += reply.usage["prompt_tokens"]
            self.usage.completion_tokens += reply.usage["completion_tokens"]
            self.usage.total_tokens += reply.usage["total_tokens"]
        self._report_context(model, messages, reply)
        self._reply_id = msg_id
        return reply

    def _report_context(self, model: ModelSettings, messages: list[dict[str, Any]],
                        reply: ModelReply) -> None:
        """``session/usage``: the prompt plus the reply, as the server counted it or estimated."""
        if reply.usage:
            tokens = int(reply.usage["prompt_tokens"]) + int(reply.usage["completion_tokens"])
        else:
            chars = len(json.dumps(messages, ensure_ascii=False)) + len(json.dumps(self.tools.schemas))
            chars += len(reply.content) + len(reply.reasoning)
            chars += sum(len(c.name) + len(c.arguments or "") for c in reply.tool_calls)
            tokens = (chars + 3) // 4
        self.sink.notify("session/usage", p.SessionUsage(
            session_id=self.s.id, context_tokens=tokens, context_window=model.context_window,
            estimated=not reply.usage))

    # ----------------------------------------------------------- commits

    def _commit_assistant(self, reply: ModelReply) -> None:
        handles = self.tools.handles
        available = sorted(handles)
        seen: set[str] = set()
        for raw in reply.tool_calls:
            if raw.id in seen:  # a duplicate id would make the history invalid
                raw.id = f"{raw.id}_{len(seen) + 1}"
            seen.add(raw.id)
            ctx = ToolContext(env=self.s.env, call_id=raw.id, cancel=self.turn.cancel)
            self.batch.calls.append(prepare_one(raw, handles.get(raw.name.strip()), available, ctx))
        if not reply.content and not reply.reasoning and not self.batch.calls:
            return
        msg = m.Message(
            role="assistant", content=reply.content, reasoning=reply.reasoning or None,
            id=self._reply_id, turn_id=self.turn.id,
            tool_calls=[m.ToolCall(id=c.call_id, name=c.tool, arguments=c.arguments,
                                   header=c.header, preview=c.preview,
                                   needs_approval=c.needs_approval and not c.error,
                                   file_change=approvals.file_change_info(c))
                        for c in self.batch.calls],
        )
        self.s.commit([msg])
        for c in self.batch.calls:
            self._item_started(self._tool_item(c, "pending"))

    def _tool_item(self, c: PreparedCall, status: str, out: ToolOutput | None = None) -> p.ToolCallItem:
        return p.ToolCallItem(
            id=c.call_id, call_id=c.call_id, tool=c.tool, arguments=c.arguments, header=c.header,
            preview=c.preview, needs_approval=c.needs_approval and not c.error,
            status=status,  # type: ignore[arg-type]
            output=out.text() if out else None, is_error=out.is_error if out else False,
            effect_status=out.effect_status if out else None,
            file_change=approvals.file_change_info(c),
        )

    def _fold_queued(self) -> bool:
        """Fold queued user input and notices as one user message; False if none."""
        extra = self._queued_message([])
        if extra is None:
            return False
        self.s.commit([extra])
        return True

    def _queued_message(self, notes: list[str]) -> m.Message | None:
        parts = [q.text() for q in self.s.queued]
        notices = [q.notice for q in self.s.queued if q.notice]
        has_user = len(notices) < len(self.s.queued)
        self.s.queued.clear()
        parts.extend(notes)
        if not parts:
            return None
        notice = None if has_user else (notices[0] if notices else "feedback")
        return m.Message(role="user", content="\n\n".join(parts), id=m.new_id("user"),
                         turn_id=self.turn.id, notice=notice)

    # ----------------------------------------------------------- one batch

    async def _run_batch(self) -> None:
        calls = self.batch.calls
        serialize = apply_batch_policies(calls)
        verdict = await approvals.decide(self.sink, self.s.policy, self.s.id, self.turn.id, calls)
        denied = {c.call_id: Outcome(c, ToolOutput(verdict.denied[c.call_id], True, "none"),
                                     "declined")
                  for c in calls if c.call_id in verdict.denied}
        runnable = [c for c in calls if c.call_id not in denied]
        streams: dict[str, Coalescer] = {}
        outcomes = await execute_all(
            runnable, self.tools.handles, lambda c: self._call_ctx(c, streams),
            self.batch.track, serialize)
        for s in streams.values():
            s.close()
        by_id = {o.call.call_id: o for o in outcomes} | denied
        ordered = [by_id[c.call_id] for c in calls]
        self._fold(ordered, verdict.notes)

    def _call_ctx(self, call: PreparedCall, streams: dict[str, Coalescer]) -> ToolContext:
        chunks = self.batch.track.streamed.setdefault(call.call_id, [])

        def flush(text: str) -> None:
            self.sink.notify("item/toolCall/outputDelta", p.ToolOutputDelta(
                **self._ids(), item_id=call.call_id, call_id=call.call_id, chunk=text))

        stream = streams[call.call_id] = Coalescer(flush, interval=0.05, max_chars=65_536)

        def emit(chunk: str) -> None:
            chunks.append(chunk)
            if len(chunks) > 256:  # keep only a tail for interrupt receipts
                del chunks[:128]
            stream.push(chunk)

        return ToolContext(env=self.s.env, call_id=call.call_id, cancel=self.turn.cancel,
                           emit_output=emit)

    def _budget(self) -> Budget:
        window = self.s.env.settings.context_window * 4
        used = sum(len(x.text()) + sum(len(c.arguments) for c in x.tool_calls)
                   for x in self.s.history)
        used += len(json.dumps(self.tools.schemas))
        return Budget(remaining=window - used, cap=self.s.env.output_cap())

    def _fold(self, outcomes: list[Outcome], notes: list[str]) -> None:
        """Phase 4: guard each result against the budget, then one checked commit."""
        if self.turn.generation != self.s.generation:
            log.info("dropping results of superseded turn %s", self.turn.id)
            return
        budget = self._budget()
        msgs: list[m.Message] = []
        items: list[p.ToolCallItem] = []
        for o in outcomes:
            out = o.output
            if self.s.repeats.see(o.call.tool, o.call.arguments):
                out = self.s.repeats.mark(out)
            out = budget.fit(out)
            out = self._guard(o.call, out)
            msgs.append(m.Message(
                role="tool", tool_call_id=o.call.call_id, name=o.call.tool, content=out.content,
                id=o.call.call_id, turn_id=self.turn.id, status=o.status, is_error=out.is_error,
                effect_status=out.effect_status))
            items.append(self._tool_item(o.call, o.status, out))
        extra = self._queued_message(notes)
        self.s.commit(msgs + ([extra] if extra else []))
        self.batch.folded = True
        for item in items:
            self._item_completed(item)

    def _guard(self, call: PreparedCall, out: ToolOutput) -> ToolOutput:
        """Phase 4a: redact credentials and flag injection in what the model is about to read.

        Medium and high findings reach the model as an advisory after the batch and the
        editor as a ``session/notice``; low ones (a private IP, a path like ``.ssh/``) only
        in the log, so ordinary listings do not nag.
        """
        tools_cfg = self.config.tools
        if not tools_cfg.output_guard:
            return out
        texts = [out.content] if isinstance(out.content, str) else [
            part.get("text", "") for part in out.content if part.get("type") == "text"]
        results = [guard.check(t, redact=tools_cfg.redact_secrets) for t in texts]
        merged = guard.GuardResult("", tuple(f for r in results for f in r.findings),
                                   any(r.redacted for r in results))
        if merged.redacted:
            out = _replace_text(out, [r.text for r in results])
        if merged.risk not in ("medium", "high") and not merged.redacted:
            if merged.findings:
                log.debug("guard (low) on %s: %s", call.call_id, merged.flags)
            return out
        text = guard.advisory(f"{call.tool} ({call.call_id})", merged)
        self.s.queued.insert(0, m.Message(role="user", content=text, id=m.new_id("guard"),
                                          notice="outputGuard"))
        self.sink.notify("session/notice", p.SessionNotice(
            session_id=self.s.id, kind="outputGuard", text=text,
            data={"callId": call.call_id, "risk": merged.risk, "flags": list(merged.flags),
                  "redacted": merged.redacted}))
        return out

    # ----------------------------------------------------------- interrupts

    def _write_receipts(self, reason: str) -> None:
        """Results for issued calls of an unfolded batch, so no call is left orphaned."""
        if self.batch.folded or not self.batch.calls:
            return
        self.batch.folded = True
        msgs, items = [], []
        for c in self.batch.calls:
            if c.call_id in self.batch.track.started:
                tail = "".join(self.batch.track.streamed.get(c.call_id, []))[-2000:]
                text = (f"{reason} Outcome UNKNOWN — this call may have begun executing before the "
                        "turn was stopped; do not assume it did not run, and reconcile before "
                        "re-issuing it." + (f"\nPartial output:\n{tail}" if tail else ""))
                out = ToolOutput(text, True, "unknown")
            else:
                out = ToolOutput(c.error or f"{reason} The call never started.", True, "none")
            msgs.append(m.Message(role="tool", tool_call_id=c.call_id, name=c.tool, content=out.content,
                                  id=c.call_id, turn_id=self.turn.id, status="cancelled",
                                  is_error=True, effect_status=out.effect_status))
            items.append(self._tool_item(c, "cancelled", out))
        self.s.commit(msgs)
        for item in items:
            self._item_completed(item)

    def _close_open_items(self) -> None:
        for item in list(self._open_items.values()):
            if isinstance(item, p.ToolCallItem):
                continue
            self._item_completed(item)


def _replace_text(out: ToolOutput, texts: list[str]) -> ToolOutput:
    """``out`` with its text (or its text parts, in order) replaced."""
    if isinstance(out.content, str):
        return ToolOutput(texts[0], out.is_error, out.effect_status, out.summary)
    it = iter(texts)
    parts = [{"type": "text", "text": next(it)} if part.get("type") == "text" else part
             for part in out.content]
    return ToolOutput(parts, out.is_error, out.effect_status, out.summary)
