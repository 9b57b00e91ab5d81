"""System-message catalogs, prompts as skills, and schema/name conversion for function calling."""

from __future__ import annotations

from typing import Any

import pytest

from tests.mcp_servers.harness import HALF_RESOURCES, fast_manager, running, stdio_spec
from turnstoned.mcp.catalog import catalog_text, prompt_skill, prompts_block, resources_block
from turnstoned.mcp.models import MCPPrompt, MCPPromptArgument, MCPResource, MCPResourceTemplate
from turnstoned.mcp.schema import to_parameters, tool_name


async def test_catalog_text_lists_resources_templates_and_prompts_of_live_servers() -> None:
    specs = [stdio_spec("ev"), stdio_spec("db", HALF_RESOURCES, "--mode", "templates-only")]
    async with running(fast_manager(specs)) as manager:
        text = catalog_text(manager)
    assert text == (
        "<mcp-resources>\n"
        "  memo://readme  The project readme\n"
        "  memo://logo  A tiny logo\n"
        "\n"
        "Resource templates (construct a URI and use read_resource):\n"
        "  memo://notes/{topic}  Notes about a topic\n"
        "  db://tables/{table}/rows/{id}  One row of a table\n"
        "</mcp-resources>\n"
        "Use read_resource(uri='...') to access the resources listed above.\n"
        "\n"
        "<mcp-prompts>\n"
        "  mcp__ev__review(code, language)  Review the given code carefully.\n"
        "  mcp__ev__greet()  Say hello.\n"
        "</mcp-prompts>\n"
        "Use use_prompt(name='...', arguments={...}) to invoke the prompts listed above."
    )


class Catalog:
    """A fixed catalog source (the renderer only needs these three methods)."""

    def __init__(self, resources: Any = (), templates: Any = (), prompts: Any = ()) -> None:
        self._r, self._t, self._p = list(resources), list(templates), list(prompts)

    def resources(self) -> list[MCPResource]:
        return self._r

    def resource_templates(self) -> list[MCPResourceTemplate]:
        return self._t

    def prompts(self) -> list[MCPPrompt]:
        return self._p


def test_an_empty_catalog_renders_nothing() -> None:
    assert catalog_text(Catalog()) == ""


def test_only_the_wanted_blocks_are_rendered() -> None:
    source = Catalog(
        [MCPResource(uri="a://1", server="s")],
        prompts=[MCPPrompt(name="mcp__s__p", server="s", prompt="p")],
    )
    assert catalog_text(source, prompts=False).startswith("<mcp-resources>")
    assert "<mcp-prompts>" not in catalog_text(source, prompts=False)
    assert catalog_text(source, resources=False).startswith("<mcp-prompts>")


def test_limits_cut_descriptions_and_escaping() -> None:
    long = "word " * 40 + "\nsecond line"
    resources = [
        MCPResource(uri=f"x://r/{i}?a=1&b=<2>", server="s", description=long) for i in range(60)
    ]
    templates = [
        MCPResourceTemplate(uri_template=f"x://t/{i}/{{id}}", server="s") for i in range(25)
    ]
    text = resources_block(resources, templates)
    lines = text.splitlines()
    assert sum(1 for line in lines if line.startswith("  x://r/")) == 50
    assert "  ... and 10 more resources not listed" in lines
    assert sum(1 for line in lines if line.startswith("  x://t/")) == 20
    assert "  ... and 5 more templates not listed" in lines
    first = lines[1]
    assert first.startswith("  x://r/0?a=1&amp;b=&lt;2&gt;  word word")
    assert len(first.split("  ", 2)[2]) == 100 and "\n" not in first
    templates_only = resources_block([], templates[:1])
    assert (
        templates_only.splitlines()[1]
        == "Resource templates (construct a URI and use read_resource):"
    )


def test_prompt_block_is_capped_at_thirty() -> None:
    prompts = [
        MCPPrompt(name=f"mcp__s__p{i}", server="s", prompt=f"p{i}", description="d")
        for i in range(35)
    ]
    lines = prompts_block(prompts).splitlines()
    assert sum(1 for line in lines if line.startswith("  mcp__s__p")) == 30
    assert "  ... and 5 more prompts not listed" in lines


def test_a_prompt_becomes_a_read_only_mcp_skill() -> None:
    prompt = MCPPrompt(
        name="mcp__docs__review",
        server="docs",
        prompt="review",
        description="Review code",
        arguments=[
            MCPPromptArgument(name="code", description="the code", required=True),
            MCPPromptArgument(name="lang"),
        ],
    )
    skill = prompt_skill(prompt)
    assert skill["content"] == "Review code\nArguments:\n  - code (required): the code\n  - lang: "
    assert skill["variables"] == ["code", "lang"]
    assert (skill["origin"], skill["mcp_server"], skill["readonly"]) == ("mcp", "docs", True)
    bare = prompt_skill(MCPPrompt(name="mcp__docs__x", server="docs", prompt="x"))
    assert bare["content"] == "mcp__docs__x"


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (None, {"type": "object", "properties": {}}),
        ({}, {"type": "object", "properties": {}}),
        ({"type": "object"}, {"type": "object", "properties": {}}),
        (
            {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": {"a": {"type": "string"}},
            },
            {"type": "object", "properties": {"a": {"type": "string"}}},
        ),
        (
            {
                "type": "object",
                "properties": {"a": {}},
                "required": ["a", "missing"],
                "oneOf": [{"required": ["a"]}],
            },
            {"type": "object", "properties": {"a": {}}, "required": ["a"]},
        ),
        (
            {"type": "object", "properties": [], "required": "a"},
            {"type": "object", "properties": {}},
        ),
        (
            {
                "type": "object",
                "properties": {"n": {"$ref": "#/$defs/N"}},
                "$defs": {"N": {"type": "integer"}},
            },
            {
                "type": "object",
                "properties": {"n": {"$ref": "#/$defs/N"}},
                "$defs": {"N": {"type": "integer"}},
            },
        ),
    ],
)
def test_input_schemas_become_valid_function_parameters(
    schema: Any, expected: dict[str, Any]
) -> None:
    assert to_parameters(schema) == expected


def test_conversion_does_not_touch_the_original_schema() -> None:
    schema = {"$schema": "x", "type": "object", "properties": {"a": {"$schema": "y"}}}
    to_parameters(schema)
    assert schema == {"$schema": "x", "type": "object", "properties": {"a": {"$schema": "y"}}}


def test_tool_names_are_safe_short_unique_and_stable() -> None:
    taken: set[str] = set()
    assert tool_name("gh", "search_repos", taken) == "mcp__gh__search_repos"
    dotted = tool_name("my.srv", "files/read file", taken)
    assert dotted == "mcp__my_srv__files_read_file"
    clash = tool_name("my.srv", "files_read.file", taken)
    assert clash != dotted and clash.startswith("mcp__my_srv__files_read_file_")
    long = tool_name("gh", "x" * 100, taken)
    assert len(long) == 64 and long == tool_name("gh", "x" * 100, set())
    assert all(c.isalnum() or c in "_-" for name in taken for c in name)
