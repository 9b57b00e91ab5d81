"""What a command's words say beyond its program: environment, options, hidden code.

A command is only what its words say when nothing else decides what runs: no
variable that programs read to load or run code (``LD_PRELOAD``, ``GIT_*``,
``BASH_ENV``, ``PATH``), no function the script defines under the program's
name, no code hidden where bash evaluates a word again (an array subscript in
``test -v``, ``[[ -eq ]]``, ``printf -v``), no option that names a program to
run or a file to write (``git -c``, ``go test -exec``, ``cargo --config``,
``make -f``). ``unaccounted`` says which of these a command has; such a command
is not read-only and no grant covers it. The tables list the options of the
programs people grant most often; a program not listed is judged by its other
words only, as before.
"""

from __future__ import annotations

import re

from turnstoned.shell.words import Command

# Variables that change nothing a program runs: a command setting only these is still
# what its words say. Everything else (PATH, HOME, LD_*, GIT_*, PYTHON*, NODE_OPTIONS,
# BASH_ENV, PAGER, ...) may make a program load or run other code.
SAFE_ENV = frozenset({
    "LANG", "LANGUAGE", "TZ", "COLUMNS", "LINES", "TERM", "COLORTERM", "NO_COLOR",
    "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "CI", "DEBUG", "VERBOSE", "NODE_ENV",
    "RUST_BACKTRACE", "RUST_LOG", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE",
    "PYTHONHASHSEED", "PYTHONIOENCODING", "GOOS", "GOARCH", "CGO_ENABLED", "TERM_PROGRAM",
})  # fmt: skip
_SAFE_PREFIXES = ("LC_",)
# Variables known to load or run code, or to move what a program reads: their rating is
# high (a command setting any other unknown variable is merely not read-only).
_LOADERS = re.compile(
    r"(?:LD_\w+|DYLD_\w+|BASH_ENV|ENV|PATH|CDPATH|IFS|HOME|XDG_\w+|GIT_\w+|PYTHON\w*|"
    r"NODE_OPTIONS|NODE_PATH|PERL5\w*|PERLLIB|RUBYOPT|RUBYLIB|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|"
    r"JDK_JAVA_OPTIONS|CLASSPATH|GOFLAGS|GOTOOLCHAIN|RUSTC\w*|RUSTFLAGS|CARGO_\w+|CC|CXX|LD|"
    r"MAKEFLAGS|MAKE|SHELL|PAGER|GIT_PAGER|MANPAGER|EDITOR|VISUAL|LESSOPEN|LESSCLOSE|PS4|"
    r"PROMPT_COMMAND|BASH_FUNC_\w+|npm_config_\w+|NPM_CONFIG_\w+|PIP_\w+|UV_\w+|"
    r"PYTEST_ADDOPTS|PYTEST_PLUGINS|GNUPGHOME|SSH_\w+|KUBECONFIG|DOCKER_\w+)",
    re.IGNORECASE)

# Programs that evaluate a word again as an arithmetic expression or a variable name,
# where an array subscript runs the command substitution it holds.
_EVALUATING = frozenset({"test", "[", "[[", "let", "declare", "typeset", "local", "export",
                         "readonly", "printf", "read", "unset", "mapfile", "readarray"})
_SUBSCRIPT_CODE = re.compile(r"\[[^\]]*[$`]")

# Options that make a trusted program run another program or write a file it names.
# (program -> options; a value may be joined: `-ofile`, `--output=file`.)
_RUNNING: dict[str, tuple[str, ...]] = {
    "git": ("-c", "--config-env", "--exec-path", "--upload-pack", "--receive-pack",
            "--ext-diff", "--output", "-O", "--open-files-in-pager", "--git-dir",
            "--work-tree", "--template", "--exec"),
    "go": ("-exec", "-toolexec", "-overlay", "-modfile", "-o", "-C"),
    "cargo": ("--config", "-Z", "--manifest-path", "--target-dir", "-C"),
    "npm": ("--script-shell", "--node-options", "--userconfig", "--globalconfig", "--prefix",
            "-c", "--call"),
    "npx": ("--script-shell", "--node-options", "--userconfig", "-c", "--call"),
    "pnpm": ("--script-shell", "--node-options", "--dir", "-C", "--config"),
    "yarn": ("--cwd", "--use-yarnrc"),
    "make": ("-f", "--file", "--makefile", "-C", "--directory", "--eval", "-E", "-I",
             "--include-dir", "-o", "-W"),
    "pytest": ("-p", "-c", "--config-file", "-o", "--override-ini", "--rootdir",
               "--confcutdir", "--pyargs"),
    "cmake": ("-P", "-C", "-D"),
    "sort": ("-o", "--output", "--compress-program"),
    "tree": ("-o",),
    "rg": ("--pre",),
    "ag": ("--pager",),
    "fd": ("-x", "--exec", "-X", "--exec-batch"),
    "date": ("-s", "--set"),
    "file": ("-C", "--compile"),
}
# Subcommands that run a command they are given.
_RUNNING_SUBCOMMANDS = {("git", "rebase"): ("-x",), ("git", "bisect"): ("run",),
                        ("git", "submodule"): ("foreach",)}
# `make CC=evil`, `make SHELL=...`: a variable given on the command line overrides the
# Makefile's, recipes included.
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def is_safe_env(name: str) -> bool:
    return name in SAFE_ENV or name.startswith(_SAFE_PREFIXES)


def loads_code(name: str) -> bool:
    """A variable programs read to load or run code, or to relocate what they read."""
    return bool(_LOADERS.fullmatch(name))


def unsafe_env(command: Command) -> list[str]:
    """The variables the command runs with that may change what it does."""
    return [name for name in dict.fromkeys(command.env) if not is_safe_env(name)]


def hidden_code(command: Command) -> bool:
    """A word that bash evaluates again holds a command substitution in a subscript
    (``test -v 'a[$(cmd)]'``, ``[[ 1 -eq 'x[$(cmd)]' ]]``, ``printf -v 'a[$(cmd)]'``)."""
    if command.program not in _EVALUATING:
        return False
    return any(_SUBSCRIPT_CODE.search(w.text) for w in command.args)


def _named(texts: list[str], options: tuple[str, ...]) -> str | None:
    for text in texts:
        for option in options:
            if text == option or (text.startswith(option) and len(option) == 2
                                  and option[0] == "-" and option[1] != "-"):
                return option
            if len(option) > 2 and text.startswith(option + "="):  # --opt=x, go's -opt=x
                return option
    return None


def running_option(command: Command) -> str | None:
    """The option (or subcommand) with which the program runs another program or writes a
    file it names, if any."""
    program, texts = command.program, [w.text for w in command.args]
    if program in ("python", "python3") and texts[:2] == ["-m", "pytest"]:
        program, texts = "pytest", texts[2:]
    found = _named(texts, _RUNNING.get(program, ()))
    if found is not None:
        return f"{program} {found}"
    operands = [t for t in texts if not t.startswith("-")]
    sub = operands[0] if operands else ""
    extra = _RUNNING_SUBCOMMANDS.get((program, sub))
    if extra is not None:
        rest = texts[texts.index(sub) + 1:]
        if any(t in extra or (t.startswith("--exec") and program == "git") for t in rest):
            return f"{program} {sub} {' '.join(extra)}"
    if program == "make" and any(_ASSIGNMENT.match(t) for t in texts):
        return "make VARIABLE=value"
    return None


def unaccounted(command: Command) -> str | None:
    """Why the command may do more than its words say (None: it does what they say)."""
    env = unsafe_env(command)
    if env:
        return f"runs with {', '.join(env[:3])} set, which can change what it runs"
    if command.function:
        return f"`{command.program}` is a function the script defines"
    if hidden_code(command):
        return "a subscript hides a command that bash runs when it evaluates the word"
    option = running_option(command)
    if option is not None:
        return f"`{option}` names a program to run or a file to write"
    return None
