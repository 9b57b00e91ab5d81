"""Command normalisation and the dangerous-command blocklist."""

from __future__ import annotations

import pytest

from turnstoned.shell.blocklist import blocked_message, blocked_pattern, normalize_command


@pytest.mark.parametrize(
    ("command", "pattern"),
    [
        ("rm -rf /", "rm -rf /"),
        ("rm -rf /*", "rm -rf /*"),
        ("rm -fr /", "rm -rf /"),
        ("rm -r -f /", "rm -rf /"),
        ("rm -Rf /", "rm -rf /"),
        ("rm --recursive --force /", "rm -rf /"),
        ("rm -rf -- /", "rm -rf /"),
        ('rm -rf "/"', "rm -rf /"),
        ("rm -rf //", "rm -rf /"),
        ("rm -rf /tmp/..", "rm -rf /"),
        ("rm -rf ~", "rm -rf /"),
        ("rm -rf $HOME/*", "rm -rf /*"),
        ("sudo rm -rf /", "rm -rf /"),
        ("cd /tmp && rm -rf /", "rm -rf /"),
        ("rm -rf /;echo done", "rm -rf /"),
        ("rm -rf /&", "rm -rf /"),
        ("rm -rf /|cat", "rm -rf /"),
        ("rm -rf ./build /", "rm -rf /"),
        ('bash -c "rm -rf /"', "rm -rf /"),
        ("mkfs.ext4 /dev/sdb1", "mkfs"),
        ("sudo mkfs -t ext4 /dev/sdb", "mkfs"),
        (":(){ :|:& };:", ":(){ :|:& };:"),
        (":(){:|:&};:", ":(){ :|:& };:"),
        ("bomb(){ bomb|bomb& };bomb", ":(){ :|:& };:"),
        ("dd if=x of=/dev/sda", "of=/dev/sd"),
        ("dd if=/dev/zero of=/dev/nvme0n1 bs=1M", "of=/dev/nvme"),
        ("cat image > /dev/sda", "> /dev/sd"),
        ("echo x >/dev/vda", "> /dev/vd"),
        ("shutdown -h now", "shutdown"),
        ("sudo reboot", "reboot"),
        ("ls; halt", "halt"),
        ("systemctl poweroff", "poweroff"),
        ("sudo -u root poweroff", "poweroff"),
        ("x=$(reboot)", "reboot"),
        ("echo `reboot`", "reboot"),
        ("ls\nreboot", "reboot"),
        ("bash -c reboot", "reboot"),
        ("mv / /tmp/old", "mv / "),
        ("chmod -R 777 /", "chmod -R 777 /"),
        ("chown -R me /", "chown -R "),
        ("cat /proc/1/environ", "/proc/1/environ"),
        ("cat /proc/self/environ", "/proc/self/environ"),
        ("tr '\\0' '\\n' < /proc/$PPID/environ", "/proc/$PPID/environ"),
        # The blocklist reads commands as the intent rules do (one reader, one wrapper table).
        ("pkexec reboot", "reboot"),
        ("nohup setsid timeout 5 reboot", "reboot"),
        ("bash <<EOF\nrm -rf /\nEOF", "rm -rf /"),
        ("x=/; rm -rf $x", "rm -rf /"),
        ("python3 -c \"import os; os.system('rm -rf /')\"", "rm -rf /"),
    ],
)
def test_dangerous_commands_are_blocked(command: str, pattern: str) -> None:
    assert blocked_pattern(command) == pattern
    assert blocked_message(command) == f"Blocked: command matches dangerous pattern '{pattern}'"


@pytest.mark.parametrize(
    "command",
    [
        "rm \u2014rf /",  # em dash
        "rm \u2013rf /",  # en dash
        "rm -rf \u201c/\u201d",  # curly double quotes
        "rm -rf \u2018/\u2019",  # curly single quotes
    ],
)
def test_dash_and_quote_variants_are_normalised_and_blocked(command: str) -> None:
    assert blocked_pattern(command) == "rm -rf /"


@pytest.mark.parametrize(
    "command",
    [
        "ls",
        "ls -la /",
        "git status",
        "python -c 'print(1)'",
        "rm file.txt",
        "rm -rf /tmp/x",
        "rm -rf ./build /tmp/y",
        "rm -rf ~/build",
        "rm -r dir",
        "rm -f /tmp/lock",
        "echo reboot",
        'git commit -m "halt the build on error"',
        "grep -r shutdown src/",
        "chown -R me ./dir",
        "chmod -R 755 build",
        "mv /tmp/a /tmp/b",
        "cp a /",
        "find / -name '*.py'",
        "dd if=/dev/zero of=./disk.img bs=1M count=1",
        "echo hi > /dev/null",
        "cat /proc/cpuinfo",
        "echo 'unbalanced",
    ],
)
def test_safe_commands_pass(command: str) -> None:
    assert blocked_pattern(command) is None
    assert blocked_message(command) is None


def test_normalize_command_maps_quotes_and_dashes() -> None:
    text = "echo \u2018a\u2019 \u201cb\u201d x\u2013y z\u2014w"
    assert normalize_command(text) == "echo 'a' \"b\" x-y z-w"


def test_quoted_command_text_is_still_caught() -> None:
    # A known false positive we keep: quoted strings are re-read as commands.
    assert blocked_pattern('echo "rm -rf /"') == "rm -rf /"
