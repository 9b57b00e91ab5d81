"""Where the resident daemon listens: a private runtime directory with its socket and lock.

``TURNSTONED_HOME=DIR`` puts it at ``DIR/run``. Otherwise it is
``turnstone`` inside ``$XDG_RUNTIME_DIR`` (or ``/run/user/<uid>``) when that is a
directory of the user's own with no access for anyone else, and
``turnstone-<uid>`` in the temporary directory when neither is. Anyone can create
that name in a shared temporary directory: when someone else's is in the way,
``~/.cache/turnstone/run`` is used instead (``displaced`` says why).

The directory must be the user's own, mode 0700, not a symlink; the socket in it
(``daemon.sock``) the user's own socket, mode 0600. Anything else is refused
with a message saying what to fix, never repaired in place: a directory someone
else created could be theirs to watch. Both ends check the peer of every
connection (``SO_PEERCRED``) too.

Only the standard library, and little of it: ``turnstoned attach`` imports this
module and has to start in a few tens of milliseconds.
"""

from __future__ import annotations

import errno
import io
import os
import socket
import stat
import sys
import time

SOCKET_NAME = "daemon.sock"
LOCK_NAME = "daemon.lock"
LOG_NAME = "daemon.log"
READY = b"ready\n"  # what `serve` writes on stdout once a daemon listens
LOG_KEEP = 4 << 20  # the log is cleared when a daemon starts and finds it bigger
_SUN_PATH_MAX = 107


class RundirError(Exception):
    """The runtime directory or socket cannot be used safely; the message says the fix."""


def _private(path: str, mode: int) -> str | None:
    """Why ``path`` (a directory or a socket) is not private to this user; None if it is."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "does not exist"
    except OSError as exc:
        return f"cannot be examined ({exc.strerror})"
    want_dir = mode == stat.S_IFDIR
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if stat.S_IFMT(st.st_mode) != mode:
        return "is not a directory" if want_dir else "is not a socket"
    if st.st_uid != os.getuid():
        return f"belongs to uid {st.st_uid}, not to you (uid {os.getuid()})"
    if st.st_mode & 0o077:
        return f"has mode {stat.S_IMODE(st.st_mode):04o}; others may use it"
    return None


def _base() -> tuple[str, bool]:
    """The directory that holds ours, and whether ours is named per user (a shared base)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    if xdg and os.path.isabs(xdg) and _private(xdg, stat.S_IFDIR) is None:
        return xdg, False
    default = f"/run/user/{os.getuid()}"
    if _private(default, stat.S_IFDIR) is None:
        return default, False
    # $TMPDIR or /tmp, as tempfile would say, without its imports (shutil, random: ~15 ms).
    tmp = os.environ.get("TMPDIR", "")
    return (tmp if os.path.isabs(tmp) and os.path.isdir(tmp) else "/tmp"), True


def runtime_dir() -> str:
    """The runtime directory's path (not created, not checked)."""
    home = os.environ.get("TURNSTONED_HOME")
    if home:
        return os.path.join(os.path.abspath(os.path.expanduser(home)), "run")
    base, shared = _base()
    if not shared:
        return os.path.join(base, "turnstone")
    candidate = os.path.join(base, f"turnstone-{os.getuid()}")
    return _home_fallback() if _in_the_way(candidate) else candidate


def _home_fallback() -> str:
    return os.path.join(os.path.expanduser("~"), ".cache", "turnstone", "run")


def _in_the_way(candidate: str) -> str | None:
    """Why the shared temporary directory's ``turnstone-<uid>`` cannot be ours: it exists
    and another user owns it (or it is a link). A loose mode on our own is reported by
    ``check_dir`` instead: that is ours to fix."""
    if not os.path.lexists(candidate):
        return None
    problem = _private(candidate, stat.S_IFDIR)
    if problem is None or problem.startswith("has mode"):
        return None
    return problem


def displaced() -> str | None:
    """What to tell the user when the runtime directory is the home fallback because
    another user's file holds the temporary directory's name (None otherwise)."""
    if os.environ.get("TURNSTONED_HOME"):
        return None
    base, shared = _base()
    candidate = os.path.join(base, f"turnstone-{os.getuid()}")
    problem = _in_the_way(candidate) if shared else None
    if problem is None:
        return None
    return (f"{candidate} {problem}, so the resident daemon listens in {_home_fallback()} "
            "instead (set XDG_RUNTIME_DIR to a private directory to choose)")


def socket_path(directory: str | None = None) -> str:
    return os.path.join(directory or runtime_dir(), SOCKET_NAME)


def prepare(directory: str | None = None) -> str:
    """Create the runtime directory (mode 0700) if missing and check it is private."""
    directory = directory or runtime_dir()
    if not os.path.lexists(directory):
        os.makedirs(os.path.dirname(directory), mode=0o700, exist_ok=True)
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass  # made by a daemon starting at the same time; checked below
    check_dir(directory)
    if len(os.fsencode(socket_path(directory))) > _SUN_PATH_MAX:
        raise RundirError(f"{socket_path(directory)} is too long for a Unix socket "
                          f"({_SUN_PATH_MAX} bytes at most); use a shorter TURNSTONED_HOME")
    return directory


def check_dir(directory: str) -> None:
    problem = _private(directory, stat.S_IFDIR)
    if problem is not None:
        raise RundirError(f"the runtime directory {directory} {problem}. It must be a directory "
                          f"of your own with mode 0700: remove it (or `chmod 700` it if it is "
                          f"yours) and start again")


def check_socket(path: str) -> None:
    problem = _private(path, stat.S_IFSOCK)
    if problem is not None:
        raise RundirError(f"{path} {problem}; refusing to use it. Remove it and start again")


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a connected Unix socket."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    return int.from_bytes(creds[4:8], sys.byteorder)


def peer_pid(sock: socket.socket) -> int:
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    return int.from_bytes(creds[0:4], sys.byteorder)


def connect(path: str) -> socket.socket | None:
    """A connection to the daemon at ``path``, or None when none listens there."""
    if not os.path.lexists(path):
        return None
    check_socket(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.ECONNREFUSED, errno.ENOENT):
            return None  # a socket left by a daemon that died; `serve` replaces it
        raise
    if peer_uid(sock) != os.getuid():
        sock.close()
        raise RundirError(f"the process listening on {path} is not yours; refusing it")
    return sock


def daemon_command(*args: str) -> list[str]:
    """This interpreter running turnstoned in isolated mode (``-I``): a ``turnstoned/``
    folder in the current directory (any cloned repository) is never imported."""
    return [sys.executable, "-I", "-m", "turnstoned", *args]


def _open_log(directory: str) -> io.FileIO:
    path = os.path.join(directory, LOG_NAME)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    if os.fstat(fd).st_size > LOG_KEEP:
        os.ftruncate(fd, 0)
    return io.FileIO(fd, "ab")


def log_tail(directory: str, lines: int = 12) -> str:
    try:
        with open(os.path.join(directory, LOG_NAME), "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - 8192))
            text = fh.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def start(serve_args: list[str], directory: str, timeout: float) -> None:
    """Start ``turnstoned serve`` detached (its own session, stdin closed, stderr to the
    log) and wait until a daemon listens. Raises ``RundirError`` with the log's last lines
    when it does not."""
    import select
    import subprocess

    with _open_log(directory) as log:
        proc = subprocess.Popen(daemon_command("serve", *serve_args), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=log, start_new_session=True,
                                cwd=os.path.expanduser("~"))
    assert proc.stdout is not None
    poller = select.poll()
    poller.register(proc.stdout, select.POLLIN)
    deadline = time.monotonic() + timeout
    got = b""
    while READY not in got:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(max(1, int(left * 1000))):
            proc.stdout.close()
            raise RundirError(f"turnstoned serve did not start listening within {timeout:g} s"
                              + _tail_note(directory))
        chunk = os.read(proc.stdout.fileno(), 256)
        if not chunk:
            proc.stdout.close()
            code = proc.wait()
            raise RundirError(f"turnstoned serve exited with code {code} before it listened"
                              + _tail_note(directory))
        got += chunk
    proc.stdout.close()
    # The daemon lives on as a child of ours; reap it if it ends while we still run.
    _children.append(proc)


_children: list[object] = []


def _tail_note(directory: str) -> str:
    tail = log_tail(directory)
    return f"; the end of {os.path.join(directory, LOG_NAME)}:\n{tail}" if tail else ""


def connect_or_start(serve_args: list[str], timeout: float = 30.0) -> socket.socket:
    """A connection to this user's resident daemon, starting one when none listens."""
    directory = prepare()
    path = socket_path(directory)
    sock = connect(path)
    if sock is not None:
        return sock
    start(serve_args, directory, timeout)
    sock = connect(path)
    if sock is None:
        raise RundirError(f"turnstoned serve said it listens, but {path} refuses connections"
                          + _tail_note(directory))
    return sock
