"""Phase 4 guard: results cut head+tail to the remaining context budget, honestly."""

from __future__ import annotations

from turnstoned.core.pipeline import apply_batch_policies
from turnstoned.core.results import Budget
from turnstoned.tools.base import BatchPolicy, PreparedCall, ToolOutput


def test_small_results_pass_and_consume_budget() -> None:
    b = Budget(remaining=1000, cap=500)
    out = ToolOutput("x" * 300)
    assert b.fit(out) is out
    assert b.remaining == 700


def test_long_result_keeps_head_and_tail_with_notice() -> None:
    b = Budget(remaining=10_000, cap=100)
    text = "H" * 500 + "T" * 500
    cut = b.fit(ToolOutput(text)).text()
    assert cut.startswith("H" * 50) and cut.endswith("T" * 50)
    assert "[900 chars truncated — output exceeded 100 char limit]" in cut


def test_remaining_budget_is_shared_by_parallel_results() -> None:
    b = Budget(remaining=150, cap=1000)
    first = b.fit(ToolOutput("a" * 100)).text()
    second = b.fit(ToolOutput("b" * 100)).text()
    assert first == "a" * 100
    assert "truncated" in second and "exceeded 50 char limit" in second


def test_exhausted_budget_drops_with_notice_but_small_results_use_grace() -> None:
    b = Budget(remaining=0, cap=1000, grace=100)
    assert b.fit(ToolOutput("ok")).text() == "ok"
    dropped = b.fit(ToolOutput("z" * 5000))
    assert dropped.is_error and "context budget exhausted" in dropped.text()
    assert "5000-char result" in dropped.text()


def test_errors_keep_a_floor() -> None:
    b = Budget(remaining=10, cap=10)
    out = b.fit(ToolOutput("E" * 3000, is_error=True)).text()
    assert "exceeded 2048 char limit" in out


def test_empty_output_untouched_and_images_kept() -> None:
    b = Budget(remaining=0, cap=0)
    empty = ToolOutput("")
    assert b.fit(empty) is empty
    parts = [{"type": "text", "text": "x" * 100},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]
    fitted = Budget(remaining=1000, cap=20).fit(ToolOutput(parts))
    assert isinstance(fitted.content, list) and fitted.content[1]["type"] == "image_url"


def _call(cid: str, access: str, serialize: bool = False) -> PreparedCall:
    return PreparedCall(header=cid, call_id=cid, needs_approval=False,
                        policy=BatchPolicy("memory", access, "no mixing", serialize))  # type: ignore[arg-type]


def test_mixed_read_write_group_is_refused() -> None:
    calls = [_call("a", "write", True), _call("b", "read"), PreparedCall(header="c", call_id="c")]
    apply_batch_policies(calls)
    assert [c.error for c in calls] == ["no mixing", "no mixing", None]


def test_write_group_serializes() -> None:
    assert apply_batch_policies([_call("a", "write", True), _call("b", "write", True)]) is True
    assert apply_batch_policies([_call("a", "read"), _call("b", "read")]) is False


def test_third_identical_call_in_a_row_is_flagged_then_streak_restarts() -> None:
    from turnstoned.core.results import REPEAT_WARNING, RepeatDetector

    r = RepeatDetector()
    assert [r.see("bash", '{"command": "ls"}') for _ in range(3)] == [False, False, True]
    assert r.see("bash", '{"command": "ls"}') is False  # the streak started over
    assert r.see("read_file", '{"path": "a"}') is False
    assert r.see("bash", '{"command": "ls"}') is False  # another call in between resets
    assert not any(r.see("bash_output", '{"id": "bash_1"}') for _ in range(5))
    assert r.mark(ToolOutput("same")).text() == "same" + REPEAT_WARNING
    assert r.mark(ToolOutput('{"json": 1}')).text() == '{"json": 1}'
