"""Background trust questions: one per key while pending, only trust/deny decide."""

from __future__ import annotations

import asyncio

import pytest

from turnstoned.questions import Answer, TrustQuestions


async def test_one_question_per_key_while_pending_and_only_real_answers_decide() -> None:
    questions = TrustQuestions()
    gate = asyncio.Event()
    asked: list[str] = []
    decided: list[tuple[str, Answer]] = []

    def ask(key: str, answer: str | None) -> None:
        async def question() -> str | None:
            asked.append(key)
            await gate.wait()
            return answer

        questions.ask(key, key, question, lambda a: decided.append((key, a)))

    ask("a", "trust")
    ask("a", "deny")  # same key, still pending: not asked again
    ask("b", "dismiss")
    ask("c", None)
    await asyncio.sleep(0)
    assert asked == ["a", "b", "c"] and questions.pending == 3
    gate.set()
    await questions.settle(5)
    assert decided == [("a", "trust")] and questions.pending == 0
    ask("b", "deny")  # answered (dismissed): asked again later
    await questions.settle(5)
    assert decided == [("a", "trust"), ("b", "deny")]


async def test_a_failed_question_decides_nothing_and_close_withdraws_the_rest(
        caplog: pytest.LogCaptureFixture) -> None:
    questions = TrustQuestions()
    decided: list[Answer] = []

    async def broken() -> str | None:
        raise ConnectionError("client went away")

    async def forever() -> str | None:
        await asyncio.Event().wait()
        return "trust"

    questions.ask("x", "x.toml", broken, decided.append)
    questions.ask("y", "y.toml", forever, decided.append)
    await asyncio.sleep(0.01)
    assert "asking about x.toml failed" in caplog.text
    assert questions.pending == 1
    await questions.close()
    assert questions.pending == 0 and decided == []


def test_without_an_event_loop_nobody_is_asked() -> None:
    questions = TrustQuestions()

    async def question() -> str | None:
        raise AssertionError("asked")

    questions.ask("k", "k", question, lambda a: None)
    assert questions.pending == 0
