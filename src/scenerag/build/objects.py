"""Objects and functional elements from keyframe masks: lifting to 3D, incremental merging across
keyframes, best-view selection, parent linking and room assignment (KeySG III-C).

Contract: ``build_objects`` runs the segmenter on every keyframe (in time order), lifts each mask's
valid-depth pixels to world points (voxel-downsampled, split into 3D parts of which only the big ones
are kept), and merges each segment into an existing object of the same kind and label when the object's
points that are visible in this keyframe fall inside the mask (projective association) or when the two
point sets overlap in 3D; otherwise it starts a new object. A mask that carries a segmenter ``instance``
id joins the object of that id instead. A final pass merges same-label objects that
overlap in 3D. Each object keeps its best view (largest mask, away from the image border). Every
functional element is linked to the nearest object within ``link_distance``; every object gets the room
holding most of its points.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from scenerag.build.config import ObjectConfig
from scenerag.build.datasets import RGBDFrame, RGBDSequence
from scenerag.build.errors import BuildError
from scenerag.build.reconstruct import key_coords, neighbour_keys, voxel_keys
from scenerag.build.rooms import RoomMap
from scenerag.build.segmentation import KIND_FUNCTIONAL, Mask2D, Segmenter, normalize_label

Progress = Callable[[str, int, int], None]


@dataclass
class Observation:
    """One mask of an object: the keyframe, mask area (pixels), bbox (x0, y0, x1, y1) and view score."""

    frame: int
    area: int
    bbox: tuple[int, int, int, int]
    score: float


@dataclass
class MapObject:
    """A 3D object or functional element assembled from keyframe segments."""

    uid: int
    kind: str
    points: np.ndarray
    colors: np.ndarray
    labels: Counter[str] = field(default_factory=Counter)
    attributes: dict[str, Counter[str]] = field(default_factory=dict)
    observations: list[Observation] = field(default_factory=list)
    confidence: float = 0.0
    room: int = -1
    parent: int | None = None
    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    bbox_min: np.ndarray = field(init=False, repr=False)
    bbox_max: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.set_points(self.points, self.colors)

    def set_points(self, points: np.ndarray, colors: np.ndarray) -> None:
        """Replace the points (and colours) and refresh the bounding box."""
        self.points, self.colors = points, colors
        if len(points):
            self.bbox_min, self.bbox_max = points.min(axis=0), points.max(axis=0)
        else:
            self.bbox_min = self.bbox_max = np.zeros(3, np.float32)

    @property
    def label(self) -> str:
        return self.labels.most_common(1)[0][0] if self.labels else "object"

    @property
    def center(self) -> np.ndarray:
        return self.points.mean(axis=0) if len(self.points) else np.zeros(3)

    @property
    def best_view(self) -> Observation | None:
        return max(self.observations, key=lambda o: o.score) if self.observations else None

    def attribute(self, name: str) -> str | None:
        votes = self.attributes.get(name)
        return votes.most_common(1)[0][0] if votes else None

    def meta(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "kind": self.kind,
            "labels": dict(self.labels),
            "attributes": {k: dict(v) for k, v in self.attributes.items()},
            "observations": [[o.frame, o.area, list(o.bbox), o.score] for o in self.observations],
            "confidence": self.confidence,
            "room": self.room,
            "parent": self.parent,
        }


# -- lifting -------------------------------------------------------------------------------------------
def _downsample(points: np.ndarray, colors: np.ndarray, voxel: float) -> tuple[np.ndarray, np.ndarray]:
    keys = voxel_keys(points, voxel)
    uniq, inv = np.unique(keys, return_inverse=True)
    counts = np.bincount(inv, minlength=len(uniq)).astype(np.float64)
    pts = np.column_stack([np.bincount(inv, weights=points[:, c], minlength=len(uniq)) for c in range(3)])
    col = np.column_stack([np.bincount(inv, weights=colors[:, c], minlength=len(uniq)) for c in range(3)])
    return (pts / counts[:, None]).astype(np.float32), np.clip(col / counts[:, None], 0, 255).astype(np.uint8)


def _big_parts(points: np.ndarray, voxel: float, fraction: float) -> np.ndarray:
    """Mask of the points in 3D-connected parts (26-neighbourhood on a ``voxel`` grid) holding at least
    ``fraction`` of the largest part's points (drops depth bleeding and stray pixels)."""
    from scipy.ndimage import label

    if len(points) == 0 or fraction <= 0:
        return np.ones(len(points), bool)
    coords = key_coords(voxel_keys(points, voxel))
    lo = coords.min(axis=0)
    idx = coords - lo
    shape = tuple(int(v) + 1 for v in idx.max(axis=0))
    if np.prod(shape) > 8_000_000:  # absurdly spread segment: keep as is rather than allocate
        return np.ones(len(points), bool)
    grid = np.zeros(shape, bool)
    grid[idx[:, 0], idx[:, 1], idx[:, 2]] = True
    comps, n = label(grid, np.ones((3, 3, 3), bool))
    if n <= 1:
        return np.ones(len(points), bool)
    point_comp = comps[idx[:, 0], idx[:, 1], idx[:, 2]]
    sizes = np.bincount(point_comp, minlength=n + 1)
    sizes[0] = 0
    return sizes[point_comp] >= fraction * sizes.max()


def lift_mask(frame: RGBDFrame, mask: np.ndarray, config: ObjectConfig) -> tuple[np.ndarray, np.ndarray]:
    """World points (voxel-downsampled) and colours of a mask's valid-depth pixels."""
    rows, cols = np.nonzero(mask & (frame.depth > 0))
    if len(rows) > config.max_mask_points:
        pick = np.linspace(0, len(rows) - 1, config.max_mask_points).astype(np.int64)
        rows, cols = rows[pick], cols[pick]
    if len(rows) == 0:
        return np.zeros((0, 3), np.float32), np.zeros((0, 3), np.uint8)
    pts = frame.pixels_to_world(rows, cols)
    cols_rgb = frame.rgb[rows, cols].astype(np.float64)
    pts, colors = _downsample(pts, cols_rgb, config.voxel_size)
    keep = _big_parts(pts, config.merge_voxel_size, config.component_fraction)
    return pts[keep], colors[keep]


def view_score(mask: Mask2D, shape: tuple[int, int], margin: float) -> float:
    """Best-view score: mask area, discounted when the mask's box comes closer to the image border than
    ``margin`` of the image's smaller side."""
    h, w = shape
    x0, y0, x1, y1 = mask.bbox()
    gap = min(x0, y0, w - 1 - x1, h - 1 - y1)
    factor = 1.0 if margin <= 0 else min(1.0, max(gap, 0) / (margin * min(h, w)))
    return float(mask.area * (0.1 + 0.9 * factor))


# -- merging -------------------------------------------------------------------------------------------
@dataclass
class _Segment:
    mask: Mask2D
    label: str
    points: np.ndarray
    colors: np.ndarray
    keys: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


class ObjectMap:
    """The growing set of objects; ``integrate`` adds one keyframe's masks."""

    def __init__(self, config: ObjectConfig | None = None) -> None:
        self.config = config or ObjectConfig()
        self.objects: dict[int, MapObject] = {}
        self._next = 0
        self.n_segments = 0
        self._instances: dict[int, int] = {}  # segmenter instance id -> object uid

    def _keys(self, points: np.ndarray) -> np.ndarray:
        return np.unique(voxel_keys(points, self.config.merge_voxel_size))

    def _cap(self, obj: MapObject) -> None:
        cfg = self.config
        if len(obj.points) > cfg.max_object_points:
            rng = np.random.default_rng(obj.uid * 7919 + len(obj.observations))
            pick = np.sort(rng.choice(len(obj.points), cfg.max_object_points, replace=False))
            obj.set_points(obj.points[pick], obj.colors[pick])
        obj.keys = self._keys(obj.points)

    def _projection_match(self, obj: MapObject, frame: RGBDFrame, mask: np.ndarray) -> tuple[float, int]:
        """Fraction of the object's points visible in ``frame`` that fall inside ``mask``, and how many
        points are visible."""
        pts = obj.points
        if len(pts) > 600:
            pts = pts[np.linspace(0, len(pts) - 1, 600).astype(np.int64)]
        k = frame.intrinsics
        cam = (pts.astype(np.float64) - frame.pose[:3, 3]) @ frame.pose[:3, :3]
        z = cam[:, 2]
        front = z > 1e-3
        u = np.full(len(z), -1, np.int64)
        v = np.full(len(z), -1, np.int64)
        u[front] = np.round(cam[front, 0] / z[front] * k.fx + k.cx).astype(np.int64)
        v[front] = np.round(cam[front, 1] / z[front] * k.fy + k.cy).astype(np.int64)
        inside = front & (u >= 0) & (u < k.width) & (v >= 0) & (v < k.height)
        if not inside.any():
            return 0.0, 0
        d = frame.depth[v[inside], u[inside]]
        visible = (d > 0) & (np.abs(z[inside] - d) <= self.config.depth_tolerance)
        n = int(visible.sum())
        if n == 0:
            return 0.0, 0
        hits = mask[v[inside][visible], u[inside][visible]]
        return float(hits.mean()), n

    @staticmethod
    def _overlap(seg_keys: np.ndarray, obj_keys: np.ndarray) -> float:
        """Largest of: fraction of the segment's voxels next to the object's, and vice versa."""
        if len(seg_keys) == 0 or len(obj_keys) == 0:
            return 0.0
        near_seg = np.isin(neighbour_keys(seg_keys), obj_keys).any(axis=0).mean()
        dilated = np.unique(neighbour_keys(seg_keys).ravel())
        near_obj = np.isin(obj_keys, dilated).mean()
        return float(max(near_seg, near_obj))

    def integrate(self, frame: RGBDFrame, masks: Iterable[Mask2D]) -> None:
        """Lift ``masks`` of ``frame`` and merge them into the map."""
        cfg = self.config
        segments: list[_Segment] = []
        for m in masks:
            pts, cols = lift_mask(frame, m.mask, cfg)
            if len(pts) < (cfg.min_element_points if m.kind == KIND_FUNCTIONAL else cfg.min_points):
                continue
            segments.append(
                _Segment(m, normalize_label(m.label), pts, cols, self._keys(pts), pts.min(0), pts.max(0))
            )
        self.n_segments += len(segments)
        existing = list(self.objects.values())
        labels = [o.label for o in existing]
        los = np.array([o.bbox_min for o in existing]) if existing else np.zeros((0, 3))
        his = np.array([o.bbox_max for o in existing]) if existing else np.zeros((0, 3))
        pad = 2 * cfg.merge_voxel_size
        for seg in segments:
            best, best_score = None, 0.0
            if seg.mask.instance is not None:
                # The segmenter already knows the correspondence (map-level instances).
                uid = self._instances.get(seg.mask.instance)
                best = self.objects.get(uid) if uid is not None else None
            elif existing:
                near = np.all(los <= seg.hi + pad, axis=1) & np.all(his >= seg.lo - pad, axis=1)
                for j in np.flatnonzero(near):
                    obj = existing[j]
                    if obj.kind != seg.mask.kind or labels[j] != seg.label:
                        continue
                    frac, support = self._projection_match(obj, frame, seg.mask.mask)
                    proj = frac if support >= cfg.min_support and frac >= cfg.projection_match else 0.0
                    overlap = self._overlap(seg.keys, obj.keys)
                    score = max(proj, overlap if overlap >= cfg.overlap_match else 0.0)
                    if score > best_score:
                        best, best_score = obj, score
            obs = Observation(
                frame.index,
                seg.mask.area,
                seg.mask.bbox(),
                view_score(seg.mask, frame.depth.shape, cfg.border_margin),
            )
            if best is None:
                best = MapObject(self._next, seg.mask.kind, seg.points, seg.colors)
                self.objects[self._next] = best
                if seg.mask.instance is not None:
                    self._instances[seg.mask.instance] = self._next
                self._next += 1
            else:
                merged = np.concatenate([best.points, seg.points])
                merged_cols = np.concatenate([best.colors, seg.colors])
                best.set_points(*_downsample(merged, merged_cols.astype(np.float64), cfg.voxel_size))
            best.labels[seg.label] += 1
            for name, value in seg.mask.attributes.items():
                best.attributes.setdefault(name, Counter())[str(value)] += 1
            best.observations.append(obs)
            best.confidence = max(best.confidence, float(seg.mask.score))
            self._cap(best)

    def post_merge(self) -> int:
        """Merge same-kind, same-label objects whose points overlap by ``post_merge_overlap`` (never two
        objects of different segmenter instances); returns the number of merges."""
        cfg = self.config
        merges = 0
        pad = 2 * cfg.merge_voxel_size
        changed = True
        while changed:
            changed = False
            tracked = set(self._instances.values())
            objs = sorted(self.objects.values(), key=lambda o: -len(o.points))
            groups = [(o.kind, o.label) for o in objs]
            los = np.array([o.bbox_min for o in objs]).reshape(-1, 3)
            his = np.array([o.bbox_max for o in objs]).reshape(-1, 3)
            for i, a in enumerate(objs):
                near = np.all(los[i + 1 :] <= his[i] + pad, axis=1) & np.all(
                    his[i + 1 :] >= los[i] - pad, axis=1
                )
                for j in np.flatnonzero(near) + i + 1:
                    b = objs[j]
                    if a.uid in tracked and b.uid in tracked:
                        continue  # two instances the segmenter told apart
                    if groups[j] == groups[i] and self._overlap(b.keys, a.keys) >= cfg.post_merge_overlap:
                        self._absorb(a, b)
                        merges += 1
                        changed = True
                        break
                if changed:
                    break
        return merges

    def _absorb(self, a: MapObject, b: MapObject) -> None:
        pts = np.concatenate([a.points, b.points])
        cols = np.concatenate([a.colors, b.colors]).astype(np.float64)
        a.set_points(*_downsample(pts, cols, self.config.voxel_size))
        a.labels.update(b.labels)
        for name, votes in b.attributes.items():
            a.attributes.setdefault(name, Counter()).update(votes)
        a.observations.extend(b.observations)
        a.confidence = max(a.confidence, b.confidence)
        self._cap(a)
        for inst, uid in self._instances.items():
            if uid == b.uid:
                self._instances[inst] = a.uid
        del self.objects[b.uid]


def link_functional_elements(objects: dict[int, MapObject], link_distance: float) -> None:
    """Set ``parent`` of every functional element to the object (not element) nearest to it, when that
    object's points come within ``link_distance`` of the element's points."""
    from scipy.spatial import cKDTree

    parents = [o for o in objects.values() if o.kind != KIND_FUNCTIONAL and len(o.points)]
    trees = {o.uid: cKDTree(o.points) for o in parents}
    for el in objects.values():
        if el.kind != KIND_FUNCTIONAL or not len(el.points):
            continue
        best, best_d = None, np.inf
        for o in parents:
            if np.any(o.bbox_min > el.bbox_max + link_distance) or np.any(
                el.bbox_min > o.bbox_max + link_distance
            ):
                continue
            d, _ = trees[o.uid].query(el.points, k=1, distance_upper_bound=link_distance + 1e-9)
            close = np.isfinite(d)
            if not close.any():
                continue
            score = float(np.median(np.where(close, d, link_distance * 2)))
            if score < best_d:
                best, best_d = o, score
        el.parent = best.uid if best is not None else None


def assign_rooms(objects: dict[int, MapObject], room_map: RoomMap, fallback: dict[int, int]) -> None:
    """Room of each object: the room holding most of its points; else the room of its first keyframe."""
    for obj in objects.values():
        rooms = room_map.room_of_points(obj.points)
        rooms = rooms[rooms >= 0]
        if len(rooms):
            obj.room = int(np.bincount(rooms).argmax())
        else:
            first = obj.observations[0].frame if obj.observations else -1
            obj.room = int(fallback.get(first, -1))


def build_objects(
    sequence: RGBDSequence,
    keyframes: list[int],
    segmenter: Segmenter,
    room_map: RoomMap,
    keyframe_room: dict[int, int],
    config: ObjectConfig | None = None,
    progress: Progress | None = None,
) -> tuple[dict[int, MapObject], dict[str, Any]]:
    """Segment ``keyframes`` (sequence indices), build the object map, link elements, assign rooms.
    Returns the objects (renumbered 0..n-1 by room, kind, label) and statistics."""
    cfg = config or ObjectConfig()
    report = progress or (lambda stage, done, total: None)
    omap = ObjectMap(cfg)
    frames = sorted({int(f) for f in keyframes})
    n_masks = 0
    report("objects", 0, len(frames))
    for n, f in enumerate(frames):
        frame = sequence[f]
        masks = segmenter.segment(frame)
        n_masks += len(masks)
        omap.integrate(frame, masks)
        report("objects", n + 1, len(frames))
    n_merges = omap.post_merge()
    link_functional_elements(omap.objects, cfg.link_distance)
    assign_rooms(omap.objects, room_map, keyframe_room)
    order = sorted(
        omap.objects.values(), key=lambda o: (o.kind == KIND_FUNCTIONAL, o.room, o.label, *o.center.round(3))
    )
    remap = {o.uid: i for i, o in enumerate(order)}
    out: dict[int, MapObject] = {}
    for o in order:
        o.uid = remap[o.uid]
        o.parent = remap.get(o.parent) if o.parent is not None else None
        out[o.uid] = o
    stats = {
        "keyframes": len(frames),
        "masks": n_masks,
        "segments": omap.n_segments,
        "post_merges": n_merges,
        "objects": sum(o.kind != KIND_FUNCTIONAL for o in out.values()),
        "functional_elements": sum(o.kind == KIND_FUNCTIONAL for o in out.values()),
    }
    return out, stats


def save_objects(directory: str | Path, objects: dict[int, MapObject]) -> None:
    """``objects.npz`` (points, colours, offsets) + ``objects.json`` (everything else)."""
    directory = Path(directory)
    order = sorted(objects)
    pts = [objects[u].points for u in order]
    offsets = np.zeros(len(order) + 1, np.int64)
    offsets[1:] = np.cumsum([len(p) for p in pts])
    np.savez_compressed(
        directory / "objects.npz",
        uids=np.array(order, np.int64),
        offsets=offsets,
        points=np.concatenate(pts) if pts else np.zeros((0, 3), np.float32),
        colors=np.concatenate([objects[u].colors for u in order]) if order else np.zeros((0, 3), np.uint8),
    )
    (directory / "objects.json").write_text(json.dumps([objects[u].meta() for u in order]))


def load_objects(directory: str | Path) -> dict[int, MapObject]:
    directory = Path(directory)
    try:
        metas = json.loads((directory / "objects.json").read_text())
        data = np.load(directory / "objects.npz")
    except (OSError, ValueError) as exc:
        raise BuildError("objects", f"cannot read cached objects in {directory}: {exc}") from None
    out: dict[int, MapObject] = {}
    with data:
        offsets, points, colors = data["offsets"], data["points"], data["colors"]
        for i, meta in enumerate(metas):
            s, e = int(offsets[i]), int(offsets[i + 1])
            obj = MapObject(
                int(meta["uid"]),
                str(meta["kind"]),
                points[s:e],
                colors[s:e],
                Counter(meta["labels"]),
                {k: Counter(v) for k, v in meta["attributes"].items()},
                [
                    Observation(int(f), int(a), (int(b[0]), int(b[1]), int(b[2]), int(b[3])), float(sc))
                    for f, a, b, sc in meta["observations"]
                ],
                float(meta["confidence"]),
                int(meta["room"]),
                None if meta["parent"] is None else int(meta["parent"]),
            )
            out[obj.uid] = obj
    return out


__all__ = [
    "MapObject",
    "ObjectMap",
    "Observation",
    "assign_rooms",
    "build_objects",
    "lift_mask",
    "link_functional_elements",
    "load_objects",
    "save_objects",
    "view_score",
]
