"""Task agents: the sub-agent behind a ``task_agent`` call.

A task agent works in the session of the call, on a conversation of its own
(the prompt, then its own replies and tool results, kept in memory), with the
tools of kind ``task`` plus the MCP tools. It runs the pipeline unit
(``pipeline.Batch``) like a turn does, reporting to the session's sink through
``NestedSink``: its items, streamed output and approval questions reach the
editor marked with ``parentCallId`` (the ``task_agent`` call), and its approval
cycles are its own, so several agents' questions can be pending at once. What
asks is what asks in the session: the auto set (reads, searches, notify) runs
without asking, unless the call itself must ask (a read outside the workspace,
a credential store); grants ("always") are the session's. Unlike the original,
which ran every auto-set tool unasked in a task agent, a call that asks in the
session asks here too.

Depth is one (a task agent cannot start another), at most ``[tools]
max_parallel_agents`` run at once in the daemon, and each has ``[tools]
agent_max_turns`` model calls; at the cap it is asked once, without tools, for
its final answer. Near its context window its older rounds are compacted into
a summary (its task and current round kept; see ``Compactor.compact_task``).
Its background shells end with it, and what it read counts as read for the
session afterwards. When the turn is interrupted, the call's
receipt is the agent's ``Ledger``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import msgspec

from turnstoned import protocol as p
from turnstoned.config import ModelSettings
from turnstoned.core import compaction, editor, toolset
from turnstoned.core import messages as m
from turnstoned.core.compaction import Compactor
from turnstoned.core.events import EventSink
from turnstoned.core.handles import RefusedAgent
from turnstoned.core.ledger import Ledger
from turnstoned.core.pipeline import Batch, BatchSetup, call_item
from turnstoned.core.replies import ItemStream
from turnstoned.core.results import Budget, RepeatDetector, guard_settings, rate_with
from turnstoned.llm.types import ModelError, ModelReply, RawToolCall
from turnstoned.tools.base import PreparedCall, SessionEnv, ToolContext, ToolHandle, ToolOutput

if TYPE_CHECKING:
    from turnstoned.core.session import Session
    from turnstoned.core.sessions import Sessions

IDENTITY = """# Task agent
You are now an autonomous task agent: another agent delegated the task below to you. Carry it \
out completely with your tools, then finish with a concise report of what you did and found; \
that report is all the other agent will see. Read a file before you edit it; use write_file \
for new files, bash for commands and search to find code. Do not ask questions: nobody can \
answer them."""
LIMIT_NOTE = ("You have reached the tool-call limit for this task. Give your complete final "
              "response now, without calling tools.")
RESULT_CAP = 16_000  # characters of one tool result the agent reads
NESTED = (p.ItemStarted, p.ItemCompleted, p.ItemDelta, p.ToolOutputDelta, p.ApprovalResolved,
          p.ApprovalVerdicts)


class NestedSink:
    """The session's sink, with everything a task agent says marked as nested under its call."""

    def __init__(self, parent: EventSink, call_id: str) -> None:
        self.parent, self.call_id = parent, call_id

    def notify(self, event: p.Event) -> None:
        if isinstance(event, NESTED):
            event = msgspec.structs.replace(event, parent_call_id=self.call_id)
        elif isinstance(event, p.SessionUsage):
            return  # the session's context is the parent's, not the agent's
        self.parent.notify(event)

    async def request_approval(self, params: p.ApprovalRequestParams) -> p.ApprovalResponse:
        nested = msgspec.structs.replace(params, parent_call_id=self.call_id)
        return await self.parent.request_approval(nested)

    async def request_mcp_trust(self, params: p.McpTrustRequestParams
                                ) -> p.McpTrustResponse | None:
        return await self.parent.request_mcp_trust(params)

    async def request_policy_trust(self, params: p.PolicyTrustRequestParams
                                   ) -> p.McpTrustResponse | None:
        return await self.parent.request_policy_trust(params)


class AgentHost:
    """Runs task agents for the daemon's sessions (``Services.agents``)."""

    def __init__(self, sessions: Sessions) -> None:
        self.sessions = sessions
        self.slots = asyncio.Semaphore(sessions.config.tools.max_parallel_agents)

    async def run(self, prompt: str, call: PreparedCall, ctx: ToolContext) -> ToolOutput:
        session = self.sessions.live.get(ctx.env.session_id)
        if session is None:
            return ToolOutput("Error: the session of this call is not open", is_error=True,
                              effect_status="none")
        ledger = Ledger()
        call.receipt = ledger.receipt
        async with self.slots:
            return await SubAgent(self.sessions, session, prompt, ctx, ledger).run()


class SubAgent:
    """One task agent's run: its loop, its batches, its items."""

    def __init__(self, sessions: Sessions, session: Session, prompt: str, ctx: ToolContext,
                 ledger: Ledger) -> None:
        self.sessions, self.session, self.ledger = sessions, session, ledger
        parent = session.env
        self.env = SessionEnv(
            session_id=session.id, kind="task", cwd=parent.cwd, workspace=parent.workspace,
            settings=parent.settings, read_set=set(parent.read_set), announce=parent.announce,
            services=parent.services)
        sink = NestedSink(sessions.sink, ctx.call_id)
        guard = guard_settings(sessions.config)
        self.setup = BatchSetup(env=self.env, sink=sink, turn_id=ctx.turn_id, cancel=ctx.cancel,
                                policy=session.policy, repeats=RepeatDetector(), guard=guard,
                                rate=self._rate if guard.llm_check else None)
        self.items = ItemStream(sink, session.id, ctx.turn_id)
        self.history = [m.Message(role="user", content=prompt, id=m.new_id("task"))]
        self.handles = self._handles()
        self.batch: Batch | None = None
        self.said = ""  # the agent's last non-empty text

    async def _rate(self, messages: list[dict[str, Any]]) -> str:
        """The output guard's second look, asked of the session's model (counted in the
        running turn, as the agent's own calls are)."""
        return await rate_with(self.sessions.model(self.session.id), messages,
                               self.session.spend())

    def _handles(self) -> dict[str, ToolHandle]:
        found = toolset.build("task", self.env, toolset.SearchSettings(mode="off"))
        self.schemas = found.schemas
        return {**found.handles, "task_agent": RefusedAgent()}

    async def run(self) -> ToolOutput:
        try:
            model = self.sessions.model(self.session.id)
        except ModelError as exc:
            return ToolOutput(f"Task error: {exc.message}", is_error=True, effect_status="none")
        stopped = False
        compactor = compaction.compactor(self.session, self.sessions.config, model,
                                         self.sessions.sink)
        try:
            answer = await self._loop(model, compactor)
        except asyncio.CancelledError:
            stopped = True
            self._settle_interrupted()
            raise
        except ModelError as exc:
            if not self.said:
                return ToolOutput(f"Task error: {exc.message}", is_error=True)
            answer = self.said
        finally:
            self.items.close_open()
            self.session.env.read_set |= self.env.read_set
            if stopped:  # the stop must be quick: what the agent started dies now
                self.env.kill_now()
            else:
                await self.env.close()
        calls = len(self.ledger.entries)
        return ToolOutput(answer.strip() or "(no output)",
                          summary=f"{calls} tool call{'s' if calls != 1 else ''}")

    async def _loop(self, model: ModelSettings, compactor: Compactor) -> str:
        for _ in range(self.sessions.config.tools.agent_max_turns):
            reply_text, raws = await self._ask(model, self.schemas, compactor)
            if raws:
                await editor.load_buffers(self.env)
            batch = self.batch = Batch.prepare(self.setup, self.handles, raws)
            self.history.append(m.Message(role="assistant", content=reply_text,
                                          id=m.new_id("msg"), tool_calls=batch.records()))
            if not batch.calls:
                return reply_text
            self.ledger.issue(batch.calls)
            for c in batch.calls:
                self.items.started(call_item(c, "pending"))
            folded = await batch.run(self._budget(model, compactor))
            batch.folded = True
            self.history.extend(folded.messages)
            extra = [a.text() for a in folded.advisories] + folded.feedback
            if extra:
                self.history.append(m.Message(role="user", content="\n\n".join(extra),
                                              id=m.new_id("user"), notice="feedback"))
            self.ledger.settle(folded.items)
            for item in folded.items:
                self.items.completed(item)
        self.history.append(m.Message(role="user", content=LIMIT_NOTE, id=m.new_id("user"),
                                      notice="turnLimit"))
        reply_text, _ = await self._ask(model, [], compactor)
        return reply_text

    def _system(self, model: ModelSettings) -> dict[str, Any]:
        return {"role": "system",
                "content": f"{self.session.system_prompt(model.name)}\n\n{IDENTITY}"}

    def _messages(self, model: ModelSettings) -> list[dict[str, Any]]:
        return [self._system(model), *m.to_openai(self.history)]

    async def _compact(self, compactor: Compactor) -> bool:
        compacted = await compactor.compact_task(self.history)
        if compacted is None:
            return False
        self.history = compacted
        return True

    async def _ask(self, model: ModelSettings, schemas: list[dict[str, Any]],
                   compactor: Compactor) -> tuple[str, list[RawToolCall]]:
        """One model call, after compacting the agent's context when it nears the window;
        a refusal of the prompt as too long compacts it and tries once more."""
        def prompt() -> tuple[list[dict[str, Any]], int]:
            messages = self._messages(model)
            return messages, compaction.prompt_chars(messages, schemas)

        async def call(messages: list[dict[str, Any]], chars: int) -> ModelReply:
            return await self.items.reply(model, messages, schemas, m.new_id("msg"))

        async def compact(trigger: compaction.CallTrigger, tokens: int) -> bool:
            return (trigger == "overflow" or compactor.over(tokens)) and await self._compact(compactor)

        reply = await compactor.call(prompt, call, compact)
        spend = self.session.spend()
        if reply.usage and spend is not None:  # the agent's calls are the turn's spend
            spend(reply.usage)
        if reply.content.strip():
            self.said = reply.content
        return reply.content, reply.tool_calls

    def _budget(self, model: ModelSettings, compactor: Compactor) -> Budget:
        """The room for a batch's results, as for a turn: the task and the system message
        always go out, older rounds give way when compaction is on."""
        fixed = (compaction.prompt_chars([self._system(model)], self.schemas)
                 + compaction.message_chars(self.history[0]))
        return compaction.result_budget(self.history[1:], compactor.limits(), fixed,
                                        min(RESULT_CAP, self.env.output_cap()), compactor.enabled)

    def _settle_interrupted(self) -> None:
        """The stop came mid-batch: its receipts go to the ledger and close its items."""
        batch = self.batch
        folded = batch.receipts("Cancelled by user.") if batch is not None else None
        if batch is None or folded is None:
            return
        batch.folded = True
        self.ledger.settle(folded.items)
        for item in folded.items:
            self.items.completed(item)
