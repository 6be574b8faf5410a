"""Typed in-memory 3D scene graph: ``Node``, ``Edge`` and ``SceneGraph``.

Contract: node symbols are unique; every edge joins two existing nodes; labels, edge types and
attribute names are Cypher identifiers; attribute values are JSON scalars or flat lists of them.
The model holds a million-node graph in plain Python objects with ``__slots__``.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from scenerag.errors import SceneGraphError
from scenerag.graph import ontology as ont

Vec3 = tuple[float, float, float]
AttrValue = str | int | float | bool | None | list[str | int | float | bool]


def as_vec3(value: Iterable[float], what: str = "position") -> Vec3:
    """Convert ``value`` to a finite 3-tuple of floats or raise ``SceneGraphError`` naming ``what``."""
    try:
        items = [float(v) for v in value]
    except (TypeError, ValueError) as exc:
        raise SceneGraphError(f"{what} must be 3 numbers, got {value!r}") from exc
    if len(items) != 3:
        raise SceneGraphError(f"{what} must be 3 numbers, got {len(items)}: {value!r}")
    if not all(math.isfinite(v) for v in items):
        raise SceneGraphError(f"{what} must be finite, got {value!r}")
    return (items[0], items[1], items[2])


def check_attributes(attributes: Mapping[str, Any], owner: str) -> dict[str, AttrValue]:
    """Validate free attributes: identifier keys, JSON scalar or flat-list values, no reserved keys."""
    out: dict[str, AttrValue] = {}
    for key, value in attributes.items():
        if not isinstance(key, str) or not ont.is_identifier(key):
            raise SceneGraphError(
                f"{owner}: attribute name {key!r} is not an identifier",
                hint="use letters, digits and underscores, starting with a letter",
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise SceneGraphError(f"{owner}: attribute {key!r} is {value}; only finite numbers are stored")
        if isinstance(value, (list, tuple)):
            if not all(isinstance(v, (str, int, float, bool)) for v in value):
                raise SceneGraphError(
                    f"{owner}: attribute {key!r} must be a flat list of strings/numbers/booleans"
                )
            value = list(value)
        elif value is not None and not isinstance(value, (str, int, float, bool)):
            raise SceneGraphError(
                f"{owner}: attribute {key!r} has type {type(value).__name__}; "
                "use a string, number, boolean or a flat list of them"
            )
        out[key] = value
    return out


@dataclass(slots=True)
class Node:
    """One scene-graph node. ``symbol`` is its unique id (``O12``); ``label`` its layer (``Object``)."""

    symbol: str
    label: str
    class_name: str
    position: Vec3
    bbox_center: Vec3 | None = None
    bbox_dim: Vec3 | None = None
    description: str | None = None
    attributes: dict[str, AttrValue] = field(default_factory=dict)

    def validate(self) -> None:
        """Raise ``SceneGraphError`` if any field breaks the model's contract."""
        if not isinstance(self.symbol, str) or not ont.is_symbol(self.symbol):
            raise SceneGraphError(
                f"node symbol {self.symbol!r} is invalid", hint="symbols look like O12, P345, R1"
            )
        if not ont.is_identifier(self.label):
            raise SceneGraphError(f"node {self.symbol}: label {self.label!r} is not an identifier")
        if not isinstance(self.class_name, str) or not self.class_name.strip():
            raise SceneGraphError(f"node {self.symbol}: class must be a non-empty string")
        self.position = as_vec3(self.position, f"node {self.symbol}: position")
        if (self.bbox_center is None) != (self.bbox_dim is None):
            raise SceneGraphError(f"node {self.symbol}: bbox needs both center and dim")
        if self.bbox_center is not None and self.bbox_dim is not None:
            self.bbox_center = as_vec3(self.bbox_center, f"node {self.symbol}: bbox center")
            self.bbox_dim = as_vec3(self.bbox_dim, f"node {self.symbol}: bbox dim")
            if min(self.bbox_dim) < 0:
                raise SceneGraphError(f"node {self.symbol}: bbox dim must be non-negative")
        reserved = ont.RESERVED_NODE_KEYS.intersection(self.attributes)
        if reserved:
            raise SceneGraphError(
                f"node {self.symbol}: attribute names {sorted(reserved)} are reserved",
                hint="use the node's own fields (class_name, position, bbox, description)",
            )
        self.attributes = check_attributes(self.attributes, f"node {self.symbol}")


@dataclass(slots=True)
class Edge:
    """A directed edge ``source -[type]-> target``; *_CONNECTED edges are read as undirected."""

    source: str
    target: str
    type: str
    attributes: dict[str, AttrValue] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.source, self.type, self.target)


class SceneGraph:
    """A layered 3D scene graph with an open ontology.

    Nodes are keyed by symbol; edges by ``(source, type, target)`` so adding an edge twice is a no-op.
    Undirected (``*_CONNECTED``) edges are stored once, in the direction first added.
    """

    def __init__(self, metadata: Mapping[str, Any] | None = None) -> None:
        self.metadata: dict[str, Any] = dict(metadata or {})
        self._nodes: dict[str, Node] = {}
        self._edges: dict[tuple[str, str, str], Edge] = {}
        self._out: dict[str, list[tuple[str, str, str]]] | None = None
        self._in: dict[str, list[tuple[str, str, str]]] | None = None

    # -- construction -------------------------------------------------------------------------
    def add_node(self, node: Node, *, validate: bool = True) -> Node:
        """Add ``node``; raise ``SceneGraphError`` if its symbol exists or a field is invalid."""
        if validate:
            node.validate()
        if node.symbol in self._nodes:
            raise SceneGraphError(f"duplicate node symbol {node.symbol!r}")
        self._nodes[node.symbol] = node
        self._drop_adjacency()
        return node

    def add(
        self,
        symbol: str,
        label: str,
        class_name: str,
        position: Iterable[float],
        *,
        bbox_center: Iterable[float] | None = None,
        bbox_dim: Iterable[float] | None = None,
        description: str | None = None,
        **attributes: AttrValue,
    ) -> Node:
        """Convenience constructor: build a ``Node`` from fields and add it."""
        node = Node(
            symbol=symbol,
            label=label,
            class_name=class_name,
            position=tuple(position),  # type: ignore[arg-type]
            bbox_center=None if bbox_center is None else tuple(bbox_center),  # type: ignore[arg-type]
            bbox_dim=None if bbox_dim is None else tuple(bbox_dim),  # type: ignore[arg-type]
            description=description,
            attributes=dict(attributes),
        )
        return self.add_node(node)

    def add_edge(
        self, source: str, target: str, type: str, *, validate: bool = True, **attributes: AttrValue
    ) -> Edge:
        """Add ``source -[type]-> target``; both nodes must exist. Returns the (possibly existing) edge."""
        if validate:
            for end in (source, target):
                if end not in self._nodes:
                    raise SceneGraphError(
                        f"edge {source}-[{type}]->{target}: node {end!r} does not exist",
                        hint="add both nodes before the edge",
                    )
            if source == target:
                raise SceneGraphError(f"edge {source}-[{type}]->{target}: self-loops are not allowed")
            if not ont.is_identifier(type):
                raise SceneGraphError(f"edge type {type!r} is not an identifier")
            attributes = check_attributes(attributes, f"edge {source}-[{type}]->{target}")  # type: ignore[assignment]
        key = (source, type, target)
        existing = self._edges.get(key)
        if existing is not None:
            return existing
        if type.endswith("_CONNECTED"):
            reverse = self._edges.get((target, type, source))
            if reverse is not None:
                return reverse
        edge = Edge(source, target, type, dict(attributes))
        self._edges[key] = edge
        self._drop_adjacency()
        return edge

    def remove_node(self, symbol: str) -> Node:
        """Remove a node and every edge touching it."""
        node = self.node(symbol)
        self._build_adjacency()
        assert self._out is not None and self._in is not None
        for key in self._out.get(symbol, []) + self._in.get(symbol, []):
            self._edges.pop(key, None)
        del self._nodes[symbol]
        self._drop_adjacency()
        return node

    def remove_edge(self, source: str, target: str, type: str) -> None:
        if self._edges.pop((source, type, target), None) is None:
            raise SceneGraphError(f"no edge {source}-[{type}]->{target}")
        self._drop_adjacency()

    # -- access --------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, symbol: object) -> bool:
        return symbol in self._nodes

    def node(self, symbol: str) -> Node:
        try:
            return self._nodes[symbol]
        except KeyError:
            raise SceneGraphError(f"no node with symbol {symbol!r}") from None

    def nodes(self, label: str | None = None) -> Iterator[Node]:
        """Iterate nodes, optionally only those with ``label``."""
        if label is None:
            return iter(self._nodes.values())
        return (n for n in self._nodes.values() if n.label == label)

    def edges(self, type: str | None = None) -> Iterator[Edge]:
        if type is None:
            return iter(self._edges.values())
        return (e for e in self._edges.values() if e.type == type)

    def has_edge(self, source: str, target: str, type: str) -> bool:
        return (source, type, target) in self._edges

    @property
    def num_nodes(self) -> int:
        return len(self._nodes)

    @property
    def num_edges(self) -> int:
        return len(self._edges)

    def label_counts(self) -> Counter[str]:
        return Counter(n.label for n in self._nodes.values())

    def edge_type_counts(self) -> Counter[str]:
        return Counter(e.type for e in self._edges.values())

    def children(self, symbol: str, type: str = ont.CONTAINS) -> list[Node]:
        """Nodes ``c`` with ``symbol -[type]-> c``."""
        self._build_adjacency()
        assert self._out is not None
        return [self._nodes[k[2]] for k in self._out.get(symbol, []) if k[1] == type]

    def parents(self, symbol: str, type: str = ont.CONTAINS) -> list[Node]:
        """Nodes ``p`` with ``p -[type]-> symbol`` (an object may have several parent places)."""
        self._build_adjacency()
        assert self._in is not None
        return [self._nodes[k[0]] for k in self._in.get(symbol, []) if k[1] == type]

    def neighbors(self, symbol: str, type: str | None = None) -> list[Node]:
        """Nodes joined to ``symbol`` in either direction, optionally by one edge type."""
        self._build_adjacency()
        assert self._out is not None and self._in is not None
        out = [k[2] for k in self._out.get(symbol, []) if type is None or k[1] == type]
        inc = [k[0] for k in self._in.get(symbol, []) if type is None or k[1] == type]
        return [self._nodes[s] for s in dict.fromkeys(out + inc)]

    def _build_adjacency(self) -> None:
        if self._out is not None:
            return
        out: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
        inc: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
        for key in self._edges:
            out[key[0]].append(key)
            inc[key[2]].append(key)
        self._out, self._in = dict(out), dict(inc)

    def _drop_adjacency(self) -> None:
        self._out = self._in = None

    def summary(self) -> str:
        """One line per label and edge type with counts, for ``scenerag info``."""
        labels = ", ".join(f"{k} {v}" for k, v in sorted(self.label_counts().items()))
        types = ", ".join(f"{k} {v}" for k, v in sorted(self.edge_type_counts().items()))
        return f"{self.num_nodes} nodes ({labels}); {self.num_edges} edges ({types})"

    def __repr__(self) -> str:
        return f"SceneGraph({self.num_nodes} nodes, {self.num_edges} edges)"
