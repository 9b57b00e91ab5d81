"""Capabilities: what the child drops so that root inside cannot undo or go around the rest.

As root (uid 0 owns /etc/shadow; CAP_DAC_OVERRIDE reads any file, CAP_KILL signals any
process, CAP_SYS_ADMIN could lift a seccomp filter's need for no_new_privs...), the child
empties its bounding set (PR_CAPBSET_DROP for every capability up to
/proc/sys/kernel/cap_last_cap, which needs CAP_SETPCAP: so only when the daemon has it),
clears its ambient set and sets its effective, permitted and inheritable sets to zero
with ``capset``. With no_new_privs and an empty bounding set, no later ``execve`` (of a
setuid or file-capability binary, or as uid 0) gives any back.
"""

from __future__ import annotations

import ctypes
import re

PR_CAPBSET_READ, PR_CAPBSET_DROP = 23, 24
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
CAP_SETPCAP = 8
_VERSION_3 = 0x20080522


def _status_mask(field: str) -> int:
    try:
        with open("/proc/self/status") as handle:
            text = handle.read()
    except OSError:
        return 0
    found = re.search(rf"^{field}:\s*([0-9a-f]+)$", text, re.MULTILINE)
    return int(found.group(1), 16) if found else 0


def effective() -> int:
    """This process's effective capabilities (a bit mask)."""
    return _status_mask("CapEff")


def bounding() -> int:
    return _status_mask("CapBnd")


def last_cap() -> int:
    """The highest capability this kernel knows."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return max(bounding().bit_length() - 1, 40)


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]  # fmt: skip


class Empty:
    """``capset`` arguments that empty this process's sets (``header``, ``data``: their
    addresses), and the capabilities to drop from the bounding set (none when this process
    may not: it then has none to give a child in the first place but through exec as root,
    which no_new_privs stops)."""

    def __init__(self) -> None:
        self._header = _Header(_VERSION_3, 0)
        self._data = (_Data * 2)()  # version 3: two 32-bit halves, all zero
        self.header = ctypes.addressof(self._header)
        self.data = ctypes.addressof(self._data)
        may_drop = bool(effective() >> CAP_SETPCAP & 1)
        held = bounding()
        self.bounding = tuple(cap for cap in range(last_cap() + 1)
                              if may_drop and held >> cap & 1)  # fmt: skip
