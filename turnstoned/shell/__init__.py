"""The one reader of bash text: lexing, wrappers, where words point, read-only, the blocklist.

Everything that judges a command reads it here, the same way: the intent rules
and grants (``core.approval``), tool policies, the blocklist and the sandbox's
escalation. ``read_script`` turns text into the simple commands bash would run
(``words``), ``where`` says where their words point, ``access`` what they read
and write, ``read_only`` whether they only read, ``blocklist`` whether they are
an obvious accident. Nothing here runs a command.
"""

from turnstoned.shell.access import absolutes, read_words, write_targets
from turnstoned.shell.blocklist import blocked_message, blocked_pattern
from turnstoned.shell.read import read_script
from turnstoned.shell.read_only import command_read_only, is_read_only
from turnstoned.shell.where import Where
from turnstoned.shell.words import SHELLS, Command, Script, Word

__all__ = [
    "SHELLS", "Command", "Script", "Where", "Word", "absolutes", "blocked_message",
    "blocked_pattern", "command_read_only", "is_read_only", "read_script", "read_words",
    "write_targets",
]
