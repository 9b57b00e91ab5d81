"""Skills: markdown instructions (and MCP prompts) a session can search and load."""

from turnstoned.skills.active import ACTIVE_KEY, activate, active, catalog_for, prompt_section
from turnstoned.skills.catalog import (
    HIGH_RISKS,
    RISKS,
    Catalog,
    Skill,
    build_catalog,
    parse_skill,
    render,
    skills_root,
)

__all__ = [
    "ACTIVE_KEY", "HIGH_RISKS", "RISKS", "Catalog", "Skill", "activate", "active",
    "build_catalog", "catalog_for", "parse_skill", "prompt_section", "render", "skills_root",
]
