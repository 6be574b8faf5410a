"""Where each node of a scene graph is drawn: the layered 3D layout shared by the viewer and the exports.

Contract: the lowest layers (objects, functional elements, keyframes, agents) stay at their real 3D
positions; every higher layer is lifted by ``layer_gap`` per level (places one level, rooms two, floors
three, buildings four), keeping its own x, y, z, so the hierarchy reads top (rooms) to bottom (objects).
Edges become line segments between drawn positions; objects' bounding boxes become 12 segments each at
their real position. :meth:`SceneLayout.pick` finds the node nearest to a ray (clicks).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph
from scenerag.viz.style import RGB, class_color, edge_color

#: layers at or below this rank are drawn at their real positions
GROUND_RANK = 20
DEFAULT_RANK = GROUND_RANK
#: radius of a drawn node per layer rank, as a fraction of the layer gap
NODE_SIZE_BY_RANK = {60: 0.14, 50: 0.12, 40: 0.1, 30: 0.045, 20: 0.06, 10: 0.04}
MIN_GAP, MAX_GAP = 1.5, 60.0
#: the 12 edges of a box as pairs of corner indices (corners: bit 0 -> x, bit 1 -> y, bit 2 -> z)
BOX_EDGES = ((0, 1), (2, 3), (4, 5), (6, 7), (0, 2), (1, 3), (4, 6), (5, 7), (0, 4), (1, 5), (2, 6), (3, 7))


def layer_rank(label: str) -> int:
    return ont.LAYER_RANK.get(label, DEFAULT_RANK)


@dataclass
class LayerLayout:
    """The drawn nodes of one label: symbols, positions (N, 3), class colours (N, 3 uint8), node size."""

    label: str
    rank: int
    level: int
    symbols: list[str]
    positions: np.ndarray
    colors: np.ndarray
    node_size: float

    def index(self) -> dict[str, int]:
        return {s: i for i, s in enumerate(self.symbols)}


@dataclass
class SceneLayout:
    """Drawn positions of every node, grouped by layer (top layer first), edges and boxes as segments."""

    layer_gap: float
    layers: dict[str, LayerLayout]
    positions: dict[str, np.ndarray]
    labels: dict[str, str]
    edge_pairs: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    box_segments: np.ndarray = field(default_factory=lambda: np.zeros((0, 2, 3), np.float32))
    box_colors: np.ndarray = field(default_factory=lambda: np.zeros((0, 2, 3), np.uint8))
    box_symbols: list[str] = field(default_factory=list)

    def edge_segments(self, edge_type: str) -> np.ndarray:
        """Segments (M, 2, 3) of the edges of ``edge_type`` between drawn nodes."""
        pairs = self.edge_pairs.get(edge_type, [])
        if not pairs:
            return np.zeros((0, 2, 3), np.float32)
        return np.asarray([[self.positions[a], self.positions[b]] for a, b in pairs], np.float32)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Min and max corner of every drawn position."""
        if not self.positions:
            return np.zeros(3), np.zeros(3)
        stacked = np.stack(list(self.positions.values()))
        return stacked.min(axis=0), stacked.max(axis=0)

    def center(self) -> np.ndarray:
        low, high = self.bounds()
        return (low + high) / 2.0

    def node_size(self, symbol: str) -> float:
        return self.layers[self.labels[symbol]].node_size

    def pick(
        self, origin: tuple[float, float, float], direction: tuple[float, float, float], *, slack: float = 2.5
    ) -> str | None:
        """The node whose drawn position is nearest the ray, within ``slack`` x its size (None if none)."""
        o = np.asarray(origin, np.float64)
        d = np.asarray(direction, np.float64)
        norm = float(np.linalg.norm(d))
        if norm == 0.0 or not self.positions:
            return None
        d /= norm
        best, best_score = None, np.inf
        for layer in self.layers.values():
            rel = layer.positions.astype(np.float64) - o
            along = rel @ d
            off = np.linalg.norm(rel - np.outer(along, d), axis=1)
            ok = (along > 0) & (off <= slack * layer.node_size)
            if not ok.any():
                continue
            scores = np.where(ok, off / layer.node_size + 1e-6 * along, np.inf)
            i = int(np.argmin(scores))
            if scores[i] < best_score:
                best, best_score = layer.symbols[i], float(scores[i])
        return best


def default_gap(graph: SceneGraph) -> float:
    """A layer gap that suits the scene's size: a fifth of its horizontal extent, within 1.5..60 m."""
    if graph.num_nodes == 0:
        return MIN_GAP
    xy = np.asarray([n.position[:2] for n in graph.nodes()], np.float64)
    extent = float(np.max(xy.max(axis=0) - xy.min(axis=0)))
    return float(np.clip(0.2 * extent, MIN_GAP, MAX_GAP))


def box_corners(center: tuple[float, float, float], dim: tuple[float, float, float]) -> np.ndarray:
    """The 8 corners (8, 3) of an axis-aligned box, indexed as in :data:`BOX_EDGES`."""
    c = np.asarray(center, np.float64)
    h = np.asarray(dim, np.float64) / 2.0
    signs = np.array([[(i >> 0) & 1, (i >> 1) & 1, (i >> 2) & 1] for i in range(8)], np.float64) * 2 - 1
    return c + signs * h


def compute_layout(graph: SceneGraph, *, layer_gap: float | None = None) -> SceneLayout:
    """The layered layout of ``graph`` (see module docstring)."""
    gap = default_gap(graph) if layer_gap is None else float(layer_gap)
    if gap < 0:
        raise ValueError("layer_gap must be >= 0")
    by_label: dict[str, list] = defaultdict(list)
    for node in graph.nodes():
        by_label[node.label].append(node)
    lifted_ranks = sorted({layer_rank(label) for label in by_label if layer_rank(label) > GROUND_RANK})
    level_of_rank = {rank: i + 1 for i, rank in enumerate(lifted_ranks)}
    layers: dict[str, LayerLayout] = {}
    positions: dict[str, np.ndarray] = {}
    labels: dict[str, str] = {}
    order = sorted(by_label, key=lambda label: (-layer_rank(label), label))
    for label in order:
        nodes = by_label[label]
        rank = layer_rank(label)
        level = level_of_rank.get(rank, 0)
        pos = np.asarray([n.position for n in nodes], np.float32).reshape(-1, 3)
        pos[:, 2] += level * gap
        colors = np.asarray([class_color(n.class_name) for n in nodes], np.uint8).reshape(-1, 3)
        size_rank = min(NODE_SIZE_BY_RANK, key=lambda r: abs(r - rank))
        size = max(0.03, NODE_SIZE_BY_RANK[size_rank] * max(gap, MIN_GAP))
        layers[label] = LayerLayout(label, rank, level, [n.symbol for n in nodes], pos, colors, size)
        for n, p in zip(nodes, pos, strict=True):
            positions[n.symbol] = p
            labels[n.symbol] = label
    edge_pairs: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for edge in graph.edges():
        if edge.source in positions and edge.target in positions:
            edge_pairs[edge.type].append((edge.source, edge.target))
    segments, colors, owners = [], [], []
    for node in graph.nodes():
        if node.bbox_center is None or node.bbox_dim is None or layer_rank(node.label) > GROUND_RANK:
            continue
        corners = box_corners(node.bbox_center, node.bbox_dim)
        color: RGB = class_color(node.class_name)
        for a, b in BOX_EDGES:
            segments.append([corners[a], corners[b]])
            colors.append([color, color])
        owners.append(node.symbol)
    layout = SceneLayout(gap, layers, positions, labels, dict(edge_pairs), box_symbols=owners)
    if segments:
        layout.box_segments = np.asarray(segments, np.float32)
        layout.box_colors = np.asarray(colors, np.uint8)
    return layout


def edge_colors(edge_type: str, count: int) -> np.ndarray:
    """Per-point colours (count, 2, 3) of ``count`` segments of ``edge_type``."""
    return np.broadcast_to(np.asarray(edge_color(edge_type), np.uint8), (count, 2, 3)).copy()
