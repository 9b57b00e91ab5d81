"""Persistence: the only package that opens SQLite."""

from turnstoned.store.db import SessionRow, Store

__all__ = ["SessionRow", "Store"]
