"""The engine: sessions, turns, the tool pipeline and approvals; no transport here.

``engine`` is the facade the daemon's handlers call; ``sessions`` the service its
helpers share; ``approval/`` decides whether a call runs.
"""
