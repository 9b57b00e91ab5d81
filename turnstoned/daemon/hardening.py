"""Keeping the daemon's own secrets out of reach of the processes it starts.

Every command a tool runs is a child of the daemon, and a child can look at its
parent through /proc: ``/proc/$PPID/environ`` is the environment the daemon
was started with (``OPENAI_API_KEY`` included) and ``/proc/$PPID/mem`` is all
of its memory. Blocking words in commands cannot close that (``envir''on``), so
at startup (Linux; a no-op elsewhere) the daemon:

1. makes itself non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``). Its /proc files
   then belong to root and the kernel refuses ptrace-mode access (environ,
   mem, process_vm_readv, a debugger) to every process of the same non-root
   user. Children are dumpable again after their execve, so tools lose
   nothing, and no core dump can carry a key.
2. drops CAP_SYS_PTRACE from its capability bounding set when it may (root,
   with CAP_SETPCAP), so no child gains it on execve: a root child cannot open
   ``/proc/$PPID/mem`` or attach a debugger either.
3. wipes the values of secret-looking variables (the rule the child scrub
   uses) from its initial environment block, the memory
   ``/proc/$PPID/environ`` shows, after Python has copied them into
   ``os.environ``; config and the env passthrough read that copy. Linux lets a
   root process read a root parent's environ even without CAP_SYS_PTRACE, so
   for root this is what keeps the values out.

What remains for root: a root child keeps root's other powers. It can read
turnstoned's config and database, physical memory where ``/dev/mem`` or
``/proc/kcore`` exist, and reach a fresh, unrestricted root process through a
service (sshd, systemd-run, a container runtime) that may ptrace the daemon and
find the key in its heap. Approval of commands stays the boundary there.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys

from turnstoned.envscrub import is_secret

log = logging.getLogger(__name__)

_PR_SET_DUMPABLE = 4
_PR_CAPBSET_READ = 23
_PR_CAPBSET_DROP = 24
_CAP_SYS_PTRACE = 19
# 0-based positions, after the command name, of env_start and env_end in /proc/self/stat.
_ENV_START_FIELD = 47
_ENV_END_FIELD = 48


def harden() -> None:
    """Apply every measure this platform allows; failures are logged, never raised."""
    if not sys.platform.startswith("linux"):
        return
    wiped = wipe_environment_block()
    libc = ctypes.CDLL(None, use_errno=True)  # the interpreter's own symbols include libc's
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        log.warning("cannot make the daemon non-dumpable: %s", os.strerror(ctypes.get_errno()))
    if libc.prctl(_PR_CAPBSET_READ, _CAP_SYS_PTRACE, 0, 0, 0) == 1:
        # EPERM without CAP_SETPCAP (every non-root user): nothing to drop there anyway.
        libc.prctl(_PR_CAPBSET_DROP, _CAP_SYS_PTRACE, 0, 0, 0)
    log.debug("hardened: %d secret value(s) wiped from the environment block", wiped)


def _environment_block() -> tuple[int, int]:
    with open("/proc/self/stat", "rb") as handle:
        raw = handle.read()
    fields = raw[raw.rfind(b")") + 2 :].split()
    return int(fields[_ENV_START_FIELD]), int(fields[_ENV_END_FIELD])


def wipe_environment_block() -> int:
    """Overwrite secret values in the process's initial environment with NULs.

    Each such variable is also unset at the C level, so nothing reads the wiped
    bytes; ``os.environ`` keeps its copy. Returns how many values were wiped.
    """
    try:
        start, end = _environment_block()
        fd = os.open("/proc/self/mem", os.O_RDWR)
    except (OSError, ValueError, IndexError) as exc:
        log.warning("cannot read the environment block: %s", exc)
        return 0
    try:
        block = os.pread(fd, end - start, start)
        wiped = 0
        offset = 0
        for entry in block.split(b"\0"):
            name, eq, value = entry.partition(b"=")
            if eq and value and is_secret(os.fsdecode(name), os.fsdecode(value)):
                os.unsetenv(name)
                at = start + offset + len(name) + 1
                os.pwrite(fd, b"\0" * len(value), at)
                wiped += 1
            offset += len(entry) + 1
        return wiped
    except OSError as exc:
        log.warning("cannot wipe the environment block: %s", exc)
        return 0
    finally:
        os.close(fd)
