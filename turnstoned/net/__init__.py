"""Outbound HTTP for tools, and the guard that decides where it may go.

``addresses`` puts every IP in a lane (public, private, never) from explicit
tables; ``urls`` parses what a model or a page wrote into one canonical target;
``screen`` resolves and judges a target; ``fetch`` is the guarded fetcher that
connects only to screened addresses. ``endpoints`` talks to the services the
user configured (SearxNG, a reranker), which are trusted and not screened.

Importing this package costs nothing: the HTTP client is imported on first use.
"""
