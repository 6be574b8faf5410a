"""Floor segmentation from height-histogram peaks.

Contract: ``detect_floors`` finds the walking surfaces as the dominant peaks of the height histogram of
the surfaces each camera sees *below* it (between ``min_camera_height`` and ``max_camera_height``), so
ceilings (seen from below) and the underside of slabs never count; peaks closer than
``min_floor_separation`` keep only the stronger one (a table top never beats its floor). A floor must
carry at least ``min_frames`` cameras. Its ceiling is the strongest peak of the heights seen *above* the
cameras of that floor, below the next floor surface. Floors are numbered bottom-up from 0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from scenerag.build.config import FloorConfig
from scenerag.build.errors import BuildError
from scenerag.build.reconstruct import Reconstruction


@dataclass(frozen=True)
class FloorSegment:
    """One storey: walking surface at ``z_floor``, ceiling at ``z_ceiling`` (metres, z up)."""

    index: int
    z_floor: float
    z_ceiling: float
    n_frames: int

    @property
    def clear_height(self) -> float:
        return self.z_ceiling - self.z_floor

    @property
    def symbol(self) -> str:
        return f"F{self.index}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FloorSegment:
        return cls(
            int(data["index"]), float(data["z_floor"]), float(data["z_ceiling"]), int(data["n_frames"])
        )


def _histogram(z: np.ndarray, lo: float, hi: float, bin_size: float) -> tuple[np.ndarray, np.ndarray]:
    edges = np.arange(lo, hi + bin_size, bin_size)
    hist, _ = np.histogram(z, bins=edges)
    return hist.astype(np.float64), (edges[:-1] + edges[1:]) / 2.0


def camera_floor(
    floors: list[FloorSegment], camera_z: np.ndarray, min_camera_height: float = 0.0
) -> np.ndarray:
    """Index of the floor each camera stands on: the highest floor surface at least ``min_camera_height``
    below it (-1 below the lowest floor)."""
    z = np.asarray(camera_z, dtype=np.float64)
    out = np.full(z.shape, -1, dtype=np.int64)
    for fl in floors:  # bottom-up: later (higher) floors overwrite
        out[z >= fl.z_floor + min_camera_height] = fl.index
    return out


def detect_floors(recon: Reconstruction, config: FloorConfig | None = None) -> list[FloorSegment]:
    """Floors of the scanned building (see module docstring); raises ``BuildError`` when none is found."""
    cfg = config or FloorConfig()
    if recon.n_frames == 0 or len(recon.frame_voxels) == 0:
        raise BuildError("floors", "the reconstruction is empty")
    pair_frame = recon.frame_of_pair()
    point_z = recon.points[recon.frame_voxels, 2].astype(np.float64)
    cam_z = recon.camera_positions[pair_frame, 2]
    rel = point_z - cam_z
    below = (rel <= -cfg.min_camera_height) & (rel >= -cfg.max_camera_height)
    above = rel > 0.2
    if not below.any():
        raise BuildError(
            "floors",
            "no surface was seen below the cameras",
            hint="the floor must be visible; check poses (camera-to-world, OpenCV axes) and z-up orientation",
        )
    lo = float(point_z.min()) - cfg.bin_size
    hi = float(point_z.max()) + cfg.bin_size
    from scipy.ndimage import gaussian_filter1d
    from scipy.signal import find_peaks

    hist, centers = _histogram(point_z[below], lo, hi, cfg.bin_size)
    smooth = gaussian_filter1d(hist, 1.0)
    distance = max(1, round(cfg.min_floor_separation / cfg.bin_size))
    peaks, _ = find_peaks(smooth, height=cfg.min_peak_fraction * smooth.max(), distance=distance)
    if len(peaks) == 0:
        peaks = np.array([int(np.argmax(smooth))])
    surfaces = sorted(float(centers[p]) for p in peaks)
    # Refine each surface to the centre of mass of its peak (+-2 bins) and keep floors cameras stand on.
    refined = []
    below_z = point_z[below]
    for s in surfaces:
        near = below_z[np.abs(below_z - s) <= 2 * cfg.bin_size]
        refined.append(float(np.median(near)) if len(near) else s)
    cameras_z = recon.camera_positions[:, 2]
    kept: list[float] = []
    for k, s in enumerate(refined):
        upper = refined[k + 1] if k + 1 < len(refined) else np.inf
        on = (cameras_z >= s + cfg.min_camera_height) & (cameras_z <= min(s + cfg.max_camera_height, upper))
        if int(on.sum()) >= cfg.min_frames:
            kept.append(s)
    if not kept:
        raise BuildError(
            "floors",
            f"no floor surface carries at least {cfg.min_frames} cameras",
            hint="lower floors.min_frames or check min/max_camera_height against the camera height",
        )
    above_z = point_z[above]
    above_cam = cam_z[above]
    floors: list[FloorSegment] = []
    for k, s in enumerate(kept):
        upper = kept[k + 1] if k + 1 < len(kept) else s + cfg.max_clear_height
        cams = (cameras_z >= s) & (cameras_z < upper)
        sel = (
            (above_cam >= s) & (above_cam < upper) & (above_z > s + cfg.min_clear_height) & (above_z <= upper)
        )
        ceiling = upper if k + 1 < len(kept) else float(point_z.max())
        if sel.any():
            h, c = _histogram(above_z[sel], s + cfg.min_clear_height, upper, cfg.bin_size)
            if h.max() > 0:
                # The ceiling is the most prominent peak (walls give a falling background, not a peak).
                cand, props = find_peaks(np.concatenate([h, [0.0]]), prominence=0.0)
                peak = float(c[int(cand[np.argmax(props["prominences"])])]) if len(cand) else float(c[-1])
                near = above_z[sel][np.abs(above_z[sel] - peak) <= 2 * cfg.bin_size]
                ceiling = float(np.median(near)) if len(near) else peak
        floors.append(FloorSegment(k, round(s, 4), round(ceiling, 4), int(cams.sum())))
    return floors


__all__ = ["FloorSegment", "camera_floor", "detect_floors"]
