"""skill: search the available skills, or load one into the session (see ``turnstoned.skills``).

``load`` asks the user first (label ``skill__load__<name>``). The text the user
saw in the preview is the text that gets loaded: it is read once, in prepare.
MCP prompts are fetched from their server when the load runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from turnstoned import skills
from turnstoned.net.rerank import POOL, reorder
from turnstoned.skills import HIGH_RISKS, Skill
from turnstoned.skills.active import MAX_CONTENT
from turnstoned.skills.catalog import SEARCH_LIMIT
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error

ACTIONS = ("load", "search")
PREVIEW_CHARS = 4000


class Args(msgspec.Struct, kw_only=True):
    """skill arguments; checked in ``prepare``."""

    action: Any = None
    name: Any = None
    query: Any = None


@dataclass(frozen=True, slots=True)
class Search:
    query: str
    results: tuple[Skill, ...]  # BM25 order; more than ``limit`` when a reranker will reorder
    total: int
    limit: int = SEARCH_LIMIT


@dataclass(frozen=True, slots=True)
class Load:
    skill: Skill
    already_active: bool = False


def _str(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _action(args: Args) -> str:
    action = _str(args.action).lower()
    if not action and args.action is None:  # a bare name (primary key) means load
        return "load" if _str(args.name) else "search" if _str(args.query) else ""
    return action


def risk_warning(skill: Skill) -> str:
    if skill.risk not in HIGH_RISKS:
        return ""
    return (f"⚠ Warning: skill '{skill.name}' has risk level '{skill.risk}': it may direct "
            "consequential actions. Review its text before approving.")


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    """Resolve the skill (load) or rank the catalog (search); only load needs approval."""
    action = _action(args)
    if action not in ACTIONS:
        return prepare_error(f"Error: action must be load or search, got '{args.action}'")
    catalog = skills.catalog_for(ctx.env)
    if action == "search":
        query = _str(args.query) or _str(args.name)
        web = ctx.env.services.web
        reranking = bool(query) and web is not None and web.bm25_reranker() is not None
        found = catalog.search(query, POOL if reranking else SEARCH_LIMIT)
        header = f"⚙ skill search '{query}'" if query else "⚙ skill search (all)"
        return PreparedCall(header=header, data=Search(query, tuple(found), len(catalog.skills)))
    name = _str(args.name)
    if not name:
        return prepare_error("Error: 'name' is required for load (use action='search' to find "
                             "one)", header="⚠ skill load: no name")
    skill = catalog.get(name)
    if skill is None:
        return prepare_error(_unknown(name, catalog), header=f"⚠ skill load: no skill '{name}'")
    if skill.required_args:
        return prepare_error(
            f"Error: skill '{skill.name}' is an MCP prompt that needs arguments "
            f"({', '.join(skill.required_args)}); skill load cannot supply them.")
    current = skills.active(ctx.env)
    if current and current.get("name") == skill.name and (
            skill.readonly or current.get("content") == skill.body):
        return PreparedCall(header=f"⚙ skill load {skill.name} (already active)",
                            data=Load(skill, already_active=True))
    return PreparedCall(header=f"⚙ skill load {skill.name} ({skill.origin}, risk {skill.risk})",
                        preview=_preview(skill), needs_approval=True,
                        approval_label=f"skill__load__{skill.name}", data=Load(skill))


def _unknown(name: str, catalog: skills.Catalog) -> str:
    close = catalog.search(name, 3)
    hint = f" Closest: {', '.join(s.name for s in close)}." if close else ""
    total = len(catalog.skills)
    return f"Error: no skill named '{name}' ({total} available).{hint} Use action='search'."


def _preview(skill: Skill) -> str:
    lines = [w for w in (risk_warning(skill),) if w]
    lines.append(f"Load skill '{skill.name}' for this session: {skill.description}")
    where = skill.path or (f"MCP server {skill.server}" if skill.server else skill.origin)
    lines.append(f"Origin: {skill.origin} ({where}); risk level: {skill.risk}")
    if skill.body:
        body = skill.body if len(skill.body) <= PREVIEW_CHARS else (
            skill.body[:PREVIEW_CHARS] + f"\n… ({len(skill.body)} chars in all)")
        lines.append(f"\n{body}")
    return "\n".join(lines)


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    """List the search results, or activate the skill."""
    if isinstance(call.data, Search):
        return _render_search(await _reranked(call.data, ctx))
    load: Load = call.data
    skill = load.skill
    if load.already_active:
        return ToolOutput(f"Skill '{skill.name}' is already active.", summary=skill.name)
    content = skill.body
    if skill.readonly:
        fetched = await _fetch_prompt(skill, ctx)
        if isinstance(fetched, ToolOutput):
            return fetched
        content = fetched
    record = skills.activate(ctx.env, skill, content)
    lines = [(f"Loaded skill '{skill.name}'. Its instructions are now part of your system "
             "message."), f"Description: {skill.description}", f"Risk level: {skill.risk}"]
    if len(record["content"]) < len(content):
        lines.append(f"Note: the skill text was cut to {MAX_CONTENT} characters.")
    lines.extend(w for w in (risk_warning(skill),) if w)
    return ToolOutput("\n".join(lines), summary=f"loaded {skill.name}")


async def _fetch_prompt(skill: Skill, ctx: ToolContext) -> str | ToolOutput:
    """An MCP prompt's text, or the error to return."""
    mcp = ctx.env.services.mcp
    get_prompt = getattr(mcp, "get_prompt", None)
    if get_prompt is None or skill.prompt is None:
        return ToolOutput(f"Error: MCP prompt '{skill.name}' is unavailable (no MCP manager).",
                          is_error=True)
    result = await get_prompt(skill.prompt, {})
    content = getattr(result, "content", "")
    text = content if isinstance(content, str) else "\n".join(
        str(p.get("text", "")) for p in content if isinstance(p, dict))
    if getattr(result, "is_error", False) or not text.strip():
        return ToolOutput(f"Error: could not fetch MCP prompt '{skill.name}': {text or 'empty'}",
                          is_error=True)
    return text


async def _reranked(search: Search, ctx: ToolContext) -> Search:
    """The BM25 candidates in the reranker's order (when ``rerank_bm25`` is on), cut to size."""
    web = ctx.env.services.web
    reranker = web.bm25_reranker() if web is not None and search.query else None
    ordered = await reorder(reranker, search.query, search.results,
                            lambda s: f"{s.name}\n{s.description}", "skill search")
    return Search(search.query, tuple(ordered[:search.limit]), search.total, search.limit)


def _render_search(search: Search) -> ToolOutput:
    if not search.results:
        text = (f"No skills match '{search.query}' ({search.total} available)." if search.total
                else "No skills are available. Skills are markdown files in .turnstone/skills/ "
                     "of the workspace or skills/ of the turnstoned config directory.")
        return ToolOutput(text, summary="0 skills")
    what = f"matching '{search.query}'" if search.query else "available"
    lines = [f"Skills {what} ({len(search.results)} of {search.total}):"]
    for s in search.results:
        category = s.category or "uncategorised"
        lines.append(f"- {s.name} [{category}; risk: {s.risk}; origin: {s.origin}] — "
                     f"{s.description}")
    lines.append("\nLoad one with skill(action='load', name=...).")
    return ToolOutput("\n".join(lines), summary=f"{len(search.results)} skills")
