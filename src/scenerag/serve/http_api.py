"""The HTTP API (FastAPI): ``POST /cypher``, ``GET /schema``, ``POST /ask``, ``POST /ground``,
``POST /plan``, ``POST /retrieve_subgraph``, ``GET /health``, OpenAPI at ``/openapi.json`` and ``/docs``, and the MCP
streamable-HTTP endpoint at ``/mcp``.

Contract: :func:`create_app` wraps a :class:`SceneService` with, outermost first, the arrival clock (a
request's deadline counts from here), a per-client rate limit (429), bearer-token auth when a token is set
(401), a Host-header check when bound to loopback (DNS rebinding), and a body size limit (413). ``/health``
runs on the event loop and reads only counters: it never waits for the store or for a worker thread. The
other endpoints run in worker threads (a pool larger than admission control can ever hold blocked), so
requests are served concurrently and a refused request is answered at once; every error is
``{"error": {...}}`` with the status of :func:`~scenerag.serve.errors.http_status` (and ``Retry-After`` on a
503 that says when to retry). Requests carrying the database owner's token (see :mod:`scenerag.serve.share`)
get the owner's caps instead of the server's (still read-only unless the server allows writes).
"""

from __future__ import annotations

import contextlib
import hmac
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.middleware.trustedhost import TrustedHostMiddleware

from scenerag.errors import SceneRagError
from scenerag.serve.api_models import (
    AskRequest,
    AskResponse,
    CypherRequest,
    CypherResponse,
    ErrorResponse,
    GroundRequest,
    GroundResponse,
    HealthResponse,
    PlanRequest,
    PlanResponse,
    RetrieveRequest,
    RetrieveResponse,
    SchemaResponse,
)
from scenerag.serve.auth import BearerAuthMiddleware, bearer_token
from scenerag.serve.config import is_loopback, package_version
from scenerag.serve.errors import error_body, http_status, retry_headers
from scenerag.serve.limits import (
    ASGIApp,
    BodySizeLimitMiddleware,
    RateLimitMiddleware,
    Receive,
    Scope,
    Send,
    TokenBucketLimiter,
)
from scenerag.serve.mcp_server import build_mcp_server
from scenerag.serve.service import SceneService

#: paths served without auth or rate limit (liveness probes)
OPEN_PATHS = ("/health",)
MCP_PATH = "/mcp"
LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "::1", "[::1]"]

_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse} for code in (400, 401, 403, 413, 422, 429, 500, 502, 503, 504)
}


#: key of a request's arrival time (``time.monotonic()``) in its ASGI scope
ARRIVAL_KEY = "scenerag.arrival"
#: worker threads beyond those admission control may hold blocked (validation, schema, refusals)
SPARE_THREADS = 32


def _error_response(exc: BaseException) -> JSONResponse:
    return JSONResponse({"error": error_body(exc)}, status_code=http_status(exc), headers=retry_headers(exc))


class ArrivalMiddleware:
    """Stamps each HTTP request with its arrival time before anything else runs."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope[ARRIVAL_KEY] = time.monotonic()
        await self.app(scope, receive, send)


def _arrival(request: Request) -> float | None:
    value = request.scope.get(ARRIVAL_KEY)
    return float(value) if value is not None else None


def _matches(given: str | None, token: str | None) -> bool:
    return token is not None and given is not None and hmac.compare_digest(given.encode(), token.encode())


def create_app(service: SceneService, *, on_started: Callable[[], None] | None = None) -> FastAPI:
    """The ASGI application serving ``service`` (see module docstring). ``on_started`` is called once the
    app has started (its lifespan's start-up: the server, the app and the MCP session manager are set up),
    before the first request is served."""
    config = service.config
    mcp_server = build_mcp_server(service) if config.mcp else None

    owner_caps = (config.plan_read_timeout_s, config.plan_max_rows)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        import anyio.to_thread

        # Threads blocked in admission (running + queued) and waiting for the model must never use up the
        # pool, or a refusal (a parse error, a full queue) would wait for a thread.
        stats = service.admission.stats()
        held = stats["slots"] + sum(lane["queue_limit"] for lane in stats["lanes"].values())
        limiter = anyio.to_thread.current_default_thread_limiter()
        limiter.total_tokens = max(limiter.total_tokens, held + config.agent_queue + 1 + SPARE_THREADS)
        async with mcp_server.session_manager.run() if mcp_server is not None else contextlib.nullcontext():
            if on_started is not None:
                on_started()
            yield

    app = FastAPI(
        title="scenerag",
        version=package_version(),
        description="Read-only Cypher, schema, question answering, PDDL grounding and subgraph retrieval "
        "over a 3D scene graph database. Send 'Authorization: Bearer <token>' when the server has a token.",
        lifespan=lifespan,
        responses=_ERRORS,
    )
    app.state.service = service

    @app.exception_handler(SceneRagError)
    async def _scene_error(_: Request, exc: SceneRagError) -> JSONResponse:
        return _error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        details = [
            {
                "loc": [str(p) for p in e.get("loc", ())],
                "msg": str(e.get("msg", "")),
                "type": str(e.get("type", "")),
            }
            for e in exc.errors()
        ]
        first = details[0] if details else {"loc": [], "msg": "invalid request"}
        message = f"invalid request: {'.'.join(first['loc'])}: {first['msg']}"
        body = {"kind": "invalid_request", "message": message, "hint": "see /docs for the request schema"}
        return JSONResponse({"error": {**body, "details": details}}, status_code=422)

    @app.exception_handler(Exception)
    async def _internal(_: Request, exc: Exception) -> JSONResponse:
        return _error_response(exc)

    def is_owner(request: Request) -> bool:
        return _matches(bearer_token(request.scope), config.owner_token)

    @app.get("/health", response_model=HealthResponse, response_model_exclude_none=True)
    async def health(request: Request) -> HealthResponse:
        """Liveness on the event loop (never waits for the store): load (queries running, queued) and the
        model's readiness; details (backend, counts, settings) for authenticated clients or without auth."""
        given = bearer_token(request.scope)
        trusted = config.token is None or _matches(given, config.token) or is_owner(request)
        return HealthResponse(
            status="ok",
            version=package_version(),
            load=service.load(),
            details=service.health() if trusted else None,
        )

    @app.post("/cypher", response_model=CypherResponse)
    def cypher(body: CypherRequest, request: Request) -> JSONResponse:
        """Run a Cypher query: read-only unless the request sets ``write`` and the server allows writes.
        Its time limit counts from its arrival; 503 with ``Retry-After`` when it cannot start in time."""
        # The response is rendered here, in the worker thread: up to max_rows rows of JSON would otherwise be
        # encoded on the event loop, where /health waits.
        result = service.cypher(
            body.query,
            body.params,
            write=body.write,
            timeout_s=body.timeout_s,
            max_rows=body.max_rows,
            arrival=_arrival(request),
            caps=owner_caps if is_owner(request) else None,
        )
        return JSONResponse(result.to_dict())

    @app.get("/schema", response_model=SchemaResponse, response_model_by_alias=True)
    def schema() -> SchemaResponse:
        """The schema as JSON and as the text put into LLM prompts."""
        current = service.schema()
        return SchemaResponse(
            schema=current.to_dict(), text=current.to_text(), known_classes=service.store.known_classes()
        )

    @app.post("/ask", response_model=AskResponse)
    def ask(body: AskRequest) -> AskResponse:
        """Answer a question with the Cypher agent (read-only queries); 503 without a configured LLM."""
        result = service.ask(
            body.question,
            task=body.task,
            answer_type=body.answer_type,
            mode=body.mode,
            max_tool_calls=body.max_tool_calls,
        )
        return AskResponse.from_result(result, include_transcript=body.include_transcript)

    @app.post("/ground", response_model=GroundResponse)
    def ground(body: GroundRequest) -> GroundResponse:
        """Ground an instruction to a PDDL goal (LLM), or check a given goal against the graph (no LLM)."""
        outcome = service.ground(
            instruction=body.instruction, goal=body.goal, mode=body.mode, max_tool_calls=body.max_tool_calls
        )
        run = AskResponse.from_result(outcome.run) if outcome.run is not None else None
        return GroundResponse(
            goal=outcome.goal, grounded=outcome.grounded, problems=outcome.problems, run=run
        )

    @app.post("/plan", response_model=PlanResponse)
    def plan(body: PlanRequest) -> PlanResponse:
        """Plan for a PDDL goal with Fast Downward over the stored graph (a validated plan, or why not)."""
        start = tuple(body.start) if isinstance(body.start, list) else body.start
        outcome = service.plan(body.goal, start=start, time_limit_s=body.time_limit_s)
        out = outcome.to_dict()
        return PlanResponse(**{key: out[key] for key in PlanResponse.model_fields})

    @app.post("/retrieve_subgraph", response_model=RetrieveResponse, response_model_by_alias=True)
    def retrieve_subgraph(body: RetrieveRequest) -> RetrieveResponse:
        """Nodes matching a text (semantic or lexical search) with their CONTAINS ancestors and edges."""
        found = service.retrieve_subgraph(body.text, k=body.k, labels=body.labels, ancestors=body.ancestors)
        return RetrieveResponse.model_validate(found.to_dict())

    if mcp_server is not None:
        mcp_app = mcp_server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=True,
            json_response=True,
            max_request_body_size=config.max_body_bytes,
            host=config.host,
        )
        app.router.routes.extend(mcp_app.routes)

    app.add_middleware(BodySizeLimitMiddleware, max_bytes=config.max_body_bytes)
    if is_loopback(config.host):
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=LOOPBACK_HOSTS)
    if config.token:
        tokens = [config.token, *([config.owner_token] if config.owner_token else [])]
        app.add_middleware(BearerAuthMiddleware, token=tokens, exempt_paths=OPEN_PATHS)
    if config.rate_limit_per_s is not None:
        limiter = TokenBucketLimiter(config.rate_limit_per_s, config.rate_limit_burst)
        app.add_middleware(
            RateLimitMiddleware,
            limiter=limiter,
            exempt_paths=OPEN_PATHS,
            exempt=lambda scope: _matches(bearer_token(scope), config.owner_token),
        )
    app.add_middleware(ArrivalMiddleware)
    return app
