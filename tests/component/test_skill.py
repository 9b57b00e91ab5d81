"""skill: skill files and MCP prompts found, ranked, loaded through a turn, kept across resume."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from tests.component.test_turns import completed_tools, run, start, tool_messages
from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from tests.mcp_servers.harness import fast_manager, running, stdio_spec
from turnstoned import config, paths
from turnstoned import protocol as p
from turnstoned.core.engine import Engine
from turnstoned.daemon.handlers import build
from turnstoned.skills import build_catalog, parse_skill, render
from turnstoned.skills.catalog import SkillFileError, load_dir
from turnstoned.store import Store


def skill_file(directory: Path, name: str, description: str, *, tags: str = "[]",
               category: str = "", risk: str = "low", body: str = "Do the thing.") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.md"
    path.write_text(f"---\nname: {name}\ndescription: {description}\ntags: {tags}\n"
                    f"category: {category}\nrisk: {risk}\n---\n{body}\n")
    return path


FIXED = [
    ("code-review", "Review a change for bugs and style", "[review, quality]", "engineering"),
    ("security-audit", "Audit code for security vulnerabilities", "[security, review]",
     "security"),
    ("release", "Cut and publish a release", "[deploy, versioning]", "ops"),
    ("deploy-k8s", "Deploy services to Kubernetes", "[deploy, kubernetes]", "ops"),
    ("write-docs", "Write user documentation", "[docs]", "writing"),
]


@pytest.mark.parametrize(("query", "expected"), [
    ("review", ["code-review", "security-audit"]),
    ("deploy", ["deploy-k8s", "release"]),
    ("ops", ["release", "deploy-k8s"]),  # same match, the shorter record first
    ("security review", ["security-audit", "code-review"]),
    ("kubernetes deployment", ["deploy-k8s"]),
    ("documentation", ["write-docs"]),
    ("gardening", []),
])
def test_search_ranks_a_fixed_set(tmp_path: Path, query: str, expected: list[str]) -> None:
    for name, description, tags, category in FIXED:
        skill_file(tmp_path / "cfg" / "skills", name, description, tags=tags, category=category)
    catalog = build_catalog(tmp_path / "cfg", None, None)
    assert [s.name for s in catalog.search(query)] == expected
    assert [s.name for s in catalog.search("")] == sorted(n for n, *_ in FIXED)


def test_front_matter_subset() -> None:
    skill = parse_skill(
        "---\n# a comment\nname: \"lint\"\ndescription:   Lint   the  code  # why not\n"
        "tags:\n  - style\n  - 'ci checks'\ncategory: quality\nrisk: HIGH\n---\n\nBody {{x}}\n",
        "fallback", "workspace", "/p/lint.md")
    assert (skill.name, skill.description, skill.tags, skill.category, skill.risk) == (
        "lint", "Lint the code", ("style", "ci checks"), "quality", "high")
    assert (skill.body, skill.origin, skill.path) == ("Body {{x}}", "workspace", "/p/lint.md")
    default = parse_skill("---\ndescription: d\n---\nbody", "from-file", "user")
    assert (default.name, default.risk, default.tags) == ("from-file", "low", ())


@pytest.mark.parametrize(("content", "reason"), [
    ("no front matter at all", "no front-matter"),
    ("---\ndescription: d\nbody without an end", "not closed"),
    ("---\nname: x\n---\nbody", "no description"),
    ("---\ndescription: d\nrisk: extreme\n---\nbody", "risk must be one of"),
    ("---\ndescription: d\ntags: [a, b\n---\nbody", "must end with ']'"),
    ("---\ndescription: d\njust words\n---\nbody", "expected 'key: value'"),
    ("---\nname: has spaces\ndescription: d\n---\nbody", "invalid name"),
    ("---\ndescription: d\n---\n   \n", "no body"),
])
def test_broken_skill_files_are_explained(content: str, reason: str) -> None:
    with pytest.raises(SkillFileError, match=reason):
        parse_skill(content, "x", "user")


def test_broken_files_are_skipped_with_a_warning(tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    skills_dir = tmp_path / "skills"
    skill_file(skills_dir, "good", "A good skill")
    (skills_dir / "bad.md").write_text("no header here")
    (skills_dir / "binary.md").write_bytes(b"---\xff\xfe\n")
    (skills_dir / "nested").mkdir()
    (skills_dir / "nested" / "SKILL.md").write_text("---\ndescription: in a folder\n---\nBody")
    with caplog.at_level(logging.WARNING, logger="turnstoned.skills.catalog"):
        found = load_dir(skills_dir, "user")
    assert sorted(s.name for s in found) == ["good", "nested"]
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "bad.md" in warned and "binary.md" in warned


def test_workspace_skills_shadow_user_skills(tmp_path: Path) -> None:
    skill_file(tmp_path / "cfg" / "skills", "style", "The user's style", body="user text")
    skill_file(tmp_path / "ws" / ".turnstone" / "skills", "style", "The project's style",
               body="project text")
    catalog = build_catalog(tmp_path / "cfg", tmp_path / "ws", None)
    [style] = catalog.skills
    assert (style.origin, style.body) == ("workspace", "project text")


def test_variables_are_rendered_once_and_unknown_ones_kept() -> None:
    assert render("{{model}} / {{ session_id }} / {{ws_id}} / {{node_id}} / {{{{model}}}}",
                  "m1", "s1") == "m1 / s1 / s1 / {{node_id}} / {{m1}}"
    assert render("{{model}}", "{{session_id}}", "s1") == "{{session_id}}"


async def test_a_dropped_in_skill_is_found_loaded_and_kept_across_resume(
        sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    skill_file(ws / ".turnstone" / "skills", "changelog", "Write changelog entries",
               tags="[release, notes]", category="writing",
               body="Write entries as model {{model}} in session {{session_id}}.")
    engine = Engine(config.load(), Store(paths.database_file()), sink)
    model.push(tool_calls([("s1", "skill", json.dumps({"action": "search",
                                                       "query": "release notes"}))]),
               text("found one"),
               tool_calls([("l1", "skill", json.dumps({"action": "load", "name": "changelog"}))]),
               text("loaded"), text("following it"))
    sid = start(engine, ws, workspace=str(ws))
    await run(engine, sink, sid, "find a skill for release notes")
    found = tool_messages(model.requests[1])[0]["content"]
    assert found.splitlines()[:2] == [
        "Skills matching 'release notes' (1 of 1):",
        "- changelog [writing; risk: low; origin: workspace] — Write changelog entries"]
    assert sink.approvals == []  # search does not ask

    await run(engine, sink, sid, "load it")
    [approval] = sink.approvals
    item = approval["items"][0]
    assert item["approvalLabel"] == "skill__load__changelog" and item["needsApproval"]
    assert "Write entries as model {{model}}" in item["preview"]
    assert tool_messages(model.requests[3])[-1]["content"].startswith("Loaded skill 'changelog'")
    rendered = f"Write entries as model scripted in session {sid}."
    assert rendered in model.requests[3]["messages"][0]["content"]
    assert rendered not in model.requests[2]["messages"][0]["content"]  # not before the load

    handlers = build(lambda: engine)
    listed = await handlers["skill/list"](p.SkillListParams(session_id=sid))
    assert [(s.name, s.origin, s.active) for s in listed.skills] == [
        ("changelog", "workspace", True)]
    assert (await handlers["skill/list"](p.SkillListParams())).skills == []
    engine.terminate()

    fresh = Engine(config.load(), Store(paths.database_file()), sink)
    fresh.resume(sid)
    await run(fresh, sink, sid, "go on")
    assert rendered in model.requests[-1]["messages"][0]["content"]
    fresh.terminate()


async def test_load_warns_on_high_risk_and_unknown_names_get_suggestions(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    skill_file(tmp_path / ".turnstone" / "skills", "prod-db", "Run production database fixes",
               risk="critical")
    model.push(tool_calls([("l1", "skill", json.dumps({"action": "load", "name": "prod-db"}))]),
               text("ok"),
               tool_calls([("l2", "skill", '"prod"')]), text("ok"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "load prod-db")
    assert sink.approvals[0]["items"][0]["preview"].startswith(
        "⚠ Warning: skill 'prod-db' has risk level 'critical'")
    assert "⚠ Warning" in completed_tools(sink)[0]["output"]
    await run(engine, sink, sid, "load prod")  # a bare string is the name, action load
    assert completed_tools(sink)[1]["output"] == (
        "Error: no skill named 'prod' (1 available). Closest: prod-db. Use action='search'.")


async def test_loading_the_active_skill_again_does_not_ask(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    skill_file(tmp_path / ".turnstone" / "skills", "tidy", "Keep things tidy")
    load = ("l", "skill", json.dumps({"action": "load", "name": "tidy"}))
    model.push(tool_calls([load]), text("ok"), tool_calls([load]), text("ok"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "load")
    await run(engine, sink, sid, "load again")
    assert len(sink.approvals) == 1
    assert completed_tools(sink)[1]["output"] == "Skill 'tidy' is already active."


async def test_mcp_prompts_are_read_only_skills_and_manual_skills_win(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    own = engine.services.mcp
    async with running(fast_manager([stdio_spec("ev")])) as manager:
        engine.services.mcp = manager  # the engine's own manager has no servers configured
        handlers = build(lambda: engine)
        sid = start(engine, tmp_path)
        listed = await handlers["skill/list"](p.SkillListParams(session_id=sid))
        assert [(s.name, s.origin, s.category) for s in listed.skills] == [
            ("greet", "mcp", "mcp"), ("review", "mcp", "mcp")]

        model.push(tool_calls([("g", "skill", json.dumps({"action": "load", "name": "greet"}))]),
                   text("ok"),
                   tool_calls([("r", "skill", json.dumps({"action": "load", "name": "review"}))]),
                   text("ok"))
        await run(engine, sink, sid, "greet")
        assert "[user]: Hello there." in model.requests[1]["messages"][0]["content"]
        await run(engine, sink, sid, "review")
        assert completed_tools(sink)[1]["output"].startswith(
            "Error: skill 'review' is an MCP prompt that needs arguments (code)")

        skill_file(tmp_path / ".turnstone" / "skills", "greet", "Our own greeting")
        listed = await handlers["skill/list"](p.SkillListParams(session_id=sid))
        assert [(s.name, s.origin, s.active) for s in listed.skills] == [
            ("greet", "workspace", True), ("review", "mcp", False)]
        engine.services.mcp = own
