"""``turnstoned attach``: what an editor may launch instead of the stdio daemon.

It connects its stdin and stdout to this user's resident daemon
(``turnstoned serve``), starting one when none listens, and relays bytes both
ways until either side closes. It parses nothing and imports only a few
standard modules, so it answers as fast as a bare interpreter starts; the
editor speaks the same protocol as to the stdio daemon.

Arguments after ``attach`` are ``serve``'s, used only when this bridge starts
the daemon. A daemon that is already running keeps its own options and
environment: the API key a daemon uses is the one of whoever started it.

If the daemon closes the connection before it sent anything (it was stopping
for idleness just as this bridge connected), the bridge connects again,
starting a new daemon, and sends what it had sent once more.
"""

from __future__ import annotations

import errno
import os
import re
import select
import socket
import sys

from turnstoned.daemon import rundir

CHUNK = 1 << 16
_EXIT = re.compile(rb'"method"\s*:\s*"exit"')  # LSP's exit notification
REPLAY_LIMIT = 1 << 20  # bytes kept to resend until the daemon's first byte arrives
RETRIES = 3


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Bridge:
    """Relays stdin to the daemon and the daemon to stdout."""

    def __init__(self, sock: socket.socket, serve_args: list[str]) -> None:
        self.sock = sock
        self.serve_args = serve_args
        self.replay: bytearray | None = bytearray()  # None once the daemon has spoken
        self.retries = 0
        self.poller = select.poll()
        self.poller.register(0, select.POLLIN)
        self.poller.register(sock, select.POLLIN)
        self.stdin_open = True
        self.said_exit = False  # the editor sent LSP's exit: a close is the normal end
        self._tail = b""  # the end of what the editor sent, for a method split across reads

    def run(self) -> int:
        while True:
            for fd, _ in self.poller.poll():
                if fd == 0 and not self._from_editor():
                    continue
                if fd == self.sock.fileno() and not self._from_daemon():
                    return 0

    def _from_editor(self) -> bool:
        data = os.read(0, CHUNK)
        if not data:
            self.poller.unregister(0)
            self.stdin_open = False
            try:
                self.sock.shutdown(socket.SHUT_WR)  # the daemon sees the editor's EOF
            except OSError:
                pass
            return False
        seen = self._tail + data
        self.said_exit = self.said_exit or _EXIT.search(seen) is not None
        self._tail = seen[-64:]
        if self.replay is not None:
            self.replay += data
            if len(self.replay) > REPLAY_LIMIT:
                self.replay = None
        try:
            self.sock.sendall(data)
        except OSError as exc:
            if exc.errno not in (errno.EPIPE, errno.ECONNRESET):
                raise
        return True

    def _from_daemon(self) -> bool:
        """Relay what the daemon sent; False once it closed for good."""
        try:
            data = self.sock.recv(CHUNK)
        except ConnectionResetError:
            data = b""
        if data:
            self.replay = None
            _write_all(1, data)
            return True
        if self.replay is None or self.retries >= RETRIES:
            if self.stdin_open and not self.said_exit:
                sys.stderr.write("turnstoned attach: the daemon closed the connection\n")
            return False
        self.retries += 1
        self._reconnect()
        return True

    def _reconnect(self) -> None:
        self.poller.unregister(self.sock)
        self.sock.close()
        self.sock = rundir.connect_or_start(self.serve_args)
        self.poller.register(self.sock, select.POLLIN)
        assert self.replay is not None
        self.sock.sendall(self.replay)
        if not self.stdin_open:
            self.sock.shutdown(socket.SHUT_WR)


def main(serve_args: list[str]) -> int:
    try:
        sock = rundir.connect_or_start(serve_args)
        return Bridge(sock, serve_args).run()
    except rundir.RundirError as exc:
        sys.stderr.write(f"turnstoned attach: {exc}\n")
        return 2
    except BrokenPipeError:  # the editor stopped reading
        return 0
    except OSError as exc:
        sys.stderr.write(f"turnstoned attach: {exc}\n")
        return 1
    except KeyboardInterrupt:
        return 130
