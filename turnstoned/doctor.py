"""`turnstoned doctor` (placeholder replaced below)."""


def main(tool_call: bool) -> int:
    raise NotImplementedError
