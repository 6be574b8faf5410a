"""Shared access to one store from many request threads: validation first, then admission, then the run.

Contract: :meth:`StoreAccess.read` / :meth:`StoreAccess.write` take a query through, in order,

1. validation that needs no data and never waits for a running query (``CypherStore.prepare``: the
   read-only guard, the engine's parse, names against the cached schema, bounded paths) — a bad query is
   refused in milliseconds, whatever the load;
2. a cost estimate (:func:`~scenerag.serve.cost.estimate_cost`) choosing the cheap or the heavy lane;
3. admission (:class:`~scenerag.serve.admission.Admission`): a slot, or a 503 when the lane's queue is
   full or the deadline passes while queued; the deadline counts from ``arrival`` (default: the call);
4. the run, with what is left of the deadline as its time limit (the store cancels it at the deadline).
   Heavy queries run on their own threads at a lower CPU priority (nice +10, Linux: per thread), so on a
   busy machine the cheap lane, validation and ``/health`` get the cores first; a heavy query still uses
   whatever CPU is idle, and still ends at its deadline.

Every query's timeout and row count are clamped to the server's caps. Reads run side by side, a write alone
(the store's read-write lock). :class:`ReadOnlyStore` is the ``GraphStore`` handed to agents and tools: it
refuses writes and loads whatever its caller asks, so text in the graph (prompt injection) cannot change data.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph
from scenerag.serve.admission import Admission
from scenerag.serve.cost import HEAVY_ROWS, CostEstimate, estimate_cost
from scenerag.serve.errors import ServiceError
from scenerag.store.base import CypherStore, PreparedQuery, ProgressFn, QueryError, QueryResult
from scenerag.store.schema import GraphSchema

#: a query admitted with less time than this left is answered as timed out rather than started
MIN_RUN_S = 0.01
#: how much nicer (lower CPU priority) the threads running heavy queries are
HEAVY_NICE = 10


def _lower_priority() -> None:
    """Make the calling thread nicer by ``HEAVY_NICE`` (a no-op where threads have no own priority)."""
    with contextlib.suppress(AttributeError, OSError):
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + HEAVY_NICE)


class StoreAccess:
    """Thread-safe, limit-enforcing front of one ``CypherStore`` (see module docstring)."""

    def __init__(
        self,
        store: CypherStore,
        *,
        timeout_s: float,
        max_rows: int,
        admission: Admission | None = None,
        heavy_rows: float = HEAVY_ROWS,
    ) -> None:
        self.store = store
        self.timeout_s = float(timeout_s)
        self.max_rows = int(max_rows)
        self.admission = admission or Admission()
        self.heavy_rows = float(heavy_rows)
        self._heavy_pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def _heavy_runner(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._heavy_pool is None:
                self._heavy_pool = ThreadPoolExecutor(
                    max_workers=self.admission.heavy_slots,
                    thread_name_prefix="scenerag-heavy",
                    initializer=_lower_priority,
                )
            return self._heavy_pool

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

    def check(
        self, cypher: str, params: Mapping[str, Any] | None = None, *, write: bool = False
    ) -> tuple[PreparedQuery, CostEstimate]:
        """Validate ``cypher`` (steps 1-2 of the module docstring) without waiting for any query."""
        prepared = self.store.prepare(cypher, read_only=not write)
        schema = self.store.schema()
        return prepared, estimate_cost(prepared.run, schema, params, threshold=self.heavy_rows)

    def run(
        self,
        cypher: str,
        params: Mapping[str, Any] | None = None,
        *,
        write: bool = False,
        timeout_s: float | None = None,
        max_rows: int | None = None,
        caps: tuple[float, int] | None = None,
        arrival: float | None = None,
    ) -> QueryResult:
        """Validate, admit and run ``cypher``; its deadline is ``arrival`` (monotonic; default now) plus
        its timeout."""
        start = time.monotonic() if arrival is None else arrival
        timeout, rows = self.clamp(timeout_s, max_rows, caps)
        prepared, cost = self.check(cypher, params, write=write)
        deadline = start + timeout
        with self.admission.slot(cost.lane, deadline, arrival=start) as left:  # type: ignore[arg-type]
            if left < MIN_RUN_S:
                raise QueryError(
                    "timeout",
                    f"the query's time limit ({timeout:g} s) ran out while it waited for a free slot",
                    cypher,
                    hint="retry, or give it a longer timeout",
                )
            if not cost.heavy:
                return self.store.execute(prepared, params, timeout_s=left, max_rows=rows)
            job = self._heavy_runner().submit(
                self.store.execute, prepared, params, timeout_s=left, max_rows=rows
            )
            return job.result()

    def read(
        self,
        cypher: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout_s: float | None = None,
        max_rows: int | None = None,
        caps: tuple[float, int] | None = None,
        arrival: float | None = None,
    ) -> QueryResult:
        return self.run(cypher, params, timeout_s=timeout_s, max_rows=max_rows, caps=caps, arrival=arrival)

    def write(
        self,
        cypher: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout_s: float | None = None,
        max_rows: int | None = None,
        arrival: float | None = None,
    ) -> QueryResult:
        return self.run(cypher, params, write=True, timeout_s=timeout_s, max_rows=max_rows, arrival=arrival)

    def schema(self) -> GraphSchema:
        """The store's cached schema (introspected again only after a write)."""
        return self.store.schema()

    def warm_up(self, seconds: float) -> int:
        """Run the paths a server's first requests take, for about ``seconds``, before it listens; returns
        the queries run. Made from the graph's own labels (the largest one): a count, a parameterised
        lookup, a sorted listing, one-hop expansions, a pairwise listing cut at the row cap (cheap lane), a
        three-way cartesian count on the heavy lane's thread cancelled at 0.2 s now and then, and the
        refusals before the queue (a parse error, an unknown label, a write); one loop per query slot, side
        by side. Outcomes, errors included, are ignored; admission is bypassed, so its figures describe
        clients only.

        Why: a cold server's first burst of clients met an engine still loading and compiling its code
        (``benchmarks/server_soak.py --trace``: 1,100-1,600 JIT compilations logged in the first second of
        the first burst, against 150-450 a second after, on 2 cores the clients already fill), and each
        path's first Python objects (JPype's class wrappers) were made after the start-up heap was frozen;
        ``/health`` took up to 150 ms in some runs then, against 5-20 ms once warm. Run here, that work is
        done before the heap is frozen and before any client waits (docs/server.md)."""
        schema = self.store.schema()
        if seconds <= 0 or not schema.node_counts:
            return 0
        label = max(schema.node_counts, key=lambda name: schema.node_counts[name])
        key = f"n.{ont.SYMBOL_KEY}" if ont.SYMBOL_KEY in schema.node_properties.get(label, {}) else "id(n)"
        cheap: list[tuple[str, dict[str, Any] | None]] = [
            (f"MATCH (n:`{label}`) RETURN count(n) AS n", None),
            (f"MATCH (n:`{label}`) WHERE {key} = $s RETURN {key} AS s", {"s": "warm-up"}),
            (f"MATCH (n:`{label}`) RETURN {key} AS s ORDER BY s LIMIT 20", None),
            (f"MATCH (n:`{label}`)-[r]-(m) RETURN type(r) AS t, labels(m) AS l LIMIT 50", None),
            (f"MATCH (n:`{label}`)-[r]->(m) RETURN type(r) AS t, count(m) AS c", None),
            (f"MATCH (n:`{label}`), (m:`{label}`) RETURN {key} AS a, {key.replace('n.', 'm.')} AS b", None),
            ("MATCH (n RETURN n", None),
            ("MATCH (n:`scenerag warm-up: no such label`) RETURN n", None),
            (f"CREATE (n:`{label}`)", None),
        ]
        heavy = "MATCH (a), (b), (c) RETURN count(*) AS n"
        deadline = time.monotonic() + seconds

        def loop(index: int) -> int:  # one per query slot, side by side, as clients would
            runs = 0
            while time.monotonic() < deadline:
                for cypher, params in cheap:
                    with contextlib.suppress(Exception):
                        prepared, _ = self.check(cypher, params)
                        self.store.execute(prepared, params, timeout_s=1.0, max_rows=self.max_rows)
                    runs += 1
                if index == 0 and runs % (8 * len(cheap)) == len(cheap):  # the heavy lane, now and then
                    with contextlib.suppress(Exception):
                        prepared, _ = self.check(heavy)
                        self._heavy_runner().submit(
                            self.store.execute, prepared, None, timeout_s=0.2, max_rows=1
                        ).result()
            return runs

        with ThreadPoolExecutor(self.admission.slots, thread_name_prefix="scenerag-warm-up") as pool:
            return sum(pool.map(loop, range(self.admission.slots)))

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

    def known_classes(self) -> dict[str, list[str]]:
        """The underlying store's labelspace (see ``CypherStore.known_classes``)."""
        return self._access.store.known_classes()

    def close(self) -> None:
        """Nothing to release: the server owns the underlying store."""
