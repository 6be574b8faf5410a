"""Evaluation of a build against the ground truth of a synthetic sequence (``gt/`` sidecars).

Measures: floors (count and heights within tolerance), rooms (IoU of predicted vs ground-truth polygons
after Hungarian matching per floor, room-type accuracy), objects (per-object IoU on 5 cm voxels of the
*observed* ground-truth surface, precision/recall at IoU 0.25 / 0.5, label accuracy), semantics with the
Replica protocol (every observed ground-truth voxel takes the class of its nearest predicted object
point within ``max_distance``; mIoU, mAcc and frequency-weighted F-mIoU), functional elements (Recall@K
at IoU thresholds on 2 cm voxels, candidates ranked per room by label and parent-label agreement, ties
counted at their expected value) and the keyframe ablation (method x object recall x geometric coverage
x sampling ratio). The ground-truth voxels are the *observed* surface: the instance images of the
sequence back-projected with the reconstruction's sampling (nothing never seen can be segmented).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from scenerag.build.config import BuildConfig, KeyframeConfig
from scenerag.build.errors import BuildError
from scenerag.build.floors import FloorSegment
from scenerag.build.keyframes import (
    ColorHistogramEncoder,
    ImageEncoder,
    KeyframeMetrics,
    keyframe_metrics,
    select_room_keyframes,
)
from scenerag.build.objects import MapObject
from scenerag.build.pipeline import BuildArtifacts
from scenerag.build.reconstruct import voxel_keys
from scenerag.build.rooms import RoomSegment
from scenerag.build.segmentation import KIND_FUNCTIONAL, normalize_label


# -- ground truth ----------------------------------------------------------------------------------------
@dataclass
class GroundTruth:
    """The ground truth of a synthetic sequence: its instance table (classes, rooms, floors)."""

    table: dict[str, Any]

    @property
    def instances(self) -> dict[int, dict[str, Any]]:
        return {int(d["id"]): d for d in self.table["instances"]}

    @classmethod
    def from_sequence(cls, sequence: Any) -> GroundTruth:
        table = sequence.instance_table()
        if table is None or not sequence.has_ground_truth:
            raise BuildError(
                "evaluate",
                f"{sequence.root} has no ground truth (gt/instances.json and gt/instance/)",
                hint="evaluation needs a sequence written by scenerag.sim.render.write_sequence",
            )
        return cls(table)

    def scene_objects(self) -> list[int]:
        """Instances that are Object nodes of the ground-truth graph (objects, doors, stairs)."""
        return [
            i for i, d in self.instances.items() if d["kind"] == "object" or d["class"] in ("door", "stairs")
        ]

    def functional_elements(self) -> list[int]:
        return [i for i, d in self.instances.items() if d["kind"] == "functional"]


@dataclass
class LabelledVoxels:
    """Ground-truth instance label of every observed voxel: the majority instance id of the pixels that
    fell into it over the scanned frames (``keys`` sorted, ``ids`` aligned, ``points`` voxel centres)."""

    voxel_size: float
    keys: np.ndarray
    ids: np.ndarray
    points: np.ndarray

    def sets(self, wanted: Sequence[int]) -> dict[int, np.ndarray]:
        """Voxel keys of each wanted instance."""
        sel = np.isin(self.ids, np.asarray(list(wanted), dtype=np.int64))
        return _voxel_groups(self.keys[sel], self.ids[sel])


def label_voxels(
    sequence: Any,
    voxel: float = 0.05,
    *,
    pixel_stride: int = 4,
    frame_step: int = 1,
    only_ids: Sequence[int] | None = None,
    max_depth: float = 8.0,
) -> LabelledVoxels:
    """Back-project the ground-truth instance images (every ``frame_step``-th frame, every
    ``pixel_stride``-th pixel) and give each voxel its majority instance id (``only_ids`` restricts the
    instances considered). Same sampling as the reconstruction, so sets compare density-for-density."""
    k = sequence.intrinsics
    rows, cols = np.mgrid[0 : k.height : pixel_stride, 0 : k.width : pixel_stride]
    rows, cols = rows.ravel(), cols.ravel()
    rx, ry = (cols - k.cx) / k.fx, (rows - k.cy) / k.fy
    allowed = None
    if only_ids is not None:
        allowed = np.zeros(max([0, *only_ids]) + 2, bool)
        allowed[list(only_ids)] = True
    pair_keys: list[np.ndarray] = []
    pair_ids: list[np.ndarray] = []
    pair_counts: list[np.ndarray] = []

    def fold() -> None:
        if len(pair_keys) <= 1:
            return
        kk, ii, cc = np.concatenate(pair_keys), np.concatenate(pair_ids), np.concatenate(pair_counts)
        order = np.lexsort((ii, kk))
        kk, ii, cc = kk[order], ii[order], cc[order]
        new = np.ones(len(kk), bool)
        new[1:] = (kk[1:] != kk[:-1]) | (ii[1:] != ii[:-1])
        starts = np.flatnonzero(new)
        pair_keys[:] = [kk[starts]]
        pair_ids[:] = [ii[starts]]
        pair_counts[:] = [np.add.reduceat(cc, starts)]

    for n, f in enumerate(range(0, len(sequence), frame_step)):
        inst = sequence.instance_image(f)
        if inst is None:
            raise BuildError("evaluate", f"frame {f} has no ground-truth instance image")
        ids = inst[rows, cols].astype(np.int64)
        depth = sequence.depth(f)[rows, cols].astype(np.float64)
        ok = (ids > 0) & (depth > 0) & (depth < max_depth)
        if allowed is not None:
            ok &= (ids < len(allowed)) & allowed[np.minimum(ids, len(allowed) - 1)]
        if not ok.any():
            continue
        pose = sequence.pose(f)
        z = depth[ok]
        world = np.column_stack([rx[ok] * z, ry[ok] * z, z]) @ pose[:3, :3].T + pose[:3, 3]
        keys = voxel_keys(world, voxel)
        pair = np.unique(np.column_stack([keys, ids[ok]]), axis=0, return_counts=True)
        pair_keys.append(pair[0][:, 0])
        pair_ids.append(pair[0][:, 1])
        pair_counts.append(pair[1].astype(np.int64))
        if (n + 1) % 100 == 0:
            fold()
    fold()
    if not pair_keys:
        return LabelledVoxels(voxel, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 3)))
    kk, ii, cc = pair_keys[0], pair_ids[0], pair_counts[0]
    # Majority id per key: sort by key, then count descending.
    order = np.lexsort((-cc, kk))
    kk, ii = kk[order], ii[order]
    first = np.ones(len(kk), bool)
    first[1:] = kk[1:] != kk[:-1]
    keys, ids = kk[first], ii[first]
    from scenerag.build.reconstruct import key_coords

    return LabelledVoxels(voxel, keys, ids, (key_coords(keys) + 0.5) * voxel)


def _voxel_groups(keys: np.ndarray, ids: np.ndarray) -> dict[int, np.ndarray]:
    order = np.argsort(ids, kind="stable")
    ids_s, keys_s = ids[order], keys[order]
    out: dict[int, np.ndarray] = {}
    bounds = np.flatnonzero(np.diff(ids_s)) + 1
    for seg_ids, seg_keys in zip(np.split(ids_s, bounds), np.split(keys_s, bounds), strict=True):
        if len(seg_ids):
            out[int(seg_ids[0])] = np.unique(seg_keys)
    return out


# -- floors and rooms ------------------------------------------------------------------------------------
@dataclass
class FloorResult:
    n_gt: int
    n_pred: int
    matched: int
    z_floor_errors: list[float]
    z_ceiling_errors: list[float]

    @property
    def all_correct(self) -> bool:
        return self.matched == self.n_gt == self.n_pred

    @property
    def accuracy(self) -> float:
        return self.matched / max(self.n_gt, self.n_pred, 1)


def evaluate_floors(pred: Sequence[FloorSegment], gt: GroundTruth, tolerance: float = 0.2) -> FloorResult:
    """A predicted floor is correct when its walking surface and ceiling are within ``tolerance`` of an
    unmatched ground-truth floor's."""
    gt_floors = sorted(gt.table["floors"], key=lambda f: f["z_min"])
    used: set[int] = set()
    zf, zc = [], []
    for p in sorted(pred, key=lambda f: f.z_floor):
        for k, g in enumerate(gt_floors):
            if k in used:
                continue
            df, dc = abs(p.z_floor - g["z_min"]), abs(p.z_ceiling - g["z_max"])
            if df <= tolerance and dc <= tolerance:
                used.add(k)
                zf.append(round(df, 4))
                zc.append(round(dc, 4))
                break
    return FloorResult(len(gt_floors), len(pred), len(used), zf, zc)


def _rasterize(polygon: np.ndarray, x0: float, y0: float, res: float, shape: tuple[int, int]) -> np.ndarray:
    from skimage.draw import polygon as fill

    mask = np.zeros(shape, bool)
    p = np.asarray(polygon, dtype=np.float64).reshape(-1, 2)
    if len(p) >= 3:
        rr, cc = fill((p[:, 1] - y0) / res - 0.5, (p[:, 0] - x0) / res - 0.5, shape)
        mask[rr, cc] = True
    return mask


@dataclass
class RoomResult:
    n_gt: int
    n_pred: int
    ious: list[float]  # per ground-truth room (0 when unmatched)
    matches: list[tuple[int, int, float]]  # (gt room, predicted room, IoU)
    type_accuracy: float | None

    @property
    def mean_iou(self) -> float:
        return float(np.mean(self.ious)) if self.ious else 0.0

    def recall_at(self, threshold: float) -> float:
        return sum(i >= threshold for i in self.ious) / max(self.n_gt, 1)

    def precision_at(self, threshold: float) -> float:
        return sum(iou >= threshold for _, _, iou in self.matches) / max(self.n_pred, 1)


def evaluate_rooms(
    pred: Sequence[RoomSegment],
    gt: GroundTruth,
    *,
    room_types: dict[int, str] | None = None,
    resolution: float = 0.05,
    floor_tolerance: float = 0.5,
) -> RoomResult:
    """IoU of room polygons (rasterised at ``resolution``), Hungarian-matched within each floor (a predicted
    room belongs to the ground-truth floor whose walking surface is within ``floor_tolerance``)."""
    from scipy.optimize import linear_sum_assignment

    gt_rooms = gt.table["rooms"]
    polys = [np.asarray(r["polygon"], float) for r in gt_rooms] + [r.polygon for r in pred if len(r.polygon)]
    if not gt_rooms:
        raise BuildError("evaluate", "the ground truth has no rooms")
    allp = np.concatenate(polys)
    x0, y0 = allp.min(axis=0) - 1.0
    x1, y1 = allp.max(axis=0) + 1.0
    shape = (math.ceil((y1 - y0) / resolution), math.ceil((x1 - x0) / resolution))
    gt_masks = [_rasterize(np.asarray(r["polygon"]), x0, y0, resolution, shape) for r in gt_rooms]
    pr_masks = [_rasterize(r.polygon, x0, y0, resolution, shape) for r in pred]
    gt_floor_z = {int(f["index"]): float(f["z_min"]) for f in gt.table["floors"]}
    iou = np.zeros((len(gt_rooms), len(pred)))
    for i, g in enumerate(gt_rooms):
        for j, p in enumerate(pred):
            if abs(p.z_min - gt_floor_z[int(g["floor"])]) > floor_tolerance:
                continue
            inter = np.logical_and(gt_masks[i], pr_masks[j]).sum()
            if inter:
                iou[i, j] = inter / np.logical_or(gt_masks[i], pr_masks[j]).sum()
    rows, cols = linear_sum_assignment(-iou) if iou.size else (np.zeros(0, int), np.zeros(0, int))
    per_gt = np.zeros(len(gt_rooms))
    matches = []
    for i, j in zip(rows.tolist(), cols.tolist(), strict=True):
        if iou[i, j] > 0:
            per_gt[i] = iou[i, j]
            matches.append((i, pred[j].index, round(float(iou[i, j]), 4)))
    type_acc = None
    if room_types is not None and matches:
        ok = [room_types.get(pj, "") == gt_rooms[gi]["type"] for gi, pj, v in matches if v >= 0.5]
        type_acc = float(np.mean(ok)) if ok else 0.0
    return RoomResult(len(gt_rooms), len(pred), [round(float(v), 4) for v in per_gt], matches, type_acc)


# -- objects -------------------------------------------------------------------------------------------------
def _iou_matrix(
    pred: dict[int, np.ndarray], gt: dict[int, np.ndarray]
) -> tuple[list[int], list[int], np.ndarray]:
    """IoU of every predicted voxel set with every ground-truth voxel set."""
    p_ids, g_ids = sorted(pred), sorted(gt)
    if not p_ids or not g_ids:
        return p_ids, g_ids, np.zeros((len(p_ids), len(g_ids)))
    g_keys = np.concatenate([gt[g] for g in g_ids])
    g_owner = np.concatenate([np.full(len(gt[g]), k) for k, g in enumerate(g_ids)])
    order = np.argsort(g_keys, kind="stable")
    g_keys, g_owner = g_keys[order], g_owner[order]
    inter = np.zeros((len(p_ids), len(g_ids)))
    for r, p in enumerate(p_ids):
        keys = pred[p]
        lo = np.searchsorted(g_keys, keys, side="left")
        hi = np.searchsorted(g_keys, keys, side="right")
        hit = hi > lo
        if not hit.any():
            continue
        owners = np.concatenate([g_owner[a:b] for a, b in zip(lo[hit], hi[hit], strict=True)])
        np.add.at(inter[r], owners, 1.0)
    p_size = np.array([len(pred[p]) for p in p_ids], float)[:, None]
    g_size = np.array([len(gt[g]) for g in g_ids], float)[None, :]
    return p_ids, g_ids, inter / np.maximum(p_size + g_size - inter, 1.0)


@dataclass
class ObjectResult:
    n_gt: int
    n_pred: int
    mean_iou_matched: float
    precision: dict[str, float]
    recall: dict[str, float]
    label_accuracy: float
    over_segmented: int


@dataclass
class _ObjectMatching:
    result: ObjectResult
    match: dict[int, int]  # predicted uid -> ground-truth instance id (Hungarian, IoU > 0)
    ious: dict[int, dict[int, float]]  # predicted uid -> {ground-truth id: IoU > 0}


def _match_objects(
    objects: dict[int, MapObject],
    gt: GroundTruth,
    labelled: LabelledVoxels,
    *,
    kind: str = "object",
    thresholds: Sequence[float] = (0.25, 0.5),
    min_voxels: int = 2,
) -> _ObjectMatching:
    from scipy.optimize import linear_sum_assignment

    functional = kind == KIND_FUNCTIONAL
    wanted = gt.functional_elements() if functional else gt.scene_objects()
    gt_sets = {k: v for k, v in labelled.sets(wanted).items() if len(v) >= min_voxels}
    preds = {u: o for u, o in objects.items() if (o.kind == KIND_FUNCTIONAL) == functional and len(o.points)}
    pred_sets = {u: np.unique(voxel_keys(o.points, labelled.voxel_size)) for u, o in preds.items()}
    p_ids, g_ids, iou = _iou_matrix(pred_sets, gt_sets)
    rows, cols = linear_sum_assignment(-iou) if iou.size else (np.zeros(0, int), np.zeros(0, int))
    pairs = [
        (p_ids[r], g_ids[c], float(iou[r, c])) for r, c in zip(rows.tolist(), cols.tolist(), strict=True)
    ]
    pairs = [p for p in pairs if p[2] > 0]
    inst = gt.instances
    precision, recall = {}, {}
    for t in thresholds:
        hits = sum(v >= t for _, _, v in pairs)
        precision[f"{t:g}"] = round(hits / max(len(pred_sets), 1), 4)
        recall[f"{t:g}"] = round(hits / max(len(gt_sets), 1), 4)
    labels_ok = [
        normalize_label(preds[p].label) == normalize_label(inst[g]["class"]) for p, g, v in pairs if v >= 0.25
    ]
    best = [g_ids[int(np.argmax(iou[r]))] for r in range(len(p_ids)) if iou[r].max() >= 0.25]
    over = sum(1 for n in np.unique(best, return_counts=True)[1] if n > 1) if best else 0
    result = ObjectResult(
        n_gt=len(gt_sets),
        n_pred=len(pred_sets),
        mean_iou_matched=round(float(np.mean([v for _, _, v in pairs])) if pairs else 0.0, 4),
        precision=precision,
        recall=recall,
        label_accuracy=round(float(np.mean(labels_ok)) if labels_ok else 0.0, 4),
        over_segmented=int(over),
    )
    sparse = {
        p_ids[r]: {g_ids[c]: float(iou[r, c]) for c in np.flatnonzero(iou[r] > 0)} for r in range(len(p_ids))
    }
    return _ObjectMatching(result, {p: g for p, g, _ in pairs}, sparse)


def evaluate_objects(
    objects: dict[int, MapObject],
    gt: GroundTruth,
    labelled: LabelledVoxels,
    *,
    thresholds: Sequence[float] = (0.25, 0.5),
) -> ObjectResult:
    """Per-object 3D segmentation: IoU of predicted and ground-truth voxel sets (``labelled``: observed
    ground-truth voxels), Hungarian matching, precision/recall at ``thresholds``, label accuracy of the
    matches at IoU >= 0.25, and how many ground-truth objects are the best match of several predictions."""
    return _match_objects(objects, gt, labelled, thresholds=thresholds).result


@dataclass
class SemanticResult:
    miou: float
    macc: float
    fmiou: float
    n_points: int
    n_classes: int
    per_class_iou: dict[str, float] = field(default_factory=dict)


def evaluate_semantics(
    objects: dict[int, MapObject],
    gt: GroundTruth,
    labelled: LabelledVoxels,
    *,
    max_distance: float = 0.1,
) -> SemanticResult:
    """Replica-protocol class metrics: every observed ground-truth voxel of an object, door, staircase or
    functional element (walls, floors and ceilings excluded) takes the label of the nearest predicted
    point within ``max_distance`` (else none); per-class IoU, then mIoU, mAcc and F-mIoU."""
    from scipy.spatial import cKDTree

    inst = gt.instances
    wanted = np.asarray(sorted(set(gt.scene_objects()) | set(gt.functional_elements())), dtype=np.int64)
    sel = np.isin(labelled.ids, wanted)
    pts, ids = labelled.points[sel], labelled.ids[sel]
    objs = [o for o in objects.values() if len(o.points)]
    if not objs or not len(pts):
        return SemanticResult(0.0, 0.0, 0.0, len(pts), 0)
    gt_labels = np.array([normalize_label(inst[int(i)]["class"]) for i in ids])
    pred_pts = np.concatenate([o.points for o in objs])
    pred_lab = np.concatenate([np.full(len(o.points), normalize_label(o.label), dtype=object) for o in objs])
    d, nn = cKDTree(pred_pts).query(pts, k=1)
    pred = np.where(d <= max_distance, pred_lab[nn], "<none>")
    classes = sorted(set(gt_labels.tolist()))
    ious, accs, weights = [], [], []
    per_class = {}
    for c in classes:
        g = gt_labels == c
        p = pred == c
        tp = float(np.sum(g & p))
        fn = float(np.sum(g & ~p))
        fp = float(np.sum(~g & p))
        iou = tp / max(tp + fp + fn, 1.0)
        per_class[c] = round(iou, 4)
        ious.append(iou)
        accs.append(tp / max(tp + fn, 1.0))
        weights.append(g.sum())
    w = np.array(weights, float) / max(sum(weights), 1)
    return SemanticResult(
        round(float(np.mean(ious)), 4),
        round(float(np.mean(accs)), 4),
        round(float(np.dot(w, ious)), 4),
        len(pts),
        len(classes),
        per_class,
    )


# -- functional elements -----------------------------------------------------------------------------------
def _hit_probability(ranked_groups: list[list[bool]], k: int) -> float:
    """Probability that the top ``k`` of a ranking holds a hit when items within a group (equal score)
    come in random order; groups are given best first."""
    slots = k
    for group in ranked_groups:
        if slots <= 0:
            return 0.0
        n, h = len(group), sum(group)
        if n <= slots:
            if h:
                return 1.0
            slots -= n
            continue
        # Draw `slots` of `n` without replacement: P(no hit) = C(n-h, slots) / C(n, slots).
        if h == 0:
            return 0.0
        return 1.0 - (math.comb(n - h, slots) / math.comb(n, slots) if n - h >= slots else 0.0)
    return 0.0


@dataclass
class FunctionalResult:
    n_gt: int
    n_pred: int
    recall_at: dict[str, float]  # "R@K/IoU" -> value
    parent_accuracy: float
    segmentation: ObjectResult


def evaluate_functional(
    objects: dict[int, MapObject],
    gt: GroundTruth,
    labelled_fine: LabelledVoxels,
    labelled: LabelledVoxels,
    *,
    ks: Sequence[int] = (1, 3, 5),
    thresholds: Sequence[float] = (0.0, 0.1, 0.25),
) -> FunctionalResult:
    """Recall@K of functional elements: for each observed ground-truth element (``labelled_fine``: fine
    voxels of the element instances), the predicted elements in its room are ranked by agreement with its
    label and its parent's label; a hit overlaps it with IoU above the threshold (``0``: any overlap).
    Parent accuracy: matched elements whose predicted parent is the match of the true parent (or, for
    wall-mounted elements, that have no parent object)."""
    fine = _match_objects(objects, gt, labelled_fine, kind=KIND_FUNCTIONAL, thresholds=(0.1, 0.25))
    inst = gt.instances
    rooms = {int(r["index"]): r for r in gt.table["rooms"]}
    elements = {u: o for u, o in objects.items() if o.kind == KIND_FUNCTIONAL and len(o.points)}
    gt_elements = [g for g, v in labelled_fine.sets(gt.functional_elements()).items() if len(v) >= 2]

    def in_room(o: MapObject, room: dict[str, Any]) -> bool:
        c = o.center
        poly = np.asarray(room["polygon"], float)
        lo, hi = poly.min(axis=0), poly.max(axis=0)
        return bool(
            lo[0] <= c[0] <= hi[0]
            and lo[1] <= c[1] <= hi[1]
            and room["z_min"] - 0.2 <= c[2] <= room["z_max"] + 0.2
        )

    recall: dict[str, list[float]] = {f"R@{k}/{t:g}": [] for k in ks for t in thresholds}
    for g in gt_elements:
        d = inst[g]
        label = normalize_label(d["class"])
        parent = inst.get(d["parent"]) if d.get("parent") is not None else None
        parent_label = normalize_label(parent["class"]) if parent else ""
        scored: dict[int, list[int]] = {}
        for u, o in elements.items():
            if not in_room(o, rooms[int(d["room"])]):
                continue
            p_parent = objects.get(o.parent) if o.parent is not None else None
            score = int(normalize_label(o.label) == label) + int(
                p_parent is not None and normalize_label(p_parent.label) == parent_label
            )
            scored.setdefault(score, []).append(u)
        order = [scored[s] for s in sorted(scored, reverse=True)]
        for t in thresholds:
            groups = [[fine.ious.get(u, {}).get(g, 0.0) > t for u in grp] for grp in order]
            for k in ks:
                recall[f"R@{k}/{t:g}"].append(_hit_probability(groups, k))
    parents = _match_objects(objects, gt, labelled).match
    ok = []
    for p, g in fine.match.items():
        gp = inst[g].get("parent")
        pp = elements[p].parent if p in elements else None
        if gp is None or inst.get(gp, {}).get("class") == "wall":
            ok.append(pp is None)
        else:
            ok.append(pp is not None and parents.get(pp) == gp)
    return FunctionalResult(
        len(gt_elements),
        len(elements),
        {k: round(float(np.mean(v)), 4) if v else 0.0 for k, v in recall.items()},
        round(float(np.mean(ok)), 4) if ok else 0.0,
        fine.result,
    )


# -- keyframe ablation --------------------------------------------------------------------------------------
@dataclass
class AblationRow:
    method: str
    n_keyframes: int
    n_frames: int
    object_recall: float
    coverage: float
    ratio: float
    seconds: float
    note: str = ""


def visible_objects_per_frame(
    sequence: Any, frames: Sequence[int], gt: GroundTruth, min_pixels: int = 30
) -> dict[int, set[int]]:
    """Ground-truth objects (scene objects) with at least ``min_pixels`` pixels in each frame."""
    wanted = np.zeros(max(gt.instances) + 1, bool)
    wanted[gt.scene_objects()] = True
    out = {}
    for f in frames:
        im = sequence.instance_image(int(f))
        if im is None:
            raise BuildError("evaluate", f"frame {f} has no ground-truth instance image")
        ids, counts = np.unique(im, return_counts=True)
        keep = (ids > 0) & (ids < len(wanted)) & (counts >= min_pixels)
        ids = ids[keep]
        out[int(f)] = {int(i) for i in ids[wanted[ids]]}
    return out


def keyframe_ablation(
    artifacts: BuildArtifacts,
    gt: GroundTruth,
    config: KeyframeConfig | None = None,
    *,
    clip_encoder: ImageEncoder | None = None,
    min_pixels: int = 30,
    tau: float = 0.05,
    baselines: bool = True,
) -> list[AblationRow]:
    """The keyframe ablation table: each method selects keyframes in every room; object recall (ground-
    truth visibility), geometric coverage (``tau``) and sampling ratio are pooled over rooms. Uniform and
    random get the same per-room budget as the HDBSCAN selector; ``visual-clip`` runs only with an
    encoder (else it is reported as unavailable). ``baselines=False`` returns the selector's row only."""
    cfg = config or KeyframeConfig()
    seq, recon, assoc = artifacts.sequence, artifacts.reconstruction, artifacts.association
    poses = seq.poses
    rooms = assoc.rooms()
    room_frames = {r: assoc.frames_of_room(r) for r in rooms}
    frames = np.concatenate(list(room_frames.values())) if rooms else np.zeros(0, int)
    visible = visible_objects_per_frame(seq, frames.tolist(), gt, min_pixels)
    base = {r: select_room_keyframes(room_frames[r], poses[room_frames[r]], cfg, recon=recon) for r in rooms}
    budget = {r: len(s.frames) for r, s in base.items()}

    def pooled(name: str, select: Any, note: str = "") -> AblationRow:
        start = time.perf_counter()
        total: KeyframeMetrics | None = None
        for r in rooms:
            sel = select(r)
            m = keyframe_metrics(sel, room_frames[r], visible, recon, tau=tau)
            total = m if total is None else total + m
        secs = time.perf_counter() - start
        t = total or KeyframeMetrics(0, 0, 0, 0, 0, 0)
        return AblationRow(
            name,
            t.n_keyframes,
            t.n_frames,
            round(t.object_recall, 4),
            round(t.coverage, 4),
            round(t.ratio, 4),
            round(secs, 2),
            note,
        )

    def method(m: str, **changes: Any) -> Any:
        c = cfg.model_copy(update={"method": m, **changes})
        return lambda r: select_room_keyframes(room_frames[r], poses[room_frames[r]], c, recon=recon).frames

    rows = [
        pooled(f"hdbscan (noise={cfg.noise})", lambda r: base[r].frames, "the selector used by the build"),
    ]
    if not baselines:
        return rows
    for noise in ("keep", "drop"):
        if noise != cfg.noise:
            rows.append(pooled(f"hdbscan (noise={noise})", method("hdbscan", noise=noise)))
    rows.append(
        pooled("uniform (same budget)", lambda r: _budgeted("uniform", room_frames[r], poses, cfg, budget[r]))
    )
    rows.append(pooled(f"uniform (every {cfg.uniform_step})", method("uniform")))
    rows.append(
        pooled("random (same budget)", lambda r: _budgeted("random", room_frames[r], poses, cfg, budget[r]))
    )
    rows.append(pooled("dbscan (adaptive eps)", method("dbscan")))
    rows.append(pooled(f"covisibility local (window {cfg.covis_window})", method("covis_local")))
    rows.append(pooled(f"covisibility greedy (target {cfg.covis_target:g})", method("covis_greedy")))
    hist = ColorHistogramEncoder()
    rows.append(
        pooled("visual (HSV histogram)", _visual(seq, room_frames, hist, cfg), "hand-crafted features")
    )
    if clip_encoder is not None:
        rows.append(pooled(f"visual ({clip_encoder.name})", _visual(seq, room_frames, clip_encoder, cfg)))
    else:
        rows.append(
            AblationRow(
                "visual (CLIP)",
                0,
                len(frames),
                float("nan"),
                float("nan"),
                float("nan"),
                0.0,
                "unavailable: no image-encoder weights offline",
            )
        )
    rows.append(pooled("all frames", method("all"), "reference"))
    return rows


def _budgeted(
    name: str, frames: np.ndarray, poses: np.ndarray, cfg: KeyframeConfig, budget: int
) -> np.ndarray:
    c = cfg.model_copy(update={"method": name})
    return select_room_keyframes(frames, poses[frames], c, budget=budget).frames


def _visual(seq: Any, room_frames: dict[int, np.ndarray], encoder: ImageEncoder, cfg: KeyframeConfig) -> Any:
    cache: dict[int, np.ndarray] = {}
    c = cfg.model_copy(update={"method": "visual"})

    def select(r: int) -> np.ndarray:
        frames = room_frames[r]
        if r not in cache:
            cache[r] = encoder.encode([seq.rgb(int(f)) for f in frames])
        return select_room_keyframes(frames, seq.poses[frames], c, embeddings=cache[r]).frames

    return select


# -- the whole evaluation -------------------------------------------------------------------------------
@dataclass
class EvaluationReport:
    floors: FloorResult
    rooms: RoomResult
    objects: ObjectResult
    semantics: SemanticResult
    functional: FunctionalResult
    ablation: list[AblationRow]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["floors"]["all_correct"] = self.floors.all_correct
        out["rooms"]["mean_iou"] = self.rooms.mean_iou
        return out

    def to_text(self) -> str:
        f, r, o, s, fe = self.floors, self.rooms, self.objects, self.semantics, self.functional
        lines = [
            f"floors: {f.matched}/{f.n_gt} correct (predicted {f.n_pred})"
            + (" - all correct" if f.all_correct else ""),
            f"rooms: mean IoU {r.mean_iou:.3f} over {r.n_gt} ground-truth rooms (predicted {r.n_pred}); "
            f"recall@0.5 {r.recall_at(0.5):.3f}, precision@0.5 {r.precision_at(0.5):.3f}"
            + (f", room-type accuracy {r.type_accuracy:.3f}" if r.type_accuracy is not None else ""),
            f"objects: {o.n_pred} predicted vs {o.n_gt} observed ground truth; "
            f"matched mean IoU {o.mean_iou_matched:.3f}; "
            + ", ".join(f"P/R@{t} {o.precision[t]:.3f}/{o.recall[t]:.3f}" for t in o.precision)
            + f"; label accuracy {o.label_accuracy:.3f}; over-segmented {o.over_segmented}",
            f"semantics (Replica protocol, {s.n_classes} classes, {s.n_points} points): mIoU {s.miou:.3f}, "
            f"mAcc {s.macc:.3f}, F-mIoU {s.fmiou:.3f}",
            f"functional elements: {fe.n_pred} predicted vs {fe.n_gt} observed; matched IoU "
            f"{fe.segmentation.mean_iou_matched:.3f}; parent accuracy {fe.parent_accuracy:.3f}; "
            + ", ".join(f"{k} {v:.3f}" for k, v in fe.recall_at.items()),
            "",
            f"{'keyframe method':<34} {'keyframes':>9} {'recall':>7} {'coverage':>8} {'ratio':>6} "
            f"{'s':>6}  note",
        ]
        for a in self.ablation:
            lines.append(
                f"{a.method:<34} {a.n_keyframes:>9} {a.object_recall:>7.3f} {a.coverage:>8.3f} "
                f"{a.ratio:>6.3f} {a.seconds:>6.2f}  {a.note}"
            )
        return "\n".join(lines)


def evaluate_build(
    artifacts: BuildArtifacts,
    *,
    config: BuildConfig | None = None,
    ablation: bool = True,
    clip_encoder: ImageEncoder | None = None,
    tau: float = 0.05,
    frame_step: int = 1,
) -> EvaluationReport:
    """Every measure of the module docstring for one build (needs the sequence's ground truth). The
    ground-truth voxels are labelled from every ``frame_step``-th frame's instance image."""
    start = time.perf_counter()
    seq = artifacts.sequence
    gt = GroundTruth.from_sequence(seq)
    labelled = label_voxels(seq, 0.05, pixel_stride=4, frame_step=frame_step)
    labelled_fine = label_voxels(
        seq, 0.02, pixel_stride=2, frame_step=frame_step, only_ids=gt.functional_elements()
    )
    room_types = {int(k): v for k, v in artifacts.summaries.get("room_types", {}).items()}
    floors = evaluate_floors(artifacts.floors, gt)
    rooms = evaluate_rooms(artifacts.rooms, gt, room_types=room_types)
    objects = evaluate_objects(artifacts.objects, gt, labelled)
    semantics = evaluate_semantics(artifacts.objects, gt, labelled)
    functional = evaluate_functional(artifacts.objects, gt, labelled_fine, labelled)
    kcfg = (config or BuildConfig()).keyframes
    rows = keyframe_ablation(artifacts, gt, kcfg, clip_encoder=clip_encoder, tau=tau) if ablation else []
    return EvaluationReport(
        floors, rooms, objects, semantics, functional, rows, round(time.perf_counter() - start, 2)
    )


__all__ = [
    "AblationRow",
    "EvaluationReport",
    "FloorResult",
    "FunctionalResult",
    "GroundTruth",
    "LabelledVoxels",
    "ObjectResult",
    "RoomResult",
    "SemanticResult",
    "evaluate_build",
    "evaluate_floors",
    "evaluate_functional",
    "evaluate_objects",
    "evaluate_rooms",
    "evaluate_semantics",
    "keyframe_ablation",
    "label_voxels",
    "visible_objects_per_frame",
]
