"""Bolt backend through the official ``neo4j`` driver: Neo4j, Memgraph, or an ArcadeDB server.

``load`` replaces the graph inside one explicit transaction (delete, then batched ``UNWIND`` creates),
so a failure rolls back to the previous graph. Read-only queries run in a transaction that is always
rolled back, and every query has a client-side deadline on top of the server's own timeout.
"""

from __future__ import annotations

import concurrent.futures
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from scenerag.errors import StoreError
from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph
from scenerag.store.base import CypherStore, ProgressFn, QueryError, db_error, normalize_value
from scenerag.store.introspect import introspect
from scenerag.store.rows import CELL_KEY, edge_groups, node_properties, nodes_by_label
from scenerag.store.schema import GraphSchema

_BATCH = 5_000


def _to_plain(value: Any) -> Any:
    """Driver values -> plain JSON: nodes/relationships -> property dicts, points -> {x, y, z}."""
    from neo4j.graph import Node, Path, Relationship
    from neo4j.spatial import Point

    if isinstance(value, Point):
        names = ("x", "y", "z")
        return {names[i]: float(c) for i, c in enumerate(value) if i < 3}
    if isinstance(value, (Node, Relationship)):
        return {k: _to_plain(v) for k, v in value.items()}
    if isinstance(value, Path):
        return [_to_plain(n) for n in value.nodes]
    if isinstance(value, dict):
        return {k: _to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_plain(v) for v in value]
    return value


def _to_driver(props: dict[str, Any]) -> dict[str, Any]:
    """Property dicts from ``rows`` -> driver parameters, {x, y, z} dicts -> CartesianPoint."""
    from neo4j.spatial import CartesianPoint

    out = {}
    for k, v in props.items():
        if isinstance(v, dict) and v.keys() == {"x", "y", "z"}:
            v = CartesianPoint((v["x"], v["y"], v["z"]))
        out[k] = v
    return out


class BoltStore(CypherStore):
    """A scene graph in a Bolt-speaking database. Credentials: URI userinfo or SCENERAG_BOLT_USER/_PASSWORD."""

    backend = "bolt"

    def __init__(
        self,
        uri: str,
        *,
        user: str | None = None,
        password: str | None = None,
        database: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        try:
            import neo4j
        except ImportError as exc:  # pragma: no cover
            raise StoreError("the Bolt backend needs the neo4j driver", hint="pip install neo4j") from exc
        parts = urlsplit(uri)
        user = (
            user
            or (unquote(parts.username) if parts.username else None)
            or os.environ.get("SCENERAG_BOLT_USER")
        )
        password = (
            password
            or (unquote(parts.password) if parts.password else None)
            or os.environ.get("SCENERAG_BOLT_PASSWORD")
        )
        database = database or (parts.path.strip("/") or None) or os.environ.get("SCENERAG_BOLT_DATABASE")
        netloc = parts.hostname or ""
        if parts.port:
            netloc += f":{parts.port}"
        self.uri = urlunsplit((parts.scheme, netloc, "", "", ""))
        self.database = database
        auth = (user, password) if user else None
        try:
            self._driver = neo4j.GraphDatabase.driver(self.uri, auth=auth)
            self._driver.verify_connectivity()
        except Exception as exc:
            raise StoreError(
                f"cannot reach the Bolt server at {self.uri}: {str(exc)[:300]}",
                hint="check that the server runs, the port, and SCENERAG_BOLT_USER / SCENERAG_BOLT_PASSWORD",
            ) from None
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="scenerag-bolt")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._driver.close()

    def __enter__(self) -> BoltStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _session(self) -> Any:
        return self._driver.session(database=self.database) if self.database else self._driver.session()

    # -- queries --------------------------------------------------------------------------------------
    def _execute(
        self, cypher: str, params: Mapping[str, Any], *, write: bool, timeout_s: float, max_rows: int
    ) -> tuple[list[str], list[dict[str, Any]], bool]:
        future = self._pool.submit(self._run_tx, cypher, dict(params), write, timeout_s, max_rows)
        try:
            return future.result(timeout=timeout_s + 1.0)
        except concurrent.futures.TimeoutError:
            raise QueryError(
                "timeout",
                f"the query took longer than its time limit ({timeout_s:g} s)",
                cypher,
                hint="narrow it: start from a nodeSymbol, bound hops (*1..3), add LIMIT",
            ) from None

    def _run_tx(
        self, cypher: str, params: dict[str, Any], write: bool, timeout_s: float, max_rows: int
    ) -> tuple[list[str], list[dict[str, Any]], bool]:
        import neo4j

        try:
            with self._session() as session:
                tx = session.begin_transaction(timeout=timeout_s)
                try:
                    result = tx.run(cypher, params)
                    columns = list(result.keys())
                    rows: list[dict[str, Any]] = []
                    truncated = False
                    for record in result:
                        if len(rows) >= max_rows:
                            truncated = True
                            break
                        rows.append({k: normalize_value(_to_plain(v)) for k, v in record.items()})
                    if write:
                        tx.commit()
                    else:
                        tx.rollback()  # read-only: nothing a query did survives
                finally:
                    if tx.closed() is False:
                        tx.close()
        except QueryError:
            raise
        except neo4j.exceptions.ServiceUnavailable as exc:
            raise StoreError(f"lost the Bolt server at {self.uri}: {exc}") from None
        except Exception as exc:
            raise db_error(getattr(exc, "message", None) or str(exc), cypher) from None
        return columns, rows, truncated

    # -- load -----------------------------------------------------------------------------------------
    def _load(self, graph: SceneGraph, progress: ProgressFn | None) -> None:
        by_label = nodes_by_label(graph)
        with self._session() as session:
            for label in by_label:  # schema statements cannot share a transaction with writes
                for key in (ont.SYMBOL_KEY, CELL_KEY):
                    try:
                        session.run(f"CREATE INDEX IF NOT EXISTS FOR (n:`{label}`) ON (n.`{key}`)").consume()
                    except Exception as exc:
                        raise StoreError(f"could not create the index on {label}.{key}: {exc}") from None
            tx = session.begin_transaction()
            try:
                tx.run("MATCH (n) DETACH DELETE n").consume()
                done = 0
                for label, nodes in by_label.items():
                    for start in range(0, len(nodes), _BATCH):
                        rows = [_to_driver(node_properties(n)) for n in nodes[start : start + _BATCH]]
                        tx.run(f"UNWIND $rows AS r CREATE (n:`{label}`) SET n = r", rows=rows).consume()
                        done += len(rows)
                        if progress:
                            progress("nodes", done, graph.num_nodes)
                label_of = {n.symbol: n.label for n in graph.nodes()}
                done = 0
                for etype, sources, targets, attrs in edge_groups(graph):
                    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
                    for i, (s, t) in enumerate(zip(sources, targets, strict=True)):
                        groups.setdefault((label_of[s], label_of[t]), []).append(
                            {"s": s, "t": t, "p": attrs[i] if attrs else {}}
                        )
                    for (ls, lt), rows in groups.items():
                        for start in range(0, len(rows), _BATCH):
                            chunk = rows[start : start + _BATCH]
                            tx.run(
                                f"UNWIND $rows AS r MATCH (a:`{ls}` {{nodeSymbol: r.s}}) "
                                f"MATCH (b:`{lt}` {{nodeSymbol: r.t}}) CREATE (a)-[e:`{etype}`]->(b) SET e = r.p",
                                rows=chunk,
                            ).consume()
                            done += len(chunk)
                            if progress:
                                progress("edges", done, graph.num_edges)
                counted = tx.run("MATCH (n) RETURN count(n) AS c").single()["c"]
                if counted != graph.num_nodes:
                    raise StoreError(f"load stored {counted} nodes, expected {graph.num_nodes}")
                tx.commit()
            except BaseException as exc:
                if not tx.closed():
                    tx.rollback()
                if isinstance(exc, (KeyboardInterrupt, SystemExit, StoreError)):
                    raise
                raise StoreError(
                    f"loading into {self.uri} failed: {str(exc)[:400]}",
                    hint="the previous graph is unchanged",
                ) from exc

    def _introspect(self) -> GraphSchema:
        return introspect(lambda q: self._run_tx(q, {}, False, 600.0, 1_000_000)[1])
