"""A prepared sandbox: the ruleset, the seccomp program and the capset buffers, built once in
the parent, and ``preexec``, which applies them in the child between fork and exec.

``preexec`` runs in a child forked from a threaded daemon, where any lock another thread
held at fork stays locked forever: it imports nothing, logs nothing, allocates next to
nothing and takes no lock; it calls ctypes function pointers built at import with integer
arguments (the buffers' addresses were taken here). Any failure writes one line to fd 2
(the command's stderr pipe by then) and ends the child with 126: a command never runs
unsandboxed by accident.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from turnstoned.sandbox import libc
from turnstoned.sandbox.caps import PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, PR_CAPBSET_DROP, Empty
from turnstoned.sandbox.explain import explain
from turnstoned.sandbox.landlock import SYS_RESTRICT_SELF, Ruleset
from turnstoned.sandbox.profile import Grants, Profile
from turnstoned.sandbox.seccomp import Program

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
PR_SET_NO_NEW_PRIVS = 38
EXIT_NOT_SANDBOXED = 126  # what bash returns for "found but cannot execute"
FAILURE_PREFIX = b"turnstoned sandbox: "


class Sandbox:
    """A prepared profile; ``preexec`` for ``preexec_fn``, ``env`` for the child's environment,
    ``tmp`` its private temp dir (0700, an unpredictable name: ``tempfile.mkdtemp``)."""

    def __init__(self, profile: Profile, ruleset: Ruleset, program: Program, caps: Empty,
                 tmp: Path, grants: Grants) -> None:  # fmt: skip
        self.profile = profile
        self.abi = ruleset.abi
        self.tmp = tmp
        self.grants = grants
        self._ruleset = ruleset  # owns the descriptor
        self._program = program  # and these the buffers the kernel reads
        self._caps = caps
        # Everything preexec touches, as plain attributes of ints and function pointers.
        assert libc.prctl is not None and libc.syscall is not None and libc.capset is not None
        self._prctl, self._syscall, self._capset = libc.prctl, libc.syscall, libc.capset
        self._errno = libc.errno
        self._fd = ruleset.fd
        self._bpf = program.address
        self._header, self._data = caps.header, caps.data
        self._bounding = caps.bounding
        self._tmp_env = {"TMPDIR": str(tmp), "TMP": str(tmp), "TEMP": str(tmp)}

    def env(self, base: Mapping[str, str]) -> dict[str, str]:
        """``base`` with TMPDIR, TMP and TEMP pointing at the private temp dir."""
        return {**base, **self._tmp_env}

    def preexec(self) -> None:
        """Apply the sandbox to this (child) process: no_new_privs, no capabilities, the
        seccomp filter, the Landlock ruleset; or exit 126 saying which step failed."""
        step = b"preexec"
        try:
            step = self._apply()
        except BaseException:  # noqa: BLE001 (anything at all: never exec unsandboxed)
            self._fail(step)
        if step:
            self._fail(step)

    def confine_this_thread(self) -> None:
        """Apply the sandbox to the calling thread only (every step is per-thread): for a
        thread that does nothing but start sandboxed children, which inherit it and so need
        no ``preexec_fn`` (CPython then keeps its vfork fast path; see bench/README.md).
        Irreversible; raises OSError naming the step that failed."""
        step = self._apply()
        if step:
            err = self._errno()
            raise OSError(err, f"{step.decode()} failed: {os.strerror(err)}")

    def _apply(self) -> bytes:
        """Every step in order; the name of the one that failed (errno says why), or b""."""
        prctl = self._prctl
        if prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return b"no_new_privs"
        for cap in self._bounding:
            if prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                return b"dropping the bounding set"
        if prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0:
            return b"clearing ambient capabilities"
        if self._capset(self._header, self._data) != 0:
            return b"capset"
        if prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, self._bpf, 0, 0) != 0:
            return b"the seccomp filter"
        if self._syscall(SYS_RESTRICT_SELF, self._fd, 0, 0, 0) != 0:
            return b"landlock_restrict_self"
        return b""

    def _fail(self, step: bytes) -> None:
        try:
            err = self._errno()
            os.write(2, FAILURE_PREFIX + step + b" failed (errno %d): not running the command "
                     b"unsandboxed\n" % err)  # fmt: skip
        finally:
            os._exit(EXIT_NOT_SANDBOXED)

    def explain(self, exit_code: int, output: str) -> str | None:
        """``explain`` knowing this sandbox's workspace and temp dir."""
        return explain(exit_code, output, inside=(self.profile.workspace, self.tmp,
                                                  *self.profile.writable),
                       cwd=self.profile.workspace)  # fmt: skip

    def close(self) -> None:
        """Release the ruleset and remove the temp dir (no command may start with it after)."""
        self._ruleset.close()
        self._fd = -1
        with contextlib.suppress(OSError):
            shutil.rmtree(self.tmp)

    def __repr__(self) -> str:
        return f"Sandbox({self.profile!r}, abi={self.abi}, tmp={str(self.tmp)!r})"
