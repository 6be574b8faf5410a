"""Embedded ArcadeDB backend (the default): a directory on disk, Neo4j-dialect Cypher, no server.

Layout of ``root``: ``CURRENT`` names the live generation ``gen-NNNNNN/`` holding ``db/`` (the ArcadeDB
database) and ``schema.json``. ``load`` builds a new generation beside the live one with ArcadeDB's
bulk ``GraphBatch`` path (no WAL), indexes it, then swaps ``CURRENT`` with an atomic rename: a failed or
killed load leaves the previous generation live. One process at a time may open an embedded database.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from scenerag import interrupts
from scenerag.errors import StoreError
from scenerag.graph import ontology as ont
from scenerag.graph.model import Node, SceneGraph
from scenerag.store.base import (
    CypherStore,
    ProgressFn,
    QueryError,
    db_error,
    known_classes_of,
    normalize_value,
)
from scenerag.store.deadline import cancel_at
from scenerag.store.introspect import introspect
from scenerag.store.rows import CELL_KEY, CELL_SIZE_M, edge_groups, node_extras, nodes_by_label
from scenerag.store.schema import SCHEMA_VERSION, GraphSchema, schema_from_graph

CURRENT = "CURRENT"
KNOWN_CLASSES_FILE = "known_classes.json"  # what the perception can name; writes to the graph keep it
_CHUNK = 100_000
_EDGE_CHUNK = 500_000
_COLLECTOR_FLAG = re.compile(r"-XX:\+Use\w*GC\b")
_jvm_ready = False
_server_jvm = False
#: the server's heap (:func:`use_server_jvm`): committed, and touched, from the start (MiB) ...
SERVER_HEAP_MIB = 512
#: ... of which a young generation of this fixed size (MiB); the rest is the old generation
SERVER_YOUNG_MIB = 160


def use_server_jvm() -> bool:
    """Start the JVM of this process, when it starts, with the heap settings of a long-running server
    (``scenerag serve``) rather than those of a batch job. Returns False when the JVM already runs (its
    settings can no longer change; tests that serve in-process).

    A batch job (a bulk load) wants throughput: the collector's adaptive sizing grows the young generation
    until collections take 1% of the time. A server wants its memory steady: under a steady query mix the
    adaptive sizing kept growing the young generation (eden 336, 476, then 682 MiB at the end of three
    40-s soak phases; the Java heap's resident pages 560, 563, 719 MiB), although the data that survived
    stayed at ~20 MiB. So the server's heap is committed and touched at start (``-Xms`` with ``-XX:+AlwaysPreTouch``,
    :data:`SERVER_HEAP_MIB`) with a young generation of a fixed size (``-Xmn``, :data:`SERVER_YOUNG_MIB`,
    ``-XX:-UseAdaptiveSizePolicy``); the heap still grows, up to its maximum (``SCENERAG_JVM_HEAP``), when
    the data that stays alive needs more. ``-XX:+DisableExplicitGC``: JPype calls ``System.gc()`` (a full,
    stop-the-world collection) from whichever Python thread finished a collection, while holding the GIL,
    whenever the C heap grew by 10 MiB since the last; in a server that is the event loop. A flag set in
    ``ARCADEDB_JVM_ARGS`` wins over the same one here."""
    global _server_jvm
    _server_jvm = True
    return not _jvm_ready


def _heap_bytes(size: str) -> int | None:
    """``4g``, ``512m``, ``1024k`` or a number of bytes -> bytes (None when unreadable)."""
    match = re.fullmatch(r"(\d+)([kmgt]?)", size.strip().lower())
    if not match:
        return None
    return int(match[1]) * 1024 ** " kmgt".index(match[2] or " ")


def _server_jvm_args(heap: str, chosen: str) -> list[str]:
    """The flags :func:`use_server_jvm` adds, less those ``chosen`` (``ARCADEDB_JVM_ARGS``) sets itself; no
    sizing flags when the maximum heap is under twice :data:`SERVER_HEAP_MIB` (or unreadable)."""
    out = []
    given_max = re.findall(r"-Xmx(\S+)", chosen)
    max_bytes = _heap_bytes(given_max[-1] if given_max else heap)
    if max_bytes is not None and max_bytes >= 2 * SERVER_HEAP_MIB * 1024**2:
        if "-Xms" not in chosen and "InitialHeapSize" not in chosen:
            out.append(f"-Xms{SERVER_HEAP_MIB}m")
        if "-Xmn" not in chosen and "NewSize" not in chosen:
            out.append(f"-Xmn{SERVER_YOUNG_MIB}m")
        parallel = not _COLLECTOR_FLAG.search(chosen) or "-XX:+UseParallelGC" in chosen
        if parallel and "UseAdaptiveSizePolicy" not in chosen:
            out.append("-XX:-UseAdaptiveSizePolicy")
        if "AlwaysPreTouch" not in chosen:
            out.append("-XX:+AlwaysPreTouch")
    if "ExplicitGC" not in chosen:
        out.append("-XX:+DisableExplicitGC")
    return out


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
    if _server_jvm:
        jvm_args += _server_jvm_args(heap, os.environ.get("ARCADEDB_JVM_ARGS", ""))
    # -Xrs: the JVM installs no SIGINT/SIGTERM/SIGHUP/SIGQUIT handlers, so those signals stay Python's
    # (scenerag.interrupts). Without it the JVM owns them and, with interrupt=False, JPype forwards them
    # into Python from the JVM's signal thread without the GIL: SIGTERM (and SIGINT whenever Python's
    # handler for it is SIG_DFL/SIG_IGN) crashed the process with SIGSEGV in PyObject_RichCompare and an
    # hs_err_pid*.log. Side effect: no thread dump on SIGQUIT.
    jvm_args.append("-Xrs")
    saved = os.dup(2)
    with tempfile.TemporaryFile() as err:
        os.dup2(err.fileno(), 2)
        try:
            start_jvm(heap_size=heap, jvm_args=jvm_args, interrupt=False)
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


_LOADER_JAR = Path(__file__).with_name("java") / "scenerag-arcade.jar"


@functools.cache
def _jar_loader() -> Any:
    """A class loader for the package's jar (``java/scenerag/**``) whose parent sees the ArcadeDB engine."""
    import jpype

    if not _LOADER_JAR.is_file():
        raise StoreError(f"{_LOADER_JAR} is missing", hint="reinstall scenerag or run scripts/build_java.py")
    url = jpype.JClass("java.io.File")(str(_LOADER_JAR)).toURI().toURL()
    parent = jpype.JClass("java.lang.ClassLoader").getSystemClassLoader()
    urls = jpype.JArray(jpype.JClass("java.net.URL"))([url])
    return jpype.JClass("java.net.URLClassLoader")(urls, parent)


@functools.cache
def _bulk_loader_class() -> Any:
    """``scenerag.arcade.BulkLoader`` (``java/scenerag/arcade/BulkLoader.java``)."""
    import jpype

    return jpype.JClass("scenerag.arcade.BulkLoader", loader=_jar_loader())


@functools.cache
def _calls_class() -> Any:
    """``scenerag.arcade.Calls`` (``java/scenerag/arcade/Calls.java``): the engine calls a query makes, with
    errors returned as values; None where the jar lacks it (the calls then go through JPype directly)."""
    import jpype

    try:
        return jpype.JClass("scenerag.arcade.Calls", loader=_jar_loader())
    except Exception:
        return None


class _EngineError(Exception):
    """An engine error that came back from ``Calls`` as text (``Calls.describe``: the Java exception's
    ``toString()``, then class name and message of it and each of its causes) instead of as a Java
    exception: JPype 1.7.1 leaks the Python tracebacks it builds for every Java exception that reaches
    Python (about 44 traceback, frame and function objects for a parse error), and every full Python
    collection then walks them. ``str()`` is what ``arcadedb_embedded.ArcadeDBError`` says for the same
    exception, ``prefix`` included."""

    def __init__(self, prefix: str, described: Any) -> None:
        parts = [str(part) for part in described]
        self.chain = list(zip(parts[1::2], parts[2::2], strict=True))
        text = prefix + parts[0]
        if len(self.chain) > 1:  # ArcadeDBError names the root cause unless the text already has it
            name, message = self.chain[-1]
            if not message or message not in text:
                text += f" (caused by {name}: {message})" if message else f" (caused by {name})"
        super().__init__(text)

    def messages(self) -> list[str]:
        """``"<class>: <message>"`` of the exception and of each of its causes, as :func:`_java_messages`."""
        return [f"{name.rsplit('.', 1)[-1]}: {message}" for name, message in self.chain[:8]]


def _json_or_none(props: dict[str, Any]) -> str | None:
    return json.dumps(props, separators=(",", ":")) if props else None


def _vertex_columns(nodes: list[Node]) -> tuple[list[str], list[str], Any, list[str | None] | None]:
    """``BulkLoader.addVertices`` columns of ``nodes``: symbols, classes, x/y/z (float64, three per node)
    and per node the JSON of its ``node_extras`` (None when no node has any)."""
    import numpy as np

    extras = [_json_or_none(node_extras(n)) for n in nodes]
    return (
        [n.symbol for n in nodes],
        [n.class_name for n in nodes],
        np.array([n.position for n in nodes], dtype=np.float64).ravel(),
        extras if any(extras) else None,
    )


def _edge_columns(
    groups: list[tuple[str, list[str], list[str], list[dict[str, Any]] | None]],
    chunks: list[tuple[str, list[Node]]],
) -> list[tuple[str, Any, Any, list[str | None] | None]]:
    """``BulkLoader.addEdges`` columns in chunks of ``_EDGE_CHUNK`` edges: type, source and target indices
    (int32, positions in the vertex creation order, which is that of ``chunks``) and per edge its JSON
    properties (None when the type has none)."""
    import numpy as np

    index = {n.symbol: i for i, n in enumerate(n for _, nodes in chunks for n in nodes)}
    out = []
    for etype, sources, targets, attrs in groups:
        for start in range(0, len(sources), _EDGE_CHUNK):
            stop = min(start + _EDGE_CHUNK, len(sources))
            out.append(
                (
                    etype,
                    np.fromiter(map(index.__getitem__, sources[start:stop]), np.int32, stop - start),
                    np.fromiter(map(index.__getitem__, targets[start:stop]), np.int32, stop - start),
                    [_json_or_none(a) for a in attrs[start:stop]] if attrs is not None else None,
                )
            )
    return out


class _RunningQuery:
    """An ArcadeDB ``RunningQuery`` bound to the calling thread while a query runs, so that another thread
    can ``terminate()`` it: the engine checks it where it checks the command timeout and fails the query
    with ``QueryTerminatedException``. A no-op where the engine lacks the API."""

    def __init__(self, text: str) -> None:
        self._query: Any = None
        self._binding: Any = None
        self._text = text

    def __enter__(self) -> _RunningQuery:
        with contextlib.suppress(Exception):
            query = _query_registry().register("scenerag", None, "embedded", None, None, _no_client())
            query.setStatement("opencypher", self._text)
            self._binding = query.bind()
            self._query = query
        return self

    def __exit__(self, *exc: object) -> None:
        query, binding, self._query, self._binding = self._query, self._binding, None, None
        with contextlib.suppress(Exception):
            if binding is not None:
                binding.close()
        with contextlib.suppress(Exception):
            if query is not None:
                query.close()

    @property
    def registered(self) -> bool:
        """Whether the engine knows the query, so ``terminate()`` can stop it."""
        return self._binding is not None

    def terminate(self, reason: str = "interrupted") -> None:
        query = self._query
        if query is not None:
            query.terminate(reason)


def _timed_out(cypher: str, timeout_s: float) -> QueryError:
    return QueryError(
        "timeout",
        f"the query took longer than its time limit ({timeout_s:g} s) and was cancelled",
        cypher,
        hint="narrow it: start from a nodeSymbol, bound hops (*1..3), add LIMIT",
    )


def _java_messages(exc: BaseException) -> list[str]:
    """``"<class>: <message>"`` of a Java exception and of each of its causes, outermost first."""
    out: list[str] = []
    current: Any = exc
    for _ in range(8):
        if current is None:
            break
        message = current.getMessage() if hasattr(current, "getMessage") else str(current)
        out.append(f"{type(current).__name__.rsplit('.', 1)[-1]}: {message or ''}")
        current = current.getCause() if hasattr(current, "getCause") else None
    return out


@functools.cache
def _query_registry() -> Any:
    import jpype

    return jpype.JClass("com.arcadedb.query.RunningQueryRegistry")()


@functools.cache
def _no_client() -> Any:
    import jpype

    return jpype.JClass("com.arcadedb.query.RunningQuery$Client").NONE


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
        self._engine_timeout_ms: int | None = None
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
        worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scenerag-load")
        try:
            db = adb.create_database(str(gen_dir / "db"))
            schema = self._bulk_load(db, graph, progress, worker)
            (gen_dir / "schema.json").write_text(json.dumps(schema.to_dict()))
            (gen_dir / KNOWN_CLASSES_FILE).write_text(json.dumps(known_classes_of(graph)))
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
        finally:
            worker.shutdown(wait=False, cancel_futures=True)
        # Swap: the rename is the commit point. A signal from here on is raised once the swap is complete
        # (``generation`` then names the new graph).
        with interrupts.critical():
            tmp = self.root / f"{CURRENT}.tmp"
            tmp.write_text(name)
            os.replace(tmp, self.root / CURRENT)
            old_db, old_gen = self._db, self._gen
            self._db, self._gen, self._dirty = db, name, False
            self._engine_timeout_ms = None
            if old_db is not None:
                with contextlib.suppress(Exception):
                    old_db.close()
            if old_gen:
                shutil.rmtree(self.root / old_gen, ignore_errors=True)

    def _bulk_load(
        self, db: Any, graph: SceneGraph, progress: ProgressFn | None, worker: ThreadPoolExecutor
    ) -> GraphSchema:
        """Write ``graph`` into the empty ``db`` and return its schema.

        Fast path: ArcadeDB's ``GraphBatch`` (no WAL) fed by ``BulkLoader`` with columns (Java arrays of
        symbols, classes and coordinates; JSON only for nodes with extra properties) and edges as vertex
        indices, so nothing crosses into the JVM per value and no RID is formatted or parsed; property-less
        edge types are LIGHTWEIGHT (no edge record, ~2x faster to write); indexes are declared before the
        data (maintained during the batch, 10-25% cheaper than building after). The pure-Python work
        (columns, edge indices, schema) runs on ``worker`` while the JVM writes: JPype releases the GIL
        during Java calls.
        """
        import jpype

        by_label = nodes_by_label(graph)
        chunks = [
            (label, nodes[i : i + _CHUNK])
            for label, nodes in by_label.items()
            for i in range(0, len(nodes), _CHUNK)
        ]
        vertex_columns = [worker.submit(_vertex_columns, chunk) for _, chunk in chunks]
        groups = list(edge_groups(graph))
        # BulkLoader numbers vertices in creation order (the order of ``chunks``), so edge endpoints are
        # known before any vertex is written.
        edge_columns = worker.submit(_edge_columns, groups, chunks)
        schema = worker.submit(schema_from_graph, graph)
        light_types = self._create_types(db, list(by_label), groups)
        strings, doubles, ints = (
            jpype.JArray(jpype.JString),
            jpype.JArray(jpype.JDouble),
            jpype.JArray(jpype.JInt),
        )
        total_nodes, total_edges = graph.num_nodes, graph.num_edges
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
            loader = _bulk_loader_class()(batch._java_graph_batch, total_nodes, CELL_SIZE_M)
            for (label, chunk), columns in zip(chunks, vertex_columns, strict=True):
                symbols, classes, xyz, extras = columns.result()
                loader.addVertices(
                    label,
                    strings(symbols),
                    strings(classes),
                    doubles(xyz),
                    strings(extras) if extras else None,
                )
                done += len(chunk)
                if progress:
                    progress("nodes", done, total_nodes)
            done = 0
            for etype, sources, targets, props in edge_columns.result():
                loader.addEdges(etype, ints(sources), ints(targets), strings(props) if props else None)
                done += len(sources)
                if progress:
                    progress("edges", done, total_edges)
        counted = sum(int(db.count_type(label)) for label in by_label)
        if counted != total_nodes:
            raise StoreError(f"bulk load stored {counted} nodes, expected {total_nodes}")
        return schema.result()

    def _create_types(self, db: Any, labels: list[str], groups: list[tuple[str, Any, Any, Any]]) -> set[str]:
        """Vertex types with their indexed properties, then edge types (LIGHTWEIGHT where no edge of the
        type has properties and ``light_edges`` is on), through the Java schema API (the SQL equivalents
        cost ~0.6 s of parser warm-up in a fresh process). Returns the LIGHTWEIGHT edge types."""
        import jpype

        schema = db._java_db.getSchema()
        prop_type = jpype.JClass("com.arcadedb.schema.Type")
        lsm_tree = jpype.JClass("com.arcadedb.schema.Schema$INDEX_TYPE").LSM_TREE
        for label in labels:
            vertex_type = schema.createVertexType(label)
            for key in (ont.SYMBOL_KEY, CELL_KEY):
                vertex_type.createProperty(key, prop_type.STRING)
                # NOTUNIQUE like the Bolt backend's index: symbols are unique by construction of a
                # SceneGraph, and a UNIQUE index checks every insert against the whole index (40% of
                # vertex-creation time at 1M places).
                schema.createTypeIndex(lsm_tree, False, label, [key])
        light_types = {etype for etype, _, _, attrs in groups if attrs is None and self.light_edges}
        for etype in sorted({g[0] for g in groups}):
            schema.buildEdgeType().withName(etype).withLightweight(etype in light_types).create()
        return light_types

    # -- queries --------------------------------------------------------------------------------------
    def _require_db(self) -> Any:
        if self._db is None:
            raise StoreError(
                f"the database at {self.root} is empty",
                hint=f"load a scene graph: scenerag load FILE --db {self.root}",
            )
        return self._db

    def _parse(self, cypher: str) -> None:
        """The engine's parser and semantic check (``QueryEngine.analyze``: no data is read, ~1 ms warm),
        so a syntax error or an undefined variable fails before the query waits for a slot. Only parse and
        semantic failures are raised; anything else is left for the run to report."""
        if self._db is None:
            return
        engine = self._db.get_java_database().getQueryEngine("opencypher")
        calls = _calls_class()
        if calls is not None:
            described = calls.analyze(engine, cypher)
            if described is None:
                return
            messages = _EngineError("", described).messages()
        else:
            try:
                engine.analyze(cypher)
                return
            except Exception as exc:
                messages = _java_messages(exc)
        if not any(("Parsing" in m or "Semantic" in m) for m in messages):
            return
        # the outermost says "Error analyzing Cypher query"; a cause says what and where
        detail = next((m for m in messages[1:] if "Error analyzing" not in m), messages[0])
        raise db_error(detail, cypher) from None

    def _execute(
        self, cypher: str, params: Mapping[str, Any], *, write: bool, timeout_s: float, max_rows: int
    ) -> tuple[list[str], list[dict[str, Any]], bool]:
        db = self._require_db()
        args = (dict(params),) if params else ()
        running = _RunningQuery(cypher)
        deadline = time.monotonic() + timeout_s
        try:
            # The engine's timeout is one setting of the whole database, so concurrent queries would overwrite
            # each other's; each query is instead terminated at its own deadline by the watchdog thread.
            with (
                running,
                cancel_at(deadline, running.terminate) as expiry,
                interrupts.cancel_on_signal(running.terminate),
            ):
                self._engine_timeout(None if running.registered else timeout_s)
                if write:
                    with db.transaction():
                        rows, truncated = self._run(db, cypher, args, write=True, max_rows=max_rows)
                    self._dirty = True
                    with contextlib.suppress(OSError):  # a cached schema is stale once the graph changed
                        (self.root / (self._gen or "") / "schema.json").unlink()
                else:
                    rows, truncated = self._run(db, cypher, args, write=False, max_rows=max_rows)
        except QueryError:
            raise
        except Exception as exc:
            interrupts.raise_if_interrupted()  # terminated by a signal: report the interruption
            message = str(exc)
            if expiry.fired and "terminated" in message.lower():
                raise _timed_out(cypher, timeout_s) from None
            if "QueryNotIdempotent" in message or "not idempotent" in message:
                raise QueryError(
                    "write_refused",
                    "the database refused a write in read-only mode",
                    cypher,
                    hint="writes need read_only=False (CLI: --write)",
                ) from None
            raise db_error(message, cypher) from None
        if expiry.fired and not write:
            # the engine finished before it saw the termination (it checks only at some steps): the read
            # still overran its limit, so it is reported as the timeout it was, the same on every run
            raise _timed_out(cypher, timeout_s)
        columns = list(rows[0]) if rows else []
        return columns, rows, truncated

    def _engine_timeout(self, timeout_s: float | None) -> None:
        """Set the engine's command timeout: off (0) while queries carry their own deadline, or
        ``timeout_s`` for an engine without the running-query API (then concurrent limits share it)."""
        import jpype

        value = 0 if timeout_s is None else int(timeout_s * 1000)
        if value == self._engine_timeout_ms:
            return
        config = self._require_db().get_java_database().getConfiguration()
        config.setValue(jpype.JClass("com.arcadedb.GlobalConfiguration").COMMAND_TIMEOUT, value)
        self._engine_timeout_ms = value

    @classmethod
    def _run(
        cls, db: Any, cypher: str, args: tuple[Any, ...], *, write: bool, max_rows: int
    ) -> tuple[list[dict[str, Any]], bool]:
        """Run ``cypher`` (a command when ``write``) and read at most ``max_rows`` rows: (rows, truncated).

        Through ``Calls`` (one crossing to start the query, one for the rows as JSON), so an engine error
        (a timeout, a runtime error) comes back as text and is raised here as an ``_EngineError`` with the
        message ``arcadedb_embedded`` gives it; without ``Calls``, through ``arcadedb_embedded``."""
        calls = _calls_class()
        if calls is None:
            rs = db.command("opencypher", cypher, *args) if write else db.query("opencypher", cypher, *args)
            return cls._read_rows(rs, max_rows)
        import jpype

        failed = "Command failed: " if write else "Query failed: "
        try:
            params = db._java_parameters(args) if args else None
        except Exception as exc:  # a value JPype cannot convert
            raise _EngineError(failed, [str(exc)]) from None
        result = calls.run(db.get_java_database(), write, "opencypher", cypher, params)
        if isinstance(result, jpype.JArray):
            raise _EngineError(failed, result)
        if result is None:
            return [], False
        size = max_rows + 1
        drained = False
        try:
            batch = calls.nextJsonBatch(result, size)
            if isinstance(batch, jpype.JArray):
                raise _EngineError("Reading the result set failed: ", batch)
            rows = json.loads(str(batch))
            drained = len(rows) < size  # nextJsonBatch closed the result set after its last row
            return [normalize_value(r) for r in rows[:max_rows]], len(rows) > max_rows
        finally:
            if not drained:
                with contextlib.suppress(Exception):
                    result.close()

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

    def known_classes(self) -> dict[str, list[str]]:
        """The loaded graph's labelspace (see :meth:`CypherStore.known_classes`), read from the generation."""
        file = self.root / (self._gen or "") / KNOWN_CLASSES_FILE
        with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
            data = json.loads(file.read_text())
            return {str(k): [str(c) for c in v] for k, v in data.items()}
        return {}

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
