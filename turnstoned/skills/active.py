"""The skill a session has loaded: kept in its persisted state, shown in its system message.

The text is stored as it was when the user approved the load, so editing or
deleting the file later does not change what an approved session runs with;
loading it again picks up the new text.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Protocol

from turnstoned.skills.catalog import Catalog, Skill, build_catalog, render, skills_root

ACTIVE_KEY = "active_skill"
MAX_CONTENT = 32_768


class SkillServices(Protocol):
    @property
    def config_dir(self) -> Path | None: ...

    @property
    def mcp(self) -> Any: ...  # an MCP manager (its prompts are skills), or None


class SkillSession(Protocol):
    """What skills need of a session (a tool's ``SessionEnv`` is one)."""

    @property
    def session_id(self) -> str: ...

    @property
    def cwd(self) -> Path: ...

    @property
    def workspace(self) -> Path | None: ...

    @property
    def persisted(self) -> dict[str, Any]: ...

    @property
    def services(self) -> SkillServices: ...

    def persist(self, key: str, value: Any) -> None: ...


def catalog_for(env: SkillSession) -> Catalog:
    """The skills a session can see (files are re-read: a dropped-in file shows up at once)."""
    services = env.services
    return build_catalog(services.config_dir, skills_root(env.cwd, env.workspace), services.mcp)


def active(env: SkillSession) -> dict[str, Any] | None:
    """The persisted record of the loaded skill, if any."""
    record = env.persisted.get(ACTIVE_KEY)
    return record if isinstance(record, dict) and record.get("name") else None


def activate(env: SkillSession, skill: Skill, content: str) -> dict[str, Any]:
    """Make ``skill`` (with ``content`` as its text) the session's skill; returns the record."""
    record = {
        "name": skill.name, "description": skill.description, "risk": skill.risk,
        "origin": skill.origin, "content": content[:MAX_CONTENT], "loaded_at": time.time(),
    }
    env.persist(ACTIVE_KEY, record)
    return record


def prompt_section(env: SkillSession, model: str) -> str:
    """The system-message section for the loaded skill ("" when none is loaded)."""
    record = active(env)
    if record is None:
        return ""
    body = render(str(record.get("content", "")), model, env.session_id)
    return (f"# Active skill: {record['name']}\n"
            f"The user approved loading this skill for the session. Follow its instructions.\n"
            f"<skill name=\"{record['name']}\">\n{body}\n</skill>")
