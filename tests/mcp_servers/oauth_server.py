"""An HTTP MCP server behind its own OAuth 2.1 authorization server, for the login tests.

    python oauth_server.py [--ttl SECONDS] [--refuse]   # prints "PORT n", then serves

One process on 127.0.0.1 is both: the MCP endpoint ``/mcp`` (a ``whoami`` tool) answers
401 with a ``WWW-Authenticate`` naming its protected-resource metadata unless the request
carries a live bearer token; the authorization server publishes RFC 8414 metadata and
takes dynamic registration, an authorization request (it approves at once and redirects
with a code, as a browser would after the user said yes; ``--refuse`` redirects with
``access_denied`` instead), and code (PKCE S256 checked) and refresh grants. Access tokens
live ``--ttl`` seconds. ``POST /admin/revoke`` revokes every access token; ``GET
/admin/stats`` counts what happened.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import secrets
import socket
import time
from typing import Any
from urllib.parse import urlencode

import anyio
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route

STATS: dict[str, int] = {"unauthorized": 0, "registrations": 0, "authorizations": 0,
                         "codes": 0, "refreshes": 0}
CLIENTS: dict[str, dict[str, Any]] = {}
CODES: dict[str, dict[str, Any]] = {}
TOKENS: dict[str, float] = {}  # access token -> expiry
REFRESH: set[str] = set()


def build(base: str, ttl: int, refuse: bool) -> Starlette:
    mcp = MCPServer("oauth-protected")

    @mcp.tool()
    def whoami() -> str:
        """Who the server thinks is calling."""
        return "a logged-in user"

    resource_metadata = f"{base}/.well-known/oauth-protected-resource/mcp"
    inner = mcp.streamable_http_app()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            auth = dict(scope["headers"]).get(b"authorization", b"").decode()
            token = auth.removeprefix("Bearer ")
            if not auth.startswith("Bearer ") or TOKENS.get(token, 0) < time.time():
                STATS["unauthorized"] += 1
                challenge = f'Bearer error="invalid_token", resource_metadata="{resource_metadata}"'
                await Response(status_code=401, headers={"WWW-Authenticate": challenge})(
                    scope, receive, send)
                return
        await inner(scope, receive, send)

    async def protected_resource(request: Request) -> Response:
        return JSONResponse({"resource": f"{base}/mcp", "authorization_servers": [base]})

    async def metadata(request: Request) -> Response:
        return JSONResponse({
            "issuer": base, "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token", "registration_endpoint": f"{base}/register",
            "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["none"],
        })

    async def register(request: Request) -> Response:
        body = await request.json()
        client_id = f"client-{secrets.token_hex(4)}"
        CLIENTS[client_id] = body
        STATS["registrations"] += 1
        return JSONResponse({**body, "client_id": client_id,
                             "token_endpoint_auth_method": "none"}, status_code=201)

    async def authorize(request: Request) -> Response:
        q = request.query_params
        STATS["authorizations"] += 1
        client = CLIENTS.get(q.get("client_id", ""))
        redirect = q.get("redirect_uri", "")
        if client is None or redirect not in client.get("redirect_uris", []):
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        if refuse:
            return RedirectResponse(f"{redirect}?{urlencode({'error': 'access_denied', 'state': q.get('state', '')})}")
        code = secrets.token_urlsafe(16)
        CODES[code] = {"challenge": q.get("code_challenge"), "client": q.get("client_id"),
                       "redirect": redirect}
        return RedirectResponse(f"{redirect}?{urlencode({'code': code, 'state': q.get('state', '')})}")

    def issue() -> Response:
        access, refresh = f"at-{secrets.token_hex(16)}", f"rt-{secrets.token_hex(16)}"
        TOKENS[access] = time.time() + ttl
        REFRESH.add(refresh)
        return JSONResponse({"access_token": access, "token_type": "Bearer",
                             "expires_in": ttl, "refresh_token": refresh})

    async def token(request: Request) -> Response:
        form = await request.form()
        grant = form.get("grant_type")
        if grant == "authorization_code":
            entry = CODES.pop(str(form.get("code")), None)
            verifier = str(form.get("code_verifier", ""))
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
            if entry is None or digest.rstrip(b"=").decode() != entry["challenge"]:
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            STATS["codes"] += 1
            return issue()
        if grant == "refresh_token" and str(form.get("refresh_token")) in REFRESH:
            REFRESH.discard(str(form.get("refresh_token")))
            STATS["refreshes"] += 1
            return issue()
        return JSONResponse({"error": "invalid_grant"}, status_code=400)

    async def revoke(request: Request) -> Response:
        TOKENS.clear()
        return JSONResponse({"revoked": True})

    async def stats(request: Request) -> Response:
        return JSONResponse(STATS)

    app = Starlette(routes=[
        Route("/.well-known/oauth-protected-resource/mcp", protected_resource),
        Route("/.well-known/oauth-authorization-server", metadata),
        Route("/register", register, methods=["POST"]),
        Route("/authorize", authorize),
        Route("/token", token, methods=["POST"]),
        Route("/admin/revoke", revoke, methods=["POST"]),
        Route("/admin/stats", stats),
        Mount("/", app=guarded),
    ], lifespan=lambda app: inner.router.lifespan_context(app))
    return app


async def serve(ttl: int, refuse: bool) -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    app = build(f"http://127.0.0.1:{port}", ttl, refuse)
    print(f"PORT {port}", flush=True)
    await uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).serve(
        sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ttl", type=int, default=3600)
    parser.add_argument("--refuse", action="store_true")
    opts = parser.parse_args()
    anyio.run(serve, opts.ttl, opts.refuse)


if __name__ == "__main__":
    main()
