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
#: the largest radius of a drawn node per layer rank, as a fraction of the layer gap
NODE_SIZE_BY_RANK = {60: 0.14, 50: 0.12, 40: 0.1, 30: 0.03, 20: 0.04, 10: 0.03}
#: a node's radius is at most this fraction of the median distance to its nearest neighbour in its layer,
#: so the nodes of a dense layer (mesh places, objects) do not overlap and edges stay visible between them
SPACING_FRACTION = 0.2
#: ... and at least this fraction of the scene's horizontal extent, so a node never vanishes
MIN_SIZE_FRACTION = 0.004
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

    def pin_radius(self) -> float:
        """Radius of a highlight pin's head: most of the largest drawn node's."""
        return 0.7 * max((layer.node_size for layer in self.layers.values()), default=0.1)

    def pin_heads(self, symbols: list[str]) -> np.ndarray:
        """Where the pins of ``symbols`` end (N, 3): straight above each node, half a layer gap above the
        highest drawn node, so a camera above the scene sees every head."""
        _, high = self.bounds()
        top = float(high[2]) + 0.5 * max(self.layer_gap, MIN_GAP) + self.pin_radius()
        heads = np.asarray([self.positions[s] for s in symbols], np.float32).reshape(-1, 3).copy()
        heads[:, 2] = top
        return heads

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


def horizontal_extent(graph: SceneGraph) -> float:
    """The larger side of the nodes' x-y bounding box (0 for an empty graph)."""
    if graph.num_nodes == 0:
        return 0.0
    xy = np.asarray([n.position[:2] for n in graph.nodes()], np.float64)
    return float(np.max(xy.max(axis=0) - xy.min(axis=0)))


def default_gap(graph: SceneGraph) -> float:
    """A layer gap that suits the scene's size: a fifth of its horizontal extent, within 1.5..60 m."""
    if graph.num_nodes == 0:
        return MIN_GAP
    return float(np.clip(0.2 * horizontal_extent(graph), MIN_GAP, MAX_GAP))


def median_spacing(points: np.ndarray) -> float | None:
    """Median distance from a point to its nearest neighbour (None for fewer than two distinct points)."""
    if len(points) < 2:
        return None
    from scipy.spatial import cKDTree

    distances, _ = cKDTree(np.asarray(points, np.float64)).query(points, k=2)
    nearest = distances[:, 1]
    nearest = nearest[nearest > 1e-9]
    return float(np.median(nearest)) if len(nearest) else None


def node_radius(positions: np.ndarray, rank: int, gap: float, extent: float) -> float:
    """The drawn radius of one layer's nodes: scaled with the layer (a fraction of its nodes' median
    nearest-neighbour spacing) and the scene (at most a rank-dependent fraction of the layer gap, at least
    a small fraction of the scene's extent)."""
    size_rank = min(NODE_SIZE_BY_RANK, key=lambda r: abs(r - rank))
    largest = max(0.03, NODE_SIZE_BY_RANK[size_rank] * max(gap, MIN_GAP))
    spacing = median_spacing(positions)
    size = largest if spacing is None else min(largest, SPACING_FRACTION * spacing)
    return float(max(size, MIN_SIZE_FRACTION * extent, 0.02))


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
    extent = horizontal_extent(graph)
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
        size = node_radius(pos, rank, gap, extent)
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


#: the initial camera: looking down at the scene from the front right (like the PNG export), vertical
#: field of view, and the narrowest width-to-height ratio of the 3D view it must fit (a view beside the
#: docked control panel is at least this wide)
CAMERA_DIRECTION = (0.55, -0.55, 0.5)
CAMERA_FOV_DEG = 50.0
FIT_ASPECT = 1.0
#: the fitted scene fills at most this fraction of the view's half-width and half-height
FIT_MARGIN = 0.9


@dataclass(frozen=True)
class CameraView:
    """A perspective camera: ``position`` looking at ``look_at`` with ``up``, vertical ``fov`` (radians)."""

    position: tuple[float, float, float]
    look_at: tuple[float, float, float]
    up: tuple[float, float, float] = (0.0, 0.0, 1.0)
    fov: float = float(np.radians(CAMERA_FOV_DEG))

    def basis(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Unit right, up and forward vectors of the view."""
        forward = np.asarray(self.look_at, np.float64) - np.asarray(self.position, np.float64)
        forward /= np.linalg.norm(forward)
        right = np.cross(forward, np.asarray(self.up, np.float64))
        right /= np.linalg.norm(right)
        return right, np.cross(right, forward), forward

    def project(self, points: np.ndarray, width: float, height: float) -> np.ndarray:
        """Pixel coordinates (N, 2) of world ``points`` (N, 3) in a ``width`` x ``height`` view, origin at the
        top left (as a screenshot); points behind the camera get NaN."""
        right, up, forward = self.basis()
        rel = np.asarray(points, np.float64).reshape(-1, 3) - np.asarray(self.position, np.float64)
        depth = rel @ forward
        tan = np.tan(self.fov / 2.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            x_ndc = (rel @ right) / (depth * tan * (width / height))
            y_ndc = (rel @ up) / (depth * tan)
        pixels = np.stack([(x_ndc + 1.0) / 2.0 * width, (1.0 - y_ndc) / 2.0 * height], axis=1)
        pixels[depth <= 0] = np.nan
        return pixels


def fit_camera(layout: SceneLayout, *, aspect: float = FIT_ASPECT, margin: float = FIT_MARGIN) -> CameraView:
    """The initial camera of the viewer: it looks at the centre of the drawn nodes from
    :data:`CAMERA_DIRECTION`, as close as it can while every node (with its drawn radius) stays inside
    ``margin`` of a view whose width is ``aspect`` times its height."""
    low, high = layout.bounds()
    points = np.asarray(list(layout.positions.values()), np.float64).reshape(-1, 3)
    if len(points) == 0:
        points = ((low + high) / 2.0).reshape(1, 3)
    else:  # room for highlight pins: the corners of the scene at the height of their heads
        top = float(layout.pin_heads([next(iter(layout.positions))])[0, 2])
        corners = [(x, y, top) for x in (low[0], high[0]) for y in (low[1], high[1])]
        points = np.vstack([points, np.asarray(corners, np.float64)])
        high = np.maximum(high, points.max(axis=0))
    center = (low + high) / 2.0
    radius = layout.pin_radius()
    direction = np.asarray(CAMERA_DIRECTION, np.float64)
    direction /= np.linalg.norm(direction)
    span = float(max(np.max(high - low), 1.0))

    def fits(distance: float) -> bool:
        view = CameraView(tuple(center + distance * direction), tuple(center))  # type: ignore[arg-type]
        right, up, forward = view.basis()
        rel = points - np.asarray(view.position)
        depth = rel @ forward - radius
        if np.any(depth <= 0):
            return False
        tan = np.tan(view.fov / 2.0)
        x = (np.abs(rel @ right) + radius) / (depth * tan * aspect)
        y = (np.abs(rel @ up) + radius) / (depth * tan)
        return bool(np.all(x <= margin) and np.all(y <= margin))

    lo, hi = 0.05 * span, 0.5 * span
    while not fits(hi):
        hi *= 2.0
    for _ in range(40):
        mid = (lo + hi) / 2.0
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    position = center + hi * direction
    return CameraView(
        (float(position[0]), float(position[1]), float(position[2])),
        (float(center[0]), float(center[1]), float(center[2])),
    )
