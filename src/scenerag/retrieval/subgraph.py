"""Task-driven subgraph retrieval: thresholded top-k entity search per query, the subgraph the hits induce
(plus the containment chain that connects them), per-node attribute filtering, and a compact JSON form.

Contract: :func:`retrieve_subgraph` runs one ``EntityStore.search`` per :class:`EntityQuery` (top ``k``,
``min_score``, the query's metadata filter, and a ``relative_margin`` below the query's best hit), keeps the
hits that are nodes of ``graph``, adds ``always_include``, optionally adds the ``CONTAINS`` ancestors that
connect a hit to the rest of the scene (receptacles; ``connector_labels``), and returns a
:class:`RetrievedSubgraph` whose ``graph`` holds those nodes, every edge of ``graph`` among them, and on each
node only the attributes that the queries that retrieved it ask for (plus ``keep_attributes``).
:func:`serialize_graph` renders any graph (a retrieved subgraph or a whole one) as compact JSON for a prompt.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scenerag.errors import SceneRagError
from scenerag.graph import ontology as ont
from scenerag.graph.model import Node, SceneGraph
from scenerag.retrieval.entity_store import EntityHit, EntityStore
from scenerag.retrieval.vector_index import FilterSpec

ALL_ATTRIBUTES = "*"
"""An :class:`EntityQuery` attribute wildcard: keep every attribute of the nodes it retrieves."""


class SubgraphRetrievalError(SceneRagError):
    """A subgraph retrieval request is malformed (bad query text, k, threshold or attribute names)."""


@dataclass(frozen=True, slots=True)
class EntityQuery:
    """One entity to look for: open-vocabulary ``text`` (``"frying pan"``), the attributes of its matches
    the task needs (``ALL_ATTRIBUTES`` for all), an optional metadata ``filter`` and where it came from."""

    text: str
    attributes: tuple[str, ...] = ()
    filter: FilterSpec | None = None
    source: str = "query"

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text.strip():
            raise SubgraphRetrievalError(f"entity query text must be a non-empty string, got {self.text!r}")


@dataclass(frozen=True, slots=True)
class SubgraphConfig:
    """How queries become a subgraph.

    ``k``: hits per query; ``min_score``: cosine threshold; ``relative_margin``: also drop hits scoring more
    than this below the query's best hit (None: off), so "soap bottle" keeps soap bottles, not every bottle;
    ``labels``: node labels searched; ``connect_containment``: add the ``CONTAINS`` ancestors of every
    selected node whose label is in ``connector_labels`` (the receptacles holding a hit), given
    ``connector_attributes`` only; ``keep_attributes``: attributes every retrieved node keeps (identity).
    """

    k: int = 8
    min_score: float = 0.5
    relative_margin: float | None = 0.2
    labels: tuple[str, ...] | None = (ont.OBJECT,)
    connect_containment: bool = True
    connector_labels: tuple[str, ...] = (ont.OBJECT,)
    connector_attributes: tuple[str, ...] = ()
    keep_attributes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.k, int) or self.k < 1:
            raise SubgraphRetrievalError(f"k must be a positive integer, got {self.k!r}")
        if not -1.0 <= self.min_score <= 1.0:
            raise SubgraphRetrievalError(f"min_score is a cosine similarity in [-1, 1], got {self.min_score}")
        if self.relative_margin is not None and self.relative_margin < 0:
            raise SubgraphRetrievalError(f"relative_margin must be >= 0 or None, got {self.relative_margin}")


@dataclass(frozen=True, slots=True)
class QueryHits:
    """What one query retrieved (after threshold, margin and the graph-membership check)."""

    query: EntityQuery
    hits: tuple[EntityHit, ...]

    @property
    def symbols(self) -> list[str]:
        return [h.symbol for h in self.hits]


@dataclass
class RetrievedSubgraph:
    """A retrieved subgraph: ``graph`` (filtered attributes), which query retrieved each node, the connector
    and always-included nodes, the attributes kept per node, and the retrieval time."""

    graph: SceneGraph
    per_query: list[QueryHits]
    retrieved: dict[str, list[str]] = field(default_factory=dict)  # symbol -> query texts
    connectors: list[str] = field(default_factory=list)
    included: list[str] = field(default_factory=list)
    kept_attributes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def symbols(self) -> list[str]:
        return [n.symbol for n in self.graph.nodes()]

    def classes(self) -> set[str]:
        """Classes of every node in the subgraph."""
        return {n.class_name for n in self.graph.nodes()}


def _hits_for(store: EntityStore, graph: SceneGraph, query: EntityQuery, config: SubgraphConfig) -> QueryHits:
    hits = store.search(
        query.text, config.k, filter=query.filter, labels=config.labels, min_score=config.min_score
    )
    hits = [h for h in hits if h.symbol in graph]
    if hits and config.relative_margin is not None:
        floor = hits[0].score - config.relative_margin
        hits = [h for h in hits if h.score >= floor]
    return QueryHits(query, tuple(hits))


def containment_ancestors(graph: SceneGraph, symbol: str, labels: Iterable[str]) -> list[str]:
    """``CONTAINS`` ancestors of ``symbol`` whose label is in ``labels``, nearest first, stopping at the first
    ancestor with another label (an object's receptacles up to the place it stands at)."""
    wanted = frozenset(labels)
    out: list[str] = []
    frontier = [symbol]
    seen = {symbol}
    while frontier:
        current = frontier.pop(0)
        for parent in graph.parents(current, ont.CONTAINS):
            if parent.symbol in seen or parent.label not in wanted:
                continue
            seen.add(parent.symbol)
            out.append(parent.symbol)
            frontier.append(parent.symbol)
    return out


def _filtered_node(node: Node, keep: Iterable[str] | None) -> Node:
    """A copy of ``node`` without geometry or description, holding only the ``keep`` attributes (None: all)."""
    if keep is None:
        attributes = dict(node.attributes)
    else:
        wanted = set(keep)
        attributes = {k: v for k, v in node.attributes.items() if k in wanted}
    return Node(node.symbol, node.label, node.class_name, node.position, attributes=attributes)


def induced_subgraph(
    graph: SceneGraph,
    symbols: Iterable[str],
    attributes: Mapping[str, Iterable[str] | None] | None = None,
    *,
    default_attributes: Iterable[str] | None = None,
) -> SceneGraph:
    """The nodes ``symbols`` of ``graph`` and every edge among them. ``attributes`` maps a symbol to the
    attributes it keeps (None: all); symbols not in it keep ``default_attributes`` (None: all)."""
    chosen = [s for s in dict.fromkeys(symbols)]
    missing = [s for s in chosen if s not in graph]
    if missing:
        raise SubgraphRetrievalError(f"symbols not in the graph: {', '.join(missing[:10])}")
    per_node = dict(attributes or {})
    default = None if default_attributes is None else tuple(default_attributes)
    sub = SceneGraph(metadata=dict(graph.metadata))
    for symbol in chosen:
        keep = per_node.get(symbol, default)
        sub.add_node(_filtered_node(graph.node(symbol), keep), validate=False)
    members = set(chosen)
    for edge in graph.edges():
        if edge.source in members and edge.target in members:
            sub.add_edge(edge.source, edge.target, edge.type, validate=False, **edge.attributes)
    return sub


def retrieve_subgraph(
    store: EntityStore,
    graph: SceneGraph,
    queries: Sequence[EntityQuery],
    config: SubgraphConfig | None = None,
    *,
    always_include: Iterable[str] = (),
) -> RetrievedSubgraph:
    """Search ``store`` once per query and return the subgraph of ``graph`` the hits induce (module docs).

    ``graph`` is the current scene (the store may lag behind it; hits on nodes it no longer holds are
    dropped); ``always_include`` symbols (e.g. the robot and what it holds) join with all their attributes.
    """
    config = config or SubgraphConfig()
    started = time.perf_counter()
    per_query = [_hits_for(store, graph, q, config) for q in queries]
    retrieved: dict[str, list[str]] = {}
    wants_all: set[str] = set()
    kept: dict[str, set[str]] = {}
    for qh in per_query:
        for hit in qh.hits:
            retrieved.setdefault(hit.symbol, []).append(qh.query.text)
            if ALL_ATTRIBUTES in qh.query.attributes:
                wants_all.add(hit.symbol)
            kept.setdefault(hit.symbol, set(config.keep_attributes)).update(
                a for a in qh.query.attributes if a != ALL_ATTRIBUTES
            )
    included = [s for s in dict.fromkeys(always_include) if s in graph and s not in retrieved]
    selected = list(retrieved) + included
    connectors: list[str] = []
    if config.connect_containment:
        chosen = set(selected)
        for symbol in list(selected):
            for ancestor in containment_ancestors(graph, symbol, config.connector_labels):
                if ancestor not in chosen:
                    chosen.add(ancestor)
                    connectors.append(ancestor)
    attributes: dict[str, Iterable[str] | None] = {}
    kept_attributes: dict[str, tuple[str, ...]] = {}
    for symbol in retrieved:
        node = graph.node(symbol)
        names = (
            tuple(node.attributes)
            if symbol in wants_all
            else tuple(a for a in node.attributes if a in kept[symbol])
        )
        attributes[symbol] = names
        kept_attributes[symbol] = names
    for symbol in included:
        attributes[symbol] = None
        kept_attributes[symbol] = tuple(graph.node(symbol).attributes)
    connector_keep = set(config.keep_attributes) | set(config.connector_attributes)
    for symbol in connectors:
        names = tuple(a for a in graph.node(symbol).attributes if a in connector_keep)
        attributes[symbol] = names
        kept_attributes[symbol] = names
    sub = induced_subgraph(graph, [*selected, *connectors], attributes)
    return RetrievedSubgraph(
        graph=sub,
        per_query=per_query,
        retrieved=retrieved,
        connectors=connectors,
        included=included,
        kept_attributes=kept_attributes,
        seconds=time.perf_counter() - started,
    )


# -- serialisation ----------------------------------------------------------------------------------------
def _json_value(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


def graph_records(
    graph: SceneGraph,
    *,
    id_attribute: str | None = "objectId",
    labels: Sequence[str] | None = None,
    nest_containment: bool = True,
    include_label: bool = False,
) -> dict[str, Any]:
    """The plain-JSON form :func:`serialize_graph` writes: ``{"nodes": [...], "edges": [...]}``.

    A node is ``{"id", "class", [label], ["in": container id], **attributes}``; ``id`` is the node's
    ``id_attribute`` value when it has one (an object id a planner can act on) else its symbol. With
    ``nest_containment`` a ``CONTAINS`` edge between two exported nodes becomes the child's ``"in"`` (the
    first such parent); every other edge is ``[source id, type, target id]``. ``labels`` limits the nodes.
    """
    wanted = None if labels is None else frozenset(labels)
    nodes = [n for n in graph.nodes() if wanted is None or n.label in wanted]
    shown = {n.symbol for n in nodes}
    ids: dict[str, str] = {}
    for node in nodes:
        value = node.attributes.get(id_attribute) if id_attribute else None
        ids[node.symbol] = value if isinstance(value, str) and value else node.symbol
    container: dict[str, str] = {}
    edges: list[list[str]] = []
    for edge in graph.edges():
        if edge.source not in shown or edge.target not in shown:
            continue
        if nest_containment and edge.type == ont.CONTAINS and edge.target not in container:
            container[edge.target] = ids[edge.source]
            continue
        edges.append([ids[edge.source], edge.type, ids[edge.target]])
    records: list[dict[str, Any]] = []
    for node in nodes:
        record: dict[str, Any] = {"id": ids[node.symbol], "class": node.class_name}
        if include_label:
            record["label"] = node.label
        if node.symbol in container:
            record["in"] = container[node.symbol]
        for key, value in node.attributes.items():
            if key != id_attribute:
                record[key] = _json_value(value)
        records.append(record)
    return {"nodes": records, "edges": edges}


def serialize_graph(
    graph: SceneGraph,
    *,
    id_attribute: str | None = "objectId",
    labels: Sequence[str] | None = None,
    nest_containment: bool = True,
    include_label: bool = False,
) -> str:
    """Compact JSON (no spaces, one line) of :func:`graph_records` for an LLM prompt."""
    records = graph_records(
        graph,
        id_attribute=id_attribute,
        labels=labels,
        nest_containment=nest_containment,
        include_label=include_label,
    )
    return json.dumps(records, separators=(",", ":"), ensure_ascii=False)
