"""One graph, many clients: while a process holds an embedded database (``scenerag serve`` or ``view``), other
``scenerag`` commands on the same ``--db`` reach the graph through that process.

Embedded ArcadeDB is opened by one process at a time; its maintainers' advice for a database a server already
has open is to connect to the server rather than open the files again (ArcadeData/arcadedb discussion #7479).
So the holder publishes where it listens:

* :func:`publish` writes ``<db>/.scenerag-server.json`` — URL, an owner token (random, 32 bytes), pid,
  kind, version — created with mode 0600 (only the owner of the database folder can read the token) and
  removed when the holder exits (``atexit``, and the ``with`` block); a file whose pid is gone is stale:
  :func:`discover` deletes it and reports nothing.
* :func:`open_shared` returns a :class:`RemoteStore` for a database another live process holds (checked by
  ``GET /health`` with the token), else None; the CLI then opens the database itself as before.
* :class:`RemoteStore` is a ``CypherStore`` over the holder's HTTP API: reads (``query``, ``schema``,
  ``known_classes``) go to ``POST /cypher`` / ``GET /schema`` with the owner token, which lifts the server's
  row and time caps to the caller's; writes are sent only when the holder allows them (``serve
  --allow-write``), and ``load`` is refused with the reason. Query errors come back as the same
  ``QueryError`` a local store raises.

:func:`share_store` runs a small loopback-only server of the full API for a process that holds a database
without serving it (the viewer).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scenerag.errors import SceneRagError, StoreError
from scenerag.graph.model import SceneGraph
from scenerag.store.base import CypherStore, PreparedQuery, ProgressFn, QueryError, QueryResult
from scenerag.store.schema import GraphSchema

SHARE_FILE = ".scenerag-server.json"
#: how long a probe of the holder's /health may take before the holder counts as gone
PROBE_TIMEOUT_S = 3.0
#: the owner's caps when it does not give any (the planner's: whole-layer reads)
OWNER_TIMEOUT_S = 120.0
OWNER_MAX_ROWS = 10_000_000
_QUERY_KINDS = frozenset(
    {
        "syntax",
        "unknown_name",
        "write_refused",
        "procedure_refused",
        "unbounded",
        "timeout",
        "runtime",
        "parameter",
    }
)


@dataclass(frozen=True)
class ShareInfo:
    """What a holder published: where it listens and the token that makes a client its owner."""

    url: str
    token: str
    pid: int
    kind: str
    version: str
    path: Path

    @property
    def holder(self) -> str:
        return f"`scenerag {self.kind}` (pid {self.pid}, {self.url})"


def share_file(db: str | Path) -> Path:
    return Path(db) / SHARE_FILE


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def discover(db: str | Path) -> ShareInfo | None:
    """The holder published in ``db``, or None (no file, unreadable, not ours, or stale: then removed)."""
    path = share_file(db)
    try:
        stat = path.stat()
        if stat.st_uid != os.getuid() or stat.st_mode & 0o077:
            return None  # written by someone else, or readable by others: not trusted
        data = json.loads(path.read_text())
        info = ShareInfo(
            url=str(data["url"]),
            token=str(data["token"]),
            pid=int(data["pid"]),
            kind=str(data.get("kind", "serve")),
            version=str(data.get("version", "")),
            path=path,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if info.pid != os.getpid() and not _pid_alive(info.pid):
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    return info


@contextlib.contextmanager
def publish(db: str | Path, url: str, *, kind: str, token: str | None = None) -> Iterator[ShareInfo]:
    """Write the share file of ``db`` (0600) for the block's duration; yields what was written."""
    import atexit

    from scenerag.serve.config import package_version

    path = share_file(db)
    info = ShareInfo(url, token or secrets.token_urlsafe(32), os.getpid(), kind, package_version(), path)
    body = json.dumps(
        {"url": info.url, "token": info.token, "pid": info.pid, "kind": kind, "version": info.version}
    )
    tmp = path.with_name(f"{SHARE_FILE}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(body)
    os.replace(tmp, path)

    def remove() -> None:
        with contextlib.suppress(OSError, ValueError):
            if json.loads(path.read_text()).get("token") == info.token:  # still ours
                path.unlink()

    atexit.register(remove)
    try:
        yield info
    finally:
        remove()
        atexit.unregister(remove)


def _request(
    info: ShareInfo, method: str, route: str, body: Mapping[str, Any] | None, timeout_s: float
) -> tuple[int, dict[str, Any]]:
    import urllib.error
    import urllib.request

    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        info.url.rstrip("/") + route,
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {info.token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        try:
            payload = json.loads(exc.read() or b"{}")
        except ValueError:
            payload = {}
        return exc.code, payload


def open_shared(db: str | Path) -> RemoteStore | None:
    """A :class:`RemoteStore` when another live process holds ``db`` and answers, else None."""
    info = discover(db)
    if info is None or info.pid == os.getpid():
        return None
    try:
        status, _ = _request(info, "GET", "/health", None, PROBE_TIMEOUT_S)
    except (OSError, ValueError):
        return None  # the holder does not answer: let the caller open the database (and report the lock)
    return RemoteStore(info, db) if status == 200 else None


class RemoteStore(CypherStore):
    """The graph of a database another process holds, through its HTTP API (see module docstring)."""

    def __init__(self, info: ShareInfo, db: str | Path) -> None:
        super().__init__(default_timeout_s=10.0, default_max_rows=1000)
        self.info = info
        self.db = str(db)
        self.backend = f"shared by {info.holder}"
        self._classes: dict[str, list[str]] | None = None

    def _held(self, what: str) -> StoreError:
        return StoreError(
            f"cannot {what}: {self.db} is held by {self.info.holder}",
            hint=f"stop that process first (kill {self.info.pid}), then run this again",
        )

    # -- CypherStore ----------------------------------------------------------------------------------
    def query(
        self,
        cypher: str,
        params: Mapping[str, Any] | None = None,
        *,
        read_only: bool = True,
        timeout_s: float | None = None,
        max_rows: int | None = None,
    ) -> QueryResult:
        timeout = OWNER_TIMEOUT_S if timeout_s is None else float(timeout_s)
        rows = OWNER_MAX_ROWS if max_rows is None else int(max_rows)
        if timeout <= 0 or rows <= 0:
            raise ValueError("timeout_s and max_rows must be positive")
        body = {
            "query": cypher,
            "params": dict(params or {}),
            "write": not read_only,
            "timeout_s": timeout,
            "max_rows": rows,
        }
        status, payload = self._call("POST", "/cypher", body, timeout + 10.0)
        if status == 200:
            if not read_only:
                self._schema = None
            return QueryResult(
                columns=list(payload.get("columns", [])),
                rows=list(payload.get("rows", [])),
                truncated=bool(payload.get("truncated")),
                max_rows=payload.get("max_rows"),
                elapsed_ms=float(payload.get("elapsed_ms", 0.0)),
                query=cypher,
                notices=list(payload.get("notices", [])),
            )
        error = payload.get("error") or {}
        kind = str(error.get("kind", ""))
        if kind in _QUERY_KINDS:
            raise QueryError(
                kind,  # type: ignore[arg-type]
                str(error.get("message", "")),
                cypher,
                hint=error.get("hint"),
                line=error.get("line"),
                column=error.get("column"),
                suggestions=list(error.get("suggestions") or []),
            )
        if kind == "write_disabled":
            raise StoreError(
                f"{self.db} is held by {self.info.holder}, which does not accept writes",
                hint="stop it, or restart it with --allow-write, then run this again",
            )
        raise StoreError(
            f"{self.info.holder} answered {status}: {error.get('message') or payload}",
            hint=error.get("hint"),
        )

    def execute(
        self,
        prepared: PreparedQuery,
        params: Mapping[str, Any] | None = None,
        *,
        timeout_s: float,
        max_rows: int,
    ) -> QueryResult:
        return self.query(
            prepared.cypher, params, read_only=prepared.read_only, timeout_s=timeout_s, max_rows=max_rows
        )

    def schema(self, *, refresh: bool = False) -> GraphSchema:
        if self._schema is None or refresh:
            self._schema = self._introspect()
        return self._schema

    def known_classes(self) -> dict[str, list[str]]:
        if self._classes is None:
            self._introspect()
        return dict(self._classes or {})

    def load(self, graph: SceneGraph, *, progress: ProgressFn | None = None) -> None:
        raise self._held("load a graph")

    def close(self) -> None:
        """Nothing to release: the holder keeps the database."""

    def _execute(
        self, cypher: str, params: Mapping[str, Any], *, write: bool, timeout_s: float, max_rows: int
    ) -> tuple[list[str], list[dict[str, Any]], bool]:
        result = self.query(cypher, params, read_only=not write, timeout_s=timeout_s, max_rows=max_rows)
        return result.columns, result.rows, result.truncated

    def _load(self, graph: SceneGraph, progress: ProgressFn | None) -> None:
        raise self._held("load a graph")

    def _introspect(self) -> GraphSchema:
        status, payload = self._call("GET", "/schema", None, OWNER_TIMEOUT_S)
        if status != 200:
            raise StoreError(f"{self.info.holder} did not return the schema ({status})")
        self._classes = {str(k): [str(c) for c in v] for k, v in (payload.get("known_classes") or {}).items()}
        return GraphSchema.from_dict(payload["schema"])

    def _call(
        self, method: str, route: str, body: Mapping[str, Any] | None, timeout_s: float
    ) -> tuple[int, dict[str, Any]]:
        try:
            return _request(self.info, method, route, body, timeout_s)
        except TimeoutError:
            raise StoreError(f"{self.info.holder} did not answer within {timeout_s:g} s") from None
        except OSError as exc:
            raise StoreError(
                f"{self.info.holder} holds {self.db} but could not be reached: {exc}",
                hint="if it has stopped, run this again",
            ) from None


def open_store_or_shared(db: str | Path, *, create: bool) -> CypherStore:
    """The CLI's way to open ``db``: through the process that holds it, if one does, else directly."""
    from scenerag.store import is_bolt_uri, open_store

    if not is_bolt_uri(str(db)) and Path(db).is_dir():
        remote = open_shared(db)
        if remote is not None:
            return remote
    try:
        return open_store(db, create=create)
    except StoreError as exc:
        info = None if is_bolt_uri(str(db)) else discover(db)
        if info is not None and "another process" in str(exc):
            raise StoreError(
                f"database {db} is held by {info.holder}, which does not answer",
                hint="wait for it to finish starting, or stop it",
            ) from None
        raise


@contextlib.contextmanager
def share_store(
    store: CypherStore, db: str | Path, *, kind: str = "view", host: str = "127.0.0.1"
) -> Iterator[ShareInfo | None]:
    """While the block runs, serve ``store`` (held by this process) to other ``scenerag`` commands on
    ``db``: a loopback server of the HTTP API on a free port, reachable only with the owner token written
    into ``db``. Yields None (and shares nothing) for a Bolt URI, a store that is itself another
    process's (:class:`RemoteStore`), or when the server extra is missing."""
    from scenerag.store import is_bolt_uri

    if isinstance(store, RemoteStore) or is_bolt_uri(str(db)) or not Path(db).is_dir():
        yield None
        return
    try:
        from scenerag.serve.config import ServerConfig
        from scenerag.serve.http_api import create_app
        from scenerag.serve.run import BackgroundServer
        from scenerag.serve.service import SceneService
    except ImportError:
        yield None
        return
    token = secrets.token_urlsafe(32)
    config = ServerConfig(host=host, token=token, owner_token=token, mcp=False, rate_limit_per_s=None)
    service = SceneService(store, config)
    with (
        BackgroundServer(create_app(service), host) as server,
        publish(db, server.url, kind=kind, token=token) as info,
    ):
        yield info


def wait_for_share(db: str | Path, timeout_s: float = 60.0) -> ShareInfo:
    """Block until a holder of ``db`` published itself and answers (tests, scripts)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        info = discover(db)
        if info is not None:
            with contextlib.suppress(OSError, ValueError):
                if _request(info, "GET", "/health", None, 1.0)[0] == 200:
                    return info
        time.sleep(0.1)
    raise SceneRagError(f"no process published {db} within {timeout_s:g} s")
