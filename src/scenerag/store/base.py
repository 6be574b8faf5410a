"""The ``GraphStore`` contract and the query pipeline every backend shares.

Every query goes through :meth:`CypherStore.query`: read-only unless ``read_only=False``; unbounded
variable-length paths over the acyclic hierarchy (``[:CONTAINS*]``) are bounded by the hierarchy depth,
other unbounded paths are refused; labels, relationship types and property keys are checked against
the live schema (the engines return null/empty for unknown names instead of failing); then the backend
runs it with a timeout and a row cap. Failures raise :class:`QueryError`, whose text an LLM can act on.
"""

from __future__ import annotations

import abc
import gc
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from scenerag.concurrency import ReadWriteLock
from scenerag.errors import SceneRagError
from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph
from scenerag.store.cypher import (
    READ_ONLY_PROCEDURES,
    CypherAnalysis,
    analyze,
    bound_var_lengths,
    caret_excerpt,
    error_position,
)
from scenerag.store.schema import GraphSchema

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_MAX_ROWS = 1000

ErrorKind = Literal[
    "syntax",
    "unknown_name",
    "write_refused",
    "procedure_refused",
    "unbounded",
    "timeout",
    "runtime",
    "parameter",
]

ProgressFn = Callable[[str, int, int], None]
"""Called as ``progress(stage, done, total)`` during long operations."""


class QueryError(SceneRagError):
    """A query the store refused or the database rejected; ``str()`` is a message an LLM can fix from."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        query: str,
        *,
        hint: str | None = None,
        line: int | None = None,
        column: int | None = None,
        suggestions: list[str] | None = None,
    ) -> None:
        self.kind = kind
        self.query = query
        self.line = line
        self.column = column
        self.suggestions = suggestions or []
        super().__init__(message, hint=hint)

    def __str__(self) -> str:
        parts = [f"{self.kind} error: {self.message}"]
        if self.line is not None and self.column is not None:
            parts.append(
                f"at line {self.line}, column {self.column}:\n{caret_excerpt(self.query, self.line, self.column)}"
            )
        if self.suggestions:
            parts.append("did you mean: " + ", ".join(self.suggestions) + "?")
        if self.hint:
            parts.append(self.hint)
        return "\n".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "message": self.message,
            "query": self.query,
            "line": self.line,
            "column": self.column,
            "suggestions": self.suggestions,
            "hint": self.hint,
        }


@dataclass
class QueryResult:
    """Rows as plain JSON-like dicts (nodes -> property dicts, points -> {x, y, z})."""

    columns: list[str]
    rows: list[dict[str, Any]]
    truncated: bool = False
    max_rows: int | None = None
    elapsed_ms: float = 0.0
    query: str = ""
    notices: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.rows)

    def values(self, column: str | None = None) -> list[Any]:
        """One column as a list (the only column when ``column`` is None)."""
        col = column or (self.columns[0] if self.columns else None)
        return [r.get(col) for r in self.rows] if col else []

    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": self.columns,
            "rows": self.rows,
            "truncated": self.truncated,
            "max_rows": self.max_rows,
            "elapsed_ms": round(self.elapsed_ms, 3),
            "notices": self.notices,
        }

    def truncation_note(self) -> str | None:
        if not self.truncated:
            return None
        return f"TRUNCATED: only the first {self.max_rows} rows are shown; add LIMIT or aggregate."


@dataclass(frozen=True)
class PreparedQuery:
    """A query that passed :meth:`CypherStore.prepare`: ``run`` is the text to execute (unbounded hierarchy
    paths bounded), ``notices`` say what was rewritten."""

    cypher: str
    run: str
    read_only: bool
    analysis: CypherAnalysis
    notices: list[str] = field(default_factory=list)


@runtime_checkable
class GraphStore(Protocol):
    """A scene graph in a graph database, queried with Neo4j-dialect Cypher."""

    def load(self, graph: SceneGraph, *, progress: ProgressFn | None = None) -> None:
        """Replace the stored graph with ``graph`` atomically: on failure the previous graph stays."""

    def query(
        self,
        cypher: str,
        params: Mapping[str, Any] | None = None,
        *,
        read_only: bool = True,
        timeout_s: float | None = None,
        max_rows: int | None = None,
    ) -> QueryResult:
        """Run ``cypher``; raise ``QueryError`` on refusal or failure."""

    def schema(self) -> GraphSchema:
        """Labels, relationship types, property keys with types and counts, containment chains."""

    def schema_text(self) -> str:
        """The schema rendered for a prompt."""

    def close(self) -> None:
        """Release the database."""


def known_classes_of(graph: SceneGraph) -> dict[str, list[str]]:
    """``graph.metadata['known_classes']`` checked: label -> sorted class names (empty when absent)."""
    raw = graph.metadata.get(ont.KNOWN_CLASSES)
    if not isinstance(raw, dict):
        return {}
    return {
        str(label): sorted({str(c) for c in classes if isinstance(c, str) and c})
        for label, classes in raw.items()
        if isinstance(classes, (list, tuple, set))
    }


def normalize_value(value: Any) -> Any:
    """Make a value read from a store plain JSON: points -> {x, y, z} (dropping crs/srid)."""
    if isinstance(value, dict):
        if "crs" in value and "x" in value:
            return {k: value[k] for k in ("x", "y", "z") if k in value}
        return {k: normalize_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalize_value(v) for v in value]
    return value


class CypherStore(abc.ABC):
    """Shared query pipeline; backends implement ``_execute``, ``_load``, ``_introspect`` and ``close``."""

    backend: str = "abstract"

    def __init__(
        self, *, default_timeout_s: float = DEFAULT_TIMEOUT_S, default_max_rows: int = DEFAULT_MAX_ROWS
    ):
        self.default_timeout_s = default_timeout_s
        self.default_max_rows = default_max_rows
        self._schema: GraphSchema | None = None
        self._known_classes: dict[str, list[str]] = {}
        self._lock = threading.RLock()  # the cached schema
        self._rw = ReadWriteLock()  # queries share it; a write or a load holds it alone

    # -- backend hooks ------------------------------------------------------------------------------
    @abc.abstractmethod
    def _execute(
        self, cypher: str, params: Mapping[str, Any], *, write: bool, timeout_s: float, max_rows: int
    ) -> tuple[list[str], list[dict[str, Any]], bool]:
        """Run the query; return (columns, rows, truncated). Raise ``QueryError`` for DB errors."""

    @abc.abstractmethod
    def _load(self, graph: SceneGraph, progress: ProgressFn | None) -> None: ...

    @abc.abstractmethod
    def _introspect(self) -> GraphSchema: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    def _parse(self, cypher: str) -> None:  # noqa: B027 (optional hook)
        """Raise a ``syntax`` ``QueryError`` when the engine's parser rejects ``cypher``, without reading
        data; the default (engines without a separate parser) leaves syntax to ``_execute``."""

    # -- public API ---------------------------------------------------------------------------------
    def load(self, graph: SceneGraph, *, progress: ProgressFn | None = None) -> None:
        # Python's cyclic GC is paused while loading: a load allocates many short-lived containers but no
        # cycles, and each full collection walks every object of a large graph (~2.5 s at 1M places).
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            with self._rw.write(), self._lock:
                self._load(graph, progress)
                self._schema = None
                self._known_classes = known_classes_of(graph)
        finally:
            if was_enabled:
                gc.enable()

    def schema(self, *, refresh: bool = False) -> GraphSchema:
        """The cached schema (introspected when missing: after a write, or with ``refresh``)."""
        schema = self._schema
        if schema is not None and not refresh:
            return schema
        with self._rw.read(), self._lock:
            if self._schema is None or refresh:
                self._schema = self._introspect()
            return self._schema

    def schema_text(self) -> str:
        return self.schema().to_text()

    def known_classes(self) -> dict[str, list[str]]:
        """Classes the graph's perception can name, per label, whether or not a node has them (a
        labelspace: ``{'Object': ['bag', 'flora', ...]}``); empty when the loaded graph did not say. Kept
        in memory from :meth:`load`; a backend that persists it overrides this."""
        return dict(self._known_classes)

    def query(
        self,
        cypher: str,
        params: Mapping[str, Any] | None = None,
        *,
        read_only: bool = True,
        timeout_s: float | None = None,
        max_rows: int | None = None,
    ) -> QueryResult:
        timeout = self.default_timeout_s if timeout_s is None else float(timeout_s)
        cap = self.default_max_rows if max_rows is None else int(max_rows)
        if not timeout > 0:
            raise ValueError(f"the query time limit must be positive (got {timeout:g} s; CLI: --timeout)")
        if cap <= 0:
            raise ValueError(f"the row cap must be at least 1 (got {cap}; CLI: --max-rows)")
        return self.execute(
            self.prepare(cypher, read_only=read_only), params, timeout_s=timeout, max_rows=cap
        )

    def prepare(self, cypher: str, *, read_only: bool = True) -> PreparedQuery:
        """Every check that needs no data, in the order ``query`` runs them: not empty, the read-only
        guard, the backend's parse (``_parse``), names against the (cached) schema, unbounded paths bounded
        or refused. Raises ``QueryError``; never waits for a running query (the server validates before
        it queues)."""
        if not isinstance(cypher, str) or not cypher.strip():
            raise QueryError(
                "syntax",
                "empty query",
                str(cypher),
                hint="write a Cypher query such as MATCH (n) RETURN n LIMIT 5",
            )
        analysis = analyze(cypher)
        notices: list[str] = []
        if read_only:
            self._refuse_writes(cypher, analysis)
        self._parse(cypher)
        schema = self.schema()
        if read_only:
            self._check_names(cypher, analysis, schema)
        cypher_run = self._bound_paths(cypher, analysis, schema, notices)
        return PreparedQuery(cypher, cypher_run, read_only, analysis, notices)

    def execute(
        self,
        prepared: PreparedQuery,
        params: Mapping[str, Any] | None = None,
        *,
        timeout_s: float,
        max_rows: int,
    ) -> QueryResult:
        """Run a query checked by :meth:`prepare` (``timeout_s`` and ``max_rows`` positive, as ``query``
        checks); the backend cancels it once ``timeout_s`` has passed. Reads run side by side; a write (or a
        load) runs alone."""
        start = time.perf_counter()
        with self._rw.read() if prepared.read_only else self._rw.write():
            try:
                columns, rows, truncated = self._execute(
                    prepared.run,
                    dict(params or {}),
                    write=not prepared.read_only,
                    timeout_s=timeout_s,
                    max_rows=max_rows,
                )
            except QueryError as exc:
                if exc.kind != "timeout":
                    raise
                raise timeout_error(prepared.cypher, timeout_s) from None
            if not prepared.read_only and prepared.analysis.is_write:
                with self._lock:
                    self._schema = None
        elapsed = (time.perf_counter() - start) * 1000.0
        return QueryResult(columns, rows, truncated, max_rows, elapsed, prepared.run, list(prepared.notices))

    # -- pipeline steps -----------------------------------------------------------------------------
    @staticmethod
    def _refuse_writes(cypher: str, a: CypherAnalysis) -> None:
        if a.write_clauses:
            raise QueryError(
                "write_refused",
                f"the query writes ({', '.join(dict.fromkeys(a.write_clauses))}) but the store is read-only",
                cypher,
                hint="only MATCH/OPTIONAL MATCH/WITH/UNWIND/RETURN/CALL {} queries are allowed here; "
                "writes need read_only=False (CLI: --write)",
            )
        refused = [p for p in a.procedures if p.lower() not in READ_ONLY_PROCEDURES]
        if refused:
            raise QueryError(
                "procedure_refused",
                f"procedure {refused[0]} is not allowed in read-only mode",
                cypher,
                hint="allowed procedures: " + ", ".join(sorted(READ_ONLY_PROCEDURES)),
            )

    @staticmethod
    def _check_names(cypher: str, a: CypherAnalysis, schema: GraphSchema) -> None:
        if not schema.node_counts:
            return  # empty database: nothing to check against
        for label in dict.fromkeys(a.labels):
            if label not in schema.node_counts:
                hint = "labels in this graph: " + ", ".join(schema.labels)
                owner = schema.value_owner(label)
                if owner is not None:  # (s:Sign) where 'sign' is an object class
                    o_label, o_key, o_value = owner
                    hint = (
                        f"'{label}' is not a label but '{o_value}' is a value of {o_label}.{o_key}: match it as "
                        f"(n:{o_label} {{{o_key}: '{o_value}'}}); " + hint
                    )
                raise QueryError(
                    "unknown_name",
                    f"unknown node label '{label}'",
                    cypher,
                    suggestions=schema.suggest(label, schema.labels),
                    hint=hint,
                )
        for rtype in dict.fromkeys(a.rel_types):
            if rtype not in schema.rel_counts:
                raise QueryError(
                    "unknown_name",
                    f"unknown relationship type '{rtype}'",
                    cypher,
                    suggestions=schema.suggest(rtype, schema.rel_types),
                    hint="relationship types in this graph: " + ", ".join(schema.rel_types),
                )
        for kind, labels, key in a.pattern_keys:
            CypherStore._check_key(cypher, schema, key, labels, rel=kind == "rel")
        for var, key in dict.fromkeys(a.property_refs):
            if var in a.node_vars:
                CypherStore._check_key(cypher, schema, key, a.node_vars[var], rel=False)
            elif var in a.rel_vars:
                CypherStore._check_key(cypher, schema, key, a.rel_vars[var], rel=True)

    @staticmethod
    def _check_key(
        cypher: str, schema: GraphSchema, key: str, labels: set[str] | frozenset[str], *, rel: bool
    ) -> None:
        known = schema.property_keys(labels, rel=rel)
        if key in known:
            return
        if rel and not known and not labels and not schema.property_keys(rel=True):
            what = "relationships in this graph have no properties"
            raise QueryError("unknown_name", f"unknown relationship property '{key}': {what}", cypher)
        owner = "/".join(sorted(labels)) if labels else ("relationship" if rel else "node")
        noun = "relationships" if rel else "nodes"
        raise QueryError(
            "unknown_name",
            f"{owner} {noun} have no property '{key}'",
            cypher,
            suggestions=schema.suggest(key, known),
            hint=f"{owner} properties: " + (", ".join(sorted(known)) or "none"),
        )

    @staticmethod
    def _bound_paths(cypher: str, a: CypherAnalysis, schema: GraphSchema, notices: list[str]) -> str:
        unbounded = a.unbounded
        if not unbounded:
            return cypher
        bounds = []
        for v in unbounded:
            if v.types and set(v.types) <= ont.HIERARCHY_EDGE_TYPES:
                bounds.append((v, schema.hierarchy_depth()))
            else:
                what = "|".join(v.types) or "any relationship"
                raise QueryError(
                    "unbounded",
                    f"unbounded variable-length path over {what} can explore the whole graph",
                    cypher,
                    hint=f"give it an upper bound, e.g. [:{v.types[0] if v.types else 'TYPE'}*1..5]",
                )
        notices.append(
            "unbounded hierarchy paths were bounded to the hierarchy depth "
            f"({schema.hierarchy_depth()}); results are unchanged"
        )
        return bound_var_lengths(cypher, bounds)


def db_error(message: str, cypher: str) -> QueryError:
    """Classify a database error message into a ``QueryError`` with a position where there is one."""
    lowered = message.lower()
    pos = error_position(message)
    if "timeout" in lowered or "timed out" in lowered or ("exceeded" in lowered and "timeout" in lowered):
        return QueryError(
            "timeout",
            "the query took longer than its time limit",
            cypher,
            hint="narrow it: start from a nodeSymbol, bound hops (*1..3), add LIMIT",
        )
    if (
        "syntax" in lowered
        or "mismatched input" in lowered
        or "invalid input" in lowered
        or "parsing" in lowered
    ):
        return QueryError(
            "syntax",
            _short(message),
            cypher,
            line=pos[0] if pos else None,
            column=pos[1] if pos else None,
            hint="fix the Cypher syntax (Neo4j dialect)",
        )
    if "parameter" in lowered and ("missing" in lowered or "expected" in lowered):
        return QueryError("parameter", _short(message), cypher, hint="pass every $parameter the query uses")
    return QueryError("runtime", _short(message), cypher)


_JAVA_CAUSE = re.compile(r"\s*\(caused by [\w.$]+\)")
_JAVA_CLASS = re.compile(r"\b(?:[a-z_][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error)\b:?\s*")


def _short(message: str) -> str:
    """Strip Java exception class names (prefixes, ``(caused by org.antlr...Exception)``) and stack noise
    from a database message."""
    text = message.strip().splitlines()[0] if message.strip() else message
    for marker in ("Exception: ", "Error: "):
        while marker in text and text.index(marker) < 120:
            text = text.split(marker, 1)[1]
    text = _JAVA_CLASS.sub("", _JAVA_CAUSE.sub("", text))
    return text.strip()


def timeout_error(cypher: str, timeout_s: float) -> QueryError:
    """The error of a query stopped at its time limit: names the limit and how to raise it."""
    return QueryError(
        "timeout",
        f"the query took longer than its time limit of {timeout_s:g} s",
        cypher,
        hint="narrow it: start from a nodeSymbol, bound hops (*1..3), add LIMIT; or raise the limit "
        "(CLI: --timeout)",
    )
