"""memory: named, typed, scoped notes that outlive the session (see ``store.memory``).

Everything the model sent is checked in ``prepare``; ``execute`` only talks to
the store. Reads and writes of one batch are refused together (batch group
``memory``), and writes run one at a time, so a read never races a write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from turnstoned.net.rerank import reorder
from turnstoned.scopes import ScopeError, ScopeRef, Scopes
from turnstoned.search import BM25Index, tokenize
from turnstoned.store.memory import TYPES, Memory, MemoryStore
from turnstoned.tools._lenient import int_or
from turnstoned.tools._memory_names import (
    MemoryInputError,
    normalize_description,
    normalize_name,
)
from turnstoned.tools.base import BatchPolicy, PreparedCall, ToolContext, ToolOutput, prepare_error

ACTIONS = ("save", "get", "search", "delete", "list")
MAX_CONTENT = 32_768
DEFAULT_LIMIT, MAX_LIMIT = 20, 50
MIXED_ERROR = ("memory read and write actions cannot run in the same tool batch. Split the "
               "mutation and the follow-up read across separate assistant turns.")
# Field weights for ranking: a word in the name counts most, then the description.
RANK_WEIGHTS = (3, 2, 1)


class Args(msgspec.Struct, kw_only=True):
    """memory arguments; every field is checked in ``prepare``."""

    action: Any = None
    name: Any = None
    content: Any = None
    description: Any = None
    type: Any = None
    scope: Any = None
    query: Any = None
    limit: Any = None


@dataclass(frozen=True, slots=True)
class Plan:
    action: str
    refs: tuple[ScopeRef, ...]  # one for save/get/delete; the searched places otherwise
    visible: tuple[ScopeRef, ...]
    name: str = ""
    description: str = ""
    content: str = ""
    type: str | None = None
    query: str = ""
    limit: int = DEFAULT_LIMIT


class _Invalid(Exception):
    """An argument problem; the text is what the model reads."""


def _scopes(ctx: ToolContext) -> Scopes:
    env = ctx.env
    return Scopes.for_session(env.session_id, env.kind, env.cwd, env.workspace)


def _text(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Invalid(f"Error: '{field}' must be a string")
    return value


def _type(value: Any) -> str | None:
    text = _text(value, "type")
    if text is None or not text.strip():
        return None
    kind = text.strip().lower()
    if kind not in TYPES:
        raise _Invalid(f"Error: invalid type '{text}'. Valid: {', '.join(TYPES)}")
    return kind


def _limit(value: Any) -> int:
    number = int_or(value, DEFAULT_LIMIT)
    if number is None:
        raise _Invalid("Error: 'limit' must be an integer")
    return max(1, min(MAX_LIMIT, number))


def _scope_arg(value: Any) -> str | None:
    text = (_text(value, "scope") or "").strip().lower()
    return text or None


def _name(value: Any) -> str:
    try:
        return normalize_name(value)
    except MemoryInputError as exc:
        raise _Invalid(f"Error: {exc}") from None


def _plan(args: Args, ctx: ToolContext) -> Plan:
    action = _text(args.action, "action")
    action = (action or "").strip().lower()
    if action not in ACTIONS:
        raise _Invalid(f"Error: action must be save/get/search/delete/list, got '{args.action}'")
    scopes = _scopes(ctx)
    visible = tuple(scopes.visible())
    scope = _scope_arg(args.scope)
    if action in ("search", "list"):
        refs = (scopes.ref(scope),) if scope else visible
        query = (_text(args.query, "query") or "").strip() if action == "search" else ""
        return Plan(action, refs, visible, type=_type(args.type), query=query,
                    limit=_limit(args.limit))
    name = _name(args.name)
    ref = scopes.ref(scope)
    if action != "save":
        return Plan(action, (ref,), visible, name=name)
    content = (_text(args.content, "content") or "").strip()
    if not content:
        raise _Invalid("Error: 'content' must be non-empty for save")
    if len(content) > MAX_CONTENT:
        raise _Invalid(f"Error: content exceeds {MAX_CONTENT} character limit")
    try:
        description = normalize_description(args.description)
    except MemoryInputError as exc:
        raise _Invalid(f"Error: {exc}") from None
    return Plan(action, (ref,), visible, name=name, description=description, content=content,
                type=_type(args.type))


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    """Normalise and check everything; resolve the scope(s) the action touches."""
    if ctx.env.services.store is None:
        return prepare_error("Error: memory storage is not available in this daemon.")
    try:
        plan = _plan(args, ctx)
    except (_Invalid, ScopeError) as exc:
        return prepare_error(str(exc), header=f"⚠ memory: {str(exc).splitlines()[0][:160]}")
    where = plan.refs[0].scope if len(plan.refs) == 1 else "all visible scopes"
    if plan.action in ("search", "list"):
        what = f" '{plan.query}'" if plan.query else ""
        header = f"⚙ memory {plan.action}{what} ({where})"
        return PreparedCall(header=header, data=plan, policy=_policy("read"))
    header = f"⚙ memory {plan.action} '{plan.name}' (scope={where})"
    preview = f"{plan.description}\n\n{plan.content}" if plan.action == "save" else ""
    policy = _policy("read" if plan.action == "get" else "write")
    return PreparedCall(header=header, preview=preview, data=plan, policy=policy)


def _policy(access: str) -> BatchPolicy:
    """Reads and writes may not share a batch; writes run one at a time in model order."""
    if access == "read":
        return BatchPolicy("memory", "read", MIXED_ERROR)
    return BatchPolicy("memory", "write", MIXED_ERROR, serialize=True)


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    """Run the planned action against the store."""
    plan: Plan = call.data
    memories = MemoryStore(ctx.env.services.need_store())
    if plan.action == "save":
        return _save(memories, plan)
    if plan.action == "get":
        return _get(memories, plan)
    if plan.action == "delete":
        return _delete(memories, plan)
    found = memories.all_in(plan.refs, plan.type)
    if plan.query:
        found = await _reranked(rank(found, plan.query), plan.query, ctx)
    return _search(found, plan)


def _save(memories: MemoryStore, plan: Plan) -> ToolOutput:
    ref = plan.refs[0]
    created, kind = memories.save(ref, plan.name, plan.description, plan.content, plan.type)
    verb = "Saved" if created else "Updated"
    return ToolOutput(f"{verb} memory '{plan.name}' (type={kind}, scope={ref.scope})",
                      summary=f"{verb.lower()} {plan.name}")


def _not_found(memories: MemoryStore, plan: Plan) -> ToolOutput:
    ref = plan.refs[0]
    text = f"Error: memory '{plan.name}' not found (scope={ref.scope})"
    others = memories.scopes_holding([r for r in plan.visible if r != ref], plan.name)
    if len(others) == 1:
        text += (f"\nHint: a memory with this name exists in scope='{others[0]}'; retry with "
                 f"scope='{others[0]}'.")
    elif others:
        listed = ", ".join(f"'{s}'" for s in others)
        text += f"\nHint: memories with this name exist in scopes {listed}; pass one as scope."
    return ToolOutput(text, is_error=True)


def _get(memories: MemoryStore, plan: Plan) -> ToolOutput:
    found = memories.get(plan.refs[0], plan.name)
    if found is None:
        return _not_found(memories, plan)
    return ToolOutput(f"{_line(found)}\n\n{found.content}", summary=found.name)


def _delete(memories: MemoryStore, plan: Plan) -> ToolOutput:
    if not memories.delete(plan.refs[0], plan.name):
        return _not_found(memories, plan)
    return ToolOutput(f"Deleted memory '{plan.name}' (scope={plan.refs[0].scope})",
                      summary=f"deleted {plan.name}")


def _line(mem: Memory) -> str:
    suffix = f" — {mem.description}" if mem.description else ""
    return f"[{mem.type}:{mem.scope}] {mem.name}{suffix}"


def weighted(fields: tuple[str, ...], weights: tuple[int, ...]) -> str:
    """One document in which field ``i`` appears ``weights[i]`` times."""
    return "\n".join(text for text, times in zip(fields, weights, strict=True)
                     for _ in range(times))


def rank(found: list[Memory], query: str) -> list[Memory]:
    """BM25 over name, description and content (any word may match), best first.

    Memories no query word matches as a whole word, but where a word of at
    least two characters appears inside the name, description or content
    (``pars`` in ``parser``), follow, most recently updated first.
    """
    index = BM25Index([weighted((m.name, m.description, m.content), RANK_WEIGHTS)
                       for m in found])
    ranked = index.search(query, len(found))
    chosen = set(ranked)
    terms = {t for t in (*tokenize(query), *(w.casefold() for w in query.split())) if len(t) >= 2}
    rest = [i for i, m in enumerate(found) if i not in chosen and any(
        t in f"{m.name}\n{m.description}\n{m.content}".casefold() for t in terms)]
    return [found[i] for i in (*ranked, *rest)]


async def _reranked(found: list[Memory], query: str, ctx: ToolContext) -> list[Memory]:
    """The best BM25 candidates in the reranker's order, when ``rerank_bm25`` is on."""
    web = ctx.env.services.web
    return await reorder(web.bm25_reranker() if web is not None else None, query, found,
                         lambda m: f"{m.name}\n{m.description}\n{m.content}", "memories")


def _search(found: list[Memory], plan: Plan) -> ToolOutput:
    total = len(found)
    shown = found[:plan.limit]
    if not shown:
        text = f"No memories found for '{plan.query}'." if plan.query else "No memories stored."
        return ToolOutput(text, summary="0 memories")
    if plan.action == "search":
        header = f"Memories ({len(shown)} results):"
    else:
        header = f"Memories ({len(shown)}):"
    lines = [header, *(f"  {_line(m)}" for m in shown)]
    if total > len(shown):
        lines.append(f"  ... {total - len(shown)} more; raise limit or narrow the query.")
    lines.append("\nFor full content, call memory(action='get') with the displayed name and scope.")
    return ToolOutput("\n".join(lines), summary=f"{len(shown)} memories")
