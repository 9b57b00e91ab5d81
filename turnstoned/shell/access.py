"""What a command reads and writes: its options, operands and the paths they name.

Shared by the intent rules (``intent_bash``), grants and tool policies, which all
look at the same words the same way: an operand relative to the command's
directory is made absolute (unknown when the directory is), option values like
``--file=path`` and input redirections count as reads, and the targets of ``>``,
``tee``, ``cp``, ``mv``, ``sed -i``, ``dd of=``, ... as writes.
"""

from __future__ import annotations

from turnstoned.shell import where as ip
from turnstoned.shell.where import Where
from turnstoned.shell.words import Command, Word, redirect_is_fd

WRITES = (">", ">>", ">|", "&>", "&>>", "<>")  # redirections that write their target


def options(command: Command) -> list[str]:
    return [w.text for w in command.args if w.text.startswith("-") and not w.dynamic]


def operands(command: Command) -> list[Word]:
    return [w for w in command.args if w.dynamic or not w.text.startswith("-") or w.text == "-"]


def absolutes(words: list[Word], where: Where) -> list[Word]:
    """Each word as an absolute path; a word relative to an unknown directory is unknown."""
    unknown = Word(text="", pattern="*", dynamic=True, glob=False)
    return [ip.absolute(w, where) or unknown for w in words]


def read_words(command: Command) -> list[Word]:
    """Every word that may be a path the command reads (operands, option values, input)."""
    words = [w for w in command.args if not w.text.startswith("-") or w.dynamic]
    for word in command.args:
        if word.text.startswith("-") and "=" in word.text and ip.exact(word):
            value = word.text.partition("=")[2]
            words.append(Word(text=value, pattern=value, dynamic=False, glob=False))
    words += [t for op, t in command.redirects if op in ("<", "<>") and t is not None]
    return [w for w in words if w.text or w.dynamic]


def write_targets(command: Command) -> list[Word]:
    """The files a command writes: redirections and the operands of writing programs."""
    found = [t for op, t in command.redirects if op in WRITES and t is not None
             and not redirect_is_fd(op, t) and t.text not in ip.HARMLESS_DEVICES]
    program, words = command.program, operands(command)
    texts = [w.text for w in command.args]
    in_place = any(t.startswith("-i") or t == "--in-place" for t in texts)
    if program in ("tee", "touch", "mkdir", "rm", "rmdir", "truncate", "shred", "unlink"):
        found += words
    elif program in ("cp", "mv", "install", "ln", "rsync") and words:
        target = [texts[i + 1] for i, t in enumerate(texts[:-1]) if t in ("-t",
                                                                          "--target-directory")]
        found += [plain_word(target[0])] if target else [words[-1]]
    elif program in ("chmod", "chown", "chgrp") or (program in ("sed", "perl") and in_place):
        found += words[1:]  # the first operand is a mode, an owner or a script
    elif program == "dd":
        found += [plain_word(t[3:]) for t in texts if t.startswith("of=")]
    elif program in _OUTPUT_OPTIONS:
        found += [plain_word(value) for value in _option_values(texts, _OUTPUT_OPTIONS[program])]
    return found


# Options that name the file a program writes (`-o out`, `-oout`, `--output=out`).
_OUTPUT_OPTIONS = {"sort": ("-o", "--output"), "curl": ("-o", "--output"),
                   "wget": ("-O", "--output-document"), "tree": ("-o",), "go": ("-o",),
                   "git": ("--output",), "gcc": ("-o",), "cc": ("-o",)}


def _option_values(texts: list[str], options: tuple[str, ...]) -> list[str]:
    """The values given to ``options``, separate or joined."""
    values = []
    for i, text in enumerate(texts):
        for option in options:
            if text == option and i + 1 < len(texts):
                values.append(texts[i + 1])
            elif option.startswith("--") and text.startswith(option + "="):
                values.append(text[len(option) + 1:])
            elif not option.startswith("--") and text.startswith(option) and len(text) > 2:
                values.append(text[len(option):])
    return values


def plain_word(text: str) -> Word:
    return Word(text=text, pattern=text, dynamic=False, glob=False)
