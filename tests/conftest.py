"""Shared fixtures: an isolated TURNSTONED_HOME, a scripted model server, an in-process engine."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.fakes.model_server import ScriptedModel


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("TURNSTONED_HOME", str(home))
    for name in ("TURNSTONED_CONFIG", "TURNSTONED_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    write_config(home, "")
    return home


def stop_resident(home: Path, timeout: float = 10.0) -> int | None:
    """SIGTERM the resident daemon listening under ``home`` (SIGKILL if it lingers); its pid."""
    import select
    import signal
    import socket

    path = home / "run" / "daemon.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        pid = int.from_bytes(creds[:4], sys.byteorder)
        fd = os.pidfd_open(pid)
    except OSError:
        return None
    finally:
        sock.close()
    try:
        signal.pidfd_send_signal(fd, signal.SIGTERM)
        if not select.select([fd], [], [], timeout)[0]:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
            select.select([fd], [], [], timeout)
    except ProcessLookupError:
        pass
    finally:
        os.close(fd)
    return pid


@pytest.fixture(autouse=True)
def no_resident_left(isolated_home: Path) -> Iterator[None]:
    """A test that started a resident daemon (attach, chat) leaves none running."""
    yield
    stop_resident(isolated_home)


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModel]:
    with ScriptedModel() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("TURNSTONED_MODEL", "scripted")
        yield server


class RecordingSink:
    """An EventSink that records notifications and answers approvals from a script."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.approvals: list[dict[str, Any]] = []
        self.answers: list[Any] = []  # ApprovalResponse, or a callable(params) -> awaitable
        self.trust_questions: list[dict[str, Any]] = []
        self.trust_answers: list[Any] = []  # McpTrustResponse/None, or a callable(params) -> awaitable
        self.policy_questions: list[dict[str, Any]] = []
        self.policy_answers: list[Any] = []  # like trust_answers
        self._changed = asyncio.Event()

    def notify(self, event: Any) -> None:
        self.events.append((type(event).method, msgspec.to_builtins(event)))
        self._changed.set()

    async def request_approval(self, params: Any) -> Any:
        from turnstoned import protocol as p

        self.approvals.append(msgspec.to_builtins(params))
        self._changed.set()
        answer = self.answers.pop(0) if self.answers else p.ApprovalResponse(decision="approve")
        if callable(answer):
            return await answer(params)
        return answer

    async def request_mcp_trust(self, params: Any) -> Any:
        """Records the question; unanswered (no scripted answer) it is dismissed."""
        return await self._trust_question(params, self.trust_questions, self.trust_answers)

    async def request_policy_trust(self, params: Any) -> Any:
        """Records the question; unanswered (no scripted answer) it is dismissed."""
        return await self._trust_question(params, self.policy_questions, self.policy_answers)

    async def _trust_question(self, params: Any, questions: list[dict[str, Any]],
                              answers: list[Any]) -> Any:
        from turnstoned import protocol as p

        questions.append(msgspec.to_builtins(params))
        self.events.append((type(params).method, msgspec.to_builtins(params)))
        self._changed.set()
        answer = answers.pop(0) if answers else p.McpTrustResponse(decision="dismiss")
        if callable(answer):
            return await answer(params)
        return answer

    def of(self, method: str) -> list[dict[str, Any]]:
        return [params for m, params in self.events if m == method]

    async def wait_for(self, method: str, pred: Callable[[dict[str, Any]], bool] = lambda p: True,
                       timeout: float = 10.0) -> dict[str, Any]:
        async def scan() -> dict[str, Any]:
            seen = 0
            while True:
                for m, params in self.events[seen:]:
                    if m == method and pred(params):
                        return params
                seen = len(self.events)
                self._changed.clear()
                await self._changed.wait()
        return await asyncio.wait_for(scan(), timeout)

    def text(self, turn_id: str | None = None) -> str:
        return "".join(p["delta"] for p in self.of("item/agentMessage/delta")
                       if turn_id is None or p["turnId"] == turn_id)


@pytest.fixture
def sink() -> RecordingSink:
    return RecordingSink()


@pytest.fixture
async def make_engine(sink: RecordingSink, model: ScriptedModel,
                      isolated_home: Path) -> AsyncIterator[Callable[[str], Any]]:
    """Engines made from a config.toml text (all shut down after the test)."""
    from turnstoned import config, paths
    from turnstoned.core.engine import Engine
    from turnstoned.store import Store

    made: list[Engine] = []

    def make(config_text: str) -> Engine:
        write_config(isolated_home, config_text)
        engine = Engine(config.load(), Store(paths.database_file()), sink)
        engine.start()
        made.append(engine)
        return engine

    yield make
    for engine in made:
        await engine.shutdown()
        engine.terminate()


@pytest.fixture
async def engine(sink: RecordingSink, model: ScriptedModel) -> AsyncIterator[Any]:
    from turnstoned import config, paths
    from turnstoned.core.engine import Engine
    from turnstoned.store import Store

    eng = Engine(config.load(), Store(paths.database_file()), sink)
    eng.start()
    yield eng
    await eng.shutdown()
    eng.terminate()


# Tests of approvals ask as the read-only mode does (every change and command asks) unless
# they choose a mode: the modes themselves are tested where they are named.
TEST_MODE = '[approvals]\nmode = "read-only"\n'


def write_config(home: Path, text: str) -> Path:
    path = home / "config" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if "[approvals]" in text else f"{text}\n{TEST_MODE}")
    return path


os.environ.setdefault("TURNSTONED_LOG", "WARNING")
