"""Shared access to one store from many request threads: concurrent readers, one writer, capped queries.

Contract: :class:`StoreAccess` runs reads under the shared side of a read-write lock and writes under its
exclusive side (a waiting writer holds off new readers), clamping every query's timeout and row count to
the server's caps. :class:`ReadOnlyStore` is the ``GraphStore`` handed to agents and tools: it refuses
writes and loads whatever its caller asks, so text in the graph (prompt injection) cannot change data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scenerag.graph.model import SceneGraph
from scenerag.retrieval.vector_index import ReadWriteLock
from scenerag.serve.errors import ServiceError
from scenerag.store.base import CypherStore, ProgressFn, QueryError, QueryResult
from scenerag.store.schema import GraphSchema


class StoreAccess:
    """Thread-safe, limit-enforcing front of one ``CypherStore`` (see module docstring)."""

    def __init__(self, store: CypherStore, *, timeout_s: float, max_rows: int) -> None:
        self.store = store
        self.timeout_s = float(timeout_s)
        self.max_rows = int(max_rows)
        self.lock = ReadWriteLock()

    def clamp(
        self,
        timeout_s: float | None,
        max_rows: int | None,
        caps: tuple[float, int] | None = None,
    ) -> tuple[float, int]:
        """The request's limits, never above ``caps`` (default: the server's caps)."""
        cap_timeout, cap_rows = caps or (self.timeout_s, self.max_rows)
        timeout = cap_timeout if timeout_s is None else min(float(timeout_s), cap_timeout)
        rows = cap_rows if max_rows is None else min(int(max_rows), cap_rows)
        if timeout <= 0 or rows <= 0:
            raise ServiceError("bad_request", "timeout_s and max_rows must be positive")
        return timeout, rows

    def read(
        self,
        cypher: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout_s: float | None = None,
        max_rows: int | None = None,
        caps: tuple[float, int] | None = None,
    ) -> QueryResult:
        timeout, rows = self.clamp(timeout_s, max_rows, caps)
        with self.lock.read():
            return self.store.query(cypher, params, read_only=True, timeout_s=timeout, max_rows=rows)

    def write(
        self,
        cypher: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout_s: float | None = None,
        max_rows: int | None = None,
    ) -> QueryResult:
        timeout, rows = self.clamp(timeout_s, max_rows)
        with self.lock.write():
            return self.store.query(cypher, params, read_only=False, timeout_s=timeout, max_rows=rows)

    def schema(self) -> GraphSchema:
        with self.lock.read():
            return self.store.schema()

    def read_only(self, caps: tuple[float, int] | None = None) -> ReadOnlyStore:
        """A read-only view; ``caps`` (timeout s, rows) replace the server's for trusted internal readers
        such as the planner, which reads a whole navigation layer."""
        return ReadOnlyStore(self, caps)


class ReadOnlyStore:
    """A ``GraphStore`` over :class:`StoreAccess` that can only read (what agents and tools receive)."""

    backend = "read-only"

    def __init__(self, access: StoreAccess, caps: tuple[float, int] | None = None) -> None:
        self._access = access
        self._caps = caps

    def query(
        self,
        cypher: str,
        params: Mapping[str, Any] | None = None,
        *,
        read_only: bool = True,
        timeout_s: float | None = None,
        max_rows: int | None = None,
    ) -> QueryResult:
        if not read_only:
            raise QueryError(
                "write_refused",
                "this store is read-only: writes are not allowed here",
                cypher,
                hint="agents and tools only read the scene graph",
            )
        return self._access.read(cypher, params, timeout_s=timeout_s, max_rows=max_rows, caps=self._caps)

    def load(self, graph: SceneGraph, *, progress: ProgressFn | None = None) -> None:
        raise ServiceError("write_disabled", "this store is read-only: it cannot load a graph", status=403)

    def schema(self) -> GraphSchema:
        return self._access.schema()

    def schema_text(self) -> str:
        return self.schema().to_text()

    def close(self) -> None:
        """Nothing to release: the server owns the underlying store."""
