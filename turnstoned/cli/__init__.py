"""Commands that are not the daemon: the command line, attach, chat and doctor.

``main`` parses the command line; ``attach`` is the stdio bridge to the resident
daemon, ``chat`` the headless client, ``doctor`` the setup check. Each imports
only what it uses: ``attach`` and ``chat`` start in tens of milliseconds.
"""
