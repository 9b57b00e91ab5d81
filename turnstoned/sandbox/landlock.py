"""Landlock: the running ABI, the rights each ABI knows, and a ruleset built in the parent.

Numbers from ``linux/landlock.h``. A ruleset handles every filesystem right the ABI
knows (REFER from 2, TRUNCATE from 3, IOCTL_DEV from 5), TCP bind and connect from 4
(no port rules: all denied) unless the network is allowed, and both scopes from 6
(abstract Unix sockets and signals of processes outside the domain). What is not granted
by a rule is denied. The child applies it with ``landlock_restrict_self`` (446) on the
ruleset's descriptor, which stays open (close-on-exec) for as long as the ruleset lives.
"""

from __future__ import annotations

import ctypes
import os

from turnstoned.sandbox import libc

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
KNOWN_ABI = 7  # the newest ABI whose rights this module knows

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

READ = EXECUTE | READ_FILE | READ_DIR
# The rights a rule on a file (not a directory) may carry; any other is EINVAL.
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
DEVICE = READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV


def fs_rights(abi: int) -> int:
    """Every filesystem right ``abi`` knows."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def net_rights(abi: int) -> int:
    return NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0


def scopes(abi: int) -> int:
    return SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]  # fmt: skip


class _PathBeneath(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)) in the header: 12 bytes
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi_version() -> int:
    """The running kernel's Landlock ABI; OSError (ENOSYS: no Landlock in this kernel,
    EOPNOTSUPP: built in but not enabled at boot) when there is none."""
    if libc.syscall is None:
        raise OSError(38, "no syscall() in this C library")
    abi = libc.syscall(SYS_CREATE_RULESET, 0, 0, CREATE_RULESET_VERSION, 0)
    if abi < 0:
        err = libc.errno()
        raise OSError(err, os.strerror(err))
    return abi


class Ruleset:
    """A ruleset for ``abi``: rights handled as the module docstring says, rules added with
    ``allow``; ``fd`` is what the child restricts itself with."""

    def __init__(self, abi: int, *, network: bool) -> None:
        assert libc.syscall is not None
        self.abi = min(abi, KNOWN_ABI)
        self.handled = fs_rights(self.abi)
        attr = _RulesetAttr(self.handled, 0 if network else net_rights(self.abi),
                            scopes(self.abi))  # fmt: skip
        # The struct grew with the ABI: pass the size this ABI knows.
        size = 24 if self.abi >= 6 else 16 if self.abi >= 4 else 8
        fd = libc.syscall(SYS_CREATE_RULESET, ctypes.addressof(attr), size, 0, 0)
        if fd < 0:
            err = libc.errno()
            raise OSError(err, f"landlock_create_ruleset: {os.strerror(err)}")
        self.fd: int = fd
        self.rules = 0

    def allow(self, fd: int, rights: int, *, is_dir: bool) -> None:
        """Grant ``rights`` (masked to what is handled, and to file rights for a file)
        beneath the file or directory open as ``fd`` (O_PATH is enough)."""
        rights &= self.handled if is_dir else self.handled & FILE_RIGHTS
        if not rights:
            return
        attr = _PathBeneath(rights, fd)
        if libc.syscall is None or libc.syscall(
                SYS_ADD_RULE, self.fd, RULE_PATH_BENEATH, ctypes.addressof(attr), 0) < 0:
            err = libc.errno()
            raise OSError(err, f"landlock_add_rule: {os.strerror(err)}")
        self.rules += 1

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
