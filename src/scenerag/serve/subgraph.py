"""``retrieve_subgraph``: find the nodes a text is about, then return the subgraph they induce together with
their ``CONTAINS`` ancestors (object -> place -> room -> floor ...), read from the store with Cypher.

Contract: search is *semantic* when an :class:`~scenerag.retrieval.EntityStore` is given (embedding
similarity over node documents), else *lexical* (words of the text matched case-insensitively against
the string properties ``class``/``description``/``name``..., and exact node symbols); the result names the
mode. Servers are semantic by default: :func:`entity_index_for` opens (or builds) the index ``scenerag
index`` keeps for the database, with the embedder ``scenerag search`` uses; ``embedder="none"`` makes
them lexical. Nodes come back as plain property dicts (``symbol``, ``label``, ``class``, ``center``, ...), edges as
``{source, type, target}`` between returned nodes only.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from scenerag.graph import ontology as ont
from scenerag.graph.ontology import LAYER_RANK
from scenerag.serve.errors import ServiceError
from scenerag.store.base import GraphStore
from scenerag.store.rows import CELL_KEY

if TYPE_CHECKING:
    from scenerag.retrieval import Embedder, EntityStore
    from scenerag.store.base import CypherStore
    from scenerag.store.schema import GraphSchema

SearchMode = Literal["semantic", "lexical"]
log = logging.getLogger("scenerag.serve")
#: the embedder of retrieve_subgraph when none is named: the one `scenerag index` / `search` use
DEFAULT_SUBGRAPH_EMBEDDER = "minilm"

#: string properties the lexical search looks in, when the graph has them
SEARCH_KEYS = ("class", "name", "description", "caption", "summary", "title")
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "near",
        "next",
        "of",
        "on",
        "or",
        "show",
        "the",
        "there",
        "these",
        "this",
        "those",
        "to",
        "what",
        "where",
        "which",
        "who",
        "with",
        "find",
        "get",
        "give",
        "list",
        "all",
        "any",
    ]
)
_WORD = re.compile(r"[A-Za-z0-9]+")
_SYMBOL = re.compile(r"\b[A-Za-z]\d+\b")
#: exact-symbol matches rank above any word match
SYMBOL_MATCH_BONUS = 1.0
#: word matches read per label (ties beyond this are cut; semantic search has no such limit)
LEXICAL_ROWS_PER_LABEL = 200


@dataclass
class SubgraphHit:
    """A node the search found: its score (higher is better) and what matched."""

    symbol: str
    label: str
    class_name: str
    score: float
    matched: str

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["class"] = out.pop("class_name")
        return out


@dataclass
class RetrievedSubgraph:
    """Hits (best first), the nodes of the induced subgraph (hits and ancestors) and its edges."""

    search: SearchMode
    hits: list[SubgraphHit] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, str]] = field(default_factory=list)

    @property
    def symbols(self) -> list[str]:
        return [str(n["symbol"]) for n in self.nodes]

    def to_dict(self) -> dict[str, Any]:
        return {
            "search": self.search,
            "hits": [h.to_dict() for h in self.hits],
            "nodes": self.nodes,
            "edges": self.edges,
        }


def search_words(text: str) -> list[str]:
    """Lower-case content words of ``text`` with a plural ``s`` dropped (``signs`` -> ``sign``)."""
    words: dict[str, None] = {}
    for raw in _WORD.findall(text.lower()):
        if len(raw) < 2 or raw in STOPWORDS or raw.isdigit():
            continue
        word = raw[:-1] if len(raw) > 3 and raw.endswith("s") and not raw.endswith("ss") else raw
        words.setdefault(word)
    return list(words)


def node_record(labels: Any, props: dict[str, Any]) -> dict[str, Any]:
    """A node as returned to clients: ``symbol``, ``label``, then its stored properties (internal ones dropped)."""
    label_list = labels if isinstance(labels, list) else [labels]
    out: dict[str, Any] = {
        "symbol": props.get(ont.SYMBOL_KEY),
        "label": str(label_list[0]) if label_list else "",
    }
    for key, value in props.items():
        if key not in (ont.SYMBOL_KEY, CELL_KEY):
            out[key] = value
    return out


class SubgraphRetriever:
    """Runs ``retrieve_subgraph`` over a (read-only) store; semantic when built with an entity store.

    Every lookup starts from a labelled node matched by ``nodeSymbol`` (indexed per label), so the cost
    follows the size of the answer, not of the graph.
    """

    def __init__(self, entity_store: EntityStore | None = None) -> None:
        self.entity_store = entity_store

    @property
    def mode(self) -> SearchMode:
        return "semantic" if self.entity_store is not None else "lexical"

    def retrieve(
        self,
        store: GraphStore,
        text: str,
        *,
        k: int = 10,
        labels: Sequence[str] | None = None,
        ancestors: bool = True,
        timeout_s: float | None = None,
    ) -> RetrievedSubgraph:
        """Search ``text`` (``k`` hits, optionally only nodes with ``labels``) and expand to the subgraph."""
        if not text or not text.strip():
            raise ServiceError("bad_request", "the search text is empty", hint="describe what to look for")
        if k < 1:
            raise ServiceError("bad_request", f"k must be >= 1 (got {k})")
        schema = store.schema()
        if labels:
            unknown = [label for label in labels if label not in schema.node_counts]
            if unknown:
                raise ServiceError(
                    "unknown_name",
                    f"unknown node label(s) {unknown}",
                    hint="labels in this graph: " + ", ".join(schema.labels),
                )
        hits = (
            self._semantic(text, k, labels)
            if self.entity_store is not None
            else self._lexical(store, schema, text, k, labels, timeout_s)
        )
        members: dict[str, str] = {h.symbol: h.label for h in hits}  # symbol -> label, in order
        if ancestors and hits and schema.rel_counts.get(ont.CONTAINS):
            depth = max(1, schema.hierarchy_depth())
            for label, symbols in _by_label(members).items():
                rows = store.query(
                    f"MATCH (h:{label}) WHERE h.nodeSymbol IN $symbols WITH h "
                    f"MATCH (h)<-[:CONTAINS*1..{depth}]-(a) RETURN DISTINCT a.nodeSymbol AS s, labels(a) AS l",
                    {"symbols": symbols},
                    timeout_s=timeout_s,
                    max_rows=len(symbols) * (depth + 2) + 10,
                ).rows
                for row in rows:
                    if row.get("s") is not None:
                        members.setdefault(str(row["s"]), _first_label(row.get("l")))
        nodes: dict[str, dict[str, Any]] = {}
        for label, symbols in _by_label(members).items():
            for row in store.query(
                f"MATCH (n:{label}) WHERE n.nodeSymbol IN $symbols RETURN labels(n) AS labels, properties(n) AS props",
                {"symbols": symbols},
                timeout_s=timeout_s,
                max_rows=len(symbols) + 10,
            ).rows:
                record = node_record(row["labels"], row["props"])
                nodes[str(record["symbol"])] = record
        result = RetrievedSubgraph(self.mode, [h for h in hits if h.symbol in nodes])  # drop stale index hits
        result.nodes = [nodes[s] for s in members if s in nodes]
        everything = list(nodes)
        for label, symbols in _by_label({s: members[s] for s in nodes}).items():
            rows = store.query(
                f"MATCH (a:{label})-[r]->(b) WHERE a.nodeSymbol IN $symbols AND b.nodeSymbol IN $everything "
                "RETURN a.nodeSymbol AS source, type(r) AS type, b.nodeSymbol AS target",
                {"symbols": symbols, "everything": everything},
                timeout_s=timeout_s,
                max_rows=max(100, len(symbols) * len(everything)),
            ).rows
            result.edges += [
                {"source": str(r["source"]), "type": str(r["type"]), "target": str(r["target"])} for r in rows
            ]
        return result

    def _semantic(self, text: str, k: int, labels: Sequence[str] | None) -> list[SubgraphHit]:
        assert self.entity_store is not None
        found = self.entity_store.search(text, k, labels=list(labels) if labels else None)
        return [
            SubgraphHit(
                h.symbol,
                str(h.metadata.get("label", "")),
                str(h.metadata.get(ont.CLASS_KEY, "")),
                float(h.score),
                h.matched_text,
            )
            for h in found
        ]

    def _lexical(
        self,
        store: GraphStore,
        schema: GraphSchema,
        text: str,
        k: int,
        labels: Sequence[str] | None,
        timeout_s: float | None,
    ) -> list[SubgraphHit]:
        """Word matches per label: class values are matched against the schema's value lists first, so
        only labels whose classes (or free texts) can match are scanned at all; node symbols in the text
        are looked up exactly and rank first."""
        symbols = list(dict.fromkeys(_SYMBOL.findall(text)))
        lowered = {s.lower() for s in symbols}
        words = [w for w in search_words(text) if w not in lowered]
        if not words and not symbols:
            raise ServiceError(
                "bad_request",
                f"nothing to search for in {text!r}",
                hint="use words naming classes or descriptions (e.g. 'chair near the window') or node symbols",
            )
        cap = max(LEXICAL_ROWS_PER_LABEL, 5 * k)
        found: dict[str, SubgraphHit] = {}
        for label in labels or schema.labels:
            query = _label_query(schema, label, words)
            if query is not None:
                cypher, params, keys = query
                for row in store.query(
                    cypher, {**params, "cap": cap}, timeout_s=timeout_s, max_rows=cap
                ).rows:
                    doc = " ".join(str(row.get(key) or "") for key in keys).lower()
                    matched = [w for w in words if w in doc]
                    if matched:
                        symbol = str(row["s"])
                        score = len(matched) / len(words)
                        found[symbol] = SubgraphHit(
                            symbol, label, str(row.get("class") or ""), score, " ".join(matched)
                        )
            if symbols:
                for row in store.query(
                    f"MATCH (n:{label}) WHERE n.nodeSymbol IN $symbols RETURN n.nodeSymbol AS s, n.class AS class",
                    {"symbols": symbols},
                    timeout_s=timeout_s,
                    max_rows=len(symbols) + 10,
                ).rows:
                    symbol = str(row["s"])
                    earlier = found.get(symbol)
                    found[symbol] = SubgraphHit(
                        symbol,
                        label,
                        str(row.get("class") or ""),
                        SYMBOL_MATCH_BONUS + (earlier.score if earlier else 0.0),
                        f"{symbol} {earlier.matched}" if earlier else symbol,
                    )
        return sorted(found.values(), key=lambda h: (-h.score, -LAYER_RANK.get(h.label, 0), h.symbol))[:k]


def entity_index_for(
    db: str | Path | None,
    store: CypherStore,
    embedder: str | Embedder | None = None,
    *,
    vectors: str | Path | None = None,
) -> EntityStore | None:
    """The entity index a server's ``retrieve_subgraph`` searches, or None for lexical search.

    ``embedder``: None means :data:`DEFAULT_SUBGRAPH_EMBEDDER` (semantic by default, like ``scenerag
    search``); ``"none"`` (or ``""``) means lexical; any other spec or an ``Embedder`` is used as given.
    The index lives in ``vectors`` (default: ``<db>/vectors``, for a server URI a cache folder; for an
    open store, its directory where it has one) and is built there when missing. The default falls back
    to lexical search (logged) when no index can be had; a named embedder that fails raises."""
    from scenerag.retrieval.entity_store import (
        database_fingerprint,
        read_source_record,
        vectors_dir,
        vectors_home,
        write_source_record,
    )
    from scenerag.serve.run import open_entity_index

    named = embedder is not None
    if isinstance(embedder, str) and embedder.strip().lower() in ("", "none"):
        return None
    spec = embedder if named else DEFAULT_SUBGRAPH_EMBEDDER
    if vectors is None:
        home = vectors_home(db) if db is not None else getattr(store, "root", None)
        vectors = vectors_dir(home) if home is not None else None
    try:
        index = open_entity_index(db, store, spec, vectors=vectors)  # type: ignore[arg-type]
        folder = Path(db) if db is not None and Path(db).is_dir() else None
        fingerprint = database_fingerprint(folder) if folder is not None else None
        if index.path is not None and (
            fingerprint is None or read_source_record(index.path).get("fingerprint") != fingerprint
        ):  # written to since it was indexed (or unknown): bring the index up to date
            from scenerag.store.export import export_graph

            report = index.sync(export_graph(store))
            if report.changed:
                index.save()
                log.info("entity index of %s: %s", db, report.summary())
            if fingerprint is not None and isinstance(spec, str):
                write_source_record(index.path, fingerprint=fingerprint, embedder=spec, nodes=len(index))
        return index
    except Exception as exc:
        if named:
            raise
        log.warning("retrieve_subgraph is lexical: no semantic index (%s)", exc)
        return None


def _by_label(members: dict[str, str]) -> dict[str, list[str]]:
    """Symbols grouped by label, in first-seen order."""
    out: dict[str, list[str]] = {}
    for symbol, label in members.items():
        if label:
            out.setdefault(label, []).append(symbol)
    return out


def _first_label(labels: Any) -> str:
    if isinstance(labels, list):
        return str(labels[0]) if labels else ""
    return str(labels or "")


def _label_query(
    schema: GraphSchema, label: str, words: list[str]
) -> tuple[str, dict[str, Any], list[str]] | None:
    """The Cypher that finds ``label`` nodes whose class or free texts contain one of ``words`` (None when
    none can), its parameters, and the returned text columns."""
    if not words:
        return None
    props = schema.node_properties.get(label, {})
    conditions: list[str] = []
    params: dict[str, Any] = {"words": words}
    cls = props.get(ont.CLASS_KEY)
    if cls is not None and cls.type == "STRING":
        if cls.values is not None:  # few distinct classes: match them here, then an equality filter
            classes = [v for v in cls.values if any(w in v.lower() for w in words)]
            if classes:
                conditions.append("n.class IN $classes")
                params["classes"] = classes
        else:
            conditions.append("any(w IN $words WHERE toLower(n.class) CONTAINS w)")
    texts = [
        key
        for key in SEARCH_KEYS
        if key != ont.CLASS_KEY and props.get(key) is not None and props[key].type == "STRING"
    ]
    conditions += [f"any(w IN $words WHERE toLower(n.{key}) CONTAINS w)" for key in texts]
    if not conditions:
        return None
    columns = "".join(f", n.{key} AS {key}" for key in texts)
    cypher = (
        f"MATCH (n:{label}) WHERE {' OR '.join(conditions)} "
        f"RETURN n.nodeSymbol AS s, n.class AS class{columns} ORDER BY s LIMIT $cap"
    )
    return cypher, params, ["class", *texts]
