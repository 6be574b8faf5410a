"""Read what planning needs from a graph database into an in-memory ``SceneGraph``, with Cypher.

Contract: :func:`graph_from_store` returns the navigation layer (every ``MeshPlace`` or ``Place`` with
its within-layer ``*_CONNECTED`` edges), every ``Room`` with its ``CONTAINS`` edges to those places
(or to the other place layer, when the rooms hold that one), the objects named in ``symbols`` (all
objects when ``symbols`` is None) with their parent places, and the ``Agent`` nodes with theirs. The
result feeds :func:`scenerag.planning.plan_for_goal` unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph
from scenerag.planning.domain import PlanningError
from scenerag.planning.navigation import PLACE_LABELS

if TYPE_CHECKING:
    from scenerag.store.base import GraphStore
    from scenerag.store.schema import GraphSchema

DEFAULT_QUERY_TIMEOUT_S = 120.0
MAX_ROWS = 50_000_000


def _spellings(symbols: Iterable[str]) -> list[str]:
    """Symbols and their case variants, so a goal's ``o12`` still finds node ``O12``."""
    out: dict[str, None] = {}
    for symbol in symbols:
        for variant in (symbol, symbol.upper(), symbol.lower(), symbol[:1].swapcase() + symbol[1:]):
            out.setdefault(variant)
    return list(out)


def choose_store_place_label(schema: GraphSchema) -> str:
    """The place layer with more within-layer ``*_CONNECTED`` edges (then more nodes) in the database."""
    candidates = [label for label in PLACE_LABELS if schema.node_counts.get(label)]
    if not candidates:
        raise PlanningError(
            "the database has no Place or MeshPlace nodes to plan over (labels: "
            + (", ".join(schema.labels) or "none")
            + ")",
            hint="load a scene graph with a places layer (scenerag load ...)",
        )

    def connectivity(label: str) -> tuple[int, int]:
        edges = sum(
            n
            for (a, t, b), n in schema.patterns.items()
            if a == label and b == label and t.endswith("_CONNECTED")
        )
        return edges, schema.node_counts[label]

    return max(candidates, key=connectivity)


def _position(row: Mapping[str, Any], what: str) -> tuple[float, float, float]:
    center = row.get("center")
    if not isinstance(center, Mapping) or not all(k in center for k in ("x", "y", "z")):
        raise PlanningError(
            f"{what} has no 3D center in the database (got {center!r})",
            hint="every node needs a center point property",
        )
    return (float(center["x"]), float(center["y"]), float(center.get("z") or 0.0))


def graph_from_store(
    store: GraphStore,
    symbols: Iterable[str] | None = None,
    *,
    place_label: str | None = None,
    include_agents: bool = True,
    timeout_s: float = DEFAULT_QUERY_TIMEOUT_S,
) -> SceneGraph:
    """The planning subgraph of ``store`` (see module doc); ``symbols`` are the goal's symbols."""
    schema = store.schema()
    label = place_label or choose_store_place_label(schema)
    if not schema.node_counts.get(label):
        raise PlanningError(f"the database has no {label} nodes", hint="choose another place_label")

    def rows(cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        result = store.query(cypher, params, timeout_s=timeout_s, max_rows=MAX_ROWS)
        if result.truncated:
            raise PlanningError(f"query returned more than {MAX_ROWS} rows: {cypher}")
        return result.rows

    graph = SceneGraph(metadata={"source": "graph store", "place_label": label})

    def add_node(row: Mapping[str, Any], node_label: str, **attributes: Any) -> None:
        symbol = str(row["symbol"])
        if symbol not in graph:
            graph.add(
                symbol,
                node_label,
                str(row.get("class") or node_label.lower()),
                _position(row, f"{node_label} {symbol}"),
                **attributes,
            )

    def add_edge(source: str, target: str, edge_type: str) -> None:
        if source in graph and target in graph and source != target:
            graph.add_edge(source, target, edge_type)

    for row in rows(f"MATCH (p:{label}) RETURN p.nodeSymbol AS symbol, p.class AS class, p.center AS center"):
        add_node(row, label)
    sibling_types = sorted(
        {t for (a, t, b) in schema.patterns if a == label and b == label and t.endswith("_CONNECTED")}
    )
    for edge_type in sibling_types:
        for row in rows(
            f"MATCH (a:{label})-[:{edge_type}]->(b:{label}) RETURN a.nodeSymbol AS a, b.nodeSymbol AS b"
        ):
            add_edge(str(row["a"]), str(row["b"]), edge_type)

    if schema.node_counts.get(ont.ROOM):
        for row in rows("MATCH (r:Room) RETURN r.nodeSymbol AS symbol, r.class AS class, r.center AS center"):
            add_node(row, ont.ROOM)
        for room_layer in (label, *(o for o in PLACE_LABELS if o != label)):
            if (ont.ROOM, ont.CONTAINS, room_layer) not in schema.patterns:
                continue
            query = (
                f"MATCH (r:Room)-[:CONTAINS]->(p:{room_layer}) RETURN r.nodeSymbol AS room, "
                "p.nodeSymbol AS symbol, p.class AS class, p.center AS center"
            )
            for row in rows(query):
                if room_layer != label:
                    add_node(row, room_layer)  # rooms hold the other layer: kept to assign rooms by proximity
                add_edge(str(row["room"]), str(row["symbol"]), ont.CONTAINS)
            break

    if schema.node_counts.get(ont.OBJECT):
        where = "" if symbols is None else " WHERE o.nodeSymbol IN $symbols"
        params = None if symbols is None else {"symbols": _spellings(symbols)}
        for row in rows(
            f"MATCH (o:Object){where} RETURN o.nodeSymbol AS symbol, o.class AS class, o.center AS center",
            params,
        ):
            add_node(row, ont.OBJECT)
        if (label, ont.CONTAINS, ont.OBJECT) in schema.patterns:
            for row in rows(
                f"MATCH (p:{label})-[:CONTAINS]->(o:Object){where} "
                "RETURN p.nodeSymbol AS p, o.nodeSymbol AS o",
                params,
            ):
                add_edge(str(row["p"]), str(row["o"]), ont.CONTAINS)

    if include_agents and schema.node_counts.get(ont.AGENT):
        stamped = "timestamp" in schema.node_properties.get(ont.AGENT, {})
        stamp = ", a.timestamp AS timestamp" if stamped else ""
        for row in rows(
            f"MATCH (a:Agent) RETURN a.nodeSymbol AS symbol, a.class AS class, a.center AS center{stamp}"
        ):
            extra = {"timestamp": row["timestamp"]} if stamped and row.get("timestamp") is not None else {}
            add_node(row, ont.AGENT, **extra)
        if (label, ont.CONTAINS, ont.AGENT) in schema.patterns:
            for row in rows(
                f"MATCH (p:{label})-[:CONTAINS]->(a:Agent) RETURN p.nodeSymbol AS p, a.nodeSymbol AS a"
            ):
                add_edge(str(row["p"]), str(row["a"]), ont.CONTAINS)
    return graph
