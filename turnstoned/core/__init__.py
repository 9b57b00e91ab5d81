"""The engine: sessions, turns, the tool pipeline and approvals. No transport here."""
