"""Skills: instructions a session can take on, from markdown files and MCP prompts.

Sources, in order of precedence for the same name:

1. ``<project>/.turnstone/skills/`` — the session's workspace folder, else the
   git root of its cwd, else its cwd (origin ``workspace``);
2. ``<config dir>/skills/`` — the user's own skills (origin ``user``);
3. prompts of connected MCP servers, read-only (origin ``mcp``).

A skill file is ``<name>.md`` or ``<name>/SKILL.md`` starting with front-matter
(``name``, ``description``, ``tags``, ``category``, ``risk``); the rest is the
body. A file that cannot be read or understood is skipped with a warning.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from turnstoned.protocol import SkillOrigin, SkillRisk
from turnstoned.scopes import project_root
from turnstoned.search import BM25Index
from turnstoned.skills.frontmatter import FrontMatterError, Value, split

log = logging.getLogger(__name__)

RISKS: tuple[SkillRisk, ...] = ("low", "medium", "high", "critical")
HIGH_RISKS = frozenset({"high", "critical"})
MCP_RISK: SkillRisk = "medium"  # an MCP prompt's text comes from elsewhere and was never reviewed here
MAX_FILE_BYTES = 256 * 1024
SEARCH_LIMIT = 10
# Field weights for search: name, description, tags, category.
SEARCH_WEIGHTS = (2, 1, 1, 1)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
_VARIABLE = re.compile(r"\{\{\s*(model|session_id|ws_id)\s*\}\}")


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    body: str = ""  # empty for MCP prompts: their text is fetched when loaded
    tags: tuple[str, ...] = ()
    category: str = ""
    risk: SkillRisk = "low"
    origin: SkillOrigin = "user"
    path: str | None = None
    server: str | None = None
    prompt: str | None = None  # the MCP prompt's full name, for get_prompt
    required_args: tuple[str, ...] = ()

    @property
    def readonly(self) -> bool:
        return self.origin == "mcp"


class SkillFileError(ValueError):
    """A skill file that cannot be used; the text says why."""


def _str(value: Value | None) -> str:
    return value.strip() if isinstance(value, str) else ""


def parse_skill(text: str, default_name: str, origin: SkillOrigin,
                path: str | None = None) -> Skill:
    """One skill from a file's text; ``SkillFileError`` when it cannot be used."""
    try:
        fields, body = split(text)
    except FrontMatterError as exc:
        raise SkillFileError(str(exc)) from None
    name = _str(fields.get("name")) or default_name
    if not _NAME.match(name):
        raise SkillFileError(f"invalid name {name!r}: use letters, digits, '_', '-', '.' or ':'")
    description = " ".join(_str(fields.get("description")).split())
    if not description:
        raise SkillFileError("front-matter has no description")
    named = (_str(fields.get("risk")) or _str(fields.get("risk_level")) or "low").lower()
    risk = next((r for r in RISKS if r == named), None)
    if risk is None:
        raise SkillFileError(f"risk must be one of {', '.join(RISKS)}, got {named!r}")
    raw_tags = fields.get("tags", [])
    tags = tuple(raw_tags) if isinstance(raw_tags, list) else tuple(
        t.strip() for t in raw_tags.split(",") if t.strip())
    if not body.strip():
        raise SkillFileError("the skill has no body")
    return Skill(name=name, description=description, body=body, tags=tags,
                 category=_str(fields.get("category")), risk=risk, origin=origin, path=path)


def _files(directory: Path) -> list[tuple[Path, str]]:
    """``(file, default name)`` for ``*.md`` and ``*/SKILL.md`` in ``directory``, sorted."""
    if not directory.is_dir():
        return []
    found = [(p, p.stem) for p in directory.glob("*.md") if p.is_file()]
    found += [(p, p.parent.name) for p in directory.glob("*/SKILL.md") if p.is_file()]
    return sorted(found)


def load_dir(directory: Path, origin: SkillOrigin) -> list[Skill]:
    """Every usable skill in ``directory``; broken files are logged and skipped."""
    skills = []
    try:
        files = _files(directory)
    except OSError as exc:
        log.warning("skipping skill folder %s: %s", directory, exc)
        return []
    for path, default_name in files:
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                raise SkillFileError(f"larger than {MAX_FILE_BYTES} bytes")
            text = path.read_text(encoding="utf-8")
            skills.append(parse_skill(text, default_name, origin, str(path)))
        except (OSError, UnicodeDecodeError, SkillFileError) as exc:
            log.warning("skipping skill file %s: %s", path, exc)
    return skills


def mcp_skills(mcp: Any) -> list[Skill]:
    """The prompts an MCP manager offers, as read-only skills (none without a manager)."""
    if mcp is None or not callable(getattr(mcp, "prompts", None)):
        return []
    skills = []
    for prompt in mcp.prompts():
        full = str(getattr(prompt, "name", "") or "")
        server = str(getattr(prompt, "server", "") or "")
        short = str(getattr(prompt, "prompt", "") or "") or full.removeprefix(f"mcp__{server}__")
        if not short or not _NAME.match(short):
            continue
        required = tuple(str(getattr(a, "name", "")) for a in getattr(prompt, "arguments", ()) or ()
                         if getattr(a, "required", False))
        description = " ".join(str(getattr(prompt, "description", "") or "").split())
        skills.append(Skill(name=short, description=description or f"MCP prompt from {server}",
                            tags=(server,) if server else (), category="mcp", risk=MCP_RISK,
                            origin="mcp", server=server or None, prompt=full,
                            required_args=required))
    return skills


def _document(skill: Skill) -> str:
    """The searchable text of a skill, each field repeated by its weight."""
    fields = (skill.name, skill.description, " ".join(skill.tags), skill.category)
    return "\n".join(text for text, times in zip(fields, SEARCH_WEIGHTS, strict=True)
                     for _ in range(times))


class Catalog:
    """The skills one session can see, with BM25 search."""

    def __init__(self, skills: Iterable[Skill]) -> None:
        self.skills = sorted(skills, key=lambda s: s.name)
        self._by_name = {s.name: s for s in self.skills}
        self._index: BM25Index | None = None

    def get(self, name: str) -> Skill | None:
        """By exact name, else by a unique case-insensitive match."""
        found = self._by_name.get(name)
        if found is not None:
            return found
        folded = [s for s in self.skills if s.name.casefold() == name.casefold()]
        return folded[0] if len(folded) == 1 else None

    def search(self, query: str, k: int = SEARCH_LIMIT) -> list[Skill]:
        """The best ``k`` matches over name, description, tags and category.

        Without a query: the first ``k`` by name.
        """
        if not query.strip():
            return self.skills[:k]
        if self._index is None:
            self._index = BM25Index([_document(s) for s in self.skills])
        return [self.skills[i] for i in self._index.search(query, k)]


def merge(*sources: Iterable[Skill]) -> list[Skill]:
    """One skill per name: the first source that has it wins (later ones are logged)."""
    chosen: dict[str, Skill] = {}
    for source in sources:
        for skill in source:
            kept = chosen.get(skill.name)
            if kept is None:
                chosen[skill.name] = skill
            else:
                log.info("skill %r from %s is shadowed by the one from %s", skill.name,
                         skill.path or skill.origin, kept.path or kept.origin)
    return list(chosen.values())


def skills_root(cwd: Path, workspace: Path | None) -> Path:
    """The folder whose ``.turnstone/skills`` a session reads."""
    return project_root(cwd, workspace) or cwd


def build_catalog(config_dir: Path | None, root: Path | None, mcp: Any) -> Catalog:
    """Workspace skills, then the user's, then MCP prompts (first wins per name)."""
    workspace = load_dir(root / ".turnstone" / "skills", "workspace") if root else []
    user = load_dir(config_dir / "skills", "user") if config_dir else []
    return Catalog(merge(workspace, user, mcp_skills(mcp)))


def render(body: str, model: str, session_id: str) -> str:
    """``{{model}}`` and ``{{session_id}}`` (alias ``{{ws_id}}``) filled in, in one pass."""
    values = {"model": model, "session_id": session_id, "ws_id": session_id}
    return _VARIABLE.sub(lambda m: values[m.group(1)], body)
