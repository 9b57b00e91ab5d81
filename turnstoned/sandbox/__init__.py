"""The OS sandbox for commands: Landlock, seccomp and no capabilities, applied before exec.

Every command the daemon runs starts through ``tools.procs.start_script``; given a
``Sandbox`` (``prepare(Profile(workspace))``), the child applies it between fork and exec
(``preexec_fn=sandbox.preexec``): no_new_privs; as root, no capabilities (``caps``); a
seccomp filter (``seccomp``: no sockets but netlink, no io_uring, no other syscall ABI);
then the Landlock ruleset (``landlock``) built from the profile (``profile``: read the
system, the workspace and the toolchains, write the workspace and a private temp dir, no
credential store, no network, no signals out). A step that fails ends the child with 126
and a line on its stderr. ``status()`` says whether this machine can (a real child is
sandboxed once to find out), ``explain`` what a failed command likely ran into.

Why ctypes and not a PyPI binding: ``landlock`` (1.0.0.dev5) knows filesystem rights only
(no ABI 4 network, no ABI 6 scopes) and looks its libc functions up when applying;
``py-landlock`` (0.1.1) has network and scopes but creates the ruleset and adds every rule
inside ``apply()``, i.e. opens paths in the child after fork; ``landlockpy`` (0.2.0) has
both and builds the ruleset in the parent, but its ``restrict()`` does enum arithmetic and
raises exceptions in the child. None does seccomp or capabilities, which must be applied in
the same step. The kernel interface is three syscalls and two structs: here the child calls
only function pointers built at import with integers, and nothing is added to install.

TURNSTONED_SANDBOX=off makes ``status()`` unavailable (tests, users who do not want it).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import functools
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from turnstoned import places
from turnstoned.sandbox import caps, landlock, seccomp
from turnstoned.sandbox.explain import explain
from turnstoned.sandbox.prepared import EXIT_NOT_SANDBOXED, Sandbox
from turnstoned.sandbox.profile import Profile, build, exclusions

__all__ = ["EXIT_NOT_SANDBOXED", "Profile", "Sandbox", "SandboxError", "Status", "describe",
           "explain", "prepare", "status"]  # fmt: skip

OFF_VARIABLE = "TURNSTONED_SANDBOX"


class SandboxError(Exception):
    """No sandbox can be prepared: none on this machine, or the profile cannot be built."""


@dataclass(frozen=True)
class Status:
    """Whether commands can be sandboxed here; ``detail``: what is enforced, or why not."""

    available: bool
    abi: int
    detail: str


def describe(abi: int, *, root: bool) -> str:
    """What a sandbox on Landlock ABI ``abi`` enforces, with what this ABI lacks."""
    parts = [
        (f"Landlock ABI {abi} and seccomp: commands write only the workspace and their own "
         "temp dir; read the system, the workspace and the user's toolchains, but no "
         "credential store and nothing else of the home directory; reach no network (TCP and "
         "UDP, loopback included) and no Unix socket"),
    ]
    if abi >= 6:
        parts.append("signal no process they did not start")
    if root:
        parts.append("hold no capability (the daemon runs as root)")
    gaps = []
    if abi < 2:
        gaps.append("no file can be linked or renamed into another directory (ABI 1 cannot "
                    "tell which moves are safe)")  # fmt: skip
    if abi < 3:
        gaps.append("truncate() is denied by seccomp on every path (Landlock handles "
                    "truncation from ABI 3)")  # fmt: skip
    if abi < 4:
        gaps.append("TCP is denied by seccomp alone (Landlock handles TCP from ABI 4)")
    if abi < 6:
        gaps.append("commands can signal other processes of the same user (Landlock scopes "
                    "signals from ABI 6); abstract Unix sockets stay closed by seccomp")
    if abi > landlock.KNOWN_ABI:
        gaps.append(f"rights added after ABI {landlock.KNOWN_ABI} are not handled")
    text = "; ".join(parts)
    return text + (f". On ABI {abi}: " + "; ".join(gaps) if gaps else "")


def status() -> Status:
    """Whether this machine can sandbox commands (cached; TURNSTONED_SANDBOX=off: no)."""
    if os.environ.get(OFF_VARIABLE, "").strip().lower() == "off":
        return Status(False, 0, f"the sandbox is turned off ({OFF_VARIABLE}=off)")
    return _probe()


@functools.cache
def _probe() -> Status:
    if sys.platform != "linux":
        return Status(False, 0, "not Linux")
    try:
        abi = landlock.abi_version()
    except OSError as exc:
        if exc.errno == errno.ENOSYS:
            return Status(False, 0, "Landlock is not supported by this kernel")
        if exc.errno == errno.EOPNOTSUPP:
            return Status(False, 0, "Landlock is not enabled on this kernel (it is left out "
                                    "of the lsm= boot parameter)")  # fmt: skip
        return Status(False, 0, f"Landlock cannot be queried: {exc.strerror}")
    if seccomp.native_arch() is None:
        return Status(False, abi, f"no seccomp filter for this architecture "
                                  f"({platform.machine()}): sockets could not be denied")
    failure = _self_test(abi)
    if failure:
        return Status(False, abi, f"the sandbox cannot be applied here: {failure}")
    return Status(True, abi, describe(abi, root=caps.effective() != 0))


def _self_test(abi: int) -> str | None:
    """Why a real child could not be sandboxed (``true`` run in a throwaway sandbox), or None."""
    true = shutil.which("true") or "/bin/true"
    workspace = tempfile.mkdtemp(prefix="turnstoned-sandbox-probe-")
    try:
        sandbox = _build(Profile(Path(workspace)), abi)
    except BaseException as exc:
        os.rmdir(workspace)
        if isinstance(exc, SandboxError):
            return str(exc)
        raise
    try:
        done = subprocess.run([true], preexec_fn=sandbox.preexec, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=30,
                              check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{true} could not be started: {exc}"
    finally:
        sandbox.close()
        os.rmdir(workspace)
    if done.returncode == 0:
        return None
    line = done.stderr.decode(errors="replace").strip().splitlines()
    return line[-1].removeprefix("turnstoned sandbox: ") if line else f"exit {done.returncode}"


_cache: dict[tuple[object, ...], Sandbox] = {}
_lock = threading.Lock()


def prepare(profile: Profile, *, abi: int | None = None) -> Sandbox:
    """The sandbox for ``profile`` (cached per profile, HOME and credential stores); raises
    SandboxError when ``status()`` is unavailable or the profile cannot be built. ``abi``:
    build for an older Landlock ABI than the kernel's (tests of the degraded rulesets)."""
    state = status()
    if not state.available:
        raise SandboxError(state.detail)
    use = state.abi if abi is None else max(1, min(abi, state.abi))
    key = (profile, use, str(Path.home()), places.credential_roots())
    with _lock:
        sandbox = _cache.get(key)
        if sandbox is None:
            sandbox = _cache[key] = _build(profile, use)
    return sandbox


def _build(profile: Profile, abi: int) -> Sandbox:
    arch = seccomp.native_arch()
    if arch is None:
        raise SandboxError(f"no seccomp filter for this architecture ({platform.machine()})")
    home = str(Path.home())
    workspace = os.path.realpath(profile.workspace)
    if not os.path.isdir(workspace):
        raise SandboxError(f"the workspace is not a directory: {profile.workspace}")
    if workspace == "/":
        raise SandboxError("the workspace is the root directory")
    if any(places.within(workspace, ex) for ex in exclusions(home)):
        raise SandboxError(f"the workspace is in a credential store: {profile.workspace}")
    tmp = Path(tempfile.mkdtemp(prefix="turnstoned-sandbox-"))
    ruleset: landlock.Ruleset | None = None
    try:
        ruleset = landlock.Ruleset(abi, network=profile.network)
        grants = build(ruleset, profile, tmp, home)
        program = seccomp.Program(arch, network=profile.network, deny_truncate=abi < 3)
        return Sandbox(profile, ruleset, program, caps.Empty(), tmp, grants)
    except BaseException as exc:
        if ruleset is not None:
            ruleset.close()
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            raise SandboxError(f"the sandbox cannot be built: {exc}") from exc
        raise


@atexit.register
def _close_all() -> None:
    with _lock:
        for sandbox in _cache.values():
            with contextlib.suppress(Exception):
                sandbox.close()
        _cache.clear()
