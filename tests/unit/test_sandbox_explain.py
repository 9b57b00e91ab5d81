"""``sandbox.explain`` on outputs recorded from real commands under the sandbox."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from turnstoned.sandbox import explain

PY_SOCKET = """Traceback (most recent call last):
  File "<string>", line 1, in <module>
  File "/usr/lib/python3.11/socket.py", line 232, in __init__
    _socket.socket.__init__(self, family, type, proto, fileno)
PermissionError: [Errno 13] Permission denied
"""
PY_UNIX = """Traceback (most recent call last):
  File "/work/client.py", line 3, in <module>
    s = socket.socket(socket.AF_UNIX)
  File "/usr/lib/python3.11/socket.py", line 232, in __init__
    _socket.socket.__init__(self, family, type, proto, fileno)
PermissionError: [Errno 13] Permission denied
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


CASES = [
    ("touch: cannot touch '/etc/x': Permission denied", "a write outside the workspace: /etc/x"),
    ("/dev/fd/7: line 3: /etc/hosts: Permission denied",
     "a write outside the workspace: /etc/hosts"),
    ("cp: cannot create regular file '/srv/h2': Permission denied",
     "a write outside the workspace: /srv/h2"),
    ("mv: cannot move '/srv/t' to './t': Permission denied",
     "a write outside the workspace: /srv/t"),
    ("cat: {home}/.ssh/id_rsa: Permission denied",
     "a read of a credential store: {home}/.ssh/id_rsa"),
    ("cat: {home}/notes.txt: Permission denied",
     "a read in the home directory outside the workspace and toolchains: {home}/notes.txt"),
    ("ls: cannot open directory '/srv': Permission denied", "a read outside the workspace: /srv"),
    ("PermissionError: [Errno 13] Permission denied: '/srv/data'",
     "an access outside the workspace: /srv/data"),
    ("cat: /proc/1/environ: Permission denied",
     "another process's environment or memory: /proc/1/environ"),
    ("ln: failed to create hard link 'h' => '/srv/t': Invalid cross-device link",
     "a link or rename across the workspace boundary: /srv/t"),
    ("go: creating work dir: mkdir {home}/.cache/go-build: permission denied",
     "a write outside the workspace: {home}/.cache/go-build"),
    ("npm ERR! Error: EACCES: permission denied, mkdir '{home}/.npm/_cacache'",
     "a write outside the workspace: {home}/.npm/_cacache"),
    (PY_SOCKET, "a network connection"),
    (PY_UNIX, "a Unix socket connection"),
    (("/dev/fd/7: socket: Permission denied\n"
      "/dev/fd/7: line 3: /dev/tcp/127.0.0.1/80: Permission denied"), "a network connection"),
    ("curl: (6) Could not resolve host: example.com", "a network connection"),
    ("fatal: unable to access 'https://github.com/x/y/': Could not resolve host: github.com",
     "a network connection"),
    ("connect EACCES 127.0.0.1:1 - Local (undefined:undefined)", "a network connection"),
    ("socket: Permission denied\nssh: connect to host 127.0.0.1 port 22: failure",
     "a network connection"),
    (("WARNING: Retrying ... Failed to establish a new connection: [Errno -2] Name or service "
      "not known')': /simple/requests/"), "a network connection"),
    (("/dev/fd/38: line 3: kill: (13776) - Operation not permitted\n"
      "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n"
      "PermissionError: [Errno 1] Operation not permitted"),
     "a signal to a process outside the sandbox (pid 13776)"),
]


@pytest.mark.parametrize(("output", "expected"), CASES)
def test_a_denial_is_explained(home: Path, output: str, expected: str) -> None:
    assert explain(1, output.format(home=home)) == expected.format(home=home)


def test_what_is_not_the_sandbox_is_not_explained(home: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert explain(0, "touch: cannot touch '/etc/x': Permission denied") is None
    assert explain(2, "grep: foo: No such file or directory") is None
    assert explain(1, "AssertionError: 1 != 2") is None
    inside = f"touch: cannot touch '{workspace}/x': Permission denied"
    assert explain(1, inside, inside=(workspace,)) is None
    assert explain(1, "touch: cannot touch 'x': Permission denied", inside=(workspace,),
                   cwd=workspace) is None  # fmt: skip


def test_a_relative_name_is_followed_from_the_workspace(home: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "link").symlink_to("/etc/turnstoned-test-target")
    why = explain(1, "/dev/fd/9: line 3: link: Permission denied", inside=(workspace,),
                  cwd=workspace)  # fmt: skip
    assert why == "a write outside the workspace: link → /etc/turnstoned-test-target"


def test_sigsys_and_a_failed_sandbox(home: Path) -> None:
    why = explain(159, "line 3: 11768 Bad system call   python3 -c ...")
    assert why is not None and "another ABI" in why
    assert explain(-31, "") is not None
    out = ("turnstoned sandbox: landlock_restrict_self failed (errno 9): not running the "
           "command unsandboxed\n")
    assert explain(126, out) == ("nothing: the sandbox could not be applied "
                                 "(landlock_restrict_self failed (errno 9): not running the "
                                 "command unsandboxed)")  # fmt: skip


def test_a_missing_capability(home: Path) -> None:
    why = explain(1, "chown: changing ownership of 'x': Operation not permitted")
    if os.geteuid() == 0:
        assert why == "an operation that needs a capability (the sandbox drops them all)"
    else:
        assert why is None
