"""The engine of an ACP connection, built on first use (off the cold start)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from turnstoned.acp.rpc import AcpError
from turnstoned.daemon.process import EngineHolder

if TYPE_CHECKING:
    from turnstoned.config import Config
    from turnstoned.core.engine import Engine

log = logging.getLogger(__name__)

CONFIG_ERROR = -32014  # turnstoned's own code for a configuration that cannot be used


class Engines(EngineHolder):
    """The shared engine holder (``daemon.process``), as ACP requests use it: a
    configuration that cannot be used is ``CONFIG_ERROR`` (with the file, the key and what
    was expected) on every request that needs the engine, instead of ending the process.
    """

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
        self.load()

    async def get(self) -> Engine:
        """The engine, once a model discovery under way has ended; ``CONFIG_ERROR`` when
        it cannot be built."""
        self.reread_config()
        await self.settled()
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
