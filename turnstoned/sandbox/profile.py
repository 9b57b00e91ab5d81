"""The default profile ("workspace-write"): which paths a sandboxed command may read and write.

READ (and execute): the system (``SYSTEM``), /etc but its credential files (Landlock only
adds rights, so /etc's other entries are granted one by one), /proc and /sys (another
process's environ, mem, fd/ and root/ stay closed: Landlock lets a sandboxed process
ptrace-access only processes inside its own domain), the user's toolchains under HOME
(``TOOLCHAINS``, those that exist, never their credential files), the toolchains the
command's PATH leads to (``path_toolchains``: a pyenv, conda or rbenv root, say) and
``Profile.readable``.
WRITE (everything a directory allows: create, remove, rename within, truncate): the
workspace, the sandbox's private temp dir, ``Profile.writable`` and the devices in
``DEVICES``. Nothing else: not /tmp (the resident daemon may keep its socket in
/tmp/turnstone-<uid>), not the rest of the home directory.

Every grant skips what ``excluded`` names: a tree that holds an excluded path is granted
entry by entry around it (following no symlink there; the tree stays listable, names only,
since a Landlock right on a directory covers all of it), and a grant whose real path lies
in one is dropped. The credential stores (``places.credential_roots``: ~/.ssh, ~/.aws,
..., turnstoned's own config and data dirs), ``SYSTEM_SECRETS`` and ~/.cache/turnstone are
excluded everywhere; the home directory is also excluded from the system grants (a HOME
under /var/lib or /opt is not readable through them).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from turnstoned import paths, places
from turnstoned.sandbox import landlock as ll

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/snap",
          "/nix", "/var/lib", "/var/cache")  # fmt: skip
KERNEL = ("/proc", "/sys")  # read, no execute
TOOLCHAINS = (
    ".local", ".cargo", ".rustup", ".npm", ".nvm", ".pyenv", ".cache", "go", ".gradle",
    ".m2/repository", ".deno", ".bun", ".volta", ".asdf", ".sdkman", ".gitconfig", ".config/git",
)  # fmt: skip
# Besides places.SYSTEM_CREDENTIALS (/etc/shadow, /etc/gshadow, /etc/ssh, /etc/sudoers).
SYSTEM_SECRETS = (
    "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers.d", "/etc/ssl/private", "/etc/krb5.keytab",
    "/etc/security/opasswd", "/etc/NetworkManager/system-connections", "/etc/wpa_supplicant",
)  # fmt: skip
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/random",
           "/dev/urandom")  # fmt: skip
DEVICE_DIRS = ("/dev/pts", "/dev/shm")
_ALL = (1 << 64) - 1  # every right the ruleset handles


@dataclass(frozen=True)
class Profile:
    """What a sandboxed command may touch beyond the defaults: it writes ``workspace``,
    ``writable`` and its temp dir, reads ``readable``, reaches the network when ``network``
    (TCP and UDP; Unix sockets stay closed)."""

    workspace: Path
    network: bool = False
    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()


@dataclass
class Grants:
    """The rules a profile came to: (real path, rights) in the order added, and what was
    left out (for ``Status.detail`` and tests)."""

    rules: list[tuple[str, int]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def exclusions(home: str) -> tuple[str, ...]:
    """Every path no grant may reach, in both spellings (as named and real)."""
    named = [*places.credential_roots(), *SYSTEM_SECRETS, "/etc/sudoers.d",
             os.path.join(home, ".cache", paths.APP)]  # fmt: skip
    return tuple(dict.fromkeys([*named, *(os.path.realpath(p) for p in named)]))


def _holds(real: str, excluded: Iterable[str]) -> bool:
    return any(places.within(ex, real) and ex != real for ex in excluded)


def grant(ruleset: ll.Ruleset, grants: Grants, path: str, rights: int,
          excluded: tuple[str, ...], *, follow: bool = True) -> None:
    """Grant ``rights`` beneath ``path`` but around ``excluded`` (see the module docstring).
    A missing path is skipped. ``follow``: whether a symlink at ``path`` is followed to a
    tree that holds an excluded path (never, below the first level)."""
    flags = os.O_PATH | os.O_CLOEXEC
    try:
        is_link = stat.S_ISLNK(os.lstat(path).st_mode)
        fd = os.open(path, flags)
    except OSError:
        return
    try:
        # The real path of what is open: the rule binds to it, whatever the name does later.
        real = os.readlink(f"/proc/self/fd/{fd}")
        if any(places.within(real, ex) for ex in excluded):
            grants.skipped.append(path)
            return
        is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
        if not (is_dir and _holds(real, excluded)):
            ruleset.allow(fd, rights, is_dir=is_dir)
            grants.rules.append((real, rights))
            return
        if is_link and not follow:
            grants.skipped.append(path)
            return
        if rights & ll.READ_DIR:  # listing stays possible (names only, the tree's included)
            ruleset.allow(fd, ll.READ_DIR, is_dir=True)
            grants.rules.append((real, ll.READ_DIR))
    finally:
        os.close(fd)
    try:
        names = sorted(os.listdir(real))
    except OSError:
        return
    for name in names:
        grant(ruleset, grants, os.path.join(real, name), rights, excluded, follow=False)


def path_toolchains(search: str, home: str) -> list[str]:
    """The trees a command's PATH runs programs from: for an entry in the home directory,
    its top directory there (``~/.pyenv/shims`` -> ``~/.pyenv``: shims run the versions
    beside them); elsewhere the entry, or its parent for a ``bin``, ``sbin`` or ``shims``
    directory. Never the root, the home directory itself or a top-level directory."""
    found: list[str] = []
    home_real = os.path.realpath(home) if home not in ("", "/") else ""
    for entry in search.split(":"):
        if not entry or not os.path.isabs(entry):
            continue  # `.` or a relative entry: not a toolchain
        real = os.path.realpath(entry)
        if home_real and real.startswith(home_real + "/"):
            top = real[len(home_real) + 1:].split("/")[0]
            tree = os.path.join(home_real, top)
        else:
            tree = os.path.dirname(real) if os.path.basename(real) in ("bin", "sbin", "shims") \
                else real
        if tree.count("/") >= 2 and tree != home_real and tree not in found:
            found.append(tree)
    return found


def build(ruleset: ll.Ruleset, profile: Profile, tmp: Path, home: str) -> Grants:
    """Add the profile's rules to ``ruleset``."""
    grants = Grants()
    excluded = exclusions(home)
    outside_home = excluded if home in ("", "/") else (*excluded, home, os.path.realpath(home))
    for path in (*SYSTEM, "/etc"):
        grant(ruleset, grants, path, ll.READ, outside_home)
    for path in KERNEL:
        grant(ruleset, grants, path, ll.READ_FILE | ll.READ_DIR, outside_home)
    for name in TOOLCHAINS:
        if home not in ("", "/"):
            grant(ruleset, grants, os.path.join(home, name), ll.READ, excluded)
    for path in path_toolchains(os.environ.get("PATH", ""), home):
        grant(ruleset, grants, path, ll.READ, excluded)
    for extra in profile.readable:
        grant(ruleset, grants, str(extra), ll.READ, excluded)
    for path in DEVICES:
        grant(ruleset, grants, path, ll.DEVICE, excluded)
    for path in DEVICE_DIRS:
        grant(ruleset, grants, path, _ALL, excluded)
    for root in (profile.workspace, tmp, *profile.writable):
        grant(ruleset, grants, str(root), _ALL, excluded)
    return grants
