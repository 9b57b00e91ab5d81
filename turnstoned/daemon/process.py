"""What every daemon process shares, whichever front it speaks (the LSP-framed daemon or
ACP): its set-up, its stdout, and the engine it builds on first use. No pygls here, so
the ACP front starts without it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    from turnstoned.config import Config
    from turnstoned.core.engine import Engine
    from turnstoned.core.events import EventSink

log = logging.getLogger(__name__)


def setup_process() -> None:
    """Logging to stderr, then the hardening and the watchdog (before any thread or child
    exists): children end with the daemon, even after kill -9."""
    logging.basicConfig(level=os.environ.get("TURNSTONED_LOG", "WARNING").upper(),
                        stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from turnstoned.daemon import hardening, watchdog

    hardening.harden()
    watchdog.start()


def claim_stdout() -> BinaryIO:
    """Keep fd 1 for the protocol only: stray prints and inherited fds go to stderr."""
    fd = os.dup(1)
    try:  # a bigger pipe lets streamed output flow while the client parses (Linux only)
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except (OSError, ImportError):
        pass
    out = os.fdopen(fd, "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


class EngineHolder:
    """Builds the engine on first use: config, store and core stay off the cold start.

    A configuration that cannot be used is kept as ``error`` (each front reports it on
    the requests that need the engine) instead of ending the process. With no model
    named but a server URL given, the server is asked in the background which model it
    serves (``settled`` waits for that). A config file that changes is read again
    (``reread_config``).
    """

    def __init__(self, sink: EventSink, overrides: dict[str, dict[str, Any]]) -> None:
        self.sink = sink
        self.overrides = overrides
        self.engine: Engine | None = None
        self.error: str | None = None
        self.on_config: Callable[[Config], None] = lambda cfg: None
        self.on_engine: Callable[[Engine], None] = lambda engine: None  # before it starts
        self._loaded = False
        self._discovery: asyncio.Task[None] | None = None
        self._config_stamp: tuple[int, int] | None = None  # the config file as last read

    def load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        from turnstoned import config, paths
        from turnstoned.core.engine import Engine
        from turnstoned.store import Store

        self._config_stamp = _stamp(paths.config_file())
        try:
            cfg = config.with_overrides(config.load(), self.overrides)
            self.on_config(cfg)
            self.engine = Engine(cfg, Store(paths.database_file()), self.sink)
            self.on_engine(self.engine)
            self.engine.start()
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

    def reread_config(self) -> None:
        """The config file changed since it was read: read it again, so a long-lived daemon
        (the resident one) follows a fixed model or server without a restart. A file that
        does not load keeps the running config (and says why, once); an engine that could
        not start for its config is started again."""
        if not self._loaded:
            return
        from turnstoned import config, paths

        stamp = _stamp(paths.config_file())
        if stamp == self._config_stamp:
            return
        self._config_stamp = stamp
        if self.engine is None:
            self._loaded, self.error = False, None  # try again with the new file
            return
        try:
            cfg = config.with_overrides(config.load(), self.overrides)
        except config.ConfigError as exc:
            log.warning("the config file changed but cannot be used, the daemon keeps the "
                        "previous one: %s", exc)
            return
        self.engine.config = cfg
        self.on_config(cfg)
        log.info("the config file changed: new sessions and turns use it (MCP servers: "
                 "mcpServer/refresh)")

    def _discover(self, cfg: Config) -> None:
        """No model named, a server URL given: ask the server in the background."""
        from turnstoned.config import discovery_target

        target = discovery_target(cfg.model)
        if target is not None:
            self._discovery = asyncio.get_running_loop().create_task(self._use_only_model(*target))

    async def _use_only_model(self, url: str, key: str) -> None:
        from turnstoned.config import with_overrides
        from turnstoned.llm.discovery import only_model

        name = await asyncio.to_thread(only_model, url, key)
        if name is not None and self.engine is not None:
            self.engine.config = with_overrides(self.engine.config, {"model": {"name": name}})

    async def settled(self) -> None:
        """Load the engine and wait for a model discovery that is under way."""
        self.load()
        if self._discovery is not None:
            await asyncio.shield(self._discovery)

    @property
    def busy(self) -> bool:
        """A turn is running in some session."""
        engine = self.engine
        return engine is not None and engine.busy
