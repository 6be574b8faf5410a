"""Synthetic kilometre-scale outdoor scene graphs shaped like the Hydra/Heracles outdoor graph.

Contract: ``generate_outdoor_graph`` returns a ``SceneGraph`` with exactly ``n_regions`` ``Room`` nodes
(``R0..``), ``n_places`` ``Place`` nodes (``P0..``) and ``n_objects`` ``Object`` nodes (``O0..``); every
place has one parent region, the place graph is connected, and the same config always gives the same graph.
"""

from __future__ import annotations

import gc
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from scenerag.graph import ontology as ont
from scenerag.graph.model import Node, SceneGraph

# Region (Room-layer) classes of an outdoor map and their relative frequencies.
REGION_CLASSES: tuple[tuple[str, float], ...] = (
    ("road", 0.25),
    ("sidewalk", 0.12),
    ("parking_lot", 0.12),
    ("field", 0.12),
    ("courtyard", 0.10),
    ("forest", 0.10),
    ("building_entrance", 0.08),
    ("plaza", 0.06),
    ("trail", 0.05),
)

# Object classes: (class, relative frequency, typical bbox size (dx, dy, dz) in metres).
OBJECT_CLASSES: tuple[tuple[str, float, tuple[float, float, float]], ...] = (
    ("car", 0.16, (4.5, 1.8, 1.5)),
    ("tree", 0.16, (3.0, 3.0, 6.0)),
    ("bench", 0.06, (1.8, 0.6, 0.9)),
    ("sign", 0.08, (0.6, 0.1, 2.2)),
    ("pole", 0.08, (0.3, 0.3, 5.0)),
    ("trash_can", 0.06, (0.6, 0.6, 1.0)),
    ("bicycle", 0.04, (1.7, 0.6, 1.1)),
    ("fence", 0.06, (5.0, 0.1, 1.2)),
    ("box", 0.04, (0.6, 0.5, 0.5)),
    ("barrel", 0.03, (0.6, 0.6, 0.9)),
    ("light", 0.06, (0.4, 0.4, 4.5)),
    ("building", 0.04, (20.0, 15.0, 10.0)),
    ("bush", 0.05, (1.5, 1.5, 1.2)),
    ("fire_hydrant", 0.02, (0.4, 0.4, 0.8)),
    ("traffic_cone", 0.02, (0.4, 0.4, 0.7)),
    ("truck", 0.02, (8.0, 2.5, 3.5)),
    ("person", 0.02, (0.5, 0.5, 1.7)),
)

_JITTER = 0.35  # places sit on a square lattice, each moved by up to this fraction of the spacing
_GROUND_NOISE_M = 0.3
_OBJECT_OFFSET_M = 1.5
_MULTI_PARENT_FRACTION = 0.10
_CALIBRATION_SAMPLE = 50_000


@dataclass(frozen=True)
class OutdoorGraphConfig:
    """Sizes and seed of a synthetic outdoor graph; the defaults match the Hydra outdoor graph."""

    n_places: int = 15_944
    n_regions: int = 124
    n_objects: int = 314
    mean_spacing_m: float = 2.0  # typical distance between neighbouring places
    seed: int = 0

    def check(self) -> None:
        """Raise ``ValueError`` for sizes the generator cannot honour."""
        if self.n_places < 2:
            raise ValueError(f"n_places must be at least 2, got {self.n_places}")
        if not 1 <= self.n_regions <= self.n_places:
            raise ValueError(f"n_regions must be in 1..n_places ({self.n_places}), got {self.n_regions}")
        if self.n_objects < 0:
            raise ValueError(f"n_objects must be non-negative, got {self.n_objects}")
        if not self.mean_spacing_m > 0:
            raise ValueError(f"mean_spacing_m must be positive, got {self.mean_spacing_m}")


def _place_positions(rng: np.random.Generator, n: int, spacing: float) -> np.ndarray:
    """``n`` ground points on a jittered square lattice of pitch ``spacing`` (row-major, last row partial)."""
    cols = int(np.ceil(np.sqrt(n)))
    idx = np.arange(n)
    xy = np.stack([idx % cols, idx // cols], axis=1).astype(np.float64)
    xy += rng.uniform(-_JITTER, _JITTER, size=(n, 2))
    xy *= spacing
    z = rng.uniform(-_GROUND_NOISE_M, _GROUND_NOISE_M, size=n)
    return np.column_stack([xy, z])


def _place_edges(tree: cKDTree, xy: np.ndarray) -> np.ndarray:
    """Undirected place edges ``(i, j)`` with ``i < j``: radius graph of mean degree ~4, plus each place's
    nearest neighbour, plus one bridge per stray component so that the place graph is connected."""
    n = len(xy)
    # Mean degree = mean number of neighbours within r; over 8-NN distances that is their median, which a
    # strided sample of up to _CALIBRATION_SAMPLE places estimates well.
    k = min(8, n - 1)
    sample = xy[:: max(1, n // _CALIBRATION_SAMPLE)]
    dist, _ = tree.query(sample, k=k + 1)
    radius = float(np.quantile(dist[:, 1:], min(4.0 / k, 1.0)))
    pairs = tree.query_pairs(radius, output_type="ndarray").astype(np.int64)
    _, nn = tree.query(xy, k=2)
    nearest = np.column_stack([np.arange(n, dtype=np.int64), nn[:, 1].astype(np.int64)])
    pairs = _unique_pairs(np.concatenate([pairs, nearest]), n)
    n_comp, comp = connected_components(_adjacency(pairs, n), directed=False)
    if n_comp > 1:
        pairs = _unique_pairs(np.concatenate([pairs, _bridges(xy, comp)]), n)
    return pairs


def _adjacency(pairs: np.ndarray, n: int) -> coo_matrix:
    ones = np.ones(len(pairs), dtype=np.int8)
    return coo_matrix((ones, (pairs[:, 0], pairs[:, 1])), shape=(n, n))


def _unique_pairs(pairs: np.ndarray, n: int) -> np.ndarray:
    """Sort each pair to ``(min, max)``, drop self-loops and duplicates."""
    lo = np.minimum(pairs[:, 0], pairs[:, 1])
    hi = np.maximum(pairs[:, 0], pairs[:, 1])
    keep = lo != hi
    # np.sort + diff rather than np.unique: numpy's hash-based unique is ~100x slower on millions of ints.
    code = np.sort(lo[keep] * n + hi[keep])
    code = code[np.r_[True, code[1:] != code[:-1]]] if len(code) else code
    return np.column_stack([code // n, code % n])


def _bridges(xy: np.ndarray, comp: np.ndarray) -> np.ndarray:
    """One edge from each component other than the largest to its closest place in the largest."""
    sizes = np.bincount(comp)
    main = int(np.argmax(sizes))
    in_main = comp == main
    main_idx = np.flatnonzero(in_main)
    stray_idx = np.flatnonzero(~in_main)
    dist, near = cKDTree(xy[main_idx]).query(xy[stray_idx])
    # Per stray component, the member closest to the main component.
    order = np.lexsort((dist, comp[stray_idx]))
    stray_comp = comp[stray_idx][order]
    first = np.flatnonzero(np.r_[True, stray_comp[1:] != stray_comp[:-1]])
    chosen = order[first]
    return np.column_stack([stray_idx[chosen], main_idx[near[chosen]]]).astype(np.int64)


def generate_outdoor_graph(config: OutdoorGraphConfig | None = None, **overrides: Any) -> SceneGraph:
    """Build a synthetic outdoor scene graph from ``config`` (default sizes) with ``overrides`` applied.

    Places lie on a jittered ground lattice (``PLACE_CONNECTED``, mean degree ~4, one component); regions
    are Voronoi cells of random seed places (``CONTAINS`` region -> place, ``ROOM_CONNECTED`` where place
    edges cross cells); objects sit near places (``CONTAINS`` from the nearest, ~10% also the second one).
    """
    cfg = replace(config or OutdoorGraphConfig(), **overrides)
    cfg.check()
    # Millions of small objects make the cyclic GC rescan the growing heap over and over; none of them
    # form cycles, so collection is paused while building (about a third of the build time at 1M places).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _build(cfg)
    finally:
        if gc_was_enabled:
            gc.enable()


def _build(cfg: OutdoorGraphConfig) -> SceneGraph:
    rng = np.random.default_rng(cfg.seed)
    n, n_reg, n_obj = cfg.n_places, cfg.n_regions, cfg.n_objects

    # -- places ------------------------------------------------------------------------------------
    pos = _place_positions(rng, n, cfg.mean_spacing_m)
    xy = pos[:, :2]
    tree = cKDTree(xy)
    place_pairs = _place_edges(tree, xy)

    # -- regions: Voronoi cells of random seed places ----------------------------------------------
    seeds = rng.choice(n, size=n_reg, replace=False)
    _, region_of = cKDTree(xy[seeds]).query(xy)
    region_of = region_of.astype(np.int64)
    counts = np.bincount(region_of, minlength=n_reg)
    region_pos = (
        np.column_stack([np.bincount(region_of, weights=pos[:, d], minlength=n_reg) for d in range(3)])
        / np.maximum(counts, 1)[:, None]
    )
    reg_names = [c for c, _ in REGION_CLASSES]
    reg_p = np.array([w for _, w in REGION_CLASSES])
    region_cls = rng.choice(len(reg_names), size=n_reg, p=reg_p / reg_p.sum())
    ra, rb = region_of[place_pairs[:, 0]], region_of[place_pairs[:, 1]]
    cross = ra != rb
    region_pairs = _unique_pairs(np.column_stack([ra[cross], rb[cross]]), n_reg)

    # -- objects -----------------------------------------------------------------------------------
    obj_names = [c for c, _, _ in OBJECT_CLASSES]
    obj_p = np.array([w for _, w, _ in OBJECT_CLASSES])
    obj_size = np.array([s for _, _, s in OBJECT_CLASSES])
    obj_cls = rng.choice(len(obj_names), size=n_obj, p=obj_p / obj_p.sum())
    anchor = rng.integers(0, n, size=n_obj)
    angle = rng.uniform(0.0, 2.0 * np.pi, size=n_obj)
    offset = _OBJECT_OFFSET_M * np.sqrt(rng.uniform(0.0, 1.0, size=n_obj))
    obj_dim = obj_size[obj_cls] * rng.uniform(0.8, 1.2, size=(n_obj, 3))
    obj_pos = np.column_stack(
        [
            xy[anchor, 0] + offset * np.cos(angle),
            xy[anchor, 1] + offset * np.sin(angle),
            np.clip(obj_dim[:, 2] / 2.0 + rng.normal(0.0, 0.1, size=n_obj), 0.0, 2.0),
        ]
    )
    _, obj_parents = tree.query(obj_pos[:, :2], k=2)
    obj_parents = obj_parents.reshape(n_obj, 2)
    n_multi = min(n_obj, max(1, round(_MULTI_PARENT_FRACTION * n_obj))) if n_obj else 0
    multi = np.sort(rng.choice(n_obj, size=n_multi, replace=False)) if n_multi else np.empty(0, int)

    # -- assemble the SceneGraph -------------------------------------------------------------------
    graph = SceneGraph()
    graph.metadata = {
        "generator": "outdoor",
        "seed": cfg.seed,
        "config": asdict(cfg),
        "place_edges": len(place_pairs),
        "region_edges": len(region_pairs),
    }
    add_node, add_edge = graph.add_node, graph.add_edge
    reg_sym = [f"R{i}" for i in range(n_reg)]
    place_sym = [f"P{i}" for i in range(n)]
    obj_sym = [f"O{i}" for i in range(n_obj)]

    for sym, cls, p in zip(reg_sym, region_cls.tolist(), region_pos.tolist(), strict=True):
        add_node(Node(sym, ont.ROOM, reg_names[cls], tuple(p)), validate=False)
    place_label = ont.PLACE
    for sym, p in zip(place_sym, pos.tolist(), strict=True):
        add_node(Node(sym, place_label, "place", tuple(p)), validate=False)
    for sym, cls, p, d in zip(obj_sym, obj_cls.tolist(), obj_pos.tolist(), obj_dim.tolist(), strict=True):
        c = tuple(p)
        add_node(Node(sym, ont.OBJECT, obj_names[cls], c, bbox_center=c, bbox_dim=tuple(d)), validate=False)

    contains, pc, rc = ont.CONTAINS, ont.PLACE_CONNECTED, ont.ROOM_CONNECTED
    for a, b in region_pairs.tolist():
        add_edge(reg_sym[a], reg_sym[b], rc, validate=False)
    for r, sym in zip(region_of.tolist(), place_sym, strict=True):
        add_edge(reg_sym[r], sym, contains, validate=False)
    for a, b in place_pairs.tolist():
        add_edge(place_sym[a], place_sym[b], pc, validate=False)
    for sym, (first, _) in zip(obj_sym, obj_parents.tolist(), strict=True):
        add_edge(place_sym[first], sym, contains, validate=False)
    for i in multi.tolist():
        add_edge(place_sym[int(obj_parents[i, 1])], obj_sym[i], contains, validate=False)
    return graph
