"""The sandbox's parts without running a sandbox: the seccomp program (run on a small classic
BPF interpreter), the rights each Landlock ABI handles, ``describe`` and the profile's walk
around excluded paths (recorded, not applied)."""

from __future__ import annotations

import errno
import os
import struct
from pathlib import Path

import pytest

from turnstoned.sandbox import describe, profile, seccomp
from turnstoned.sandbox import landlock as ll

X86 = seccomp.ARCHES["x86_64"]
AARCH64 = seccomp.ARCHES["aarch64"]
EACCES = seccomp.RET_ERRNO | errno.EACCES
ENOSYS = seccomp.RET_ERRNO | errno.ENOSYS
AF_UNIX, AF_VSOCK = 1, 40


def run_bpf(program: list[tuple[int, int, int, int]], nr: int, arch: int, arg0: int = 0) -> int:
    """The action classic BPF ``program`` returns for this ``seccomp_data``."""
    data = struct.pack("<IIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        pc += 1
        if code == 0x20:  # ld [k]
            acc = struct.unpack_from("<I", data, k)[0]
        elif code == 0x15:  # jeq
            pc += jt if acc == k else jf
        elif code == 0x35:  # jge
            pc += jt if acc >= k else jf
        elif code == 0x06:  # ret
            return k
        else:
            raise AssertionError(f"unknown opcode {code:#x}")


@pytest.mark.parametrize("arch", [X86, AARCH64], ids=["x86_64", "aarch64"])
def test_the_filter_denies_sockets_but_netlink_and_io_uring(arch: seccomp.Arch) -> None:
    closed = seccomp.instructions(arch, network=False)
    opened = seccomp.instructions(arch, network=True)
    for family in (seccomp.AF_INET, seccomp.AF_INET6, AF_UNIX, AF_VSOCK):
        assert run_bpf(closed, arch.socket, arch.audit, family) == EACCES
    assert run_bpf(closed, arch.socket, arch.audit, seccomp.AF_NETLINK) == seccomp.RET_ALLOW
    for family in (seccomp.AF_INET, seccomp.AF_INET6, seccomp.AF_NETLINK):
        assert run_bpf(opened, arch.socket, arch.audit, family) == seccomp.RET_ALLOW
    assert run_bpf(opened, arch.socket, arch.audit, AF_UNIX) == EACCES  # the daemon's socket
    for program in (closed, opened):
        for nr in seccomp.IO_URING:
            assert run_bpf(program, nr, arch.audit) == ENOSYS
        assert run_bpf(program, 0, arch.audit) == seccomp.RET_ALLOW  # read / io_setup
        assert run_bpf(program, arch.truncate, arch.audit) == seccomp.RET_ALLOW
        assert run_bpf(program, 0, 0x40000003) == seccomp.RET_KILL_PROCESS  # i386
        # the family's upper half is not looked at: the kernel takes an int
        assert run_bpf(program, arch.socket, arch.audit, 1 << 32 | AF_UNIX) == EACCES


def test_the_x86_filter_kills_x32_and_lets_minus_one_through() -> None:
    program = seccomp.instructions(X86, network=False)
    assert run_bpf(program, seccomp.X32_SYSCALL_BIT | 39, X86.audit) == seccomp.RET_KILL_PROCESS
    assert run_bpf(program, seccomp.X32_SYSCALL_BIT | X86.socket, X86.audit,
                   seccomp.AF_NETLINK) == seccomp.RET_KILL_PROCESS  # fmt: skip
    assert run_bpf(program, 0xFFFFFFFF, X86.audit) == seccomp.RET_ALLOW


def test_old_abis_get_truncate_denied_by_the_filter() -> None:
    program = seccomp.instructions(X86, network=False, deny_truncate=True)
    assert run_bpf(program, X86.truncate, X86.audit) == EACCES


def test_each_abi_handles_the_rights_it_knows() -> None:
    assert ll.fs_rights(1) == (1 << 13) - 1
    assert ll.fs_rights(2) == ll.fs_rights(1) | ll.REFER
    assert ll.fs_rights(3) == ll.fs_rights(2) | ll.TRUNCATE
    assert ll.fs_rights(4) == ll.fs_rights(3)
    assert ll.fs_rights(5) == ll.fs_rights(7) == ll.fs_rights(3) | ll.IOCTL_DEV
    assert ll.net_rights(3) == 0 and ll.net_rights(4) == ll.NET_BIND_TCP | ll.NET_CONNECT_TCP
    assert ll.scopes(5) == 0 and ll.scopes(6) == ll.SCOPE_SIGNAL | ll.SCOPE_ABSTRACT_UNIX_SOCKET


def test_describe_names_what_an_old_abi_lacks() -> None:
    assert "On ABI" not in describe(7, root=False) and "signal no process" in describe(7, root=False)
    assert "hold no capability" in describe(7, root=True)
    three = describe(3, root=False)
    assert "TCP is denied by seccomp alone" in three and "can signal other processes" in three
    assert "truncate" not in three
    one = describe(1, root=False)
    assert "truncate() is denied by seccomp" in one and "linked or renamed" in one
    assert "after ABI 7" in describe(9, root=False)


class Recorder:
    """Stands in for a ruleset: records what would be granted."""

    def __init__(self) -> None:
        self.granted: dict[str, tuple[int, bool]] = {}

    def allow(self, fd: int, rights: int, *, is_dir: bool) -> None:
        self.granted[os.readlink(f"/proc/self/fd/{fd}")] = (rights, is_dir)


def test_a_tree_holding_an_excluded_path_is_granted_around_it(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    (root / "secret").mkdir(parents=True)
    (root / "secret" / "key").write_text("k")
    (root / "sub").mkdir()
    (root / "file").write_text("f")
    (root / "to-key").symlink_to(root / "secret" / "key")
    (root / "to-root").symlink_to(root)  # below the top: not followed into what holds it
    (root / "to-sub").symlink_to(root / "sub")
    (tmp_path / "alias").symlink_to(root)  # at the top: followed
    excluded = (str(root / "secret"),)
    for start in (root, tmp_path / "alias"):
        rec, grants = Recorder(), profile.Grants()
        profile.grant(rec, grants, str(start), ll.READ, excluded)  # type: ignore[arg-type]
        assert rec.granted == {
            str(root): (ll.READ_DIR, True),  # listable, names only
            str(root / "file"): (ll.READ, False),
            str(root / "sub"): (ll.READ, True),
        }
        assert sorted(grants.skipped) == sorted(
            [str(root / "secret"), str(root / "to-key"), str(root / "to-root")])
    rec = Recorder()
    profile.grant(rec, profile.Grants(), str(root / "secret" / "key"), ll.READ, excluded)  # type: ignore[arg-type]
    profile.grant(rec, profile.Grants(), str(tmp_path / "missing"), ll.READ, excluded)  # type: ignore[arg-type]
    assert rec.granted == {}


def test_the_exclusions_cover_credentials_and_the_daemons_own_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("TURNSTONED_HOME", str(tmp_path / "th"))
    found = profile.exclusions(str(tmp_path))
    for path in (tmp_path / ".ssh", tmp_path / ".aws", tmp_path / ".cache" / "turnstone",
                 tmp_path / "th" / "data", tmp_path / "th" / "config", Path("/etc/shadow"),
                 Path("/etc/sudoers.d"), Path("/etc/ssh"), Path("/etc/gshadow-")):  # fmt: skip
        assert str(path) in found, path
