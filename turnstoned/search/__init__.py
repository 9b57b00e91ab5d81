"""Lexical search: the BM25 index shared by tool search, skill search and memory."""

from turnstoned.search.bm25 import BM25Index, tokenize

__all__ = ["BM25Index", "tokenize"]
