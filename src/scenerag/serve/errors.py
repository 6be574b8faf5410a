"""Errors the server returns and their HTTP form: ``{"error": {"kind", "message", "hint", ...}}``.

Contract: every failure reaches the client as that JSON body with a status code chosen by
:func:`http_status` (query errors keep every field of ``QueryError.to_dict()``); ASGI middleware sends
the same shape through :func:`send_error`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

from scenerag.errors import SceneRagError
from scenerag.store.base import QueryError

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

#: status code of each ``QueryError.kind``
QUERY_STATUS: dict[str, int] = {
    "syntax": 400,
    "unknown_name": 400,
    "parameter": 400,
    "unbounded": 400,
    "runtime": 400,
    "write_refused": 403,
    "procedure_refused": 403,
    "timeout": 504,
}
#: status code of each ``LLMError.kind`` (the model is an upstream service of this server)
LLM_STATUS: dict[str, int] = {
    "missing_dependency": 503,
    "model_not_found": 503,
    "unreachable": 502,
    "auth": 502,
    "rate_limit": 503,
    "bad_request": 502,
    "bad_response": 502,
    "context_overflow": 502,
}


class ServiceError(SceneRagError):
    """A request the service refuses: ``kind`` names the reason, ``status`` is its HTTP status code;
    ``retry_after_s`` (503, 429) becomes the ``Retry-After`` header."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        status: int = 400,
        hint: str | None = None,
        retry_after_s: int | None = None,
    ) -> None:
        self.kind = kind
        self.status = status
        self.retry_after_s = retry_after_s
        super().__init__(message, hint=hint)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "message": self.message, "hint": self.hint}
        if self.retry_after_s is not None:
            out["retry_after_s"] = self.retry_after_s
        return out


def error_body(exc: BaseException) -> dict[str, Any]:
    """The ``error`` object of a failure: ``QueryError.to_dict()`` for queries, else kind/message/hint."""
    if isinstance(exc, (QueryError, ServiceError)):
        return exc.to_dict()
    from scenerag.llm.base import LLMError

    if isinstance(exc, LLMError):
        return {"kind": f"llm_{exc.kind}", "message": exc.message, "hint": exc.hint}
    if isinstance(exc, SceneRagError):
        return {"kind": "bad_request", "message": exc.message, "hint": exc.hint}
    return {"kind": "internal", "message": f"{type(exc).__name__}: {exc}", "hint": None}


def retry_headers(exc: BaseException) -> dict[str, str]:
    """``{"Retry-After": seconds}`` for a refusal that says when to retry, else nothing."""
    retry = getattr(exc, "retry_after_s", None)
    return {"Retry-After": str(int(retry))} if isinstance(exc, ServiceError) and retry is not None else {}


def http_status(exc: BaseException) -> int:
    """HTTP status code for ``exc`` (400 for other deliberate errors, 500 for bugs)."""
    if isinstance(exc, QueryError):
        return QUERY_STATUS.get(exc.kind, 400)
    if isinstance(exc, ServiceError):
        return exc.status
    from scenerag.llm.base import LLMError

    if isinstance(exc, LLMError):
        return LLM_STATUS.get(exc.kind, 502)
    if isinstance(exc, SceneRagError):
        return 400
    return 500


async def send_error(
    send: Send,
    status: int,
    kind: str,
    message: str,
    *,
    hint: str | None = None,
    headers: Sequence[tuple[str, str]] = (),
) -> None:
    """Send a complete JSON error response from ASGI middleware."""
    body = json.dumps({"error": {"kind": kind, "message": message, "hint": hint}}).encode()
    raw_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *((k.encode("latin-1"), v.encode("latin-1")) for k, v in headers),
    ]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
