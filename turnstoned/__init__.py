"""turnstoned: an agent daemon for code editors."""

__version__ = "0.1.0"
