"""``turnstoned serve``: the resident daemon, one per user, on a Unix socket.

Editors and scripts reach it through ``turnstoned attach`` (a stdio bridge) or
``turnstoned chat``, which start it when none listens. Each connection is a
client of its own (see ``router``); the engine, its sessions and the model
connection are shared and stay warm between clients. It exits once no client
has been attached and no turn has run for ``[daemon] idle_timeout_seconds``
(``--idle-timeout``), and on SIGINT, SIGTERM or SIGHUP within two seconds, as
the stdio daemon does. Its children end with it, even after kill -9 (the
watchdog).

One per user: ``daemon.lock`` in the runtime directory is held for the
daemon's whole life, so two ``serve`` started at once cannot both listen, and a
socket found while holding it was left by a daemon that died and is replaced.
The process announces that a daemon listens by writing ``ready`` on stdout
(then stdout goes to stderr), before the heavy imports, so a starting client
connects at once and its first frames wait in the socket.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from typing import TYPE_CHECKING, Any, NoReturn

from turnstoned.daemon import rundir

if TYPE_CHECKING:
    from turnstoned.daemon.server import Hub

LOCK_WAIT = 15.0  # seconds to wait for a daemon that is stopping to release the lock


def _lock(directory: str) -> int | None:
    """Hold the daemon lock; None when another daemon already listens."""
    import fcntl

    path = os.path.join(directory, rundir.LOCK_NAME)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            other = rundir.connect(rundir.socket_path(directory))
            if other is not None:
                other.close()
                os.close(fd)
                return None
            if time.monotonic() > deadline:
                os.close(fd)
                raise rundir.RundirError(f"another turnstoned serve holds {path} but does not "
                                         f"listen on {rundir.socket_path(directory)}") from None
            time.sleep(0.05)  # it is starting or stopping: wait for it to listen or leave
    os.ftruncate(fd, 0)
    os.write(fd, b"%d\n" % os.getpid())
    return fd


def _listen(directory: str) -> tuple[socket.socket, tuple[int, int]]:
    """Bind the socket (mode 0600), replacing a stale one; its (device, inode)."""
    path = rundir.socket_path(directory)
    if os.path.lexists(path):
        rundir.check_socket(path)  # never unlink what is not our own socket
        os.unlink(path)  # we hold the lock: the daemon that made it is gone
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(path)
    finally:
        os.umask(old)
    sock.listen(128)
    st = os.stat(path)
    return sock, (st.st_dev, st.st_ino)


def _announce() -> None:
    """Tell whoever started us that a daemon listens; stdout is not used after that."""
    try:
        os.write(1, rundir.READY)
    except OSError:
        pass  # nobody is waiting for it
    os.dup2(2, 1)
    sys.stdout = sys.stderr


def main(overrides: dict[str, dict[str, Any]], idle_timeout: float | None) -> NoReturn:
    try:
        directory = rundir.prepare()
        moved = rundir.displaced()
        if moved:
            print(f"turnstoned serve: {moved}", file=sys.stderr)
        lock = _lock(directory)
        if lock is None:
            print("turnstoned serve: a daemon already listens on "
                  f"{rundir.socket_path(directory)}", file=sys.stderr)
            _announce()
            sys.exit(0)
        sock, ident = _listen(directory)
    except (rundir.RundirError, OSError) as exc:
        print(f"turnstoned serve: {exc}", file=sys.stderr)
        sys.exit(2)
    _announce()
    os.chdir(os.path.expanduser("~"))  # no client's folder: sessions name their own cwd
    from turnstoned.daemon import server

    server.setup_process()
    hub = server.Hub(overrides, resident=True)
    if idle_timeout is not None:
        hub.idle_timeout, hub.idle_fixed = idle_timeout, True
    path = rundir.socket_path(directory)
    server.run_daemon(hub, _serve(hub, sock, path, ident))


async def _serve(hub: Hub, sock: socket.socket, path: str, ident: tuple[int, int]) -> int:
    import asyncio
    import logging

    from turnstoned.daemon.server import Stopper

    log = logging.getLogger(__name__)
    loop = asyncio.get_running_loop()
    stopping: asyncio.Future[str] = loop.create_future()

    def stop(reason: str) -> None:
        listener.close()  # no connection is accepted after the decision to stop
        _unlink(path, ident)
        if not stopping.done():
            stopping.set_result(reason)

    def accept() -> asyncio.Protocol:
        server, link = hub.open()
        link.on_close = lambda reason: hub.close(server, link)
        return link.protocol_factory()

    listener = await loop.create_unix_server(accept, sock=sock)
    stopper = Stopper(stop)
    log.info("listening on %s", path)
    watch = loop.create_task(_idle(hub, stop))
    reason = await stopping
    watch.cancel()
    log.info("stopping (%s)", reason)
    for link in list(hub.links):
        link.close(reason)
    await stopper.stop_engine(hub, reason)
    return 0


def _unlink(path: str, ident: tuple[int, int]) -> None:
    """Remove our socket (not one a newer daemon made after ours was replaced)."""
    try:
        st = os.lstat(path)
        if (st.st_dev, st.st_ino) == ident:
            os.unlink(path)
    except OSError:
        pass


async def _idle(hub: Hub, stop: Any) -> None:
    """Stop once no client has been attached and no turn has run for the idle timeout.

    A turn waiting for an approval with no client to ask would hold the daemon
    for good: once it has been alone for the timeout, such questions are denied
    and the turn goes on without them.
    """
    import asyncio
    import logging

    log = logging.getLogger(__name__)
    loop = asyncio.get_running_loop()
    alone_since: float | None = None
    quiet_since: float | None = None
    while True:
        await asyncio.sleep(min(1.0, hub.idle_timeout / 4))
        now = loop.time()
        if hub.router.connections:
            alone_since = quiet_since = None
            continue
        alone_since = alone_since if alone_since is not None else now
        busy = hub.holder.busy
        quiet_since = None if busy else (quiet_since if quiet_since is not None else now)
        if now - alone_since >= hub.idle_timeout:
            denied = hub.router.deny_unattended(
                f"no client has been attached for {hub.idle_timeout:g} s")
            if denied:
                log.warning("denied %d approval request(s) nobody was attached to answer", denied)
        if quiet_since is not None and now - quiet_since >= hub.idle_timeout:
            stop("idle")
            return


def stop_running(timeout: float = 10.0) -> int:
    """``turnstoned stop``: SIGTERM to the daemon listening on this user's socket (the
    peer of a connection to it, so a stale pid file can never name another process)."""
    import signal

    try:
        sock = rundir.connect(rundir.socket_path())
    except rundir.RundirError as exc:
        print(f"turnstoned stop: {exc}", file=sys.stderr)
        return 2
    if sock is None:
        print("turnstoned stop: no resident daemon is running", file=sys.stderr)
        return 0
    with sock:
        pid = rundir.peer_pid(sock)
        fd = os.pidfd_open(pid)  # held from here: the pid cannot be another process's
    try:
        signal.pidfd_send_signal(fd, signal.SIGTERM)
        import select

        if not select.select([fd], [], [], timeout)[0]:
            print(f"turnstoned stop: the daemon (pid {pid}) is still running after "
                  f"{timeout:g} s", file=sys.stderr)
            return 1
    finally:
        os.close(fd)
    print(f"stopped the resident daemon (pid {pid})", file=sys.stderr)
    return 0
