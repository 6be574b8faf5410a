"""Read a whole scene graph back out of a GraphStore as a ``SceneGraph`` (export, indexing, viewers).

Contract: every node with a ``nodeSymbol`` and a 3D ``center`` becomes a ``Node`` (first label, ``class``,
bbox, description; other properties that are plain values become attributes; the loader's internal
``cell`` key is dropped) — the inverse of the loader's layout (``store.rows``); every relationship between
two such nodes becomes an ``Edge`` with its plain-valued properties. What cannot be represented is counted
in ``metadata["skipped_nodes"/"skipped_edges"]``. Read-only queries only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scenerag.errors import SceneRagError
from scenerag.graph import ontology as ont
from scenerag.graph.model import Node, SceneGraph
from scenerag.store.base import GraphStore
from scenerag.store.rows import CELL_KEY

READ_TIMEOUT_S = 600.0
MAX_ROWS = 50_000_000
_NODE_FIELDS = frozenset(
    {
        ont.SYMBOL_KEY,
        ont.CLASS_KEY,
        ont.CENTER_KEY,
        ont.BBOX_CENTER_KEY,
        ont.BBOX_DIM_KEY,
        ont.DESCRIPTION_KEY,
        CELL_KEY,
    }
)


def _vec3(value: Any) -> tuple[float, float, float] | None:
    if isinstance(value, Mapping) and "x" in value and "y" in value:
        return (float(value["x"]), float(value["y"]), float(value.get("z") or 0.0))
    if (
        isinstance(value, (list, tuple))
        and len(value) == 3
        and all(isinstance(v, (int, float)) for v in value)
    ):
        return (float(value[0]), float(value[1]), float(value[2]))
    return None


def _plain(value: Any) -> bool:
    """A value ``SceneGraph`` attributes accept: str/number/bool or a flat list of them."""
    scalar = (str, int, float, bool)
    return isinstance(value, scalar) or (
        isinstance(value, list) and all(isinstance(v, scalar) for v in value)
    )


def _reserved_free(props: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: v
        for k, v in props.items()
        if k not in _NODE_FIELDS and k not in ont.RESERVED_NODE_KEYS and ont.is_identifier(k) and _plain(v)
    }


def export_graph(store: GraphStore, *, timeout_s: float = READ_TIMEOUT_S) -> SceneGraph:
    """The graph stored in ``store`` (see module docstring)."""
    graph = SceneGraph(metadata={"source": "graph store"})
    skipped_nodes = skipped_edges = 0
    node_rows = store.query(
        "MATCH (n) RETURN labels(n) AS labels, properties(n) AS props", timeout_s=timeout_s, max_rows=MAX_ROWS
    ).rows
    for row in node_rows:
        props = row.get("props") or {}
        symbol = props.get(ont.SYMBOL_KEY)
        center = _vec3(props.get(ont.CENTER_KEY))
        if not isinstance(symbol, str) or center is None or not ont.is_symbol(symbol) or symbol in graph:
            skipped_nodes += 1
            continue
        labels = row.get("labels") or []
        label = str(labels[0] if isinstance(labels, list) and labels else labels or "Node")
        bbox_center = _vec3(props.get(ont.BBOX_CENTER_KEY))
        bbox_dim = _vec3(props.get(ont.BBOX_DIM_KEY))
        if bbox_center is None or bbox_dim is None or min(bbox_dim) < 0:
            bbox_center = bbox_dim = None
        description = props.get(ont.DESCRIPTION_KEY)
        try:
            graph.add_node(
                Node(
                    symbol=symbol,
                    label=label,
                    class_name=str(props.get(ont.CLASS_KEY) or label.lower()),
                    position=center,
                    bbox_center=bbox_center,
                    bbox_dim=bbox_dim,
                    description=str(description) if description is not None else None,
                    attributes=_reserved_free(props),
                )
            )
        except SceneRagError:  # a node the in-memory model cannot hold (bad label or value): not drawable
            skipped_nodes += 1
    edge_rows = store.query(
        "MATCH (a)-[r]->(b) RETURN a.nodeSymbol AS a, type(r) AS t, b.nodeSymbol AS b, properties(r) AS p",
        timeout_s=timeout_s,
        max_rows=MAX_ROWS,
    ).rows
    for row in edge_rows:
        source, target, etype = row.get("a"), row.get("b"), row.get("t")
        if source not in graph or target not in graph or source == target or not isinstance(etype, str):
            skipped_edges += 1
            continue
        attrs = {k: v for k, v in (row.get("p") or {}).items() if ont.is_identifier(k) and _plain(v)}
        try:
            graph.add_edge(str(source), str(target), etype, **attrs)
        except SceneRagError:
            skipped_edges += 1
    graph.metadata.update(skipped_nodes=skipped_nodes, skipped_edges=skipped_edges)
    return graph
