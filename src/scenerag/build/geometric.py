"""Class-agnostic geometric perception: object instances from the fused 3D map, with no model and no labels.

Contract: ``segment_map(points, params)`` takes a fused point map (voxel centroids), estimates normals
(Open3D), removes the building's large planes (candidate planes are peaks of height and offset
histograms of the points facing up/down or along a dominant horizontal direction, Hough-style and
deterministic; each plane's inliers are split into connected patches and only floor-, ceiling- or
wall-sized patches are removed), clusters what is left into 3D-connected instances (voxel adjacency:
DBSCAN with ``min_samples`` 1 and ``eps`` one voxel step; fragments of a few voxels join the instance
next to them), drops flat remnants and slivers of the removed surfaces, and splits off items that rest
inside a horizontal support surface of their cluster (a mug on a table, a pillow on a bed).
:class:`GeometricSegmenter` wraps it in the ``Segmenter`` protocol: the map is taken from the build's scan
when the voxel sizes agree (else fused from the sequence's depth and poses) and each keyframe's masks are
the map instances of its pixels' voxels, labelled ``object`` and carrying an ``instance`` id that is the
same in every keyframe. Ground-truth images of a synthetic sequence are never read. Objects that touch
side by side (a nightstand against a bed) stay one instance, small items lying flat (a book on a table)
stay part of their support, and functional elements are part of their object: the limits of geometry.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from scenerag.build.datasets import RGBDFrame, RGBDSequence
from scenerag.build.errors import BuildError, MissingComponentError
from scenerag.build.reconstruct import Reconstruction, key_coords, voxel_keys
from scenerag.build.segmentation import KIND_OBJECT, Mask2D

STRUCTURE = -2  # label of a voxel on a floor, ceiling or wall plane
UNASSIGNED = -1  # label of a voxel in no kept instance (too small a cluster)
GENERIC_LABEL = "object"


@dataclass(frozen=True)
class GeometricParams:
    """Settings of the geometric segmenter (metres unless noted).

    Map: ``voxel_size`` of the fused map; it is fused from every ``frame_step``-th frame, every
    ``pixel_stride``-th pixel, depths up to ``max_depth`` (the build's scan is reused when its voxel size
    is the same). Normals: PCA over ``normal_radius_voxels`` voxels. Planes: histogram peaks of at least
    ``min_plane_points`` points (``plane_distance`` bins, at most ``max_planes`` candidates) for normals
    within ``angle_tolerance_deg`` of vertical or horizontal; inliers lie within ``plane_distance``. A
    horizontal patch of at least ``min_horizontal_area`` m² is floor or ceiling; a vertical patch is wall
    when it is at least ``wall_min_height`` tall, or ``min_vertical_area`` m² large, or
    ``wall_min_length`` long and ``wall_min_length_height`` tall. Instances: 3D-connected components of
    the remaining voxels (neighbours up to ``cluster_gap`` voxels apart); components under
    ``absorb_voxels`` voxels join the component with most voxels within ``absorb_gap`` voxels; a
    component is a remnant of structure when ``remnant_fraction`` of it lies on one structural plane, or
    when ``remnant_touch`` of its voxels touch structure and it is a sliver (under ``sliver_voxels``
    voxels, or its second principal spread under ``sliver_ratio`` of its first), or when it is more than
    ``max_cluster_extent`` across; kept instances have at least ``min_cluster_voxels`` voxels. Support
    split (when ``split_supported``): a level patch of points with normals within ``support_normal_z``
    of vertical, at least ``min_support_area`` m², is a support surface; a part of the cluster that rests
    on it, lies inside its footprint (``support_margin`` in from its edge) and is no taller than
    ``support_height_ratio`` × the square root of its area becomes an instance of its own.

    The defaults were set on rendered synthetic buildings (``benchmarks/perception_bench.py``)."""

    voxel_size: float = 0.05
    frame_step: int = 1
    pixel_stride: int = 4
    max_depth: float = 8.0
    normal_radius_voxels: float = 2.5
    plane_distance: float = 0.02
    min_plane_points: int = 200
    max_planes: int = 400
    angle_tolerance_deg: float = 10.0
    min_horizontal_area: float = 4.0
    wall_min_height: float = 2.2
    wall_min_length: float = 2.5
    wall_min_length_height: float = 1.5
    min_vertical_area: float = 4.0
    cluster_gap: int = 1
    min_cluster_voxels: int = 6
    absorb_voxels: int = 30
    absorb_gap: int = 2
    remnant_fraction: float = 0.8
    remnant_touch: float = 0.8
    sliver_voxels: int = 15
    sliver_ratio: float = 0.35
    max_cluster_extent: float = 4.0
    split_supported: bool = True
    support_normal_z: float = 0.9
    min_support_area: float = 0.04
    support_margin: float = 0.06
    support_height_ratio: float = 2.0

    @classmethod
    def names(cls) -> set[str]:
        return {f.name for f in fields(cls)}


@dataclass
class MapSegmentation:
    """Instance label of every voxel of the fused map: ``keys`` sorted packed voxel keys, ``points`` the
    voxel centroids, ``labels`` ``STRUCTURE``, ``UNASSIGNED`` or an instance id ``0..n_instances-1``."""

    voxel_size: float
    keys: np.ndarray
    points: np.ndarray
    labels: np.ndarray
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def n_instances(self) -> int:
        return int(self.labels.max()) + 1 if len(self.labels) and self.labels.max() >= 0 else 0

    def instance_points(self) -> dict[int, np.ndarray]:
        """Centroids of each instance's voxels."""
        order = np.argsort(self.labels, kind="stable")
        labels = self.labels[order]
        bounds = np.searchsorted(labels, np.arange(self.n_instances + 1))
        return {i: self.points[order[bounds[i] : bounds[i + 1]]] for i in range(self.n_instances)}

    def lookup(self, points: np.ndarray) -> np.ndarray:
        """Label of the voxel of each point; a point whose voxel the map lacks takes the label its
        face neighbours agree on (else ``UNASSIGNED``)."""
        keys = voxel_keys(points, self.voxel_size)
        out = self._labels_of(keys)
        missing = np.flatnonzero(out == _ABSENT)
        if len(missing):
            coords = key_coords(keys[missing])
            votes = np.full((6, len(missing)), _ABSENT, np.int64)
            for n, (axis, step) in enumerate((a, s) for a in range(3) for s in (-1, 1)):
                moved = coords.copy()
                moved[:, axis] += step
                votes[n] = self._labels_of(_pack(moved))
            known = votes != _ABSENT
            # The first known neighbour wins when every known neighbour agrees.
            first = np.where(known.any(axis=0), votes[np.argmax(known, axis=0), np.arange(len(missing))], -1)
            agree = np.all(~known | (votes == first[None, :]), axis=0)
            out[missing] = np.where(agree & known.any(axis=0), first, UNASSIGNED)
        out[out == _ABSENT] = UNASSIGNED
        return out

    def _labels_of(self, keys: np.ndarray) -> np.ndarray:
        if len(self.keys) == 0:
            return np.full(len(keys), _ABSENT, np.int64)
        pos = np.clip(np.searchsorted(self.keys, keys), 0, len(self.keys) - 1)
        return np.where(self.keys[pos] == keys, self.labels[pos], _ABSENT)


_ABSENT = -3


def _pack(coords: np.ndarray) -> np.ndarray:
    from scenerag.build.reconstruct import _KEY_BITS, _KEY_OFFSET

    idx = coords + _KEY_OFFSET
    return (idx[:, 0] << (2 * _KEY_BITS)) | (idx[:, 1] << _KEY_BITS) | idx[:, 2]


# -- connected components -------------------------------------------------------------------------------
def _components(coords: np.ndarray, radius: int = 1) -> np.ndarray:
    """Component id of each integer grid cell (N, D) under Chebyshev adjacency up to ``radius`` cells
    (sparse: only the occupied cells are looked at)."""
    from itertools import product

    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = len(coords)
    if n == 0:
        return np.zeros(0, np.int64)
    dim = coords.shape[1]
    lo = coords.min(axis=0)
    span = coords.max(axis=0) - lo + 2 * radius + 1
    idx = coords - lo + radius
    mult = np.cumprod(np.concatenate([[1], span[:-1]])).astype(np.int64)
    flat = idx @ mult
    order = np.argsort(flat)
    flat_sorted = flat[order]
    rows, cols = [np.arange(n)], [np.arange(n)]
    for off in product(range(-radius, radius + 1), repeat=dim):
        off_arr = np.array(off, np.int64)
        # Half of the offsets suffice: adjacency is symmetric.
        nz = np.flatnonzero(off_arr)
        if len(nz) == 0 or off_arr[nz[0]] < 0:
            continue
        target = flat + int(off_arr @ mult)
        pos = np.clip(np.searchsorted(flat_sorted, target), 0, n - 1)
        hit = flat_sorted[pos] == target
        rows.append(np.flatnonzero(hit))
        cols.append(order[pos[hit]])
    r, c = np.concatenate(rows), np.concatenate(cols)
    graph = coo_matrix((np.ones(len(r), np.int8), (r, c)), shape=(n, n))
    return connected_components(graph, directed=False)[1].astype(np.int64)


def _touches(keys: np.ndarray, structure_keys: np.ndarray) -> np.ndarray:
    """Whether each voxel has a structure voxel among its 26 neighbours."""
    if len(keys) == 0 or len(structure_keys) == 0:
        return np.zeros(len(keys), bool)
    from scenerag.build.reconstruct import neighbour_keys

    sorted_keys = np.sort(structure_keys)
    out = np.zeros(len(keys), bool)
    for row in neighbour_keys(keys):
        pos = np.clip(np.searchsorted(sorted_keys, row), 0, len(sorted_keys) - 1)
        out |= sorted_keys[pos] == row
    return out


def _sliver(points: np.ndarray, p: GeometricParams) -> bool:
    """A few voxels, or a thin line-like run of them (its second principal spread under
    ``sliver_ratio`` of its first)."""
    if len(points) < p.sliver_voxels:
        return True
    spread = np.sqrt(np.maximum(np.linalg.eigvalsh(np.cov(points.T.astype(np.float64))), 0.0))
    return bool(spread[1] < p.sliver_ratio * spread[2])


def _absorb_fragments(coords: np.ndarray, comp: np.ndarray, p: GeometricParams) -> tuple[np.ndarray, int]:
    """Components smaller than ``absorb_voxels`` join the larger component with most voxels within
    ``absorb_gap`` voxels of theirs (thin parts sampled with gaps: chair legs, lamp poles)."""
    if len(comp) == 0 or p.absorb_voxels <= 0 or p.absorb_gap <= p.cluster_gap:
        return comp, 0
    sizes = np.bincount(comp)
    small = sizes[comp] < p.absorb_voxels
    if not small.any() or small.all():
        return comp, 0
    big_idx = np.flatnonzero(~small)
    lo = coords.min(axis=0) - p.absorb_gap
    span = coords.max(axis=0) - lo + p.absorb_gap + 1
    mult = np.array([span[1] * span[2], span[2], 1], np.int64)
    big_flat = (coords[big_idx] - lo) @ mult
    order = np.argsort(big_flat)
    big_sorted = big_flat[order]
    small_idx = np.flatnonzero(small)
    base = (coords[small_idx] - lo) @ mult
    r = p.absorb_gap
    votes: dict[int, dict[int, int]] = {}
    for dx in range(-r, r + 1):
        for dy in range(-r, r + 1):
            for dz in range(-r, r + 1):
                target = base + dx * mult[0] + dy * mult[1] + dz
                pos = np.clip(np.searchsorted(big_sorted, target), 0, len(big_sorted) - 1)
                hit = big_sorted[pos] == target
                for src, dst in zip(
                    comp[small_idx[hit]].tolist(), comp[big_idx[order[pos[hit]]]].tolist(), strict=True
                ):
                    row = votes.setdefault(src, {})
                    row[dst] = row.get(dst, 0) + 1
    out = comp.copy()
    for src, row in votes.items():
        out[comp == src] = max(row, key=lambda k: row[k])
    return out, len(votes)


# -- planes ---------------------------------------------------------------------------------------------
def _plane_basis(normal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two in-plane axes: for a vertical plane the horizontal axis and +z, else x and y projected."""
    n = normal / np.linalg.norm(normal)
    if abs(n[2]) < 0.5:
        u = np.cross([0.0, 0.0, 1.0], n)
        u /= np.linalg.norm(u)
        return u, np.array([0.0, 0.0, 1.0])
    u = np.array([1.0, 0.0, 0.0]) - n[0] * n
    u /= np.linalg.norm(u)
    return u, np.cross(n, u)


def _structure_patches(
    points: np.ndarray, agree: np.ndarray, normal: np.ndarray, horizontal: bool, p: GeometricParams
) -> np.ndarray:
    """Mask of the points of one plane's band that lie on a floor/ceiling/wall-sized connected patch.

    The patches are the connected components of the in-plane cells of the points whose normals agree
    with the plane (``agree``); a band point is removed when its cell is on, or next to, a structural
    patch (sparse or edge points with poorly estimated normals go with the surface they lie on)."""
    u, v = _plane_basis(normal)
    cell = p.voxel_size
    uv = np.floor(np.column_stack([points @ u, points @ v]) / cell).astype(np.int64)
    if not agree.any():
        return np.zeros(len(points), bool)
    cells, inverse = np.unique(uv[agree], axis=0, return_inverse=True)
    inverse = inverse.ravel()
    comp = _components(cells, radius=2)  # bridges one empty cell (sampling holes at a distance)
    n_comp = int(comp.max()) + 1
    area = np.bincount(comp, minlength=n_comp) * cell * cell
    if horizontal:
        keep = area >= p.min_horizontal_area
    else:
        lo_c = np.full((n_comp, 2), np.iinfo(np.int64).max)
        hi_c = np.full((n_comp, 2), np.iinfo(np.int64).min)
        np.minimum.at(lo_c, comp, cells)
        np.maximum.at(hi_c, comp, cells)
        length, height = ((hi_c - lo_c + 1) * cell).T
        keep = (
            (height >= p.wall_min_height)
            | (area >= p.min_vertical_area)
            | ((length >= p.wall_min_length) & (height >= p.wall_min_length_height))
        )
    if not keep.any():
        return np.zeros(len(points), bool)
    wall_cells = cells[keep[comp]]
    # Every band point on or next to a structural cell.
    lo = uv.min(axis=0) - 1
    shape = tuple(int(x) for x in uv.max(axis=0) - lo + 2)
    grid = np.zeros(shape, bool)
    grid[wall_cells[:, 0] - lo[0], wall_cells[:, 1] - lo[1]] = True
    from scipy.ndimage import binary_dilation

    grid = binary_dilation(grid, np.ones((3, 3), bool))
    return grid[uv[:, 0] - lo[0], uv[:, 1] - lo[1]]


def _peaks(values: np.ndarray, bin_size: float, min_count: int) -> list[float]:
    """Centres of the peaks of a histogram of ``values`` (``bin_size`` bins, counts summed over three
    neighbouring bins): local maxima holding at least ``min_count`` values, strongest first."""
    if len(values) < min_count:
        return []
    lo = float(values.min())
    idx = np.floor((values - lo) / bin_size).astype(np.int64)
    counts = np.bincount(idx)
    padded = np.concatenate([[0], counts, [0]])
    smooth = padded[:-2] + padded[1:-1] + padded[2:]
    left = np.concatenate([[-1], smooth[:-1]])
    right = np.concatenate([smooth[1:], [-1]])
    # ``>=`` on the left, ``>`` on the right: one peak per plateau.
    peaks = np.flatnonzero((smooth >= min_count) & (smooth > left) & (smooth >= right))
    out = []
    for i in peaks[np.argsort(-smooth[peaks])]:
        near = np.abs(idx - i) <= 1
        out.append(float(np.median(values[near])))
    return out


def _directions(normals: np.ndarray, tol_deg: float, min_count: int) -> list[np.ndarray]:
    """Dominant horizontal normal directions (unit vectors, sign-free) of the points whose normals are
    within ``tol_deg`` of horizontal."""
    theta = np.mod(np.arctan2(normals[:, 1], normals[:, 0]), np.pi)
    bin_size = np.radians(2.0)
    n_bins = int(np.ceil(np.pi / bin_size))
    counts = np.bincount(np.minimum((theta / bin_size).astype(np.int64), n_bins - 1), minlength=n_bins)
    smooth = counts + np.roll(counts, 1) + np.roll(counts, -1)
    peaks = np.flatnonzero(
        (smooth >= min_count) & (smooth > np.roll(smooth, 1)) & (smooth >= np.roll(smooth, -1))
    )
    out: list[np.ndarray] = []
    tol = np.radians(tol_deg)
    for i in peaks[np.argsort(-smooth[peaks])]:
        centre = (i + 0.5) * bin_size
        diff = np.abs(np.mod(theta - centre + np.pi / 2, np.pi) - np.pi / 2)
        near = diff <= bin_size * 1.5
        # Circular mean on the doubled angle (directions are sign-free).
        mean = 0.5 * np.arctan2(np.sin(2 * theta[near]).mean(), np.cos(2 * theta[near]).mean())
        if any(abs(np.mod(mean - np.arctan2(d[1], d[0]) + np.pi / 2, np.pi) - np.pi / 2) < tol for d in out):
            continue
        out.append(np.array([np.cos(mean), np.sin(mean), 0.0]))
    return out


def remove_structure(
    points: np.ndarray, normals: np.ndarray, p: GeometricParams
) -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]:
    """Floor, ceiling and wall points of a map with ``normals``.

    Candidate planes come from histograms (Hough-style, deterministic): horizontal planes are peaks of
    the heights of points with vertical normals; vertical planes are, for each dominant horizontal normal
    direction, peaks of the offsets ``p·n`` of the points facing that way. A candidate's inliers are the
    points within ``plane_distance`` whose normals are not perpendicular to it; they are split into
    connected patches and the floor/ceiling/wall-sized patches (see :class:`GeometricParams`) are
    structure. Returns the structure mask, the index of the structural plane each point lies on (-1:
    none; every inlier of a plane with a structural patch, for dropping flat remnants later) and the
    planes."""
    pts = np.asarray(points, dtype=np.float64)
    structure = np.zeros(len(pts), bool)
    plane_of = np.full(len(pts), -1, np.int64)
    cos_tol = np.cos(np.radians(p.angle_tolerance_deg))
    sin_tol = np.sin(np.radians(p.angle_tolerance_deg))
    up = np.array([0.0, 0.0, 1.0])
    candidates: list[tuple[np.ndarray, float, bool]] = []
    horizontal = np.abs(normals[:, 2]) >= cos_tol
    candidates += [(up, z, True) for z in _peaks(pts[horizontal, 2], p.plane_distance, p.min_plane_points)]
    vertical = np.abs(normals[:, 2]) <= sin_tol
    for d in _directions(normals[vertical], p.angle_tolerance_deg, p.min_plane_points):
        facing = vertical & (np.abs(normals @ d) >= cos_tol)
        candidates += [
            (d, off, False) for off in _peaks(pts[facing] @ d, p.plane_distance, p.min_plane_points)
        ]
    planes: list[dict[str, Any]] = []
    for normal, offset, is_horizontal in candidates[: p.max_planes]:
        inliers = np.flatnonzero(np.abs(pts @ normal - offset) <= p.plane_distance)
        agree = np.abs(normals[inliers] @ normal) >= 0.5
        if agree.sum() < p.min_plane_points:
            continue
        on_structure = _structure_patches(pts[inliers], agree, normal, is_horizontal, p)
        if not on_structure.any():
            continue
        structure[inliers[on_structure]] = True
        unset = plane_of[inliers] < 0
        plane_of[inliers[unset]] = len(planes)
        planes.append(
            {
                "kind": "horizontal" if is_horizontal else "vertical",
                "normal": [round(float(x), 4) for x in normal],
                "offset": round(float(offset), 4),
                "points": int(on_structure.sum()),
            }
        )
    return structure, plane_of, planes


# -- instances ------------------------------------------------------------------------------------------
def _normals(points: np.ndarray, radius: float) -> np.ndarray:
    try:
        import open3d as o3d
    except ImportError as exc:
        raise MissingComponentError(
            "segmentation", "the geometric segmenter needs open3d", hint="pip install 'scenerag[build]'"
        ) from exc

    cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(np.asarray(points, np.float64)))
    cloud.estimate_normals(o3d.geometry.KDTreeSearchParamHybrid(radius=radius, max_nn=24))
    return np.asarray(cloud.normals)


def _split_supported(
    coords: np.ndarray, points: np.ndarray, normals: np.ndarray, p: GeometricParams
) -> list[np.ndarray]:
    """Index groups of one cluster: the cluster's body and each item resting inside one of its horizontal
    support surfaces (see :class:`GeometricParams`)."""
    vox = p.voxel_size
    horiz = np.abs(normals[:, 2]) >= p.support_normal_z
    if horiz.sum() * vox * vox < p.min_support_area:
        return [np.arange(len(points))]
    # Support surfaces: horizontal points connected within one voxel layer.
    h_idx = np.flatnonzero(horiz)
    layer = _components(coords[h_idx], radius=1)
    surfaces = []
    for s in range(int(layer.max()) + 1):
        members = h_idx[layer == s]
        if len(members) * vox * vox < p.min_support_area:
            continue
        z = float(np.median(points[members, 2]))
        if np.ptp(points[members, 2]) > 2.5 * vox:
            continue  # not one level: a ramp or a curved top
        lo, hi = points[members, :2].min(axis=0), points[members, :2].max(axis=0)
        surfaces.append((members, z, lo, hi, len(members) * vox * vox))
    if not surfaces:
        return [np.arange(len(points))]
    on_surface = np.zeros(len(points), bool)
    for members, *_ in surfaces:
        on_surface[members] = True
    rest = np.flatnonzero(~on_surface)
    if len(rest) == 0:
        return [np.arange(len(points))]
    parts = _components(coords[rest], radius=1)
    body = np.ones(len(points), bool)
    items: list[np.ndarray] = []
    for k in range(int(parts.max()) + 1):
        part = rest[parts == k]
        pz, pxy = points[part, 2], points[part, :2]
        for _members, z, lo, hi, area in surfaces:
            if not (z - vox <= pz.min() <= z + 2 * vox):
                continue  # does not rest on this surface
            inside = np.all(pxy.min(axis=0) >= lo + p.support_margin) and np.all(
                pxy.max(axis=0) <= hi - p.support_margin
            )
            if inside and pz.max() - z <= p.support_height_ratio * np.sqrt(area):
                items.append(part)
                body[part] = False
                break
    return [np.flatnonzero(body), *items] if items else [np.arange(len(points))]


def segment_map(points: np.ndarray, params: GeometricParams | None = None) -> MapSegmentation:
    """Instances of a fused point map (voxel centroids; points sharing a voxel of ``params.voxel_size``
    are averaged)."""
    p = params or GeometricParams()
    start = time.perf_counter()
    points = np.asarray(points, dtype=np.float32)
    keys, inverse = np.unique(voxel_keys(points, p.voxel_size), return_inverse=True)
    if len(keys) < len(points):  # several points per voxel: their mean stands for the voxel
        counts = np.bincount(inverse, minlength=len(keys)).astype(np.float64)
        points = np.column_stack(
            [np.bincount(inverse, weights=points[:, c], minlength=len(keys)) / counts for c in range(3)]
        ).astype(np.float32)
    else:
        points = points[np.argsort(inverse)]
    all_normals = _normals(points, p.normal_radius_voxels * p.voxel_size)
    structure, plane_of, planes = remove_structure(points, all_normals, p)
    t_planes = time.perf_counter() - start
    labels = np.full(len(points), UNASSIGNED, np.int64)
    labels[structure] = STRUCTURE
    free = np.flatnonzero(~structure)
    coords = key_coords(keys[free])
    comp = _components(coords, radius=p.cluster_gap) if len(free) else np.zeros(0, np.int64)
    comp, n_absorbed = _absorb_fragments(coords, comp, p)
    normals = all_normals[free]
    touches = _touches(keys[free], keys[structure])
    next_id, n_split, n_large, n_flat = 0, 0, 0, 0
    if len(free):
        order = np.argsort(comp, kind="stable")
        bounds = np.flatnonzero(np.diff(comp[order])) + 1
        for group in np.split(order, bounds):
            if len(group) < p.min_cluster_voxels:
                continue
            on_plane = plane_of[free[group]]
            top = np.bincount(on_plane[on_plane >= 0]).max() if (on_plane >= 0).any() else 0
            if top >= p.remnant_fraction * len(group) or (
                touches[group].mean() >= p.remnant_touch and _sliver(points[free[group]], p)
            ):
                # A flat piece of a floor, ceiling or wall, or a sliver along one (door jambs, edges).
                labels[free[group]] = STRUCTURE
                n_flat += 1
                continue
            extent = np.ptp(points[free[group]], axis=0)
            if extent.max() > p.max_cluster_extent:
                labels[free[group]] = STRUCTURE  # a remnant of walls or floors, not an object
                n_large += 1
                continue
            pieces = [np.arange(len(group))]
            if p.split_supported:
                pieces = _split_supported(coords[group], points[free[group]], normals[group], p)
            for piece in pieces:
                if len(piece) < p.min_cluster_voxels:
                    continue
                labels[free[group[piece]]] = next_id
                next_id += 1
            n_split += len(pieces) - 1
    stats = {
        "voxels": len(points),
        "structure_voxels": int(structure.sum()),
        "planes": len(planes),
        "instances": next_id,
        "support_splits": n_split,
        "fragments_absorbed": n_absorbed,
        "flat_remnants": n_flat,
        "large_remnants": n_large,
        "plane_seconds": round(t_planes, 2),
        "seconds": round(time.perf_counter() - start, 2),
    }
    return MapSegmentation(p.voxel_size, keys, points, labels, {**stats, "plane_list": planes})


def fuse_map(sequence: RGBDSequence, params: GeometricParams) -> Reconstruction:
    """The fused voxel map of ``sequence`` at ``params.voxel_size`` (depth and poses only)."""
    from scenerag.build.config import ReconstructionConfig
    from scenerag.build.reconstruct import scan_sequence

    cfg = ReconstructionConfig(
        voxel_size=params.voxel_size,
        pixel_stride=params.pixel_stride,
        frame_step=params.frame_step,
        max_depth=params.max_depth,
    )
    return scan_sequence(sequence, cfg)


class GeometricSegmenter:
    """Class-agnostic masks from the geometric segmentation of the fused map (see the module docstring).
    ``reconstruction`` (the build's scan) is reused when its voxel size is ``voxel_size``; else the map is
    fused from ``sequence``. Masks smaller than ``min_pixels`` are dropped."""

    name = "geometric"

    def __init__(
        self,
        sequence: RGBDSequence | None = None,
        *,
        reconstruction: Reconstruction | None = None,
        map_points: np.ndarray | None = None,
        min_pixels: int = 30,
        **params: Any,
    ) -> None:
        unknown = set(params) - GeometricParams.names()
        if unknown:
            raise BuildError(
                "segmentation",
                f"unknown geometric segmenter option(s) {', '.join(sorted(unknown))}",
                hint=f"known: {', '.join(sorted(GeometricParams.names()))}",
            )
        self.params = GeometricParams(**params)
        self.min_pixels = min_pixels
        start = time.perf_counter()
        reused = False
        if map_points is None:
            if reconstruction is not None and abs(reconstruction.voxel_size - self.params.voxel_size) < 1e-9:
                map_points, reused = reconstruction.points, True
            elif sequence is not None:
                map_points = fuse_map(sequence, self.params).points
            else:
                raise BuildError("segmentation", "the geometric segmenter needs the sequence or a map")
        t_fuse = time.perf_counter() - start
        self.map = segment_map(map_points, self.params)
        self.stats = {**self.map.stats, "fuse_seconds": round(t_fuse, 2), "reused_scan": reused}

    def segment(self, frame: RGBDFrame) -> list[Mask2D]:
        depth = frame.depth
        valid = (depth > 0) & (depth < self.params.max_depth)
        rows, cols = np.nonzero(valid)
        if len(rows) == 0:
            return []
        ids = self.map.lookup(frame.pixels_to_world(rows, cols))
        image = np.full(depth.shape, UNASSIGNED, np.int64)
        image[rows, cols] = ids
        found, counts = np.unique(ids[ids >= 0], return_counts=True)
        return [
            Mask2D(image == i, GENERIC_LABEL, KIND_OBJECT, 1.0, instance=int(i))
            for i, n in zip(found.tolist(), counts.tolist(), strict=True)
            if n >= self.min_pixels
        ]


__all__ = [
    "GENERIC_LABEL",
    "STRUCTURE",
    "UNASSIGNED",
    "GeometricParams",
    "GeometricSegmenter",
    "MapSegmentation",
    "fuse_map",
    "remove_structure",
    "segment_map",
]
