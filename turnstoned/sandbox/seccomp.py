"""The seccomp filter: sockets and io_uring, for what Landlock does not mediate.

Landlock (ABI 4+) stops TCP bind and connect, but not UDP, not pathname Unix sockets (the
resident daemon's socket among them) and nothing on ABI 1-3. The filter makes
``socket()`` fail with EACCES for every address family but AF_NETLINK (``getifaddrs``,
``getaddrinfo``'s AI_ADDRCONFIG; with the network allowed, also AF_INET and AF_INET6);
``socketpair()`` stays allowed (asyncio's self-pipe, ``subprocess`` helpers), as it
reaches nothing outside. ``io_uring_setup``/``enter``/``register`` fail with ENOSYS
(io_uring can open sockets without ``socket()``; programs fall back to epoll). The
filter checks the architecture first: a syscall of another ABI (i386 through
``int 0x80``, whose ``socketcall`` would bypass the socket rule, or x32 on x86-64) kills
the process.

A classic BPF program over ``struct seccomp_data``: ``nr`` at offset 0, ``arch`` at 4,
``args[0]`` at 16 (its low 32 bits on these little-endian machines: the family is an int).
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct
import sys
from dataclasses import dataclass

AF_INET, AF_INET6, AF_NETLINK = 2, 10, 16
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
X32_SYSCALL_BIT = 0x40000000
IO_URING = (425, 426, 427)  # setup, enter, register: the same number on every arch


@dataclass(frozen=True)
class Arch:
    audit: int  # AUDIT_ARCH_*
    socket: int  # __NR_socket
    truncate: int  # __NR_truncate
    x32: bool  # numbers with X32_SYSCALL_BIT set are another ABI


ARCHES = {
    "x86_64": Arch(0xC000003E, 41, 76, True),
    "aarch64": Arch(0xC00000B7, 198, 45, False),
    "riscv64": Arch(0xC00000F3, 198, 45, False),
}


def native_arch() -> Arch | None:
    """This process's architecture, when the filter knows it (64-bit, little-endian)."""
    if struct.calcsize("P") != 8 or sys.byteorder != "little":
        return None
    return ARCHES.get(platform.machine())


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]  # fmt: skip


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


# One instruction: (code, k, jump-if-true label, jump-if-false label); None: the next one.
_Op = tuple[int, int, str | None, str | None]


def instructions(arch: Arch, *, network: bool,
                 deny_truncate: bool = False) -> list[tuple[int, int, int, int]]:
    """The program as (code, jt, jf, k) tuples. ``deny_truncate``: ``truncate(path)`` fails
    with EACCES too (for Landlock ABI 1-2, which does not handle truncation; ``ftruncate``
    needs a descriptor opened for writing, which Landlock does check)."""
    labelled: list[tuple[str | None, _Op]] = [
        (None, (_LD_W_ABS, 4, None, None)),  # arch
        (None, (_JEQ_K, arch.audit, None, "kill")),
        (None, (_LD_W_ABS, 0, None, None)),  # nr
    ]
    if arch.x32:  # nr -1 stays (tracers skip a syscall so; the kernel answers ENOSYS)
        labelled.append((None, (_JEQ_K, 0xFFFFFFFF, "allow", None)))
        labelled.append((None, (_JGE_K, X32_SYSCALL_BIT, "kill", None)))
    labelled.append((None, (_JEQ_K, arch.socket, "socket", None)))
    labelled += [(None, (_JEQ_K, nr, "uring", None)) for nr in IO_URING]
    if deny_truncate:
        labelled.append((None, (_JEQ_K, arch.truncate, "eacces", None)))
    labelled.append((None, (_RET_K, RET_ALLOW, None, None)))
    labelled.append(("socket", (_LD_W_ABS, 16, None, None)))  # args[0]: the family
    families = (AF_NETLINK, AF_INET, AF_INET6) if network else (AF_NETLINK,)
    labelled += [(None, (_JEQ_K, family, "allow", None)) for family in families]
    labelled.append(("eacces", (_RET_K, RET_ERRNO | errno.EACCES, None, None)))
    labelled.append(("uring", (_RET_K, RET_ERRNO | errno.ENOSYS, None, None)))
    labelled.append(("kill", (_RET_K, RET_KILL_PROCESS, None, None)))
    labelled.append(("allow", (_RET_K, RET_ALLOW, None, None)))
    where = {label: i for i, (label, _) in enumerate(labelled) if label}

    def jump(i: int, label: str | None) -> int:
        if label is None:
            return 0
        offset = where[label] - i - 1
        assert 0 <= offset < 256, (label, offset)  # BPF jumps go forward only
        return offset

    return [(code, jump(i, jt), jump(i, jf), k)
            for i, (_, (code, k, jt, jf)) in enumerate(labelled)]  # fmt: skip


class Program:
    """The filter in memory the kernel reads: ``address`` is the ``sock_fprog`` to hand to
    ``prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, address)``; kept alive by this object."""

    def __init__(self, arch: Arch, *, network: bool, deny_truncate: bool = False) -> None:
        program = instructions(arch, network=network, deny_truncate=deny_truncate)
        self._filters = (_Filter * len(program))(*(_Filter(*op) for op in program))
        self._program = _Program(len(program), self._filters)
        self.address = ctypes.addressof(self._program)
        self.length = len(program)
