"""The C calls the sandbox makes, as ctypes function pointers built once at import.

``syscall`` (Landlock has no libc wrapper; always given four arguments), ``prctl`` (no_new_privs, capabilities, seccomp)
and ``capset``. Every argument is passed as a plain integer (addresses included, from
``ctypes.addressof`` of buffers the caller keeps alive), so a call in the child after fork
converts ints and nothing else. ``errno`` reads the value the last call left.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable

_libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def _function(name: str, restype: type, argtypes: list[type]) -> Callable[..., int] | None:
    if _libc is None:
        return None
    function = getattr(_libc, name, None)
    if function is None:
        return None
    function.restype = restype
    function.argtypes = argtypes
    return function  # type: ignore[no-any-return]


_long, _ulong, _int = ctypes.c_long, ctypes.c_ulong, ctypes.c_int
syscall = _function("syscall", _long, [_long] * 5)  # the number and four arguments
prctl = _function("prctl", _int, [_int, _ulong, _ulong, _ulong, _ulong])
capset = _function("capset", _int, [_ulong, _ulong])
errno = ctypes.get_errno
