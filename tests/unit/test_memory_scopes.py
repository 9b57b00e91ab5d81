"""memory: scope resolution per session kind, name and description rules, argument checks.

``prepare`` is pure: it resolves where an action goes without touching the store.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from turnstoned.scopes import ScopeRef, os_user, project_root
from turnstoned.store import Store
from turnstoned.tools import memory
from turnstoned.tools._memory_names import (
    MemoryInputError,
    normalize_description,
    normalize_name,
)
from turnstoned.tools.base import PreparedCall, Services, SessionEnv, ToolContext


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "db" / "t.sqlite3")
    yield s
    s.close()


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    plain, ws = tmp_path / "plain", tmp_path / "ws"
    plain.mkdir()
    ws.mkdir()
    return {"plain": plain, "ws": ws}


def ctx(store: Store, kind: str, cwd: Path, workspace: Path | None = None) -> ToolContext:
    env = SessionEnv(session_id="s1", kind=kind, cwd=cwd, workspace=workspace,
                     services=Services(store=store))
    return ToolContext(env=env)


def prep(c: ToolContext, **args: object) -> PreparedCall:
    return memory.prepare(memory.Args(**args), c)


SAVE = {"name": "n", "description": "d", "content": "c"}

# (kind, with workspace, action, explicit scope) -> resolved scopes, or an error fragment
CASES = [
    ("interactive", False, "save", None, ["global"]),
    ("interactive", False, "get", None, ["global"]),
    ("interactive", False, "delete", None, ["global"]),
    ("interactive", False, "save", "workstream", ["workstream"]),
    ("interactive", False, "get", "user", ["user"]),
    ("interactive", False, "save", "global", ["global"]),
    ("interactive", False, "save", "project", "no workspace folder"),
    ("interactive", False, "save", "coordinator", "unavailable to interactive sessions"),
    ("interactive", False, "get", "team", "invalid scope 'team'"),
    ("interactive", False, "search", None, ["global", "workstream", "user"]),
    ("interactive", False, "list", None, ["global", "workstream", "user"]),
    ("interactive", False, "list", "workstream", ["workstream"]),
    ("interactive", True, "save", None, ["project"]),
    ("interactive", True, "get", None, ["project"]),
    ("interactive", True, "delete", None, ["project"]),
    ("interactive", True, "save", "global", ["global"]),
    ("interactive", True, "search", None, ["global", "workstream", "user", "project"]),
    ("interactive", True, "list", "project", ["project"]),
    ("coordinator", False, "save", None, ["coordinator"]),
    ("coordinator", False, "get", None, ["coordinator"]),
    ("coordinator", False, "save", "global", ["global"]),
    ("coordinator", False, "save", "workstream", "unavailable to coordinator sessions"),
    ("coordinator", False, "list", None, ["global", "coordinator", "user"]),
    ("coordinator", True, "delete", None, ["project"]),
    ("coordinator", True, "save", "coordinator", ["coordinator"]),
    ("coordinator", True, "search", None, ["global", "coordinator", "user", "project"]),
]


@pytest.mark.parametrize(("kind", "with_ws", "action", "scope", "expected"), CASES)
def test_scope_resolution(store: Store, dirs: dict[str, Path], kind: str, with_ws: bool,
                          action: str, scope: str | None, expected: list[str] | str) -> None:
    c = ctx(store, kind, dirs["plain"], dirs["ws"] if with_ws else None)
    args = {**(SAVE if action == "save" else {"name": "n"}), "action": action, "scope": scope}
    call = prep(c, **args)
    if isinstance(expected, str):
        assert call.error is not None and expected in call.error
        assert call.error.startswith("Error: ")
        return
    assert call.error is None
    plan: memory.Plan = call.data
    assert [r.scope for r in plan.refs] == expected


def test_each_scope_has_its_own_key(store: Store, dirs: dict[str, Path]) -> None:
    c = ctx(store, "interactive", dirs["plain"], dirs["ws"])
    keys = {s: prep(c, action="get", name="n", scope=s).data.refs[0]
            for s in ("global", "workstream", "user", "project")}
    assert keys == {"global": ScopeRef("global", ""), "workstream": ScopeRef("workstream", "s1"),
                    "user": ScopeRef("user", os_user()),
                    "project": ScopeRef("project", str(dirs["ws"]))}
    coord = ctx(store, "coordinator", dirs["plain"])
    assert prep(coord, action="get", name="n").data.refs[0] == ScopeRef("coordinator", os_user())


def test_the_git_root_of_the_cwd_is_the_project_without_a_workspace(
        store: Store, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "deep").mkdir(parents=True)
    assert project_root(repo / "src" / "deep", None) == repo
    assert project_root(tmp_path, None) is None
    call = prep(ctx(store, "interactive", repo / "src" / "deep"), action="save", **SAVE)
    assert call.data.refs == (ScopeRef("project", str(repo)),)


def test_writes_and_reads_carry_the_memory_batch_policy(store: Store,
                                                       dirs: dict[str, Path]) -> None:
    c = ctx(store, "interactive", dirs["plain"])
    for action, access in (("save", "write"), ("delete", "write"), ("get", "read"),
                           ("search", "read"), ("list", "read")):
        call = prep(c, **{**SAVE, "action": action})
        assert call.policy is not None and (call.policy.group, call.policy.access) == (
            "memory", access)
        assert call.policy.serialize == (access == "write")
        assert "cannot run in the same tool batch" in call.policy.mixed_access_error
        assert call.needs_approval is False


@pytest.mark.parametrize(("raw", "expected"), [
    ("build_commands", "build_commands"),
    ("Build Commands", "build_commands"),
    ("  padded name  ", "padded_name"),
    ("kebab-case-name", "kebab_case_name"),
    ("en – dash — em", "en_dash_em"),
    ("Café Résumé", "cafe_resume"),
    ("Straße", "strasse"),
    ("Æsir Œuvre Øre", "aesir_oeuvre_ore"),
    ("Łódź þorn Đakovo", "lodz_thorn_dakovo"),
    ("ǅemal", "dzemal"),
    ("ＦＵＬＬ width", "full_width"),
    ("v2 release", "v2_release"),
])
def test_names_normalise_to_snake_case(raw: str, expected: str) -> None:
    assert normalize_name(raw) == expected


@pytest.mark.parametrize(("raw", "fragment"), [
    ("", "memory name is required"),
    ("   ", "memory name is required"),
    (None, "memory name is required"),
    (42, "must be a string"),
    ("日本語", "unsupported characters"),
    ("Привет", "unsupported characters"),
    ("a.b", "only Latin letters"),
    ("what?", "only Latin letters"),
    ("a/b", "only Latin letters"),
    ("__a", "snake_case"),
    ("a__b", "snake_case"),
    ("a_", "snake_case"),
    ("x" * 257, "exceeds 256"),
])
def test_bad_names_get_guidance(raw: object, fragment: str) -> None:
    with pytest.raises(MemoryInputError, match=fragment):
        normalize_name(raw)


def test_descriptions_collapse_whitespace_and_are_bounded() -> None:
    assert normalize_description("  two\t\nlines\u00a0and\u3000more\ufeff ") == "two lines and more"
    assert normalize_description("x" * 512) == "x" * 512
    for bad in ("", " \n ", None):
        with pytest.raises(MemoryInputError, match="required"):
            normalize_description(bad)
    with pytest.raises(MemoryInputError, match="exceeds 512"):
        normalize_description("x" * 513)


@pytest.mark.parametrize(("args", "fragment"), [
    ({"action": "remember"}, "action must be save/get/search/delete/list, got 'remember'"),
    ({}, "action must be"),
    ({"action": "save", "name": "n", "description": "d"}, "'content' must be non-empty"),
    ({"action": "save", "name": "n", "description": "d", "content": "  "}, "non-empty"),
    ({"action": "save", "name": "n", "content": "c"}, "description is required"),
    ({"action": "save", "name": "n", "description": "d", "content": "x" * 32_769},
     "exceeds 32768"),
    ({**SAVE, "action": "save", "type": "secret"}, "invalid type 'secret'"),
    ({"action": "get"}, "memory name is required"),
    ({"action": "list", "limit": "many"}, "'limit' must be an integer"),
])
def test_argument_errors_never_reach_the_store(store: Store, dirs: dict[str, Path],
                                               args: dict[str, object], fragment: str) -> None:
    call = prep(ctx(store, "interactive", dirs["plain"]), **args)
    assert call.error is not None and fragment in call.error


def test_normalised_values_reach_the_plan(store: Store, dirs: dict[str, Path]) -> None:
    c = ctx(store, "interactive", dirs["plain"])
    plan = prep(c, action=" SAVE ", name="Test Commands", description=" how\nto test ",
                content="  make test  ", type="Feedback").data
    assert (plan.action, plan.name, plan.description, plan.content, plan.type) == (
        "save", "test_commands", "how to test", "make test", "feedback")
    assert prep(c, action="list", limit=500).data.limit == 50
    assert prep(c, action="list", limit="0").data.limit == 1
    assert prep(c, action="search").data.limit == 20


def test_without_a_store_memory_says_so(dirs: dict[str, Path]) -> None:
    env = SessionEnv(session_id="s", kind="interactive", cwd=dirs["plain"])
    call = memory.prepare(memory.Args(action="list"), ToolContext(env=env))
    assert call.error and "not available" in call.error
