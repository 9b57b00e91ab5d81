"""One batch of tool calls, from the model's raw calls to the folded result.

A batch is the tool calls of one assistant message:

    prepare (each call on its own, then batch policies)
      → approve (``approval.decide`` asks the editor, through the batch's sink)
      → execute (in parallel unless a policy serialises; output streamed to the sink)
      → fold (repeat warning, context budget, output guard, and with ``[guard]
        llm_check`` a model's second look at flagged results; see ``results``)

and ends as a ``Folded``: the tool messages to commit, their final items, the
notices for the editor and what the model reads after the results. A batch
never commits and never decides who hears about it: the turn that owns the
conversation commits, and the ``EventSink`` in its ``BatchSetup`` receives
approval requests and streamed output, so a sub-agent can run a batch for its
own environment with a sink of its own. An interrupted batch still answers
every call it issued (``receipts``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from turnstoned import protocol as p
from turnstoned.core import approval, editor
from turnstoned.core import messages as m
from turnstoned.core.approval import ApprovalPolicy
from turnstoned.core.approval.edits import edit_note
from turnstoned.core.arguments import is_object, parse_arguments, unknown_tool_text
from turnstoned.core.events import Coalescer, EventSink
from turnstoned.core.results import (
    Advisory,
    Budget,
    GuardSettings,
    Rate,
    RepeatDetector,
    guard_output,
    second_look,
)
from turnstoned.llm.types import RawToolCall
from turnstoned.tools.base import (
    PreparedCall,
    SessionEnv,
    ToolContext,
    ToolHandle,
    ToolOutput,
    prepare_error,
)

log = logging.getLogger(__name__)

MAX_PARALLEL = 4
MAX_RATED = 8  # flagged results of one batch a model looks at again (the rest: heuristics)


@dataclass(slots=True)
class BatchSetup:
    """What a batch runs with: the agent's environment, where it reports, its gates."""

    env: SessionEnv
    sink: EventSink
    turn_id: str
    cancel: asyncio.Event
    policy: ApprovalPolicy
    repeats: RepeatDetector = field(default_factory=RepeatDetector)
    guard: GuardSettings = field(default_factory=GuardSettings)
    # The side call that rates a flagged result (with ``guard.llm_check``; None: never).
    rate: Rate | None = None
    # Called with the calls about to run, before they run (the turn's checkpoint).
    before_changes: Callable[[Sequence[PreparedCall]], Awaitable[None]] | None = None


@dataclass(slots=True)
class Outcome:
    """A call's result before the fold."""

    call: PreparedCall
    output: ToolOutput
    status: p.ToolStatus


@dataclass(slots=True)
class Folded:
    """A batch's results, ready to commit (in model order) and to emit."""

    messages: list[m.Message]
    items: list[p.ToolCallItem]
    notices: list[p.SessionNotice] = field(default_factory=list)
    # Guard advisories: they lead the next user message the model reads.
    advisories: list[m.Message] = field(default_factory=list)
    # The user's feedback from the approval, read after the results.
    feedback: list[str] = field(default_factory=list)


def new_call_id() -> str:
    """A daemon-unique call id: models reuse theirs (``call_0`` every round)."""
    return f"call_{secrets.token_hex(12)}"


def prepare_one(raw: RawToolCall, handle: ToolHandle | None, available: Sequence[str],
                ctx: ToolContext) -> PreparedCall:
    """Phase 1 for one call; whatever goes wrong stays inside this call.

    The call is known as ``ctx.call_id`` (the model's id when that is empty) and
    remembers the model's id for talking back to the model.
    """
    name = raw.name.strip()
    if handle is None:
        call = prepare_error(unknown_tool_text(name, available), header=f"⚠ unknown tool {name}")
        args_json = raw.arguments if is_object(raw.arguments) else "{}"
    else:
        args = parse_arguments(name, raw.arguments, handle.primary_key)
        if isinstance(args, str):
            call = prepare_error(args, header=f"⚠ {name}: malformed arguments "
                                             f"{(raw.arguments or '')[:200]!r}")
            args_json = "{}"
        else:
            args_json = json.dumps(args, ensure_ascii=False)
            try:
                call = handle.prepare(args, ctx)
            except Exception as exc:  # a preparer bug must not spoil its siblings
                log.exception("preparing %s failed", name)
                call = prepare_error(
                    f"Internal error preparing {name}: {type(exc).__name__}: {exc}\n"
                    "Sibling tool calls in this batch were unaffected.")
    call.call_id, call.model_id = ctx.call_id or raw.id, raw.id
    call.tool, call.arguments = name, args_json
    return call


def apply_batch_policies(calls: list[PreparedCall]) -> bool:
    """Refuse mixed read/write groups; returns whether the batch must run serially."""
    if len(calls) < 2:
        return False
    groups: dict[str, list[PreparedCall]] = {}
    for c in calls:
        if c.policy and not c.error:
            groups.setdefault(c.policy.group, []).append(c)
    for members in groups.values():
        if len({m.policy.access for m in members if m.policy}) > 1:
            for member in members:
                assert member.policy is not None
                member.error = member.policy.mixed_access_error or (
                    f"{member.policy.group} read and write actions cannot run in the same "
                    "tool batch.")
                member.needs_approval = False
    return any(c.policy and c.policy.serialize and not c.error for c in calls)


def call_item(c: PreparedCall, status: p.ToolStatus, out: ToolOutput | None = None) -> p.ToolCallItem:
    """The ``toolCall`` item of a call in ``status`` (with its output once it has one)."""
    return p.ToolCallItem(
        id=c.call_id, call_id=c.call_id, tool=c.tool, arguments=c.arguments, header=c.header,
        preview=c.preview, needs_approval=c.needs_approval and not c.error, status=status,
        output=out.text() if out else None, is_error=out.is_error if out else False,
        effect_status=out.effect_status if out else None,
        file_change=c.file_change_info(), verdict=c.verdict, judge_verdict=c.judge_verdict,
        auto_approved=c.auto_approved is not None, auto_approve_reason=c.auto_approved,
        original_arguments=c.original_arguments, sandbox=c.sandbox,
    )


def _noted(out: ToolOutput, note: str) -> ToolOutput:
    """``out`` with ``note`` before its content."""
    if isinstance(out.content, str):
        return replace(out, content=note + out.content)
    return replace(out, content=[{"type": "text", "text": note}, *out.content])


class Batch:
    """The tool calls of one assistant message, from prepare to the folded result."""

    def __init__(self, setup: BatchSetup, handles: dict[str, ToolHandle],
                 calls: list[PreparedCall], serialize: bool) -> None:
        self.setup = setup
        self.handles = handles
        self.calls = calls
        self.serialize = serialize
        self.started: set[str] = set()  # crossed the 'started' mark (for receipts)
        self.streamed: dict[str, list[str]] = {}  # a tail of each call's streamed output
        self.folded = False  # its results are in the conversation

    @classmethod
    def prepare(cls, setup: BatchSetup, handles: dict[str, ToolHandle],
                raws: list[RawToolCall]) -> Batch:
        """Phase 1: every call prepared on its own, under a daemon-unique id.

        Two calls of one reply with the same id keep distinct ids toward the model too
        (the second becomes ``<id>_2``): a history repeating an id in one message is invalid.
        """
        available = sorted(handles)
        calls = []
        seen: set[str] = set()
        for raw in raws:
            if raw.id in seen:
                raw.id = f"{raw.id}_{len(seen) + 1}"
            seen.add(raw.id)
            ctx = ToolContext(env=setup.env, call_id=new_call_id(), cancel=setup.cancel,
                              turn_id=setup.turn_id)
            calls.append(prepare_one(raw, handles.get(raw.name.strip()), available, ctx))
        return cls(setup, handles, calls, apply_batch_policies(calls))

    def records(self) -> list[m.ToolCall]:
        """The calls as the assistant message keeps them."""
        return [m.ToolCall(id=c.call_id, model_id=c.model_id, name=c.tool, arguments=c.arguments,
                           header=c.header, preview=c.preview,
                           needs_approval=c.needs_approval and not c.error,
                           file_change=c.file_change_info())
                for c in self.calls]

    async def run(self, budget: Budget) -> Folded:
        """Phases 2-4: approve, execute what may run, fold every result."""
        setup = self.setup
        verdict = await approval.decide(setup.sink, setup.policy, setup.env.session_id,
                                         setup.turn_id, self.calls, setup.env, self._reprepare)
        self.calls = [verdict.replaced.get(c.call_id, c) for c in self.calls]
        denied = {c.call_id: Outcome(c, ToolOutput(verdict.denied[c.call_id], True, "none"),
                                     "declined")
                  for c in self.calls if c.call_id in verdict.denied}
        runnable = [c for c in self.calls if c.call_id not in denied]
        if setup.before_changes is not None:
            await setup.before_changes([c for c in runnable if not c.error])
        outcomes = await self._execute(runnable)
        changed = editor.files_changed(setup.env, [o.call for o in outcomes
                                                   if o.status == "completed"])
        if changed is not None:
            setup.sink.notify(changed)
        by_id = {o.call.call_id: o for o in outcomes} | denied
        return await self._fold([by_id[c.call_id] for c in self.calls], budget, verdict.notes)

    def _reprepare(self, call: PreparedCall, arguments: dict[str, Any]) -> PreparedCall:
        """``call`` prepared again with arguments the user edited (same ids).

        An edit_file answered with ``content`` carries the file's final text from the
        editor's review diff: it is written as that text (a write_file under the same
        approval label, so it is not asked about again for being a different tool).
        """
        tool = call.tool
        if tool == "edit_file" and isinstance(arguments.get("content"), str):
            tool = "write_file"
            arguments = {"path": arguments.get("path", ""), "content": arguments["content"]}
        raw = RawToolCall(id=call.model_id, name=tool, arguments=json.dumps(arguments))
        ctx = ToolContext(env=self.setup.env, call_id=call.call_id, cancel=self.setup.cancel)
        edited = prepare_one(raw, self.handles.get(tool), sorted(self.handles), ctx)
        if tool != call.tool and not edited.error:
            edited.approval_label = call.approval_label
        return edited

    async def _execute(self, calls: list[PreparedCall]) -> list[Outcome]:
        """Phase 3: run the approved calls (errors pass through), results in model order."""
        semaphore = asyncio.Semaphore(1 if self.serialize else MAX_PARALLEL)
        streams: dict[str, Coalescer] = {}

        async def run_one(call: PreparedCall) -> Outcome:
            if call.error:
                return Outcome(call, ToolOutput(call.error, is_error=True, effect_status="none"),
                               "failed")
            async with semaphore:
                self.started.add(call.call_id)
                try:
                    output = await self.handles[call.tool].execute(call, self._ctx(call, streams))
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.exception("executing %s failed", call.tool)
                    output = ToolOutput(
                        f"Error executing {call.tool}: {type(exc).__name__}: {exc}\nThis tool "
                        "raised an unexpected exception. Sibling tool calls in this batch (if "
                        "any) completed independently.", is_error=True)
            return Outcome(call, output, "failed" if output.is_error else "completed")

        jobs: list[Awaitable[Outcome]] = [run_one(c) for c in calls]
        try:
            if len(jobs) == 1:
                return [await jobs[0]]
            return list(await asyncio.gather(*jobs))
        finally:
            for stream in streams.values():
                stream.close()

    def _ctx(self, call: PreparedCall, streams: dict[str, Coalescer]) -> ToolContext:
        """The context a call executes in: its output streams to the sink (coalesced)."""
        chunks = self.streamed.setdefault(call.call_id, [])
        sink, setup = self.setup.sink, self.setup

        def flush(text: str) -> None:
            sink.notify(p.ToolOutputDelta(session_id=setup.env.session_id, turn_id=setup.turn_id,
                                          item_id=call.call_id, call_id=call.call_id, chunk=text))

        stream = streams[call.call_id] = Coalescer(flush, interval=0.05, max_chars=65_536)

        def emit(chunk: str) -> None:
            chunks.append(chunk)
            if len(chunks) > 256:  # keep only a tail for interrupt receipts
                del chunks[:128]
            stream.push(chunk)

        return ToolContext(env=setup.env, call_id=call.call_id, cancel=setup.cancel,
                           turn_id=setup.turn_id, emit_output=emit)

    async def _fold(self, outcomes: list[Outcome], budget: Budget,
                    feedback: list[str]) -> Folded:
        """Phase 4: each result through the repeat check, the budget and the guard, then
        the second look at flagged results (all at once, each bounded)."""
        folded = Folded(messages=[], items=[], feedback=feedback)
        guarded: list[tuple[Outcome, ToolOutput, Advisory | None]] = []
        for o in outcomes:
            out = o.output
            if o.call.original_arguments is not None:
                out = _noted(out, edit_note(o.call))
            if self.setup.repeats.see(o.call.tool, o.call.arguments):
                out = self.setup.repeats.mark(out)
            out, advisory = guard_output(f"{o.call.tool} ({o.call.model_id})", budget.fit(out),
                                         self.setup.guard)
            guarded.append((o, out, advisory))
        advisories = await self._second_looks([(out, a) for _, out, a in guarded])
        for (o, out, _), advisory in zip(guarded, advisories, strict=True):
            if advisory is not None:
                folded.advisories.append(m.Message(role="user", content=advisory.text,
                                                   id=m.new_id("guard"), notice="outputGuard"))
                folded.notices.append(p.SessionNotice(
                    session_id=self.setup.env.session_id, kind="outputGuard", text=advisory.text,
                    data={"callId": o.call.call_id, "risk": advisory.risk,
                          "flags": list(advisory.flags), "redacted": advisory.redacted}))
            folded.messages.append(self._result(o.call, out, o.status))
            folded.items.append(call_item(o.call, o.status, out))
        return folded

    async def _second_looks(self, results: list[tuple[ToolOutput, Advisory | None]]
                            ) -> list[Advisory | None]:
        """The advisories after a model rated the flagged results (``[guard] llm_check``);
        the heuristic ones where it was not asked or gave no usable answer."""
        settings, rate = self.setup.guard, self.setup.rate
        advisories = [a for _, a in results]
        if not settings.llm_check or rate is None:
            return advisories
        asked = [i for i, a in enumerate(advisories) if a is not None and a.flagged]
        if len(asked) > MAX_RATED:
            log.info("guard: %d flagged results; the first %d are rated", len(asked), MAX_RATED)
            asked = asked[:MAX_RATED]
        rated = await asyncio.gather(*(
            second_look(advisory, results[i][0], rate, settings.llm_timeout)
            for i in asked if (advisory := advisories[i]) is not None))
        for i, advisory in zip(asked, rated, strict=True):
            advisories[i] = advisory
        return advisories

    def _result(self, call: PreparedCall, out: ToolOutput, status: p.ToolStatus) -> m.Message:
        return m.Message(role="tool", tool_call_id=call.call_id, name=call.tool,
                         content=out.content, id=call.call_id, turn_id=self.setup.turn_id,
                         status=status, is_error=out.is_error, effect_status=out.effect_status)

    def receipts(self, reason: str) -> Folded | None:
        """Results for every call of an unfolded batch, so no call is left without one."""
        if self.folded or not self.calls:
            return None
        folded = Folded(messages=[], items=[])
        for c in self.calls:
            if c.call_id in self.started and c.receipt is not None:
                out = c.receipt(reason)
            elif c.call_id in self.started:
                tail = "".join(self.streamed.get(c.call_id, []))[-2000:]
                text = (f"{reason} Outcome UNKNOWN — this call may have begun executing before the "
                        "turn was stopped; do not assume it did not run, and reconcile before "
                        "re-issuing it." + (f"\nPartial output:\n{tail}" if tail else ""))
                out = ToolOutput(text, True, "unknown")
            else:
                out = ToolOutput(c.error or f"{reason} The call never started.", True, "none")
            folded.messages.append(self._result(c, out, "cancelled"))
            folded.items.append(call_item(c, "cancelled", out))
        return folded
