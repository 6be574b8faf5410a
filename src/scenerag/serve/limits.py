"""Request limits as ASGI middleware: a per-client token-bucket rate limit (429) and a body size limit (413).

Contract: :class:`TokenBucketLimiter` lets each client key send ``burst`` requests at once and
``rate_per_s`` per second sustained; :class:`RateLimitMiddleware` keys clients by their address and
answers 429 with ``Retry-After`` (requests its ``exempt`` predicate accepts, the database owner's, pass); :class:`BodySizeLimitMiddleware` answers 413 before the application sees
a body larger than its limit (declared by ``Content-Length`` or streamed in chunks).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Awaitable, Callable, Collection, MutableMapping
from typing import Any

from scenerag.serve.errors import send_error

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: the bucket table is pruned of idle (full) buckets when it grows past this many clients
MAX_TRACKED_CLIENTS = 10_000


class TokenBucketLimiter:
    """Thread-safe token buckets keyed by client: ``acquire(key)`` returns 0 when allowed, else the wait."""

    def __init__(self, rate_per_s: float, burst: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        if rate_per_s <= 0 or burst < 1:
            raise ValueError("rate_per_s must be > 0 and burst >= 1")
        self.rate_per_s = float(rate_per_s)
        self.burst = int(burst)
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, last refill time)
        self._lock = threading.Lock()

    def acquire(self, key: str) -> float:
        """Take one token for ``key``; return 0.0 if granted, else seconds until one is available."""
        now = self._clock()
        with self._lock:
            tokens, last = self._buckets.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - last) * self.rate_per_s)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                granted = True
            else:
                self._buckets[key] = (tokens, now)
                granted = False
            if len(self._buckets) > MAX_TRACKED_CLIENTS:
                self._prune(now)
        return 0.0 if granted else (1.0 - tokens) / self.rate_per_s

    def _prune(self, now: float) -> None:
        """Drop buckets that have refilled completely: forgetting them changes nothing."""
        full = [
            k
            for k, (tokens, last) in self._buckets.items()
            if tokens + (now - last) * self.rate_per_s >= self.burst
        ]
        for key in full:
            del self._buckets[key]


def client_key(scope: Scope) -> str:
    """The address a request came from (``"unknown"`` when the server does not say)."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


class RateLimitMiddleware:
    """Answers 429 (with ``Retry-After``) to HTTP requests over the client's token bucket."""

    def __init__(
        self,
        app: ASGIApp,
        limiter: TokenBucketLimiter,
        *,
        exempt_paths: Collection[str] = (),
        exempt: Callable[[Scope], bool] | None = None,
    ) -> None:
        self.app = app
        self.limiter = limiter
        self.exempt_paths = frozenset(exempt_paths)
        self.exempt = exempt

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope.get("path") in self.exempt_paths
            or (self.exempt is not None and self.exempt(scope))
        ):
            await self.app(scope, receive, send)
            return
        wait = self.limiter.acquire(client_key(scope))
        if wait > 0:
            await send_error(
                send,
                429,
                "rate_limited",
                f"too many requests: the limit is {self.limiter.rate_per_s:g}/s with bursts of "
                f"{self.limiter.burst}",
                hint=f"retry after {wait:.2f} s",
                headers=[("retry-after", str(max(1, math.ceil(wait))))],
            )
            return
        await self.app(scope, receive, send)


class BodySizeLimitMiddleware:
    """Answers 413 to HTTP requests whose body is larger than ``max_bytes``."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = int(max_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None:
            if declared > self.max_bytes:
                await self._refuse(send, f"{declared} bytes declared")
                return
            await self.app(scope, receive, send)  # the HTTP server holds the body to its declared length
            return
        # No Content-Length (chunked): read the body up to the limit before the application runs.
        chunks: list[Message] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                chunks.append(message)
                break
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await self._refuse(send, f"more than {size} bytes sent")
                return
            chunks.append(message)
            if not message.get("more_body", False):
                break
        replay = iter(chunks)

        async def replay_receive() -> Message:
            nxt = next(replay, None)
            return nxt if nxt is not None else await receive()

        await self.app(scope, replay_receive, send)

    async def _refuse(self, send: Send, what: str) -> None:
        await send_error(
            send,
            413,
            "body_too_large",
            f"request body too large ({what}; the limit is {self.max_bytes} bytes)",
            hint="send a smaller request; large parameter lists belong in several requests",
            headers=[("connection", "close")],
        )


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
