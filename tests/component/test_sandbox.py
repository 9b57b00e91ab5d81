"""The command sandbox on this kernel: real commands through ``procs.start_script``.

Each denial is checked by its effect (the target unchanged or absent, the listener left
without a connection or a datagram, the process still alive), from a shell and from Python;
what routine commands need still works. HOME is a temp home with a fake ~/.ssh/id_rsa, and
TURNSTONED_HOME (conftest) a temp dir holding the daemon's database.
"""

from __future__ import annotations

import asyncio
import copy
import os
import platform
import select
import shlex
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from turnstoned import paths
from turnstoned.sandbox import (
    EXIT_NOT_SANDBOXED,
    Profile,
    Sandbox,
    SandboxError,
    explain,
    prepare,
    status,
)
from turnstoned.tools.procs import start_script

pytestmark = pytest.mark.skipif(not status().available, reason=status().detail)

WAIT = 20.0
KEY = "-----BEGIN OPENSSH PRIVATE KEY----- FAKE-KEY-MATERIAL"
NOTES = "private notes, not a toolchain"
ORIGINAL = "original content\n"


@dataclass
class World:
    home: Path
    workspace: Path
    outside: Path  # readable (Profile.readable), not writable
    target: Path  # a file in it
    hidden: Path  # neither readable nor writable
    database: Path
    env: dict[str, str]

    def profile(self, **kwargs: object) -> Profile:
        return Profile(self.workspace, readable=(self.outside,), **kwargs)  # type: ignore[arg-type]

    def sandbox(self, **kwargs: object) -> Sandbox:
        return prepare(self.profile(**kwargs))

    def unchanged(self) -> bool:
        return self.target.read_text() == ORIGINAL and sorted(os.listdir(self.outside)) == [
            "target.txt"]  # fmt: skip


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(KEY)
    (home / "notes.txt").write_text(NOTES)
    (home / ".gitconfig").write_text("[user]\n\tname = Sandboxed Tester\n")
    (home / ".cache" / "tool").mkdir(parents=True)
    (home / ".cache" / "tool" / "data").write_text("toolchain cache\n")
    (home / ".cache" / "turnstone").mkdir()
    (home / ".cache" / "turnstone" / "state").write_text("daemon state\n")
    monkeypatch.setenv("HOME", str(home))
    database = paths.database_file()
    database.parent.mkdir(parents=True, exist_ok=True)
    database.write_text("SQLite format 3 (stand-in)\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "target.txt"
    target.write_text(ORIGINAL)
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "file").write_text("hidden\n")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
           "TARGET": str(target), "OUTSIDE": str(outside)}
    return World(home, workspace, outside, target, hidden, database, env)


async def run(world: World, command: str, sandbox: Sandbox | None) -> tuple[int, str]:
    """Run ``command`` in the workspace through start_script; (exit code, stdout + stderr)."""
    out: list[str] = []
    proc = await start_script(command, stop_on_error=False, cwd=world.workspace, env=world.env,
                              on_stdout=out.append, on_stderr=out.append, sandbox=sandbox)  # fmt: skip
    try:
        exited = await proc.wait_exit(WAIT)
    finally:
        await proc.finish()
    assert exited, f"{command!r} did not finish in {WAIT}s"
    assert proc.returncode is not None
    return proc.returncode, "".join(out)


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def py(code: str) -> str:
    return f"python3 -c {shlex.quote(code)}"


# -- writes outside the workspace -------------------------------------------------------------

# $TARGET is a readable file outside the workspace, $OUTSIDE its directory.
WRITES = {
    "shell redirect": "echo changed > $TARGET",
    "shell append": "echo changed >> $TARGET",
    "python write": py("import os; open(os.environ['TARGET'], 'w').write('changed')"),
    "new file": "touch $OUTSIDE/new",
    "python new file": py("import os; open(os.environ['OUTSIDE'] + '/new', 'x')"),
    "remove": "rm -f $TARGET",
    "move out": "mv $TARGET .",
    "truncate": "truncate -s 0 $TARGET",
    "python truncate": py("import os; os.truncate(os.environ['TARGET'], 0)"),
    "symlink, shell": "ln -s $TARGET link && test -L link && echo changed > link",
    "symlink, python": "ln -s $TARGET link && " + py("open('link', 'w').write('changed')"),
    "hard link, shell": "ln $TARGET hard && echo changed >> hard",
    "hard link, python": py("import os; os.link(os.environ['TARGET'], 'hard'); "
                            "open('hard', 'a').write('changed')"),
    "sed in place": "sed -i s/original/changed/ $TARGET",
}


@pytest.mark.parametrize("command", WRITES.values(), ids=WRITES.keys())
async def test_a_write_outside_the_workspace_fails(world: World, command: str) -> None:
    code, out = await run(world, command, world.sandbox())
    assert world.unchanged(), out
    assert code != 0, out
    why = world.sandbox().explain(code, out)
    assert why is not None and ("outside the workspace" in why or "link or rename" in why), out


async def test_the_symlink_itself_is_made_but_leads_nowhere_writable(world: World) -> None:
    code, out = await run(world, f"ln -s {world.target} link && cat link && echo x > link",
                          world.sandbox())  # fmt: skip
    assert (world.workspace / "link").is_symlink()
    assert ORIGINAL.strip() in out and code != 0 and world.unchanged()


async def test_the_daemon_database_cannot_be_written_or_read(world: World) -> None:
    before = world.database.read_text()
    code, out = await run(world, f"cat {world.database}; echo x >> {world.database}; "
                                 f"rm -f {world.database}", world.sandbox())  # fmt: skip
    assert world.database.read_text() == before
    assert "SQLite format" not in out and code != 0


# -- reads ------------------------------------------------------------------------------------

async def test_the_ssh_key_cannot_be_read(world: World) -> None:
    key = world.home / ".ssh" / "id_rsa"
    for command in (f"cat {key}", "cat ~/.ssh/id_rsa", py(f"print(open({str(key)!r}).read())"),
                    "ls ~/.ssh", "cp ~/.ssh/id_rsa ."):  # fmt: skip
        code, out = await run(world, command, world.sandbox())
        assert "FAKE-KEY" not in out and "id_rsa\n" not in out, (command, out)
        assert code != 0, (command, out)
        assert not (world.workspace / "id_rsa").exists()
    why = explain(code, out)
    assert why is not None and "credential store" in why, out


async def test_the_rest_of_home_cannot_be_read_but_the_toolchains_can(world: World) -> None:
    code, out = await run(world, "cat ~/notes.txt", world.sandbox())
    assert NOTES not in out and code != 0
    why = explain(code, out)
    assert why is not None and "home directory" in why, out
    code, out = await run(world, "ls ~", world.sandbox())
    assert "notes.txt" not in out and code != 0
    code, out = await run(world, "cat ~/.cache/turnstone/state", world.sandbox())
    assert "daemon state" not in out and code != 0
    code, out = await run(world, "cat ~/.gitconfig ~/.cache/tool/data; ls ~/.cache",
                          world.sandbox())  # fmt: skip
    assert code == 0 and "Sandboxed Tester" in out and "toolchain cache" in out
    assert "tool\n" in out


async def test_a_directory_granted_to_no_one_cannot_be_read(world: World) -> None:
    code, out = await run(world, f"cat {world.hidden}/file; ls {world.hidden}", world.sandbox())
    assert "hidden" not in out.replace(str(world.hidden), "") and code != 0


async def test_the_daemons_environment_cannot_be_read(world: World) -> None:
    me = os.getpid()  # the test process stands in for the daemon
    code, out = await run(world, f"cat /proc/{me}/environ; "
                          + py(f"open('/proc/{me}/environ', 'rb').read()"), world.sandbox())
    assert "PATH=" not in out and code != 0
    why = explain(code, out)
    assert why is not None and "another process" in why, out
    for command in (f"readlink -e /proc/{me}/fd/0", f"ls /proc/{me}/root/",
                    f"cat /proc/{me}/maps", f"head -c 1 /proc/{me}/mem", f"ls /proc/{me}/cwd/"):
        code, out = await run(world, command, world.sandbox())
        assert code != 0 and not out.strip().startswith("/"), (command, out)


# -- sockets ----------------------------------------------------------------------------------

def _pending(sock: socket.socket) -> bool:
    return bool(select.select([sock], [], [], 0.3)[0])


@pytest.fixture
def listeners(tmp_path: Path) -> Iterator[dict[str, tuple[socket.socket, str]]]:
    """TCP (127.0.0.1, ::1 when there is one), UDP and a Unix socket, listening."""
    found: dict[str, tuple[socket.socket, str]] = {}
    tcp = socket.create_server(("127.0.0.1", 0))
    found["tcp4"] = (tcp, str(tcp.getsockname()[1]))
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    found["udp4"] = (udp, str(udp.getsockname()[1]))
    if socket.has_ipv6:
        try:
            tcp6 = socket.create_server(("::1", 0), family=socket.AF_INET6)
            found["tcp6"] = (tcp6, str(tcp6.getsockname()[1]))
            udp6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
            udp6.bind(("::1", 0))
            found["udp6"] = (udp6, str(udp6.getsockname()[1]))
        except OSError:
            pass
    run_dir = tmp_path / "runtime"  # stands in for the resident daemon's socket dir
    run_dir.mkdir(mode=0o700)
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(str(run_dir / "daemon.sock"))
    unix.listen()
    found["unix"] = (unix, str(run_dir / "daemon.sock"))
    yield found
    for sock, _ in found.values():
        sock.close()


REACH = {
    "tcp4": "import socket; socket.create_connection(('127.0.0.1', int(ADDRESS)), 2)",
    "tcp6": "import socket; socket.create_connection(('::1', int(ADDRESS)), 2)",
    "udp4": "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
            "s.sendto(b'x', ('127.0.0.1', int(ADDRESS)))",
    "udp6": "import socket; s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); "
            "s.sendto(b'x', ('::1', int(ADDRESS)))",
    "unix": "import socket; s = socket.socket(socket.AF_UNIX); s.connect(ADDRESS)",
}
SHELL_REACH = {"tcp4": "echo x > /dev/tcp/127.0.0.1/{address}",
               "udp4": "echo x > /dev/udp/127.0.0.1/{address}"}  # fmt: skip


def reach(kind: str, address: str) -> str:
    """A Python command that connects (or sends) to the listener at ``address``."""
    return py(f"ADDRESS = {address!r}\n" + REACH[kind])


async def test_the_probes_reach_their_listeners_unsandboxed(
        world: World, listeners: dict[str, tuple[socket.socket, str]]) -> None:  # fmt: skip
    for kind, (sock, port) in listeners.items():
        code, out = await run(world, reach(kind, port), None)
        assert code == 0 and _pending(sock), (kind, out)


async def test_no_socket_reaches_a_listener(
        world: World, listeners: dict[str, tuple[socket.socket, str]]) -> None:  # fmt: skip
    for kind, (sock, port) in listeners.items():
        shell = SHELL_REACH.get(kind)
        for command in (reach(kind, port), *([shell.format(address=port)] if shell else [])):
            code, out = await run(world, command, world.sandbox())
            assert code != 0 and not _pending(sock), (kind, command, out)
            why = explain(code, out)
            assert why is not None and ("network" in why or "socket" in why), (kind, out)
    if os.path.exists("/usr/bin/curl"):
        sock, port = listeners["tcp4"]
        code, out = await run(world, f"curl -sS http://127.0.0.1:{port}/", world.sandbox())
        assert code != 0 and not _pending(sock) and explain(code, out) == "a network connection"


async def test_with_the_network_allowed_tcp_and_udp_work_but_not_unix_sockets(
        world: World, listeners: dict[str, tuple[socket.socket, str]]) -> None:  # fmt: skip
    sandbox = world.sandbox(network=True)
    for kind in ("tcp4", "udp4"):
        sock, port = listeners[kind]
        code, out = await run(world, reach(kind, port), sandbox)
        assert code == 0 and _pending(sock), (kind, out)
    sock, path = listeners["unix"]
    code, out = await run(world, reach("unix", path), sandbox)
    assert code != 0 and not _pending(sock), out
    code, out = await run(world, f"echo changed > {world.target}", sandbox)
    assert code != 0 and world.unchanged()


async def test_socketpair_and_asyncio_work(world: World) -> None:
    code, out = await run(world, py(
        "import asyncio, socket\n"
        "a, b = socket.socketpair(); a.send(b'ping'); print(b.recv(4).decode())\n"
        "async def main():\n"
        "    proc = await asyncio.create_subprocess_exec('true')\n"
        "    return await proc.wait()\n"
        "print('loop', asyncio.run(main()))"), world.sandbox())  # fmt: skip
    assert code == 0 and "ping" in out and "loop 0" in out, out


async def test_netlink_still_answers(world: World) -> None:
    code, out = await run(world, py("import socket; print(len(socket.if_nameindex()) > 0)"),
                          world.sandbox())  # fmt: skip
    assert code == 0 and "True" in out, out


# -- signals, syscalls, capabilities ----------------------------------------------------------

async def test_a_process_outside_cannot_be_signalled(world: World) -> None:
    sleeper = await asyncio.create_subprocess_exec("sleep", "30")
    try:
        code, out = await run(world, f"kill -TERM {sleeper.pid}; kill -KILL {sleeper.pid}; "
                              + py(f"import os, signal; os.kill({sleeper.pid}, signal.SIGKILL)"),
                              world.sandbox())  # fmt: skip
        await asyncio.sleep(0.1)
        assert sleeper.returncode is None and alive(sleeper.pid), out
        assert code != 0
        why = explain(code, out)
        assert why is not None and "signal" in why and str(sleeper.pid) in why, out
    finally:
        sleeper.kill()
        await asyncio.wait_for(sleeper.wait(), WAIT)


async def test_its_own_children_can_be_signalled(world: World) -> None:
    _, out = await run(world, "sleep 30 & kill -TERM $!; wait $!; echo status=$?",
                          world.sandbox())  # fmt: skip
    assert "status=143" in out, out


async def test_no_capability_no_new_privileges_and_a_seccomp_filter(world: World) -> None:
    _, out = await run(world, "grep -E '^(Cap|NoNewPrivs|Seccomp:)' /proc/self/status",
                          world.sandbox())  # fmt: skip
    fields = dict(line.split(":\t") for line in out.strip().splitlines())
    assert fields["NoNewPrivs"] == "1" and fields["Seccomp"] == "2", out
    for cap in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert int(fields[cap], 16) == 0, out
    if os.geteuid() == 0:
        assert int(fields["CapBnd"], 16) == 0, out


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x32 is an x86-64 ABI")
async def test_an_x32_syscall_kills_the_process(world: World) -> None:
    _, out = await run(world, py("import ctypes; ctypes.CDLL(None).syscall(0x40000000 | 39)")
                          + "; echo status=$?", world.sandbox())  # fmt: skip
    assert "status=159" in out, out  # 128 + SIGSYS
    why = explain(159, out)
    assert why is not None and "another ABI" in why


async def test_io_uring_is_denied(world: World) -> None:
    probe = py("import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
               "r = libc.syscall(425, 4, ctypes.create_string_buffer(120)); "
               "print('uring', r, ctypes.get_errno())")  # fmt: skip
    code, out = await run(world, probe, None)
    if "uring -1" in out:
        pytest.skip(f"io_uring is not available here: {out}")
    code, out = await run(world, probe, world.sandbox())
    assert code == 0 and "uring -1 38" in out, out  # ENOSYS


# -- what still works -------------------------------------------------------------------------

async def test_routine_commands_work_in_the_workspace(world: World) -> None:
    command = (
        "set -e\n"
        "echo hello > f.txt && cat f.txt && mkdir d && mv f.txt d/ && ls d && rm -r d\n"
        "git init -q . && echo x > a && git add a && "
        "git -c user.email=t@example.com commit -qm first && git log --oneline | wc -l\n"
        + py("import sys; print('python', sys.version_info[0])") + "\n"
        "bash -c 'echo bash ok'\n"
        "ls /usr/bin | grep -c . > /dev/null && echo usr ok\n"
        "cat /etc/hostname\n"
        "echo x > /dev/null && head -c 4 /dev/urandom | wc -c\n"
    )
    code, out = await run(world, command, world.sandbox())
    assert code == 0, out
    assert "hello" in out and "python 3" in out and "bash ok" in out and "usr ok" in out
    assert Path("/etc/hostname").read_text().strip() in out
    assert (world.workspace / ".git").is_dir() and world.unchanged()


async def test_tempfile_uses_the_private_temp_dir(world: World) -> None:
    sandbox = world.sandbox()
    code, out = await run(world, py("import tempfile; f = tempfile.NamedTemporaryFile("
                                    "delete=False); f.write(b'x'); print(f.name)"), sandbox)
    assert code == 0, out
    made = Path(out.strip())
    assert made.parent == sandbox.tmp and made.read_bytes() == b"x"
    assert sandbox.tmp.stat().st_mode & 0o777 == 0o700
    assert not sandbox.tmp.name.startswith("tmp") and sandbox.tmp.name != "turnstoned-sandbox"
    code, out = await run(world, "echo x > /tmp/turnstoned-sandbox-escape", sandbox)
    assert code != 0 and not Path("/tmp/turnstoned-sandbox-escape").exists()


# -- failure, status, older ABIs --------------------------------------------------------------

async def test_a_sandbox_that_cannot_be_applied_ends_the_child_with_126(world: World) -> None:
    broken = copy.copy(world.sandbox())
    broken._fd = 1 << 20  # no such descriptor: landlock_restrict_self fails with EBADF
    code, out = await run(world, "touch ran-unsandboxed", broken)
    assert code == EXIT_NOT_SANDBOXED and not (world.workspace / "ran-unsandboxed").exists()
    assert "turnstoned sandbox: landlock_restrict_self failed (errno 9)" in out, out
    why = explain(code, out)
    assert why is not None and why.startswith("nothing: the sandbox could not be applied")


def test_status_is_off_when_turned_off(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    assert status().available and status().abi >= 1
    monkeypatch.setenv("TURNSTONED_SANDBOX", "off")
    off = status()
    assert not off.available and "TURNSTONED_SANDBOX=off" in off.detail
    with pytest.raises(SandboxError):
        prepare(world.profile())


def test_prepare_is_cached_per_profile(world: World) -> None:
    assert world.sandbox() is world.sandbox()
    assert world.sandbox(network=True) is not world.sandbox()
    with pytest.raises(SandboxError):
        prepare(Profile(world.home / ".ssh"))


@pytest.mark.parametrize("abi", [1, 3, 5])
async def test_an_older_abi_still_confines(
        world: World, listeners: dict[str, tuple[socket.socket, str]], abi: int) -> None:  # fmt: skip
    sandbox = prepare(world.profile(), abi=abi)
    assert sandbox.abi == abi
    sock, port = listeners["tcp4"]
    _, out = await run(world, f"echo ok > inside && cat inside; echo x > {world.target}; "
                          f"cat ~/.ssh/id_rsa; truncate -s 0 {world.target}; "
                          + reach("tcp4", port), sandbox)  # fmt: skip
    assert "ok" in out and world.unchanged() and "FAKE-KEY" not in out and not _pending(sock)


def test_a_confined_thread_starts_sandboxed_children_and_only_itself_is_confined(
        world: World) -> None:  # fmt: skip
    sandbox = world.sandbox()
    done: list[subprocess.CompletedProcess[str]] = []

    def spawner() -> None:
        sandbox.confine_this_thread()
        done.append(subprocess.run(
            ["bash", "-c", ("echo changed > $TARGET; grep -E '^(NoNewPrivs|Seccomp):' "
                            "/proc/self/status")], env=world.env, capture_output=True, text=True, timeout=WAIT,
            check=False))  # fmt: skip

    thread = threading.Thread(target=spawner)
    thread.start()
    thread.join(WAIT)
    assert done and world.unchanged() and "Permission denied" in done[0].stderr
    assert "NoNewPrivs:\t1" in done[0].stdout and "Seccomp:\t2" in done[0].stdout
    world.target.write_text("the test process itself is not confined\n")  # this thread is free
    world.target.write_text(ORIGINAL)
