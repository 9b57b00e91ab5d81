"""The daemon process: the only code that knows JSON-RPC, pygls and lsprotocol.

``server`` (the stdio daemon) and ``resident`` (``turnstoned serve``) serve
connections through ``transport`` (our frame reader, ``framing``), ``rpc`` (the
pygls <-> msgspec bridge), ``handlers`` (a request's params to an engine call)
and ``router`` (the engine's events to the connections that follow them);
``rundir``, ``watchdog`` and ``hardening`` keep the process and its children safe.
"""
