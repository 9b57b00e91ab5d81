"""The engine of an ACP connection, built on first use (off the cold start)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from turnstoned.acp.rpc import AcpError

if TYPE_CHECKING:
    from turnstoned.config import Config
    from turnstoned.core.engine import Engine
    from turnstoned.core.events import EventSink

log = logging.getLogger(__name__)

CONFIG_ERROR = -32014  # turnstoned's own code for a configuration that cannot be used


class Engines:
    """The engine, built on first use: config, store and core stay off the cold start.

    A configuration that cannot be used is reported on every request that needs the
    engine (``CONFIG_ERROR`` with the file, the key and what was expected), instead
    of ending the process.
    """

    def __init__(self, sink: EventSink, overrides: dict[str, dict[str, Any]]) -> None:
        self.sink = sink
        self.overrides = overrides
        self.engine: Engine | None = None
        self.error: str | None = None
        self.on_engine: Callable[[Engine], None] = lambda engine: None
        self._built = False
        self._discovery: asyncio.Task[None] | None = None

    def config(self) -> Config | None:
        """The configuration (without building the engine); None when it cannot be read."""
        if self.engine is not None:
            return self.engine.config
        from turnstoned import config

        try:
            return config.with_overrides(config.load(), self.overrides)
        except config.ConfigError:
            return None

    def build(self) -> None:
        if self._built:
            return
        self._built = True
        from turnstoned import config, paths
        from turnstoned.core.engine import Engine
        from turnstoned.store import Store

        try:
            cfg = config.with_overrides(config.load(), self.overrides)
            self.engine = Engine(cfg, Store(paths.database_file()), self.sink)
            self.engine.start()
            self.on_engine(self.engine)
            self._discover(cfg)
        except config.ConfigError as exc:
            self.error = str(exc)
        except (OSError, sqlite3.Error) as exc:
            self.error = f"cannot open the database {paths.database_file()}: {exc}"
        except Exception as exc:  # a boundary: report it on every request instead of dying
            log.exception("engine start failed")
            self.error = f"the engine failed to start: {type(exc).__name__}: {exc}"
        if self.error:
            log.error("%s", self.error)

    def _discover(self, cfg: Config) -> None:
        """No model named, a server URL given: ask the server which one it serves."""
        from turnstoned.config import discovery_target

        target = discovery_target(cfg.model)
        if target is not None:
            self._discovery = asyncio.get_running_loop().create_task(self._only_model(*target))

    async def _only_model(self, url: str, key: str) -> None:
        from turnstoned.config import with_overrides
        from turnstoned.llm.discovery import only_model

        name = await asyncio.to_thread(only_model, url, key)
        if name is not None and self.engine is not None:
            self.engine.config = with_overrides(self.engine.config, {"model": {"name": name}})

    async def get(self) -> Engine:
        """The engine, once a model discovery under way has ended; ``CONFIG_ERROR`` when
        it cannot be built."""
        self.build()
        if self._discovery is not None:
            await asyncio.shield(self._discovery)
        if self.engine is None:
            raise AcpError(CONFIG_ERROR, self.error or "no engine", "configError")
        return self.engine

    def now(self) -> Engine:
        """The engine without waiting (for notifications, which cannot wait for answers)."""
        self.build()
        if self.engine is None:
            raise AcpError(CONFIG_ERROR, self.error or "no engine", "configError")
        return self.engine

    async def warm(self) -> None:
        """Import the model client and the tools, and connect to the model server, in the
        background, so a first prompt does not pay for them."""
        def imports() -> None:
            try:
                import turnstoned.llm.openai_chat  # noqa: F401
                from turnstoned import tools

                tools.registry()
            except Exception:  # an optional speed-up; the turn reports any real problem
                log.debug("prewarm failed", exc_info=True)

        await asyncio.to_thread(imports)
        try:
            engine = await self.get()
        except AcpError:
            return
        await engine.prewarm()
