"""scenerag's native JSON scene-graph format (lossless round-trip of ``SceneGraph``).

Wire format (version 1)::

    {"format": "scenerag.scene_graph", "version": 1, "metadata": {...},
     "nodes": [{"symbol": "O1", "label": "Object", "class": "chair", "position": [x, y, z],
                "bbox": {"center": [x, y, z], "dim": [dx, dy, dz]}, "description": "...",
                "attributes": {...}}],
     "edges": [{"source": "R1", "target": "P3", "type": "CONTAINS", "attributes": {...}}]}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from scenerag.errors import SceneGraphError, SceneGraphFormatError
from scenerag.graph.model import Edge, Node, SceneGraph

FORMAT_NAME = "scenerag.scene_graph"
FORMAT_VERSION = 1


class BBoxRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")
    center: tuple[float, float, float]
    dim: tuple[float, float, float]


class NodeRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    symbol: str
    label: str
    class_name: str = Field(alias="class")
    position: tuple[float, float, float]
    bbox: BBoxRecord | None = None
    description: str | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)


class EdgeRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: str
    target: str
    type: str
    attributes: dict[str, Any] = Field(default_factory=dict)


class SceneGraphFile(BaseModel):
    """The whole file; validated field by field so errors can name ``nodes[12].position``."""

    model_config = ConfigDict(extra="forbid")
    format: Literal["scenerag.scene_graph"]
    version: Literal[1]
    metadata: dict[str, Any] = Field(default_factory=dict)
    nodes: list[NodeRecord]
    edges: list[EdgeRecord] = Field(default_factory=list)


def is_native(document: Any) -> bool:
    return isinstance(document, dict) and document.get("format") == FORMAT_NAME


def graph_to_dict(graph: SceneGraph) -> dict[str, Any]:
    """Plain-JSON representation of ``graph`` (see module docstring)."""
    nodes = []
    for n in graph.nodes():
        record: dict[str, Any] = {
            "symbol": n.symbol,
            "label": n.label,
            "class": n.class_name,
            "position": list(n.position),
        }
        if n.bbox_center is not None and n.bbox_dim is not None:
            record["bbox"] = {"center": list(n.bbox_center), "dim": list(n.bbox_dim)}
        if n.description is not None:
            record["description"] = n.description
        if n.attributes:
            record["attributes"] = n.attributes
        nodes.append(record)
    edges = []
    for e in graph.edges():
        record = {"source": e.source, "target": e.target, "type": e.type}
        if e.attributes:
            record["attributes"] = e.attributes
        edges.append(record)
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "metadata": graph.metadata,
        "nodes": nodes,
        "edges": edges,
    }


def save_native(graph: SceneGraph, path: str | Path) -> None:
    """Write ``graph`` to ``path`` atomically (temp file + rename)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(graph_to_dict(graph), separators=(",", ":")))
    tmp.replace(path)


def _field_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def graph_from_dict(document: dict[str, Any], source: str = "<memory>") -> SceneGraph:
    """Build a ``SceneGraph`` from the native wire format; errors name ``source`` and the field."""
    if document.get("format") != FORMAT_NAME:
        raise SceneGraphFormatError(source, f"not a {FORMAT_NAME} document", field="format")
    if document.get("version") != FORMAT_VERSION:
        raise SceneGraphFormatError(
            source,
            f"unsupported version {document.get('version')!r}; this scenerag reads version {FORMAT_VERSION}",
            field="version",
            hint="upgrade scenerag or re-export the graph",
        )
    try:
        parsed = SceneGraphFile.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise SceneGraphFormatError(
            source,
            first["msg"],
            field=_field_path(first["loc"]),
            hint=f"{exc.error_count()} problem(s) in all" if exc.error_count() > 1 else None,
        ) from None
    graph = SceneGraph(parsed.metadata)
    for i, rec in enumerate(parsed.nodes):
        node = Node(
            symbol=rec.symbol,
            label=rec.label,
            class_name=rec.class_name,
            position=rec.position,
            bbox_center=rec.bbox.center if rec.bbox else None,
            bbox_dim=rec.bbox.dim if rec.bbox else None,
            description=rec.description,
            attributes=rec.attributes,
        )
        try:
            graph.add_node(node)
        except SceneGraphError as exc:
            raise SceneGraphFormatError(source, exc.message, field=f"nodes[{i}]", hint=exc.hint) from None
    for i, erec in enumerate(parsed.edges):
        try:
            graph.add_edge(erec.source, erec.target, erec.type, **erec.attributes)
        except SceneGraphError as exc:
            raise SceneGraphFormatError(source, exc.message, field=f"edges[{i}]", hint=exc.hint) from None
    return graph


__all__ = ["Edge", "graph_from_dict", "graph_to_dict", "is_native", "save_native"]
