"""What a bash command would do, as findings of the intent rule table (see ``intent``).

The command is read into the commands it runs (``shell.read_script``); each is
checked for what the rules look for: deleting the root, wiping disks, running
downloaded or decoded text, killing every process, reading credentials,
writing outside the workspace, rewriting git history, sending data, and so on.
A command all of whose parts only read files inside the workspace is
``read-only``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from turnstoned.shell import where as ip
from turnstoned.shell.access import (
    WRITES,
    absolutes,
    operands,
    options,
    read_words,
    write_targets,
)
from turnstoned.shell.options import hidden_code, loads_code, running_option, unsafe_env
from turnstoned.shell.read import SHELLS, Command, Script, Word, read_script
from turnstoned.shell.read_only import command_read_only
from turnstoned.shell.where import Where

Hit = Callable[[str, str], None]

INTERPRETERS = SHELLS | {"python", "python2", "python3", "perl", "ruby", "node", "php", "lua",
                         "tclsh", "pwsh", "deno", "bun", "osascript"}
_CODE_OPTIONS = {"-c", "-e", "-E", "--eval", "-r", "--command", "-m", "-p", "--print"}
DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "xh", "nc", "ncat",
                         "lwp-request", "GET"})
DECODERS = frozenset({"base64", "base32", "xxd", "openssl", "gzip", "gunzip", "zcat", "bzip2",
                      "xz", "rev", "tr", "uudecode", "basenc", "printf", "echo"})
_DISK = re.compile(r"/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|md|dm-|loop|mapper/)")
_FORK_BOMB = re.compile(r"(\w+|:)\(\)\{\1\|\1&\};\1")
_SQL = re.compile(r"\b(?:drop\s+(?:table|database|schema|view|index|user)|truncate\s+(?:table\s+)?"
                  r"[\w.\"`]+|delete\s+from\s+[\w.\"`]+\s*(?:;|$|\"|')|flushall|flushdb)",
                  re.IGNORECASE)
_SQL_CLIENTS = frozenset({"psql", "mysql", "mariadb", "sqlite3", "mongo", "mongosh", "sqlcmd",
                          "duckdb", "clickhouse-client", "redis-cli", "cockroach"})
_REMOTE = frozenset({"ssh", "scp", "sftp", "nc", "ncat", "netcat", "socat", "telnet", "ftp", "mosh",
                     "rsh", "rlogin"})
_PRIVILEGE = frozenset({"sudo", "doas", "su", "pkexec", "runuser"})
_ENV_DUMP = frozenset({"env", "printenv"})
_SECRET_TOOLS = {("security", "find-generic-password"), ("security", "find-internet-password"),
                 ("gh", "auth"), ("git", "credential"), ("aws", "configure"),
                 ("gcloud", "auth"), ("op", "read"), ("pass", "show"), ("vault", "read")}


def findings(text: str, where: Where) -> dict[str, str]:
    """Rule id -> reason for every rule the command ``text`` matches."""
    script = read_script(text, where.cwd, where.home)
    return script_findings(script, text, where)


def script_findings(script: Script, text: str, where: Where) -> dict[str, str]:
    """``findings`` of a script already read."""
    hits: dict[str, str] = {}

    def hit(rule: str, reason: str) -> None:
        hits.setdefault(rule, reason)

    if _FORK_BOMB.search("".join(text.split())):
        hit("fork-bomb", "a fork bomb: it starts processes until the machine stops")
    if script.error:
        hit("unparsed", f"the command could not be read completely ({script.error})")
    programs = {c.program for c in script.commands}
    if programs & _SQL_CLIENTS and _SQL.search(text):
        hit("sql-destructive", "drops or empties database tables")
    for command in script.commands:
        _check(command, where.at(command.cwd), hit)
    _read_only(script, where, hit)
    return hits


def _check(command: Command, where: Where, hit: Hit) -> None:
    for check in (_delete, _disk, _kill, _runs_text, _permissions, _git, _http, _remote,
                  _privilege, _credentials, _writes, _beyond_words, _network):
        check(command, where, hit)


def _beyond_words(command: Command, where: Where, hit: Hit) -> None:
    """What makes a command do more than its words say (see ``shell.options``)."""
    loaders = [name for name in unsafe_env(command) if loads_code(name)]
    if loaders:
        hit("env-override", f"runs {command.program or 'a command'} with "
                            f"{', '.join(loaders[:3])} set ({_line(command)})")
    if hidden_code(command):
        hit("dynamic-command", f"{command.program} evaluates a word whose subscript runs a "
                               "command")
    option = running_option(command)
    if option is not None:
        hit("exec-option", f"`{option}` names a program to run or a file to write")
    if command.function:
        hit("shadowed-program", f"`{command.program}` is a function the script defines")


def _line(command: Command) -> str:
    return " ".join(ip.shown(w) for w in command.words)[:100]


# -- critical ----------------------------------------------------------------------


def _delete(command: Command, where: Where, hit: Hit) -> None:
    program, flags = command.program, options(command)
    if program == "rm":
        recursive = any(f in ("--recursive", "-r", "-R") or (not f.startswith("--") and
                        ("r" in f or "R" in f)) for f in flags)
        forced = any(f == "--force" or (not f.startswith("--") and "f" in f) for f in flags)
        targets = absolutes(operands(command), where)
        roots = [t for t in targets if ip.is_rootish(t, where.home)]
        if recursive and roots:
            hit("rm-root", f"deletes {ip.shown(roots[0])} recursively")
        elif recursive or forced:
            hit("recursive-delete", f"deletes files recursively or without asking "
                                    f"({_line(command)})")
    elif program == "find" and any(w.text in ("-delete", "-exec", "-execdir") for w in
                                   command.args):
        starts = _find_starts(command)
        roots = [t for t in absolutes(starts, where) if ip.is_rootish(t, where.home)]
        deletes = any(w.text == "-delete" for w in command.args) or any(
            w.text in ("rm", "shred", "unlink") for w in command.args)
        if roots and deletes:
            hit("rm-root", f"deletes everything find reaches under {ip.shown(roots[0])}")
        elif deletes:
            hit("recursive-delete", "deletes every file find matches")
    elif program in ("shred", "wipe", "srm"):
        hit("recursive-delete", f"{program} destroys files beyond recovery")


def _find_starts(command: Command) -> list[Word]:
    starts = []
    for word in command.args:
        if word.text.startswith(("-", "(", "!")) and not word.dynamic:
            break
        starts.append(word)
    return starts or [Word(text=".", pattern=".", dynamic=False, glob=False)]


def _disk(command: Command, where: Where, hit: Hit) -> None:
    program, args = command.program, command.args
    if re.fullmatch(r"mkfs(\.\w+)?|mke2fs|mkswap|wipefs|blkdiscard", program):
        hit("disk-wipe", f"{program} formats or erases a disk")
    targets = [w.text.partition("=")[2] for w in args if w.text.startswith("of=")]
    targets += [t.text for op, t in command.redirects if op in WRITES and t is not None]
    if program in ("fdisk", "sfdisk", "parted", "sgdisk", "gdisk", "shred", "dd"):
        targets += [w.text for w in args]
    if any(_DISK.match(t) for t in targets):
        hit("disk-wipe", "writes to a disk device directly")


def _kill(command: Command, where: Where, hit: Hit) -> None:
    program, texts = command.program, [w.text for w in command.args]
    if program == "killall5":
        hit("kill-all", "signals every process on the machine")
    elif program == "kill":
        pids = _kill_targets(texts)
        if "-1" in pids:
            hit("kill-all", "kill -1 signals every process the user can reach")
    elif program in ("pkill", "killall"):
        hit("kill-processes", f"{program} kills every process whose name matches")


def _kill_targets(texts: list[str]) -> list[str]:
    """The process ids of ``kill`` (its signal options skipped)."""
    out: list[str] = []
    i, options_done, signal = 0, False, False
    while i < len(texts):
        text = texts[i]
        if options_done or not text.startswith("-"):
            out.append(text)
        elif text == "--":
            options_done = True
        elif text in ("-s", "-n", "--signal") and not signal:
            signal = True
            i += 1
        elif not signal and re.fullmatch(r"-(\d+|[A-Z][A-Z0-9+]*|SIG\w+)", text):
            signal = True
        else:
            out.append(text)  # e.g. the -1 of `kill -9 -1`
        i += 1
    return out


def _runs_text(command: Command, where: Where, hit: Hit) -> None:
    """Text run as a program: piped, decoded, downloaded or computed."""
    program = command.program
    if not program:
        hit("dynamic-command", "the program that runs is only known when it runs")
        return
    source = set(command.upstream) | set(command.subs)
    runs_code = _reads_program(command) or _runs_computed(command)
    if not runs_code:
        return
    if source & DOWNLOADERS:
        hit("download-exec", "runs code downloaded from the network")
    elif command.upstream or source & DECODERS:
        hit("pipe-to-shell", f"runs text produced by {', '.join(sorted(source)) or 'a pipe'} "
                             f"as a program ({program})")
    else:
        hit("dynamic-command", f"{program} runs code that is only known when it runs")


def _reads_program(command: Command) -> bool:
    """An interpreter that reads its program from standard input."""
    if command.program not in INTERPRETERS or not command.upstream:
        return False
    if any(o in _CODE_OPTIONS or re.fullmatch(r"-[a-z]*c[a-z]*", o) and command.program in SHELLS
           for o in options(command)):
        return False
    files = operands(command)
    return not files or files[0].text == "-" or "-s" in options(command)


def _runs_computed(command: Command) -> bool:
    """``eval``, ``source`` or an interpreter running code with a part only known at run
    time (``sh -c "$X"``, ``eval "$(...)"``, ``bash "$SCRIPT"``)."""
    program, args = command.program, command.args
    if program == "eval":
        return any(w.dynamic for w in args)
    if program not in INTERPRETERS and program not in ("source", "."):
        return False
    for i, word in enumerate(args):
        if not word.dynamic and (word.text in _CODE_OPTIONS or (
                program in SHELLS and re.fullmatch(r"-[a-z]*c[a-z]*", word.text))):
            return i + 1 < len(args) and args[i + 1].dynamic
    files = operands(command)
    return bool(files) and files[0].dynamic


def _permissions(command: Command, where: Where, hit: Hit) -> None:
    if command.program not in ("chmod", "chown", "chgrp"):
        return
    flags = options(command)
    recursive = any(f in ("-R", "--recursive") or (not f.startswith("--") and "R" in f)
                    for f in flags)
    targets = absolutes(operands(command)[1:], where)
    if recursive and any(ip.is_rootish(t, where.home) for t in targets):
        hit("chmod-777-root", f"changes ownership or permissions of a whole system tree "
                              f"({_line(command)})")


# -- high ----------------------------------------------------------------------------


def _git(command: Command, where: Where, hit: Hit) -> None:
    if command.program != "git":
        return
    texts = [w.text for w in command.args]
    i = 0
    while i < len(texts) and texts[i].startswith("-"):
        i += 2 if texts[i] in ("-C", "-c", "--git-dir", "--work-tree") else 1
    if i >= len(texts):
        return
    sub, rest = texts[i], texts[i + 1:]
    flags = [t for t in rest if t.startswith("-")]
    short = "".join(f[1:] for f in flags if not f.startswith("--"))
    destructive = {
        "push": any(f in ("--force", "--delete", "--mirror", "--prune") or
                    f.startswith("--force-with-lease") for f in flags) or "f" in short
                or "d" in short or any(t.startswith(("+", ":")) for t in rest),
        "reset": "--hard" in flags or "--merge" in flags,
        "clean": "f" in short or "--force" in flags,
        "checkout": "--" in rest or "." in rest or "f" in short or "--force" in flags,
        "restore": "--staged" not in flags or "--worktree" in flags,
        "branch": "D" in short or ("--delete" in flags and "--force" in flags),
        "stash": bool(rest) and rest[0] in ("drop", "clear"),
        "filter-branch": True, "filter-repo": True,
        "reflog": bool(rest) and rest[0] in ("expire", "delete"),
        "gc": any(f.startswith("--prune") for f in flags),
        "update-ref": "-d" in flags,
    }
    if destructive.get(sub):
        hit("destructive-git", f"git {sub} {' '.join(flags)}".rstrip()
            + " discards work or rewrites shared history")


def _http(command: Command, where: Where, hit: Hit) -> None:
    program, texts = command.program, [w.text for w in command.args]
    mutation = False
    if program == "curl":
        methods = [texts[i + 1].upper() for i, t in enumerate(texts[:-1])
                   if t in ("-X", "--request")]
        methods += [t[2:].upper() for t in texts if t.startswith("-X") and len(t) > 2]
        mutation = any(m in ("POST", "PUT", "PATCH", "DELETE") for m in methods) or any(
            t.startswith(("-d", "--data", "--json", "-F", "--form", "-T", "--upload-file"))
            for t in texts)
    elif program == "wget":
        mutation = any(t.startswith(("--post-data", "--post-file", "--method", "--body-"))
                       for t in texts)
    elif program in ("http", "https", "xh"):
        mutation = any(t.upper() in ("POST", "PUT", "PATCH", "DELETE") for t in texts[:2]) or any(
            re.match(r"[\w-]+:?=", t) for t in texts)
    if mutation:
        hit("http-mutation", f"sends data to a server ({program})")


# Programs that reach the network whatever they are asked, and subcommands that do.
_ONLINE = frozenset({"curl", "wget", "http", "https", "xh", "aria2c", "ping", "ping6", "dig",
                     "nslookup", "host", "traceroute", "whois", "ftp", "lftp"})
_ONLINE_SUBCOMMANDS = {
    "git": {"clone", "fetch", "pull", "push", "ls-remote"},
    "npm": {"install", "i", "ci", "add", "update", "upgrade", "publish", "view", "info",
            "outdated", "audit", "login"},
    "pnpm": {"install", "i", "add", "update", "dlx", "publish"},
    "yarn": {"install", "add", "upgrade", "dlx", "npm"},
    "pip": {"install", "download", "index"}, "pip3": {"install", "download", "index"},
    "uv": {"add", "sync", "lock"}, "poetry": {"install", "add", "update", "lock"},
    "cargo": {"install", "fetch", "update", "publish", "search", "add"},
    "go": {"get", "install"}, "gem": {"install", "update"}, "bundle": {"install", "update"},
    "composer": {"install", "require", "update"}, "apt": {"install", "update", "upgrade"},
    "apt-get": {"install", "update", "upgrade"}, "brew": {"install", "update", "upgrade"},
    "docker": {"pull", "push", "login"}, "podman": {"pull", "push", "login"},
    "gh": {"api", "pr", "issue", "repo", "release", "run", "workflow", "gist", "auth"},
}  # fmt: skip


def _network(command: Command, where: Where, hit: Hit) -> None:
    """Commands that need the network (the sandbox has none: they ask, and run outside it)."""
    program, raw = command.program, [w.text for w in command.args]
    if program in ("python", "python3") and raw[:2] == ["-m", "pip"]:
        program, raw = "pip", raw[2:]
    texts = [t for t in raw if not t.startswith("-")]
    if program == "uv" and texts[:1] == ["pip"]:
        program, texts = "pip", texts[1:]
    sub = texts[0] if texts else ""
    if program in _ONLINE or sub in _ONLINE_SUBCOMMANDS.get(program, ()):
        hit("network-read", f"{program} {sub}".rstrip() + " reaches the network")


def _remote(command: Command, where: Where, hit: Hit) -> None:
    program = command.program
    if program in _REMOTE or (program == "rsync" and any(
            re.match(r"[^/]*[^/:]:", w.text) for w in operands(command))):
        hit("remote-access", f"{program} connects to another machine")


def _privilege(command: Command, where: Where, hit: Hit) -> None:
    used = _PRIVILEGE & ({command.program} | set(command.wrappers))
    if used:
        hit("sudo-su", f"runs with another user's privileges ({min(used)})")


def _credentials(command: Command, where: Where, hit: Hit) -> None:
    program, texts = command.program, [w.text for w in command.args]
    if program in _ENV_DUMP or (program in ("export", "declare", "typeset", "set") and
                                 (not texts or texts[0] in ("-p", "-x"))):
        hit("credential-recon", "prints the environment, where tokens and keys live")
    if (program, texts[0] if texts else "") in _SECRET_TOOLS:
        hit("credential-recon", f"{program} {texts[0]} reads stored credentials")
    for word in absolutes(read_words(command), where):
        if ip.proc_environ(word):
            hit("proc-environ-exfil", f"reads a process's environment ({ip.shown(word)})")
        elif ip.is_credential_word(word, where):
            hit("credential-recon", f"reads {ip.shown(word)} (a credential store)")


def _writes(command: Command, where: Where, hit: Hit) -> None:
    for word in absolutes(write_targets(command), where):
        shown = ip.shown(word)
        if ip.exact(word) and ip.real(word.text) in ip.HARMLESS_DEVICES:
            continue
        if ip.is_system(word):
            hit("system-path-write", f"writes into a system directory ({shown})")
        elif ip.is_credential_word(word, where):
            hit("credential-write", f"writes into a credential store ({shown})")
        elif ip.is_startup(word, where):
            hit("persistence-write", f"changes what runs later ({shown})")
        elif not ip.inside(word, where):
            hit("write-outside-workspace", f"writes outside the workspace ({shown})")
    if command.program == "crontab" and not {"-l"} & set(options(command)):
        hit("persistence-write", "changes the scheduled jobs (crontab)")


# -- low -------------------------------------------------------------------------------


def _read_only(script: Script, where: Where, hit: Hit) -> None:
    """``read-only`` when every command only reads inside the workspace;
    ``read-outside-workspace`` when they only read, but beyond it."""
    if script.error or not script.commands:
        return
    outside = ""
    for command in script.commands:
        reads, beyond = command_read_only(command, where)
        if not reads:
            return
        outside = outside or beyond
    if outside:
        hit("read-outside-workspace", outside)
    else:
        hit("read-only", "only reads files inside the workspace")
