"""Import Hydra / spark_dsg scene graphs (JSON or binary) through the ``spark-dsg`` package.

Mapping: node id -> symbol (``O12``), layer -> label (OBJECTS -> Object, MESH_PLACES -> MeshPlace, ...),
semantic label -> class through the graph's labelspaces, edges between layers -> ``CONTAINS`` (parent is the
higher layer), edges within a layer -> ``<LAYER>_CONNECTED``. Objects keep every parent place.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from scenerag.errors import SceneGraphFormatError
from scenerag.graph import ontology as ont
from scenerag.graph.model import Node, SceneGraph

# spark_dsg attribute classes -> labels; used before layer names, which are ambiguous (AGENTS and OBJECTS
# share layer 2 in older files).
_ATTRIBUTE_LABELS = {
    "ObjectNodeAttributes": ont.OBJECT,
    "KhronosObjectAttributes": ont.OBJECT,
    "Place2dNodeAttributes": ont.MESH_PLACE,
    "PlaceNodeAttributes": ont.PLACE,
    "RoomNodeAttributes": ont.ROOM,
    "AgentNodeAttributes": ont.AGENT,
}


def _import_spark_dsg() -> Any:
    try:
        import spark_dsg
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SceneGraphFormatError(
            "<hydra>",
            "reading Hydra scene graphs needs the spark-dsg package",
            hint="pip install 'scenerag[hydra]'",
        ) from exc
    return spark_dsg


@contextlib.contextmanager
def _quiet_native_output() -> Any:
    """Silence spark_dsg's C++ warnings (written to fds 1 and 2) while loading; restore afterwards."""
    try:
        saved = [os.dup(1), os.dup(2)]
    except OSError:  # pragma: no cover
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)


def _labelspace_names(dsg: Any, layer: int, partition: int) -> dict[int, str]:
    try:
        space = dsg.get_labelspace(layer, partition)
        names = space.labels_to_names
        return dict(names() if callable(names) else names)
    except Exception:
        return {}


def _layer_labels(dsg: Any) -> dict[str, str]:
    """Map ``str(LayerKey)`` (e.g. ``'3[1]'``) to a label, from the graph's layer names."""
    out: dict[str, str] = {}
    for name, key in dict(dsg.layer_names).items():
        out.setdefault(str(key), ont.label_from_layer_name(name))
    return out


def _vec(value: Any) -> tuple[float, float, float]:
    return (float(value[0]), float(value[1]), float(value[2]))


def _box_holds(center: tuple[float, ...], dim: tuple[float, ...], point: tuple[float, ...]) -> bool:
    """Whether ``point`` lies in the box grown by 1 m a side; a box away from its own node is unset."""
    return all(abs(p - c) <= d / 2 + 1.0 for c, d, p in zip(center, dim, point, strict=True))


def load_hydra(path: str | Path) -> SceneGraph:
    """Read a spark_dsg scene graph file (``.json`` or binary) into a ``SceneGraph``."""
    path = Path(path)
    spark_dsg = _import_spark_dsg()
    try:
        with _quiet_native_output():
            dsg = spark_dsg.DynamicSceneGraph.load(str(path))
    except Exception as exc:
        raise SceneGraphFormatError(
            str(path),
            f"spark_dsg could not parse the file: {exc}",
            hint="check that it was written by Hydra / spark_dsg",
        ) from None
    return from_spark_dsg(dsg, source=str(path))


def from_spark_dsg(dsg: Any, source: str = "<spark_dsg>") -> SceneGraph:
    """Convert an in-memory ``spark_dsg.DynamicSceneGraph``."""
    layer_labels = _layer_labels(dsg)
    graph = SceneGraph({"source_format": "spark_dsg", "source": source})
    labelspaces: dict[str, dict[int, str]] = {}
    id_to_symbol: dict[int, str] = {}
    label_of: dict[str, str] = {}
    layer_of: dict[str, tuple[int, int]] = {}

    layers = list(dsg.layers) + list(getattr(dsg, "layer_partitions", []))
    for layer in layers:
        layer_id, partition = int(layer.id), int(getattr(layer, "partition", 0))
        key = f"{layer_id}[{partition}]" if partition else str(layer_id)
        names = labelspaces.setdefault(key, _labelspace_names(dsg, layer_id, partition))
        for dsg_node in layer.nodes:
            attrs = dsg_node.attributes
            label = _ATTRIBUTE_LABELS.get(type(attrs).__name__) or layer_labels.get(key) or f"Layer{layer_id}"
            symbol = f"{dsg_node.id.category}{dsg_node.id.category_id}"
            if not ont.is_symbol(symbol):
                symbol = ont.hydra_symbol(int(dsg_node.id.value))
            node = _convert_node(symbol, label, attrs, names, str(dsg_node.id))
            graph.add_node(node)
            id_to_symbol[int(dsg_node.id.value)] = symbol
            label_of[symbol] = label
            layer_of[symbol] = (layer_id, partition)

    for edge in dsg.edges:
        source, target = id_to_symbol.get(int(edge.source)), id_to_symbol.get(int(edge.target))
        if source is None or target is None:
            raise SceneGraphFormatError(
                source, f"edge {edge.source}->{edge.target} references a node that is not in any layer"
            )
        (ls, ps), (lt, pt) = layer_of[source], layer_of[target]
        if (ls, ps) == (lt, pt):
            graph.add_edge(source, target, ont.sibling_edge_type(label_of[source]))
        elif ls != lt:
            parent, child = (source, target) if ls > lt else (target, source)
            graph.add_edge(parent, child, ont.CONTAINS)
        else:  # same layer, different partitions (e.g. places <-> mesh places)
            graph.add_edge(source, target, "INTERLAYER_CONNECTED")

    graph.metadata["labelspaces"] = {
        k: {str(i): n for i, n in v.items()} for k, v in labelspaces.items() if v
    }
    known: dict[str, set[str]] = {}
    for symbol, (layer_id, partition) in layer_of.items():
        key = f"{layer_id}[{partition}]" if partition else str(layer_id)
        if labelspaces.get(key):
            known.setdefault(label_of[symbol], set()).update(labelspaces[key].values())
    graph.metadata[ont.KNOWN_CLASSES] = {label: sorted(names) for label, names in known.items()}
    return graph


def _convert_node(symbol: str, label: str, attrs: Any, names: dict[int, str], dsg_name: str) -> Node:
    extra: dict[str, Any] = {}
    semantic_label = getattr(attrs, "semantic_label", None)
    class_name = None
    if semantic_label is not None and semantic_label != getattr(attrs, "NO_SEMANTIC_LABEL", -1):
        extra["semantic_label"] = int(semantic_label)
        class_name = names.get(int(semantic_label))
    if class_name is None:
        # No labelspace entry: fall back to the layer's generic class ('place', 'agent', ...).
        class_name = label.lower() if label not in (ont.MESH_PLACE,) else "mesh_place"
    name = getattr(attrs, "name", "")
    if isinstance(name, str) and name and name not in (symbol, dsg_name):
        extra["name"] = name
    timestamp = getattr(attrs, "timestamp", None)
    if timestamp is not None:
        with contextlib.suppress(TypeError, ValueError):
            extra["timestamp_ns"] = int(getattr(timestamp, "value", timestamp))
    color = getattr(attrs, "color", None)
    if color is not None and label == ont.OBJECT:
        with contextlib.suppress(TypeError, ValueError, IndexError):
            extra["color"] = [int(color[0]), int(color[1]), int(color[2])]

    bbox_center = bbox_dim = None
    box = getattr(attrs, "bounding_box", None)
    if box is not None and (not hasattr(box, "is_valid") or box.is_valid()):
        bbox_center, bbox_dim = _vec(box.world_P_center), _vec(box.dimensions)
        if not _box_holds(bbox_center, bbox_dim, _vec(attrs.position)):
            bbox_center = bbox_dim = (
                None  # spark_dsg's unset default box (Hydra rooms): not a box of this node
            )
    return Node(
        symbol=symbol,
        label=label,
        class_name=str(class_name),
        position=_vec(attrs.position),
        bbox_center=bbox_center,
        bbox_dim=bbox_dim,
        attributes=extra,
    )
