"""The baseline for the cold-start benchmark: a bare pygls language server on stdio."""

from pygls.lsp.server import LanguageServer

server = LanguageServer("bare", "0")

if __name__ == "__main__":
    server.start_io()
