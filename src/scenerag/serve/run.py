"""Entry points: :func:`serve` (HTTP API + MCP over streamable HTTP, blocking), :func:`serve_mcp_stdio`
(MCP over stdin/stdout, for desktop MCP clients), and :class:`BackgroundServer` (a real uvicorn server in
a thread, for tests, benchmarks and embedding in other programs).

Contract: the bind/token rules are checked before the database is opened; the store is closed when the
server stops. ``db`` is a database directory, a Bolt URI, or an open ``CypherStore`` (then the caller
closes it). A served database directory is shared with other ``scenerag`` commands for as long as the server
runs (:mod:`scenerag.serve.share`). A model given as a spec (``llm="local"``, the default of ``scenerag
serve``) starts loading in the background when the server starts; ``/health`` says when it is ready.
"""

from __future__ import annotations

import gc
import logging
import signal
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from scenerag.serve.config import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    ServerConfig,
    ServerConfigError,
    check_bind,
    resolve_token,
)
from scenerag.serve.llm_provider import LlmSource
from scenerag.serve.service import SceneService
from scenerag.store.base import CypherStore

if TYPE_CHECKING:
    from fastapi import FastAPI

    from scenerag.retrieval import Embedder, EntityStore

log = logging.getLogger("scenerag.serve")
STARTUP_TIMEOUT_S = 60.0


def open_entity_index(
    db: str | Path | None, store: CypherStore, embedder: str | Embedder, *, vectors: str | Path | None = None
) -> EntityStore:
    """The semantic entity index of a database: loaded from ``vectors`` (default ``<db>/vectors``), or
    built from the stored graph and saved there when it is missing or empty. ``embedder`` is a spec
    (``"minilm"``, ``"st:/path"``, ``"openai:MODEL"``) or an ``Embedder``; it must be the index's."""
    from scenerag.retrieval import EntityStore, make_embedder, vectors_dir
    from scenerag.retrieval.vector_index import META_FILE
    from scenerag.store import is_bolt_uri

    if vectors is None:
        if db is None or is_bolt_uri(str(db)):
            raise ServerConfigError(
                "this database has no directory to keep its vector index in",
                hint="pass vectors=<directory> (scenerag serve --vectors DIR)",
            )
        vectors = vectors_dir(db)
    path = Path(vectors)
    model = make_embedder(embedder) if isinstance(embedder, str) else embedder
    index = EntityStore.load(path, model) if (path / META_FILE).exists() else None
    if index is None or len(index) == 0:
        from scenerag.viz.store_graph import scene_graph_from_store

        index = EntityStore(model, path=path)
        graph = scene_graph_from_store(store)
        log.info("building the entity index of %d nodes in %s", graph.num_nodes, path)
        index.sync(graph)
        index.save(path)
    return index


def _prepare(
    db: str | Path | CypherStore,
    config: ServerConfig,
    llm: LlmSource,
    embedder: str | Embedder | None,
    vectors: str | Path | None,
    *,
    freeze: bool = False,
) -> tuple[SceneService, bool]:
    """Check the settings, open the store (unless given), build the service and warm it up; returns
    (service, owns store). ``freeze``: this process is the server's own (``serve``), so its heap is frozen
    before the warm-up (:func:`freeze_heap`); an app built for another program leaves that program's heap
    alone."""
    check_bind(config)
    if isinstance(db, CypherStore):
        store, owned = db, False
    else:
        from scenerag.errors import StoreError
        from scenerag.serve.share import discover
        from scenerag.store import open_store
        from scenerag.store.arcade import use_server_jvm

        use_server_jvm()  # a server's heap settings, when this process starts the JVM

        try:
            store, owned = open_store(db, create=False), True
        except StoreError as exc:
            holder = discover(db) if "another process" in str(exc) else None
            if holder is not None:
                raise ServerConfigError(
                    f"{db} is already held by {holder.holder}", hint="use that server, or stop it first"
                ) from None
            raise
    try:
        from scenerag.serve.subgraph import entity_index_for  # semantic unless embedder="none"

        db_dir = None if isinstance(db, CypherStore) else db
        entity_store = entity_index_for(db_dir, store, embedder, vectors=vectors)
        service = SceneService(store, config, llm=llm, entity_store=entity_store)
        if freeze:  # each Java collection of the warm-up is followed by JPype's full Python collection,
            freeze_heap()  # which walked the whole start-up heap (80-120 ms, GIL held) until it was frozen
        service.warm_up(on_model_ready=freeze_heap)
        return service, owned
    except BaseException:
        if owned:
            store.close()
        raise


def build_app(
    db: str | Path | CypherStore,
    config: ServerConfig | None = None,
    *,
    llm: LlmSource = None,
    embedder: str | Embedder | None = None,
    vectors: str | Path | None = None,
) -> FastAPI:
    """The ASGI app for ``db`` (the caller runs it and closes ``app.state.service.store`` when done)."""
    from scenerag.serve.http_api import create_app

    service, _ = _prepare(db, config or ServerConfig(), llm, embedder, vectors)
    return create_app(service)


def serve(
    db: str | Path | CypherStore,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    *,
    llm: LlmSource = None,
    allow_write: bool = False,
    embedder: str | Embedder | None = None,
    vectors: str | Path | None = None,
    config: ServerConfig | None = None,
    log_level: str = "info",
) -> None:
    """Serve the HTTP API and MCP (``/mcp``) for ``db`` until interrupted.

    ``token`` (or ``$SCENERAG_TOKEN``) is required when ``host`` is not loopback. ``llm`` (spec such as
    ``"local"`` or ``"openai:MODEL"``, a model, or a factory) enables ``/ask`` and ``/ground``; ``embedder``
    (e.g. ``"minilm"``) makes ``/retrieve_subgraph`` semantic. Other limits come from ``config``.
    """
    import secrets

    import uvicorn

    from scenerag.serve.http_api import create_app
    from scenerag.serve.share import publish
    from scenerag.store import is_bolt_uri

    shared = not isinstance(db, CypherStore) and not is_bolt_uri(str(db))
    port = port or free_port(DEFAULT_HOST if host in WILDCARD_HOSTS else host)
    owner = secrets.token_urlsafe(32) if shared else None
    settings = replace(
        config or ServerConfig(),
        host=host,
        port=port,
        token=resolve_token(token),
        allow_write=allow_write,
        owner_token=owner,
    )
    service, owned = _prepare(db, settings, llm, embedder, vectors, freeze=True)
    freeze_heap()
    try:
        with (
            _raise_on_signals(),
            publish(db, local_url(host, port), kind="serve", token=owner) if shared else nullcontext(),  # type: ignore[arg-type]
        ):
            uvicorn.run(
                # frozen again once uvicorn, the app and the MCP session manager are set up
                create_app(service, on_started=freeze_heap),
                host=host,
                port=port,
                log_level=log_level,
                timeout_graceful_shutdown=5,
                server_header=False,
            )
    finally:
        if owned:
            service.store.close()


def freeze_heap() -> None:
    """Move every object alive now out of the cyclic garbage collector's reach (``gc.freeze``).

    JPype runs a full Python collection after every Java garbage collection (its ``JPGarbageCollection``
    hook calls ``PyGC_Collect``), and a query that allocates a lot in the JVM causes a Java collection every
    few hundred milliseconds. Each full collection holds the GIL while it walks the whole heap: measured
    with the server's modules loaded (~110k objects), stalls of up to 255 ms for every Python thread,
    ``/health`` included, during one 4-s cartesian query; with the start-up heap frozen, at most 9 ms.
    Called once the service is set up (before its warm-up, and again after it), again when the app has
    started (uvicorn, the app and the MCP session manager set up) and once a background model load is done;
    objects made later are still collected as usual."""
    gc.collect()
    gc.freeze()


@contextmanager
def _raise_on_signals() -> Iterator[None]:
    """uvicorn re-raises SIGTERM/SIGHUP once it has shut down; turn that into ``Interrupted`` (instead of
    the default action, which would end the process at once) so the share file is removed and the database
    closed. Main thread only; the previous handlers come back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    from scenerag.interrupts import Interrupted

    def raise_interrupted(signum: int, frame: object) -> None:
        raise Interrupted(signum)

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    for sig in previous:
        signal.signal(sig, raise_interrupted)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def serve_mcp_stdio(
    db: str | Path | CypherStore,
    *,
    llm: LlmSource = None,
    embedder: str | Embedder | None = None,
    vectors: str | Path | None = None,
    config: ServerConfig | None = None,
) -> None:
    """Serve the MCP tools over stdin/stdout until the client disconnects (nothing else may print)."""
    import anyio

    from scenerag.serve.mcp_server import build_mcp_server

    service, owned = _prepare(
        db, replace(config or ServerConfig(), mcp=True), llm, embedder, vectors, freeze=True
    )
    freeze_heap()
    try:
        anyio.run(build_mcp_server(service).run_stdio_async)
    finally:
        if owned:
            service.store.close()


#: bind addresses meaning "every interface": local clients reach them on loopback
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "[::]", ""})


def local_url(host: str, port: int) -> str:
    """The URL a client on this machine uses for a server bound to ``host``."""
    if host in WILDCARD_HOSTS:
        host = "::1" if ":" in host else DEFAULT_HOST
    host = host.strip("[]")
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def free_port(host: str = DEFAULT_HOST) -> int:
    """A TCP port free on ``host`` right now."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class BackgroundServer:
    """A real uvicorn server for ``app`` in a daemon thread: ``with BackgroundServer(app) as s: s.url``."""

    def __init__(
        self, app: Any, host: str = DEFAULT_HOST, port: int = 0, *, log_level: str = "warning"
    ) -> None:
        import uvicorn

        self.host = host
        self.port = port or free_port(host)
        self._server = uvicorn.Server(
            uvicorn.Config(
                app,
                host=host,
                port=self.port,
                log_level=log_level,
                timeout_graceful_shutdown=2,
                server_header=False,
            )
        )
        self._server.install_signal_handlers = lambda: None  # type: ignore[method-assign]  # not the main thread
        self._thread = threading.Thread(
            target=self._server.run, name=f"scenerag-serve-{self.port}", daemon=True
        )

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> BackgroundServer:
        self._thread.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive():
                raise ServerConfigError(f"the server on {self.url} failed to start (see the log above)")
            if time.monotonic() > deadline:
                self.stop()
                raise ServerConfigError(
                    f"the server on {self.url} did not start within {STARTUP_TIMEOUT_S:.0f} s"
                )
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
