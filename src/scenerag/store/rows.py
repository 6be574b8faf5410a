"""How a ``SceneGraph`` is laid out in a property-graph database (shared by every backend).

Node properties: ``nodeSymbol``, ``class``, ``center`` (3D point), ``cell`` (10 m grid key for indexed
spatial filters), ``bbox_center`` (point) and ``bbox_dim`` ([dx, dy, dz]) when known, ``description``,
then the node's free attributes. Points are plain ``{"x", "y", "z"}`` dicts here; backends convert.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator
from operator import attrgetter
from typing import Any

from scenerag.graph import ontology as ont
from scenerag.graph.model import Edge, Node, SceneGraph

CELL_SIZE_M = 10.0
CELL_KEY = "cell"


def cell_key(x: float, y: float, size: float = CELL_SIZE_M) -> str:
    """Grid key of the ``size``-metre cell holding (x, y): ``'ix_iy'``."""
    return f"{math.floor(x / size)}_{math.floor(y / size)}"


def cells_within(x: float, y: float, radius: float, size: float = CELL_SIZE_M) -> list[str]:
    """Keys of every grid cell that intersects the disc of ``radius`` around (x, y)."""
    x0, x1 = math.floor((x - radius) / size), math.floor((x + radius) / size)
    y0, y1 = math.floor((y - radius) / size), math.floor((y + radius) / size)
    return [f"{i}_{j}" for i in range(x0, x1 + 1) for j in range(y0, y1 + 1)]


def point(v: tuple[float, float, float]) -> dict[str, float]:
    return {"x": v[0], "y": v[1], "z": v[2]}


def node_properties(node: Node) -> dict[str, Any]:
    """Database properties of ``node`` (see module docstring)."""
    x, y, z = node.position
    props: dict[str, Any] = {
        ont.SYMBOL_KEY: node.symbol,
        ont.CLASS_KEY: node.class_name,
        ont.CENTER_KEY: {"x": x, "y": y, "z": z},
        CELL_KEY: cell_key(x, y),
    }
    props.update(node_extras(node))
    return props


def node_extras(node: Node) -> dict[str, Any]:
    """The properties of ``node`` beyond symbol, class, center and cell (bbox, description, non-null
    free attributes), in ``node_properties`` order."""
    props: dict[str, Any] = {}
    if node.bbox_center is not None and node.bbox_dim is not None:
        props[ont.BBOX_CENTER_KEY] = point(node.bbox_center)
        props[ont.BBOX_DIM_KEY] = list(node.bbox_dim)
    if node.description is not None:
        props[ont.DESCRIPTION_KEY] = node.description
    if node.attributes:
        props.update((k, v) for k, v in node.attributes.items() if v is not None)
    return props


def nodes_by_label(graph: SceneGraph) -> dict[str, list[Node]]:
    out: dict[str, list[Node]] = defaultdict(list)
    for node in graph.nodes():
        out[node.label].append(node)
    return dict(out)


def edge_groups(graph: SceneGraph) -> Iterator[tuple[str, list[str], list[str], list[dict[str, Any]] | None]]:
    """Edges grouped by type: ``(type, sources, targets, attributes or None when no edge has any)``."""
    by_type: dict[str, list[Edge]] = defaultdict(list)
    for e in graph.edges():
        by_type[e.type].append(e)
    for etype, edges in by_type.items():
        attrs = [e.attributes for e in edges]
        yield (
            etype,
            list(map(attrgetter("source"), edges)),
            list(map(attrgetter("target"), edges)),
            attrs if any(attrs) else None,
        )
