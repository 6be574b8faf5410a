"""Embedded ArcadeDB backend (the default): a directory on disk, Neo4j-dialect Cypher, no server.

Layout of ``root``: ``CURRENT`` names the live generation ``gen-NNNNNN/`` holding ``db/`` (the ArcadeDB
database) and ``schema.json``. ``load`` builds a new generation beside the live one with ArcadeDB's
bulk ``GraphBatch`` path (no WAL), indexes it, then swaps ``CURRENT`` with an atomic rename: a failed or
killed load leaves the previous generation live. One process at a time may open an embedded database.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scenerag.errors import StoreError
from scenerag.graph import ontology as ont
from scenerag.graph.model import Node, SceneGraph
from scenerag.store.base import CypherStore, ProgressFn, QueryError, db_error, normalize_value
from scenerag.store.introspect import introspect
from scenerag.store.rows import CELL_KEY, edge_groups, node_properties, nodes_by_label, nodes_json
from scenerag.store.schema import SCHEMA_VERSION, GraphSchema, schema_from_graph

CURRENT = "CURRENT"
_CHUNK = 100_000
_COLLECTOR_FLAG = re.compile(r"-XX:\+Use\w*GC\b")
_jvm_ready = False


def _start_jvm() -> None:
    """Start the JVM once, quietly (its launcher warnings go to fd 2), and turn engine logging down."""
    global _jvm_ready
    if _jvm_ready:
        return
    import jpype
    from arcadedb_embedded.jvm import start_jvm

    heap = os.environ.get("SCENERAG_JVM_HEAP", "4g")
    log_config = Path(__file__).with_name("jul-quiet.properties")
    jvm_args = (
        [] if os.environ.get("SCENERAG_DB_VERBOSE") else [f"-Djava.util.logging.config.file={log_config}"]
    )
    # Throughput collector: bulk loads allocate heavily and G1's concurrent work competes with the loader
    # on small machines (1M-place bulk load, quiet 2-core machine: 94 s with G1, 58-70 s). A collector
    # chosen in ARCADEDB_JVM_ARGS (-XX:+Use...GC) wins; other GC flags there keep this default.
    if not _COLLECTOR_FLAG.search(os.environ.get("ARCADEDB_JVM_ARGS", "")):
        jvm_args.append("-XX:+UseParallelGC")
    saved = os.dup(2)
    with tempfile.TemporaryFile() as err:
        os.dup2(err.fileno(), 2)
        try:
            start_jvm(heap_size=heap, jvm_args=jvm_args)
        except Exception as exc:
            os.dup2(saved, 2)
            err.seek(0)
            raise StoreError(
                f"could not start the Java runtime for ArcadeDB: {exc}: {err.read().decode(errors='replace')[-500:]}"
            ) from exc
        finally:
            os.dup2(saved, 2)
            os.close(saved)
    if not os.environ.get("SCENERAG_DB_VERBOSE"):
        logging = jpype.JPackage("java").util.logging
        for name in ("", "com.arcadedb"):
            logging.Logger.getLogger(name).setLevel(logging.Level.OFF)
    _jvm_ready = True


def _create_vertices(batch: Any, label: str, nodes: list[Node]) -> list[str]:
    """Create the vertices of ``nodes`` (properties as ``node_properties``), returning their RIDs in order.

    Rows cross the JPype boundary as one JSON document (nested point maps and lists included) through
    the package's ``VertexBatcher`` bridge; without the bridge, the package's per-value path is used.
    """
    import jpype

    try:
        batcher = jpype.JClass("com.arcadedb.python.VertexBatcher")
    except Exception:  # bridge jar absent in this arcadedb-embedded build
        return list(batch.create_vertices(label, [node_properties(n) for n in nodes]))
    joined = str(batcher.createVerticesJson(batch._java_graph_batch, label, nodes_json(nodes)))
    return joined.split(";") if joined else []


def _gen_index(name: str) -> int:
    try:
        return int(name.split("-", 1)[1])
    except (IndexError, ValueError):
        return -1


class ArcadeStore(CypherStore):
    """A scene graph in an embedded ArcadeDB database under ``root``."""

    backend = "arcadedb-embedded"

    def __init__(
        self, root: str | Path, *, create: bool = True, light_edges: bool = True, **kwargs: Any
    ) -> None:
        """Open (or create) the database under ``root``. ``light_edges``: store edge types that carry no
        properties in the loaded graph as ArcadeDB lightweight edges (faster loads; such edges cannot get
        properties later, e.g. ``SET r.weight = 1`` fails with the engine's error)."""
        super().__init__(**kwargs)
        self.light_edges = light_edges
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise StoreError(f"{self.root} is a file, expected a database directory")
        if not self.root.exists():
            if not create:
                raise StoreError(
                    f"no scenerag database at {self.root}",
                    hint=f"create one with: scenerag load FILE --db {self.root}",
                )
            self.root.mkdir(parents=True)
        elif not (self.root / CURRENT).exists() and any(self.root.iterdir()) and not create:
            raise StoreError(f"{self.root} is not a scenerag database (no {CURRENT} file)")
        _start_jvm()
        self._db: Any = None
        self._gen: str | None = None
        self._dirty = False
        self._open_current()
        self._cleanup_stale()

    # -- lifecycle ----------------------------------------------------------------------------------
    def _current_name(self) -> str | None:
        marker = self.root / CURRENT
        if not marker.exists():
            return None
        name = marker.read_text().strip()
        return name if name and (self.root / name / "db").is_dir() else None

    def _open_current(self) -> None:
        import arcadedb_embedded as adb

        name = self._current_name()
        if name is None:
            return
        try:
            self._db = adb.open_database(str(self.root / name / "db"))
        except Exception as exc:
            text = str(exc)
            if "lock" in text.lower() or "already" in text.lower():
                raise StoreError(
                    f"database {self.root} is open in another process",
                    hint="embedded ArcadeDB allows one process at a time; close the other one or use a Bolt server",
                ) from None
            raise StoreError(f"could not open database {self.root}: {text[:300]}") from None
        self._gen = name

    def _cleanup_stale(self) -> None:
        """Remove generations left behind by a killed load (anything but the live one)."""
        for child in self.root.glob("gen-*"):
            if child.name != self._gen and child.is_dir():
                shutil.rmtree(child, ignore_errors=True)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                with contextlib.suppress(Exception):
                    self._db.close()
                self._db = None

    def __enter__(self) -> ArcadeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def generation(self) -> str | None:
        return self._gen

    # -- load -----------------------------------------------------------------------------------------
    def _load(self, graph: SceneGraph, progress: ProgressFn | None) -> None:
        import arcadedb_embedded as adb

        existing = [_gen_index(p.name) for p in self.root.glob("gen-*")]
        name = f"gen-{max(existing, default=0) + 1:06d}"
        gen_dir = self.root / name
        gen_dir.mkdir()
        db = None
        try:
            db = adb.create_database(str(gen_dir / "db"))
            self._bulk_load(db, graph, progress)
            schema = schema_from_graph(graph)
            (gen_dir / "schema.json").write_text(json.dumps(schema.to_dict()))
        except BaseException as exc:
            if db is not None:
                with contextlib.suppress(Exception):
                    db.close()
            shutil.rmtree(gen_dir, ignore_errors=True)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            raise StoreError(
                f"loading into {self.root} failed: {str(exc)[:400]}",
                hint="the previous graph is unchanged",
            ) from exc
        # Swap: the rename is the commit point.
        tmp = self.root / f"{CURRENT}.tmp"
        tmp.write_text(name)
        os.replace(tmp, self.root / CURRENT)
        old_db, old_gen = self._db, self._gen
        self._db, self._gen, self._dirty = db, name, False
        if old_db is not None:
            with contextlib.suppress(Exception):
                old_db.close()
        if old_gen:
            shutil.rmtree(self.root / old_gen, ignore_errors=True)

    def _bulk_load(self, db: Any, graph: SceneGraph, progress: ProgressFn | None) -> None:
        """Fast path: one JSON document per chunk of vertices and one joined RID string per chunk of edges
        cross into the JVM (per-value marshalling is ~10x slower); property-less edge types are declared
        LIGHTWEIGHT (no edge record, ~2x faster to write); indexes are declared before the data."""
        by_label = nodes_by_label(graph)
        groups = list(edge_groups(graph))
        for label in by_label:
            db.command("sql", f"CREATE VERTEX TYPE `{label}`")
            db.command("sql", f"CREATE PROPERTY `{label}`.{ont.SYMBOL_KEY} STRING")
            db.command("sql", f"CREATE PROPERTY `{label}`.{CELL_KEY} STRING")
            # Indexes exist before the data: maintained during the batch, 10-25% cheaper than building after.
            db.command("sql", f"CREATE INDEX ON `{label}` ({ont.SYMBOL_KEY}) UNIQUE")
            db.command("sql", f"CREATE INDEX ON `{label}` ({CELL_KEY}) NOTUNIQUE")
        light_types = {etype for etype, _, _, attrs in groups if attrs is None and self.light_edges}
        for etype in sorted({g[0] for g in groups}):
            db.command(
                "sql", f"CREATE EDGE TYPE `{etype}`" + (" LIGHTWEIGHT" if etype in light_types else "")
            )
        total_nodes, total_edges = graph.num_nodes, graph.num_edges
        rid: dict[str, str] = {}
        done = 0
        with db.graph_batch(
            batch_size=200_000,
            use_wal=False,
            expected_edge_count=max(total_edges, 1),
            light_edges=bool(light_types),
            parallel_flush=True,
            pre_allocate_edge_chunks=True,
            edge_list_initial_size=128,
        ) as batch:
            for label, nodes in by_label.items():
                for start in range(0, len(nodes), _CHUNK):
                    chunk = nodes[start : start + _CHUNK]
                    rids = _create_vertices(batch, label, chunk)
                    rid.update(zip((n.symbol for n in chunk), rids, strict=True))
                    done += len(chunk)
                    if progress:
                        progress("nodes", done, total_nodes)
            done = 0
            for etype, sources, targets, attrs in groups:
                for start in range(0, len(sources), _CHUNK * 5):
                    stop = start + _CHUNK * 5
                    batch.new_edges(
                        [rid[s] for s in sources[start:stop]],
                        etype,
                        [rid[t] for t in targets[start:stop]],
                        attrs[start:stop] if attrs is not None else None,
                    )
                    done += min(stop, len(sources)) - start
                    if progress:
                        progress("edges", done, total_edges)
        counted = sum(int(db.count_type(label)) for label in by_label)
        if counted != total_nodes:
            raise StoreError(f"bulk load stored {counted} nodes, expected {total_nodes}")

    # -- queries --------------------------------------------------------------------------------------
    def _require_db(self) -> Any:
        if self._db is None:
            raise StoreError(
                f"the database at {self.root} is empty",
                hint=f"load a scene graph: scenerag load FILE --db {self.root}",
            )
        return self._db

    def _execute(
        self, cypher: str, params: Mapping[str, Any], *, write: bool, timeout_s: float, max_rows: int
    ) -> tuple[list[str], list[dict[str, Any]], bool]:
        import jpype

        db = self._require_db()
        config = db.get_java_database().getConfiguration()
        gc = jpype.JClass("com.arcadedb.GlobalConfiguration")
        config.setValue(gc.COMMAND_TIMEOUT, int(timeout_s * 1000))
        args = (dict(params),) if params else ()
        try:
            if write:
                with db.transaction():
                    rs = db.command("opencypher", cypher, *args)
                    rows, truncated = self._read_rows(rs, max_rows)
                self._dirty = True
                with contextlib.suppress(OSError):  # a cached schema is stale once the graph changed
                    (self.root / (self._gen or "") / "schema.json").unlink()
            else:
                rs = db.query("opencypher", cypher, *args)
                rows, truncated = self._read_rows(rs, max_rows)
        except QueryError:
            raise
        except Exception as exc:
            message = str(exc)
            if "QueryNotIdempotent" in message or "not idempotent" in message:
                raise QueryError(
                    "write_refused",
                    "the database refused a write in read-only mode",
                    cypher,
                    hint="writes need read_only=False (CLI: --write)",
                ) from None
            raise db_error(message, cypher) from None
        columns = list(rows[0]) if rows else []
        return columns, rows, truncated

    @staticmethod
    def _read_rows(rs: Any, max_rows: int) -> tuple[list[dict[str, Any]], bool]:
        if rs is None:
            return [], False
        try:
            for batch in rs.iter_json_batches(batch_size=max_rows + 1):
                rows = [normalize_value(r) for r in batch[:max_rows]]
                return rows, len(batch) > max_rows
            return [], False
        finally:
            with contextlib.suppress(Exception):
                rs.close()

    def _introspect(self) -> GraphSchema:
        if self._db is None:
            return GraphSchema()
        cached = self.root / (self._gen or "") / "schema.json"
        if not self._dirty and cached.is_file():
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                data = json.loads(cached.read_text())
                if data.get("version") == SCHEMA_VERSION:
                    return GraphSchema.from_dict(data)
        schema = introspect(
            lambda q: self._execute(q, {}, write=False, timeout_s=600.0, max_rows=1_000_000)[1]
        )
        with contextlib.suppress(OSError):
            cached.write_text(json.dumps(schema.to_dict()))
        self._dirty = False
        return schema
