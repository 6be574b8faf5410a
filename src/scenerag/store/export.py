"""Read a whole scene graph back out of a GraphStore as a ``SceneGraph`` (for export, indexing, viewers).

The inverse of the loader's layout (``store.rows``): ``nodeSymbol``/``class``/``center``/``bbox_*``/
``description`` become the node's fields, other properties its attributes; the internal ``cell`` key is
dropped. Nodes without a ``nodeSymbol`` (created by hand) are skipped and counted in ``metadata``.
"""

from __future__ import annotations

from typing import Any

from scenerag.graph import ontology as ont
from scenerag.graph.model import Node, SceneGraph
from scenerag.store.base import GraphStore
from scenerag.store.rows import CELL_KEY

NODES = "MATCH (n) RETURN labels(n) AS l, properties(n) AS p"
EDGES = "MATCH (a)-[r]->(b) RETURN a.nodeSymbol AS a, type(r) AS t, b.nodeSymbol AS b, properties(r) AS p"
COUNT = "MATCH (n) OPTIONAL MATCH (n)-[r]->() RETURN count(DISTINCT n) AS n, count(r) AS r"


def _vec(value: Any) -> tuple[float, float, float] | None:
    if isinstance(value, dict) and {"x", "y"} <= set(value):
        return (float(value["x"]), float(value["y"]), float(value.get("z", 0.0)))
    if isinstance(value, (list, tuple)) and len(value) == 3:
        return (float(value[0]), float(value[1]), float(value[2]))
    return None


def export_graph(store: GraphStore, *, timeout_s: float = 600.0) -> SceneGraph:
    """Every node and relationship of ``store`` as a ``SceneGraph``."""
    counts = store.query(COUNT, timeout_s=timeout_s).rows[0]
    cap = int(counts["n"]) + int(counts["r"]) + 10
    graph = SceneGraph({"source": "graph store"})
    skipped = 0
    for row in store.query(NODES, timeout_s=timeout_s, max_rows=cap).rows:
        props = dict(row["p"] or {})
        symbol = props.pop(ont.SYMBOL_KEY, None)
        labels = row["l"] or ["Node"]
        position = _vec(props.pop(ont.CENTER_KEY, None))
        if not isinstance(symbol, str) or not ont.is_symbol(symbol) or position is None:
            skipped += 1
            continue
        props.pop(CELL_KEY, None)
        bbox_center = _vec(props.pop(ont.BBOX_CENTER_KEY, None))
        bbox_dim = _vec(props.pop(ont.BBOX_DIM_KEY, None))
        if (bbox_center is None) != (bbox_dim is None):
            bbox_center = bbox_dim = None
        description = props.pop(ont.DESCRIPTION_KEY, None)
        attributes = {k: v for k, v in props.items() if ont.is_identifier(k) and not isinstance(v, dict)}
        graph.add_node(
            Node(
                symbol=symbol,
                label=labels[0] if isinstance(labels, list) else str(labels),
                class_name=str(props.pop(ont.CLASS_KEY, None) or "unknown"),
                position=position,
                bbox_center=bbox_center,
                bbox_dim=bbox_dim,
                description=description if isinstance(description, str) else None,
                attributes={k: v for k, v in attributes.items() if k != ont.CLASS_KEY},
            )
        )
    for row in store.query(EDGES, timeout_s=timeout_s, max_rows=cap).rows:
        a, b = row["a"], row["b"]
        if a in graph and b in graph and a != b:
            attrs = {k: v for k, v in (row["p"] or {}).items() if not isinstance(v, dict)}
            graph.add_edge(a, b, str(row["t"]), **attrs)
    if skipped:
        graph.metadata["skipped_nodes"] = skipped
    return graph
