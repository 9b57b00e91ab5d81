"""The tool registry: derived sets from metadata, stripped schemas, variants and notes."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import msgspec
import pytest

from turnstoned import tools
from turnstoned.tools import META_KEYS, RegistryError, ToolSpec, _load_one, _variant, _with_notes

FILE_TOOLS = {"bash", "bash_output", "kill_shell", "read_file", "write_file", "edit_file",
              "diff_file", "search"}


def test_metadata_never_reaches_the_wire() -> None:
    for schema in tools.TOOLS:
        assert schema["type"] == "function"
        assert not (set(schema["function"]) & META_KEYS)
        assert set(schema["function"]) == {"name", "description", "parameters"}


def test_derived_sets() -> None:
    names = {t["function"]["name"] for t in tools.TOOLS}
    assert FILE_TOOLS <= names
    assert tools.BUILTIN_TOOL_NAMES == frozenset(names)
    interactive = {t["function"]["name"] for t in tools.INTERACTIVE_TOOLS}
    assert FILE_TOOLS <= interactive
    assert not FILE_TOOLS & {t["function"]["name"] for t in tools.COORDINATOR_TOOLS}
    assert FILE_TOOLS <= {t["function"]["name"] for t in tools.TASK_AGENT_TOOLS}
    assert {"read_file", "diff_file", "search", "bash_output", "kill_shell"} <= tools.TASK_AUTO_TOOLS
    assert not {"bash", "write_file", "edit_file"} & tools.TASK_AUTO_TOOLS
    pk = tools.PRIMARY_KEY_MAP
    assert (pk["bash"], pk["read_file"], pk["write_file"], pk["edit_file"], pk["search"]) == (
        "command", "path", "content", "old_string", "query")


def test_loaded_in_file_name_order() -> None:
    names = [t["function"]["name"] for t in tools.TOOLS]
    assert names == sorted(names)


def test_args_structs_match_json_parameters() -> None:
    for spec in tools.registry().values():
        props = set(spec.function["parameters"].get("properties", {}))
        fields = {f.encode_name for f in msgspec.structs.fields(spec.module.Args)}
        assert props <= fields | {"is_background"}, f"{spec.name}: {props - fields}"


def _spec(meta: dict[str, object]) -> ToolSpec:
    fn = {"name": "t", "description": "Does t.  ",
          "parameters": {"type": "object", "properties": {"scope": {"type": "string"}}}}
    return ToolSpec(name="t", function=fn, meta=meta, module=ModuleType("t"))


def test_kind_variant_replaces_description_and_merges_overrides() -> None:
    spec = _spec({"kind_variants": {"coordinator": {
        "description": "Coordinator t.",
        "parameter_overrides": {"scope": {"enum": ["global"]}, "missing": {"type": "x"}}}}})
    fn = _variant(spec, "coordinator")
    assert fn["description"] == "Coordinator t."
    assert fn["parameters"]["properties"]["scope"] == {"type": "string", "enum": ["global"]}
    assert "missing" not in fn["parameters"]["properties"]
    assert "enum" not in spec.function["parameters"]["properties"]["scope"]  # pristine
    assert _variant(spec, "interactive") is spec.function


def test_notes_are_plain_replacements(tmp_path: Path) -> None:
    ws = tmp_path / "ws{x}"
    ws.mkdir()
    spec = _spec({"cwd_note": "Runs in {working_dir}.", "workspace_note": "Workspace {workspace_dir}."})
    fn = _with_notes(spec.function, spec, "/a/{b}", str(ws))
    assert fn["description"] == f"Does t. Runs in /a/{{b}}. Workspace {ws}."
    assert spec.function["description"] == "Does t.  "
    assert _with_notes(spec.function, spec, "/a", str(tmp_path / "gone"))["description"] == "Does t. Runs in /a."
    assert _with_notes(spec.function, spec, str(ws), str(ws))["description"] == f"Does t. Runs in {ws}."


def test_session_schemas_carry_the_cwd(tmp_path: Path) -> None:
    bash = next(t for t in tools.tools_for("interactive", str(tmp_path)) if t["function"]["name"] == "bash")
    assert str(tmp_path) in bash["function"]["description"]
    assert tools.tools_for("coordinator", str(tmp_path)) == tools.tools_for("coordinator")


@pytest.mark.parametrize(("content", "message"), [
    ({"name": "other", "description": "d", "parameters": {"type": "object"}}, "must equal the file name"),
    ({"name": "ghost", "parameters": {"type": "object"}}, "description"),
    ({"name": "ghost", "description": "d", "parameters": {"type": "array"}}, "object schema"),
    ({"name": "ghost", "description": "d", "parameters": {"type": "object", "required": ["x"]}}, "required"),
    ({"name": "ghost", "description": "d", "parameters": {"type": "object"}}, "no module ghost.py"),
])
def test_bad_tool_files_fail_loudly(tmp_path: Path, content: dict[str, object], message: str) -> None:
    path = tmp_path / "ghost.json"
    path.write_text(json.dumps(content))
    with pytest.raises(RegistryError, match=message):
        _load_one(path)
