"""recall: finds what any session said, after restarts, whatever the query text."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.component.test_turns import completed_tools, run, start, tool_messages
from tests.conftest import RecordingSink
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from turnstoned import config, paths
from turnstoned.core import messages as m
from turnstoned.core.engine import Engine
from turnstoned.store import SessionRow, Store
from turnstoned.store import recall as index

HOSTILE = ['"', '""', "'", "*", "-", "(", ")", "((", "NEAR", "NEAR(", "AND", "OR NOT", "^",
           ":", "{}", '"unbalanced', 'quote"inside', "zanzibar*", "-zanzibar", "(zanzibar",
           "zanzibar)", "NEAR(zanzibar migration)", "col:zanzibar", '"zanzibar" OR "x"', "\\",
           "%_", "\x00", "💥", "é"]


def recall(call_id: str, query: str, **extra: object) -> tuple[str, str, str]:
    return (call_id, "recall", json.dumps({"query": query, **extra}))


async def test_finds_a_previous_session_after_a_restart_with_any_query(
        sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    first = Engine(config.load(), Store(paths.database_file()), sink)
    model.push(tool_calls([("b1", "bash", json.dumps({"command": "echo zanzibar-migration"}))]),
               text("The zanzibar migration is done."))
    old = start(first, tmp_path, skip_permissions=True)
    await run(first, sink, old, "Run the Zanzibar migration please")
    first.terminate()

    again = Engine(config.load(), Store(paths.database_file()), sink)
    model.push(tool_calls([recall("r1", "zanzibar migration")]), text("found"),
               *(r for i, q in enumerate(HOSTILE)
                 for r in (tool_calls([recall(f"h{i}", q)]), text("ok"))))
    sid = start(again, tmp_path)
    await run(again, sink, sid, "what did we do about zanzibar?")
    found = tool_messages(model.requests[-1])[-1]["content"]
    lines = found.splitlines()
    assert lines[0] == "Conversations (4 matches):"
    assert all(f"session {old} \"Run the Zanzibar migration please\"" in ln for ln in lines[1:])
    kinds = {ln.split(" · ")[-1].split("]")[0] for ln in lines[1:]}
    assert kinds == {"user", "assistant", "tool:bash"}
    assert "«zanzibar» «migration» is done" in found
    assert "this session" not in found  # the running turn is left out

    for q in HOSTILE:
        await run(again, sink, sid, f"search {q}")
    hostile = completed_tools(sink)[-len(HOSTILE):]
    assert [item["isError"] for item in hostile] == [False] * len(HOSTILE)
    by_query = dict(zip(HOSTILE, (item["output"] for item in hostile), strict=True))
    for q in ("zanzibar*", "-zanzibar", "(zanzibar", "zanzibar)"):
        assert by_query[q].startswith("Conversations ("), q
    for q in ('"', "*", "(", "NEAR", "OR NOT"):
        assert by_query[q] == f"No conversation history found for '{q}'."
    again.terminate()


async def test_earlier_turns_of_this_session_are_found_but_recall_never_finds_itself(
        engine: Engine, sink: RecordingSink, model: ScriptedModel, tmp_path: Path) -> None:
    model.push(text("Kumquats are small citrus fruits."),
               tool_calls([recall("r1", "kumquat")]), text("one"),
               tool_calls([recall("r2", "kumquat")]), text("two"))
    sid = start(engine, tmp_path)
    await run(engine, sink, sid, "tell me about kumquat trees")
    await run(engine, sink, sid, "search the history")
    await run(engine, sink, sid, "search it once more")
    first, second = (item["output"] for item in completed_tools(sink))
    assert first == second  # neither the earlier call nor its result became a match
    assert first.splitlines()[0] == "Conversations (1 matches):"
    assert f"session {sid} (this session)" in first
    assert "· user] tell me about «kumquat» trees" in first


async def test_paging_with_limit_and_offset(engine: Engine, sink: RecordingSink,
                                            model: ScriptedModel, tmp_path: Path) -> None:
    store = engine.store
    row = SessionRow(id="s-old", kind="interactive", cwd=str(tmp_path), workspace=None, model=None,
                     title="old", skip_permissions=False, grants=(), state={}, closed=True,
                     created_at=0.0, updated_at=0.0)
    store.create_session(row)
    store.append_messages("s-old", [("user", "t", m.encode(m.Message(role="user",
                                                                     content=f"pomelo note {i}")))
                                    for i in range(7)])
    model.push(tool_calls([recall("a", "pomelo", limit=3)]), text("a"),
               tool_calls([recall("b", "pomelo", limit="3", offset=6)]), text("b"),
               tool_calls([recall("c", "pomelo", limit=500, offset=-4)]), text("c"))
    sid = start(engine, tmp_path)
    for n in range(3):
        await run(engine, sink, sid, f"page {n}")
    a, b, c = (item["output"] for item in completed_tools(sink))
    assert a.splitlines()[0] == "Conversations (3 matches):"
    assert a.splitlines()[-1] == "(More may match: call recall with offset=3.)"
    assert b.splitlines()[0] == "Conversations (1 matches, offset 6):"
    assert c.splitlines()[0] == "Conversations (7 matches):"  # limit clamped to 50, offset to 0


@pytest.mark.parametrize("query", ["", "   ", None])
async def test_a_query_is_required(engine: Engine, sink: RecordingSink, model: ScriptedModel,
                                   tmp_path: Path, query: str | None) -> None:
    model.push(tool_calls([("e", "recall", json.dumps({"query": query}))]), text("ok"))
    await run(engine, sink, start(engine, tmp_path), "go")
    item = completed_tools(sink)[0]
    assert item["isError"] and item["output"] == "Error: query is required"


def _drop_index(db_file: Path) -> None:
    db = sqlite3.connect(db_file)
    db.execute(f"DROP TABLE {index.FTS_TABLE}")
    db.commit()
    db.close()


def test_messages_stored_before_the_index_existed_are_indexed_on_open(tmp_path: Path) -> None:
    db_file = tmp_path / "old.sqlite3"
    store = Store(db_file)
    store.create_session(SessionRow(id="s1", kind="interactive", cwd="/", workspace=None,
                                    model=None, title="legacy", skip_permissions=False, grants=(),
                                    state={}, closed=False, created_at=1.0, updated_at=1.0))
    store.append_messages("s1", [("user", None, m.encode(m.Message(role="user",
                                                                   content="durian smell")))])
    store.close()
    _drop_index(db_file)  # as a database written before recall existed

    reopened = Store(db_file)
    hits = index.search(reopened, "durian")
    assert [(h.session_id, h.title, h.kind, h.text) for h in hits] == [
        ("s1", "legacy", "user", "«durian» smell")]
    reopened.close()
    assert len(Store(db_file).query(f"SELECT rowid FROM {index.FTS_TABLE}")) == 1  # not twice


def test_long_messages_come_back_as_a_snippet(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    store.create_session(SessionRow(id="s1", kind="interactive", cwd="/", workspace=None,
                                    model=None, title=None, skip_permissions=False, grants=(),
                                    state={}, closed=False, created_at=1.0, updated_at=1.0))
    long_text = " ".join(["filler"] * 400 + ["rambutan"] + ["filler"] * 400)
    store.append_messages("s1", [("tool", None, m.encode(m.Message(
        role="tool", name="read_file", tool_call_id="c", content=long_text)))])
    [hit] = index.search(store, "rambutan")
    assert "«rambutan»" in hit.text and hit.text.startswith("…") and hit.text.endswith("…")
    assert len(hit.text) < 600 and hit.chars == len(long_text) and hit.kind == "tool:read_file"
    store.close()
