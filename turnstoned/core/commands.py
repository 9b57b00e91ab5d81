"""Slash commands: one list every client shows (``session/commands``), and running a
skill or an MCP prompt from a ``/name`` prompt (``note``).

The built-ins map onto requests a client already makes; skills and MCP prompts come from
the session's skill catalog (files re-read, so a new skill shows at once). A prompt
``/name words`` naming a skill loads it into the session (the user asked for it: no
approval) and the model reads, before the prompt, that it did; an MCP prompt's text is
fetched by the model through ``skill`` (it may take arguments the server checks).
"""

from __future__ import annotations

from typing import get_args

from turnstoned import protocol as p
from turnstoned import skills
from turnstoned.tools.base import SessionEnv

BUILTINS: tuple[p.SessionCommand, ...] = (
    p.SessionCommand(name="compact", kind="builtin", request="session/compact",
                     description="Summarise the older part of the conversation now"),
    p.SessionCommand(name="undo", kind="builtin", request="turn/undo",
                     description="Put the workspace back as it was before the last turn"),
    p.SessionCommand(name="redo", kind="builtin", request="turn/redo",
                     description="Bring back what the last undo took back"),
    p.SessionCommand(name="mode", kind="builtin", request="session/setMode",
                     description="Change the approval mode",
                     arguments=[p.CommandArgument(name="mode", required=True,
                                                  choices=list(get_args(p.ApprovalMode)))]),
    p.SessionCommand(name="model", kind="builtin", request="session/setModel",
                     description="Change this session's model",
                     arguments=[p.CommandArgument(name="model", required=True)]),
    p.SessionCommand(name="new", kind="builtin", description="Start a new session"),
    p.SessionCommand(name="clear", kind="builtin",
                     description="Clear the chat and start afresh in a new session"),
)


def listed(catalog: skills.Catalog) -> list[p.SessionCommand]:
    """The built-ins, then the catalog's skills and MCP prompts (a name a built-in has is
    left to the built-in)."""
    taken = {c.name for c in BUILTINS}
    out = list(BUILTINS)
    for skill in catalog.skills:
        if skill.name in taken:
            continue
        kind: p.CommandKind = "prompt" if skill.prompt else "skill"
        out.append(p.SessionCommand(
            name=skill.name, description=skill.description, kind=kind,
            arguments=[p.CommandArgument(name=a, required=True) for a in skill.required_args]))
    return out


def note(env: SessionEnv, text: str) -> str | None:
    """For a ``/skill words`` prompt: load the skill and say so to the model (the prompt's
    text stays as the user typed it); None for any other text."""
    if not text.startswith("/"):
        return None
    name, _, rest = text[1:].partition(" ")
    skill = skills.catalog_for(env).get(name.strip())
    if skill is None:
        return None
    if skill.body:
        skills.activate(env, skill, skill.body)
        return (f"[The user ran /{skill.name}: its instructions are now in your system "
                "message; follow them for the request below.]")
    rest = rest.strip()
    return (f"[The user ran /{skill.name}: load the skill '{skill.name}' with the skill tool "
            "and follow it" + (f", with these arguments: {rest}" if rest else "") + ".]")
