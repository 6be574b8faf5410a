"""Room segmentation per floor: bird's-eye wall histogram, gap closing, distance transform and watershed.

Contract: for each floor, ``segment_rooms`` rasterises the voxel map (``grid_resolution``) into an
observed footprint and a wall mask (voxels in a height band above furniture and door leaves, so doorways
are closed by their lintels), joins collinear wall runs across full-height openings, and splits the free
space with a watershed of its distance transform seeded at the free-space cores. Regions below
``min_room_area`` are merged into their neighbour; each region is then grown into the wall cells up to
the wall centre lines. Every room gets a label raster (``FloorPlan``) and a simplified polygon.
``RoomMap`` answers "which room holds this 3D point" from the rasters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from scenerag.build.config import RoomConfig
from scenerag.build.errors import BuildError
from scenerag.build.floors import FloorSegment
from scenerag.build.reconstruct import Reconstruction


@dataclass
class FloorPlan:
    """Label raster of one floor: cell ``(i, j)`` is centred at ``(x0 + (j+.5)·res, y0 + (i+.5)·res)``;
    ``labels`` holds the global room index + 1 (0 = no room); ``walls`` the detected wall cells."""

    floor: int
    x0: float
    y0: float
    resolution: float
    labels: np.ndarray
    walls: np.ndarray

    def cells(self, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Row, column and in-grid flag of each xy point."""
        xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
        j = np.floor((xy[:, 0] - self.x0) / self.resolution).astype(np.int64)
        i = np.floor((xy[:, 1] - self.y0) / self.resolution).astype(np.int64)
        inside = (i >= 0) & (i < self.labels.shape[0]) & (j >= 0) & (j < self.labels.shape[1])
        return np.clip(i, 0, self.labels.shape[0] - 1), np.clip(j, 0, self.labels.shape[1] - 1), inside

    def room_at_xy(self, xy: np.ndarray) -> np.ndarray:
        """Global room index of each xy point (-1 outside every room)."""
        i, j, inside = self.cells(xy)
        return np.where(inside, self.labels[i, j].astype(np.int64) - 1, -1)


@dataclass
class RoomSegment:
    """A room: ``polygon`` (K, 2) outline (counter-clockwise, metres), its floor and height range."""

    index: int
    floor: int
    polygon: np.ndarray
    area: float
    centroid: tuple[float, float]
    z_min: float
    z_max: float

    @property
    def symbol(self) -> str:
        return f"R{self.index}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "floor": self.floor,
            "polygon": np.round(self.polygon, 4).tolist(),
            "area": self.area,
            "centroid": list(self.centroid),
            "z_min": self.z_min,
            "z_max": self.z_max,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RoomSegment:
        return cls(
            int(data["index"]),
            int(data["floor"]),
            np.asarray(data["polygon"], dtype=np.float64).reshape(-1, 2),
            float(data["area"]),
            (float(data["centroid"][0]), float(data["centroid"][1])),
            float(data["z_min"]),
            float(data["z_max"]),
        )


class RoomMap:
    """Point-to-room lookup over all floors (a point belongs to the floor whose heights hold it)."""

    def __init__(self, floors: list[FloorSegment], plans: list[FloorPlan], z_margin: float = 0.3) -> None:
        self.floors = floors
        self.plans = {p.floor: p for p in plans}
        self.z_margin = z_margin

    def floor_of_z(self, z: np.ndarray) -> np.ndarray:
        """Floor index of each height (-1 outside every floor's [floor - margin, ceiling + margin])."""
        z = np.asarray(z, dtype=np.float64)
        out = np.full(z.shape, -1, np.int64)
        for fl in self.floors:
            out[(z >= fl.z_floor - self.z_margin) & (z <= fl.z_ceiling + self.z_margin)] = fl.index
        for fl in self.floors:  # inside a floor's own range, that floor wins over a neighbour's margin
            out[(z >= fl.z_floor) & (z <= fl.z_ceiling)] = fl.index
        return out

    def room_of_points(self, points: np.ndarray) -> np.ndarray:
        """Room index of each 3D point (-1 when it is in no room)."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        out = np.full(len(points), -1, np.int64)
        floor = self.floor_of_z(points[:, 2])
        for f, plan in self.plans.items():
            sel = floor == f
            if sel.any():
                out[sel] = plan.room_at_xy(points[sel, :2])
        return out


def _line_footprint(length_cells: int, angle_deg: float) -> np.ndarray:
    from skimage.draw import line

    half = max(1, length_cells // 2)
    theta = math.radians(angle_deg)
    dc, dr = round(half * math.cos(theta)), round(half * math.sin(theta))
    size = 2 * half + 1
    fp = np.zeros((size, size), dtype=bool)
    rr, cc = line(half - dr, half - dc, half + dr, half + dc)
    fp[rr, cc] = True
    return fp


def _padded(op: Any, mask: np.ndarray, footprint: np.ndarray) -> np.ndarray:
    pad = max(footprint.shape)
    out = op(np.pad(mask, pad), structure=footprint)
    return out[pad:-pad, pad:-pad]


def close_wall_gaps(walls: np.ndarray, config: RoomConfig) -> np.ndarray:
    """Small isotropic closing, then collinear gap closing: runs at least ``wall_min_run`` long in each
    orientation are joined across gaps up to ``wall_gap_close`` along that orientation."""
    from scipy.ndimage import binary_closing, binary_opening
    from skimage.morphology import disk

    res = config.grid_resolution
    out = walls.copy()
    r = round(config.small_gap_close / res / 2)
    if r >= 1:
        out |= _padded(binary_closing, out, disk(r))
    run = max(3, round(config.wall_min_run / res))
    gap = round(config.wall_gap_close / res)
    if gap >= 2:
        extra = np.zeros_like(out)
        for angle in config.gap_close_angles_deg:
            runs = _padded(binary_opening, out, _line_footprint(run, angle))
            if runs.any():
                extra |= _padded(binary_closing, runs, _line_footprint(gap + 2, angle))
        out |= extra
    return out


def _merge_small(labels: np.ndarray, min_cells: int) -> np.ndarray:
    """Relabel regions smaller than ``min_cells`` to the neighbour sharing the longest border (or drop)."""
    from scipy.ndimage import binary_dilation

    labels = labels.copy()
    changed = True
    while changed:
        changed = False
        ids, counts = np.unique(labels[labels > 0], return_counts=True)
        for rid, cnt in sorted(zip(ids.tolist(), counts.tolist(), strict=True), key=lambda t: t[1]):
            if cnt >= min_cells:
                continue
            region = labels == rid
            ring = binary_dilation(region, np.ones((3, 3), bool)) & ~region
            neigh = labels[ring]
            neigh = neigh[(neigh > 0) & (neigh != rid)]
            if len(neigh):
                vals, n = np.unique(neigh, return_counts=True)
                labels[region] = vals[int(np.argmax(n))]
            else:
                labels[region] = 0
            changed = True
            break
    return labels


def _polygon(mask: np.ndarray, x0: float, y0: float, res: float, tolerance: float) -> np.ndarray:
    from skimage.measure import approximate_polygon, find_contours

    contours = find_contours(np.pad(mask.astype(np.float32), 1), 0.5)
    if not contours:
        return np.zeros((0, 2))
    contour = max(contours, key=len)
    simple = approximate_polygon(contour, tolerance=max(tolerance / res, 0.0))
    rows, cols = simple[:, 0] - 1.0, simple[:, 1] - 1.0  # undo the pad; contour is in cell-centre units
    poly = np.column_stack([x0 + (cols + 0.5) * res, y0 + (rows + 0.5) * res])
    if len(poly) > 1 and np.allclose(poly[0], poly[-1]):
        poly = poly[:-1]
    x, y = poly[:, 0], poly[:, 1]
    if 0.5 * (np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))) < 0:
        poly = poly[::-1]
    return poly


def wall_evidence(
    points: np.ndarray, floor: FloorSegment, config: RoomConfig, grid: tuple[float, float, int, int]
) -> np.ndarray:
    """Wall cells of one floor from its points (see ``RoomConfig``): tall vertical coverage or lintel hits."""
    x0, y0, nrows, ncols = grid
    res = config.grid_resolution
    cols = np.clip(((points[:, 0] - x0) / res).astype(np.int64), 0, ncols - 1)
    rows = np.clip(((points[:, 1] - y0) / res).astype(np.int64), 0, nrows - 1)
    h = floor.clear_height
    lo, hi = config.wall_coverage_range
    n_bins = max(1, round((hi - lo) * h / config.wall_coverage_bin))
    zb = np.floor((points[:, 2] - floor.z_floor - lo * h) / config.wall_coverage_bin).astype(np.int64)
    sel = (zb >= 0) & (zb < n_bins)
    cell = rows[sel] * ncols + cols[sel]
    occupied = np.unique(cell * n_bins + zb[sel])
    coverage = np.bincount(occupied // n_bins, minlength=nrows * ncols).reshape(nrows, ncols) / n_bins
    band = (points[:, 2] >= floor.z_floor + config.wall_band_low * h) & (
        points[:, 2] <= floor.z_ceiling - config.wall_band_top_margin
    )
    hits = np.bincount(rows[band] * ncols + cols[band], minlength=nrows * ncols).reshape(nrows, ncols)
    return (coverage >= config.wall_min_coverage) | (hits >= config.min_wall_hits)


def _merge_open_gaps(labels: np.ndarray, synthetic: np.ndarray, config: RoomConfig) -> np.ndarray:
    """Merge two regions separated only by a joined gap that spans the full width of both (the gap was an
    opening in the middle of one space, e.g. a corridor crossed where two walls happen to line up)."""
    from scipy.ndimage import binary_dilation, label

    res = config.grid_resolution
    comps, n = label(synthetic, np.ones((3, 3), bool))
    labels = labels.copy()
    for k in range(1, n + 1):
        seg = comps == k
        rr, cc = np.nonzero(seg)
        if len(rr) < 3:
            continue
        ring = binary_dilation(seg, np.ones((3, 3), bool), iterations=2) & ~seg
        ids, counts = np.unique(labels[ring], return_counts=True)
        keep = ids > 0
        ids, counts = ids[keep], counts[keep]
        if len(ids) < 2:
            continue
        a, b = ids[np.argsort(counts)[::-1][:2]]
        pts = np.column_stack([cc, rr]).astype(np.float64)
        centre = pts.mean(axis=0)
        _, _, vt = np.linalg.svd(pts - centre, full_matrices=False)
        axis = vt[0]
        along = (pts - centre) @ axis
        length = float(along.max() - along.min() + 1) * res
        across = (pts - centre) @ np.array([-axis[1], axis[0]])
        half_thick = float(np.abs(across).max()) + 3.0
        reach = length / res / 2.0 + config.wall_gap_close / res
        extents = []
        for rid in (a, b):
            ri, rj = np.nonzero(labels == rid)
            q = np.column_stack([rj, ri]).astype(np.float64) - centre
            qa, qx = q @ axis, q @ np.array([-axis[1], axis[0]])
            near = (np.abs(qx) <= half_thick) & (np.abs(qa) <= reach)
            extents.append(float(qa[near].max() - qa[near].min() + 1) * res if near.any() else np.inf)
        if max(extents) <= length + config.open_gap_tolerance:
            labels[labels == b] = a
    return labels


def segment_floor(
    recon: Reconstruction, floor: FloorSegment, config: RoomConfig, first_index: int
) -> tuple[FloorPlan, list[RoomSegment]]:
    """Rooms of one floor (global indices from ``first_index``)."""
    from scipy.ndimage import (
        binary_closing,
        binary_dilation,
        binary_fill_holes,
        distance_transform_edt,
        label,
    )
    from skimage.segmentation import expand_labels, watershed

    res = config.grid_resolution
    pts = recon.points
    in_floor = (pts[:, 2] >= floor.z_floor - 0.1) & (pts[:, 2] <= floor.z_ceiling + 0.1)
    if not in_floor.any():
        raise BuildError("rooms", f"floor {floor.index} has no reconstructed points")
    fp = pts[in_floor].astype(np.float64)
    x0, y0 = float(fp[:, 0].min()) - 4 * res, float(fp[:, 1].min()) - 4 * res
    ncols = math.ceil((float(fp[:, 0].max()) + 4 * res - x0) / res)
    nrows = math.ceil((float(fp[:, 1].max()) + 4 * res - y0) / res)
    cols = np.clip(((fp[:, 0] - x0) / res).astype(np.int64), 0, ncols - 1)
    rows = np.clip(((fp[:, 1] - y0) / res).astype(np.int64), 0, nrows - 1)
    observed = np.zeros((nrows, ncols), bool)
    observed[rows, cols] = True
    observed = binary_fill_holes(binary_closing(observed, np.ones((3, 3), bool), iterations=2))
    evidence = wall_evidence(fp, floor, config, (x0, y0, nrows, ncols))
    walls = close_wall_gaps(evidence, config)
    free = observed & ~walls
    dist = distance_transform_edt(free) * res
    cores, n_cores = label(dist >= config.marker_clearance)
    if n_cores:
        sizes = np.bincount(cores.ravel(), minlength=n_cores + 1)
        small = sizes * res * res < config.min_marker_area
        small[0] = False
        cores[small[cores]] = 0
    labels = watershed(-dist, cores, mask=free) if cores.max() > 0 else np.zeros_like(cores)
    # Free components no marker reached (narrow closets) become rooms of their own.
    orphans, n_orphans = label(free & (labels == 0))
    next_id = int(labels.max()) + 1
    for k in range(1, n_orphans + 1):
        labels[orphans == k] = next_id
        next_id += 1
    labels = _merge_small(labels, math.ceil(config.min_room_area / (res * res)))
    # Gap bodies: cells the gap closing added, away from observed walls (not slivers along them).
    near_evidence = binary_dilation(evidence, np.ones((3, 3), bool), iterations=2)
    labels = _merge_open_gaps(labels, walls & ~near_evidence, config)
    grown = expand_labels(labels, distance=max(1.0, 0.3 / res))
    grown[~(observed | walls)] = 0
    region_ids = [int(v) for v in np.unique(grown) if v > 0]
    if not region_ids:
        raise BuildError(
            "rooms",
            f"floor {floor.index}: no free space left after removing walls",
            hint="lower rooms.marker_clearance or min_room_area, or check the wall band",
        )
    final = np.zeros_like(grown, dtype=np.int32)
    rooms: list[RoomSegment] = []
    for rid in region_ids:
        mask = grown == rid
        gidx = first_index + len(rooms)
        final[mask] = gidx + 1
        rr, cc = np.nonzero(mask)
        centroid = (float(x0 + (cc.mean() + 0.5) * res), float(y0 + (rr.mean() + 0.5) * res))
        rooms.append(
            RoomSegment(
                gidx,
                floor.index,
                _polygon(mask, x0, y0, res, config.polygon_tolerance),
                round(float(mask.sum()) * res * res, 4),
                centroid,
                floor.z_floor,
                floor.z_ceiling,
            )
        )
    return FloorPlan(floor.index, x0, y0, res, final, walls), rooms


def segment_rooms(
    recon: Reconstruction, floors: list[FloorSegment], config: RoomConfig | None = None
) -> tuple[list[RoomSegment], list[FloorPlan]]:
    """Rooms of every floor, numbered globally bottom-up (see module docstring)."""
    cfg = config or RoomConfig()
    rooms: list[RoomSegment] = []
    plans: list[FloorPlan] = []
    for fl in floors:
        plan, floor_rooms = segment_floor(recon, fl, cfg, len(rooms))
        plans.append(plan)
        rooms.extend(floor_rooms)
    return rooms, plans


def save_plans(path: str | Path, plans: list[FloorPlan]) -> None:
    arrays: dict[str, np.ndarray] = {}
    for p in plans:
        arrays[f"labels_{p.floor}"] = p.labels
        arrays[f"walls_{p.floor}"] = p.walls
        arrays[f"origin_{p.floor}"] = np.array([p.x0, p.y0, p.resolution])
    np.savez_compressed(path, floors=np.array([p.floor for p in plans]), **arrays)


def load_plans(path: str | Path) -> list[FloorPlan]:
    with np.load(path) as data:
        out = []
        for f in data["floors"].tolist():
            x0, y0, res = data[f"origin_{f}"].tolist()
            out.append(FloorPlan(int(f), x0, y0, res, data[f"labels_{f}"], data[f"walls_{f}"]))
        return out


__all__ = [
    "FloorPlan",
    "RoomMap",
    "RoomSegment",
    "close_wall_gaps",
    "load_plans",
    "save_plans",
    "segment_floor",
    "segment_rooms",
    "wall_evidence",
]
