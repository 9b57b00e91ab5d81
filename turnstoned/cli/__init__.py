"""Commands that are not the daemon: the command line (``main``), the stdio bridge to the
resident daemon (``attach``), the headless client (``chat``) and the setup check
(``doctor``). Each imports only what it uses: ``attach`` and ``chat`` start in tens of
milliseconds."""
