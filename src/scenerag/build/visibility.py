"""Visibility of objects in keyframes (KeySG III-C): projection plus depth occlusion test.

Contract: an object is seen by a keyframe when at least ``theta`` of its (subsampled) points project
inside the image in front of the camera and agree with the keyframe's depth (|z - depth| within
``depth_tolerance``; points behind the observed surface are occluded). Only objects on the keyframe's
floor whose box intersects the view frustum are tested. Objects segmented in the keyframe count as seen
whatever their fraction (their other sides were observed from elsewhere). Returns, per keyframe, the
seen object uids with their visible fractions.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from scenerag.build.config import VisibilityConfig
from scenerag.build.datasets import CameraIntrinsics, RGBDSequence
from scenerag.build.objects import MapObject

Progress = Callable[[str, int, int], None]


def visible_fraction(
    points: np.ndarray,
    pose: np.ndarray,
    depth: np.ndarray,
    intrinsics: CameraIntrinsics,
    depth_tolerance: float,
) -> float:
    """Fraction of ``points`` (N, 3) that project into the image of a camera at ``pose`` (camera-to-world,
    OpenCV axes) and pass the depth test against ``depth`` (metres, 0 = unknown counts as not visible)."""
    if len(points) == 0:
        return 0.0
    k = intrinsics
    cam = (np.asarray(points, dtype=np.float64) - pose[:3, 3]) @ pose[:3, :3]
    z = cam[:, 2]
    front = z > 1e-3
    if not front.any():
        return 0.0
    u = np.round(cam[front, 0] / z[front] * k.fx + k.cx).astype(np.int64)
    v = np.round(cam[front, 1] / z[front] * k.fy + k.cy).astype(np.int64)
    inside = (u >= 0) & (u < k.width) & (v >= 0) & (v < k.height)
    if not inside.any():
        return 0.0
    d = depth[v[inside], u[inside]]
    ok = (d > 0) & (np.abs(z[front][inside] - d) <= depth_tolerance)
    return float(ok.sum()) / len(points)


def _frustum_candidates(
    objects: list[MapObject], los: np.ndarray, his: np.ndarray, pose: np.ndarray, k: CameraIntrinsics
) -> np.ndarray:
    """Objects with at least one box corner in front of the camera and inside the (padded) image."""
    corners = np.stack(
        [np.where(np.array(m, bool), his, los) for m in np.ndindex(2, 2, 2)], axis=1
    )  # (n, 8, 3)
    cam = (corners - pose[:3, 3]) @ pose[:3, :3]
    z = cam[..., 2]
    zc = np.maximum(z, 1e-3)
    u = cam[..., 0] / zc * k.fx + k.cx
    v = cam[..., 1] / zc * k.fy + k.cy
    front = z > 1e-3
    # The box projects into the image when its projected corners straddle or touch the image rectangle.
    umin = np.where(front, u, np.inf).min(axis=1)
    umax = np.where(front, u, -np.inf).max(axis=1)
    vmin = np.where(front, v, np.inf).min(axis=1)
    vmax = np.where(front, v, -np.inf).max(axis=1)
    any_front = front.any(axis=1)
    return any_front & (umax >= 0) & (umin < k.width) & (vmax >= 0) & (vmin < k.height)


def compute_visibility(
    sequence: RGBDSequence,
    keyframes: list[int],
    objects: dict[int, MapObject],
    keyframe_floor: dict[int, int],
    object_floor: dict[int, int],
    config: VisibilityConfig | None = None,
    progress: Progress | None = None,
    observed: dict[int, set[int]] | None = None,
) -> dict[int, dict[int, float]]:
    """``{keyframe: {object uid: visible fraction}}`` for fractions >= ``theta`` (see module docstring).
    Objects in ``observed[keyframe]`` (segmented in that keyframe) are included whatever their fraction."""
    cfg = config or VisibilityConfig()
    report = progress or (lambda stage, done, total: None)
    objs = [o for o in objects.values() if len(o.points)]
    samples = []
    for o in objs:
        pts = o.points
        if len(pts) > cfg.max_points:
            pts = pts[np.linspace(0, len(pts) - 1, cfg.max_points).astype(np.int64)]
        samples.append(pts)
    los = np.array([o.bbox_min for o in objs], dtype=np.float64).reshape(-1, 3)
    his = np.array([o.bbox_max for o in objs], dtype=np.float64).reshape(-1, 3)
    floors = np.array([object_floor.get(o.uid, -1) for o in objs], dtype=np.int64)
    out: dict[int, dict[int, float]] = {}
    frames = sorted({int(f) for f in keyframes})
    report("visibility", 0, len(frames))
    for n, f in enumerate(frames):
        pose = sequence.pose(f)
        depth = sequence.depth(f)
        seen: dict[int, float] = {}
        if objs:
            cand = _frustum_candidates(objs, los, his, pose, sequence.intrinsics)
            fl = keyframe_floor.get(f, -1)
            if fl >= 0:
                cand &= (floors == fl) | (floors < 0)
            forced = (observed or {}).get(f, set())
            for j in np.flatnonzero(cand | np.array([o.uid in forced for o in objs], bool)):
                frac = visible_fraction(samples[j], pose, depth, sequence.intrinsics, cfg.depth_tolerance)
                if frac >= cfg.theta or objs[j].uid in forced:
                    seen[objs[j].uid] = round(frac, 4)
        out[f] = seen
        report("visibility", n + 1, len(frames))
    return out


__all__ = ["compute_visibility", "visible_fraction"]
