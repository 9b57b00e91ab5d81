"""Places on this machine that matter to safety: credential stores and ``within``.

The one list of where keys, tokens and passwords live (under the home
directory, in the system, and turnstoned's own config and data), shared by the
file tools' read gate (``tools._paths``), the bash reader's judgement of where
a command's words point (``shell.where``) and the command sandbox.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

from turnstoned import paths

# Under the home directory: directories and files that hold keys, tokens and passwords.
HOME_CREDENTIALS = (
    ".ssh", ".aws", ".gnupg", ".config/gcloud", ".kube", ".docker", ".netrc", ".pgpass",
    ".azure", ".git-credentials", ".config/gh", ".config/hub", ".npmrc", ".pypirc", ".my.cnf",
    ".password-store", ".local/share/keyrings", ".vault-token", ".terraform.d",
    ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials", ".config/rclone",
)  # fmt: skip
SYSTEM_CREDENTIALS = ("/etc/shadow", "/etc/gshadow", "/etc/ssh", "/etc/sudoers")
# Another process's (or the daemon's own) environment and memory.
_PROC_SECRETS = re.compile(r"/proc/[^/]+/(?:task/[^/]+/)?(?:environ|mem)")


def shown(path: str, cwd: Path | str) -> str:
    """``path`` as a person reads it: relative to ``cwd`` when it lies inside it."""
    try:
        return str(Path(path).relative_to(cwd))
    except ValueError:
        return path


def within(real: str, root: str) -> bool:
    """True when ``real`` is ``root`` or below it (both real paths)."""
    return real == root or real.startswith(root.rstrip("/") + "/")


@functools.lru_cache(maxsize=8)
def _credential_roots(home: str, config_dir: str, data_dir: str) -> tuple[str, ...]:
    roots = [os.path.join(home, name) for name in HOME_CREDENTIALS]
    roots += [*SYSTEM_CREDENTIALS, config_dir, data_dir]
    # Both spellings: the store may itself be a symlink (a dotfiles repo, say).
    return tuple(dict.fromkeys([*roots, *(os.path.realpath(r) for r in roots)]))


def credential_roots() -> tuple[str, ...]:
    """Every credential store, as absolute paths (the current HOME and daemon dirs)."""
    return _credential_roots(str(Path.home()), str(paths.config_dir()), str(paths.data_dir()))


def is_credential(real: str, roots: tuple[str, ...] | None = None) -> bool:
    """True when the real path ``real`` lies in a credential store (``roots``: the
    stores as ``credential_roots`` gave them, when the caller has them already)."""
    return bool(_PROC_SECRETS.fullmatch(real)) or any(
        within(real, root) for root in (roots or credential_roots())
    )
