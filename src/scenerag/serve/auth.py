"""Bearer-token authentication as ASGI middleware.

Contract: with a token set, every HTTP request except the exempt paths (``/health``) must carry
``Authorization: Bearer <token>`` with one of the accepted tokens (the server's, and the database owner's
when the server shares its database); a missing or wrong token gets 401 with ``WWW-Authenticate: Bearer``.
Tokens are compared in constant time.
"""

from __future__ import annotations

import hmac
from collections.abc import Collection, Sequence

from scenerag.serve.errors import send_error
from scenerag.serve.limits import ASGIApp, Receive, Scope, Send


def bearer_token(scope: Scope) -> str | None:
    """The token of the request's ``Authorization: Bearer ...`` header, if any."""
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, credentials = value.decode("latin-1").strip().partition(" ")
            if scheme.lower() == "bearer" and credentials.strip():
                return credentials.strip()
            return None
    return None


class BearerAuthMiddleware:
    """Answers 401 to HTTP requests without the server's bearer token."""

    def __init__(
        self, app: ASGIApp, token: str | Sequence[str], *, exempt_paths: Collection[str] = ()
    ) -> None:
        tokens = [token] if isinstance(token, str) else list(token)
        if not tokens or not all(tokens):
            raise ValueError("BearerAuthMiddleware needs non-empty tokens")
        self.app = app
        self._tokens = [t.encode() for t in tokens]
        self.exempt_paths = frozenset(exempt_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in self.exempt_paths:
            await self.app(scope, receive, send)
            return
        given = bearer_token(scope)
        matches = [hmac.compare_digest(given.encode(), t) for t in self._tokens] if given is not None else []
        if not any(matches):
            await send_error(
                send,
                401,
                "unauthorized",
                "missing bearer token" if given is None else "wrong bearer token",
                hint="send the header 'Authorization: Bearer <token>' with the server's token",
                headers=[("www-authenticate", 'Bearer realm="scenerag"')],
            )
            return
        await self.app(scope, receive, send)
