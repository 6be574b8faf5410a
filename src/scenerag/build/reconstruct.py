"""Reconstruction: back-project every frame (strided pixels) into a global voxel map, one frame at a time.

Contract: ``scan_sequence`` reads each scanned frame's depth, colour and pose once, keeps only a voxel-
downsampled copy of it and folds chunks of frames into the map, so memory grows with the number of
occupied voxels and the per-frame voxel lists, never with full-resolution frames. The result,
``Reconstruction``, holds the voxel centroids/colours and, for every scanned frame, the ids of the
voxels it observed (CSR form); later stages (floors, rooms, frame association, coverage metrics)
work from these without re-reading images. ``integrate_tsdf`` optionally fuses a TSDF surface with
Open3D's tensor ``VoxelBlockGrid``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scenerag.build.config import ReconstructionConfig
from scenerag.build.datasets import RGBDSequence
from scenerag.build.errors import BuildError

Progress = Callable[[str, int, int], None]

_KEY_BITS = 21
_KEY_OFFSET = 1 << (_KEY_BITS - 1)
_KEY_MASK = (1 << _KEY_BITS) - 1


def voxel_keys(points: np.ndarray, voxel_size: float) -> np.ndarray:
    """Pack the integer voxel coordinates of ``points`` (N, 3) into int64 keys (±1M voxels per axis)."""
    idx = np.floor(np.asarray(points, dtype=np.float64) / voxel_size).astype(np.int64) + _KEY_OFFSET
    if idx.size and (idx.min() < 0 or idx.max() > _KEY_MASK):
        raise BuildError("scan", f"points lie beyond ±{_KEY_OFFSET * voxel_size:.0f} m of the origin")
    return (idx[:, 0] << (2 * _KEY_BITS)) | (idx[:, 1] << _KEY_BITS) | idx[:, 2]


def key_coords(keys: np.ndarray) -> np.ndarray:
    """Integer voxel coordinates (N, 3) of packed keys (inverse of :func:`voxel_keys`)."""
    keys = np.asarray(keys, dtype=np.int64)
    out = np.empty((len(keys), 3), dtype=np.int64)
    out[:, 0] = (keys >> (2 * _KEY_BITS)) & _KEY_MASK
    out[:, 1] = (keys >> _KEY_BITS) & _KEY_MASK
    out[:, 2] = keys & _KEY_MASK
    return out - _KEY_OFFSET


def neighbour_keys(keys: np.ndarray) -> np.ndarray:
    """Keys of the 27-neighbourhood of each key: shape (27, N)."""
    keys = np.asarray(keys, dtype=np.int64)
    offsets = np.array(
        [
            (dx << (2 * _KEY_BITS)) + (dy << _KEY_BITS) + dz
            for dx in (-1, 0, 1)
            for dy in (-1, 0, 1)
            for dz in (-1, 0, 1)
        ],
        dtype=np.int64,
    )
    return keys[None, :] + offsets[:, None]


@dataclass
class Reconstruction:
    """The global voxel map and what every scanned frame observed.

    ``points`` (N, 3) float32 voxel centroids, ``colors`` (N, 3) uint8 mean colours, ``counts`` (N,)
    observations per voxel, ``keys`` (N,) sorted packed voxel keys. Frame ``j`` of the scan is sequence
    frame ``frame_indices[j]`` at ``camera_positions[j]``; it observed voxels
    ``frame_voxels[frame_offsets[j]:frame_offsets[j+1]]`` (ids into ``points``).
    """

    voxel_size: float
    keys: np.ndarray
    points: np.ndarray
    colors: np.ndarray
    counts: np.ndarray
    frame_indices: np.ndarray
    camera_positions: np.ndarray
    frame_offsets: np.ndarray
    frame_voxels: np.ndarray

    @property
    def n_frames(self) -> int:
        return len(self.frame_indices)

    def voxels_of(self, scan_index: int) -> np.ndarray:
        """Voxel ids observed by scanned frame ``scan_index``."""
        return self.frame_voxels[self.frame_offsets[scan_index] : self.frame_offsets[scan_index + 1]]

    def frame_of_pair(self) -> np.ndarray:
        """For every entry of ``frame_voxels``, the scan index of its frame."""
        return np.repeat(np.arange(self.n_frames), np.diff(self.frame_offsets))

    def scan_index(self) -> dict[int, int]:
        """Sequence frame index -> scan index."""
        return {int(f): j for j, f in enumerate(self.frame_indices)}

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """Voxel ids of packed ``keys`` (-1 where the map has no such voxel)."""
        pos = np.searchsorted(self.keys, keys)
        pos = np.clip(pos, 0, max(len(self.keys) - 1, 0))
        found = len(self.keys) > 0
        hit = (self.keys[pos] == keys) if found else np.zeros(len(keys), bool)
        return np.where(hit, pos, -1)

    def save(self, path: str | Path) -> None:
        np.savez(
            path,
            voxel_size=np.float64(self.voxel_size),
            keys=self.keys,
            points=self.points,
            colors=self.colors,
            counts=self.counts,
            frame_indices=self.frame_indices,
            camera_positions=self.camera_positions,
            frame_offsets=self.frame_offsets,
            frame_voxels=self.frame_voxels,
        )

    @classmethod
    def load(cls, path: str | Path) -> Reconstruction:
        with np.load(path) as data:
            return cls(
                float(data["voxel_size"]),
                data["keys"],
                data["points"],
                data["colors"],
                data["counts"],
                data["frame_indices"],
                data["camera_positions"],
                data["frame_offsets"],
                data["frame_voxels"],
            )


class _VoxelAccumulator:
    """Running per-voxel sums (xyz, rgb, count) folded in chunks: memory ~ occupied voxels."""

    def __init__(self) -> None:
        self.keys = np.zeros(0, np.int64)
        self.sums = np.zeros((0, 7), np.float64)  # x, y, z, r, g, b, count
        self._pending_keys: list[np.ndarray] = []
        self._pending_sums: list[np.ndarray] = []

    def add(self, keys: np.ndarray, sums: np.ndarray) -> None:
        self._pending_keys.append(keys)
        self._pending_sums.append(sums)

    def fold(self) -> None:
        if not self._pending_keys:
            return
        keys = np.concatenate([self.keys, *self._pending_keys])
        sums = np.concatenate([self.sums, *self._pending_sums])
        self._pending_keys.clear()
        self._pending_sums.clear()
        uniq, inv = np.unique(keys, return_inverse=True)
        folded = np.zeros((len(uniq), sums.shape[1]), np.float64)
        for c in range(sums.shape[1]):
            folded[:, c] = np.bincount(inv, weights=sums[:, c], minlength=len(uniq))
        self.keys, self.sums = uniq, folded


def scan_sequence(
    sequence: RGBDSequence, config: ReconstructionConfig | None = None, progress: Progress | None = None
) -> Reconstruction:
    """Back-project every ``frame_step``-th frame of ``sequence`` into a voxel map (see module docstring)."""
    cfg = config or ReconstructionConfig()
    report = progress or (lambda stage, done, total: None)
    k = sequence.intrinsics
    rows, cols = np.mgrid[0 : k.height : cfg.pixel_stride, 0 : k.width : cfg.pixel_stride]
    rows, cols = rows.ravel(), cols.ravel()
    ray_x = ((cols - k.cx) / k.fx).astype(np.float64)
    ray_y = ((rows - k.cy) / k.fy).astype(np.float64)
    frames = np.arange(0, len(sequence), cfg.frame_step)
    acc = _VoxelAccumulator()
    frame_keys: list[np.ndarray] = []
    cameras = np.zeros((len(frames), 3), np.float64)
    report("scan", 0, len(frames))
    for j, i in enumerate(frames):
        i = int(i)
        depth = sequence.depth(i)[rows, cols]
        pose = sequence.pose(i)
        cameras[j] = pose[:3, 3]
        valid = (depth > cfg.min_depth) & (depth < cfg.max_depth)
        z = depth[valid].astype(np.float64)
        cam = np.column_stack([ray_x[valid] * z, ray_y[valid] * z, z])
        world = cam @ pose[:3, :3].T + pose[:3, 3]
        if len(world) == 0:
            frame_keys.append(np.zeros(0, np.int64))
            report("scan", j + 1, len(frames))
            continue
        rgb = sequence.rgb(i)[rows[valid], cols[valid]].astype(np.float64)
        keys = voxel_keys(world, cfg.voxel_size)
        uniq, inv = np.unique(keys, return_inverse=True)
        sums = np.zeros((len(uniq), 7), np.float64)
        for c in range(3):
            sums[:, c] = np.bincount(inv, weights=world[:, c], minlength=len(uniq))
            sums[:, 3 + c] = np.bincount(inv, weights=rgb[:, c], minlength=len(uniq))
        sums[:, 6] = np.bincount(inv, minlength=len(uniq))
        acc.add(uniq, sums)
        frame_keys.append(uniq)
        if (j + 1) % cfg.chunk_frames == 0:
            acc.fold()
        report("scan", j + 1, len(frames))
    acc.fold()
    if len(acc.keys) == 0:
        raise BuildError(
            "scan",
            f"no valid depth in {len(frames)} frames of {sequence.root}",
            hint=f"check the depth scale ({k.depth_scale} per metre) and min/max_depth",
        )
    counts = acc.sums[:, 6]
    points = (acc.sums[:, :3] / counts[:, None]).astype(np.float32)
    colors = np.clip(np.round(acc.sums[:, 3:6] / counts[:, None]), 0, 255).astype(np.uint8)
    offsets = np.zeros(len(frames) + 1, np.int64)
    offsets[1:] = np.cumsum([len(f) for f in frame_keys])
    all_keys = np.concatenate(frame_keys) if frame_keys else np.zeros(0, np.int64)
    frame_voxels = np.searchsorted(acc.keys, all_keys).astype(np.int32)
    return Reconstruction(
        voxel_size=cfg.voxel_size,
        keys=acc.keys,
        points=points,
        colors=colors,
        counts=counts.astype(np.int32),
        frame_indices=frames.astype(np.int64),
        camera_positions=cameras,
        frame_offsets=offsets,
        frame_voxels=frame_voxels,
    )


def integrate_tsdf(
    sequence: RGBDSequence, config: ReconstructionConfig | None = None, progress: Progress | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Fuse every ``tsdf_frame_step``-th frame into an Open3D tensor ``VoxelBlockGrid`` TSDF and return its
    surface points (N, 3) float32 and colours (N, 3) uint8. (The legacy ``ScalableTSDFVolume`` is broken
    in Open3D 0.20; this uses the tensor API.)"""
    try:
        import open3d as o3d
        import open3d.core as o3c
    except ImportError as exc:
        raise BuildError(
            "scan", "TSDF fusion needs open3d", hint="pip install 'scenerag[build]' or set tsdf=false"
        ) from exc
    cfg = config or ReconstructionConfig()
    report = progress or (lambda stage, done, total: None)
    k = sequence.intrinsics
    grid = o3d.t.geometry.VoxelBlockGrid(
        attr_names=("tsdf", "weight", "color"),
        attr_dtypes=(o3c.float32, o3c.float32, o3c.float32),
        attr_channels=((1), (1), (3)),
        voxel_size=cfg.tsdf_voxel_size,
        block_resolution=8,
        block_count=cfg.tsdf_block_count,
    )
    intrinsic = o3c.Tensor(k.matrix, o3c.float64)
    frames = range(0, len(sequence), cfg.tsdf_frame_step)
    if len(frames) == 0:
        raise BuildError("scan", "no frames to fuse")
    for n, i in enumerate(frames):
        depth = np.ascontiguousarray(sequence.depth(i), dtype=np.float32)
        depth[(depth < cfg.min_depth) | (depth > cfg.max_depth)] = 0.0
        color = np.ascontiguousarray(sequence.rgb(i), dtype=np.float32) / 255.0
        extrinsic = o3c.Tensor(np.linalg.inv(sequence.pose(i)), o3c.float64)
        depth_image = o3d.t.geometry.Image(o3c.Tensor(depth))
        color_image = o3d.t.geometry.Image(o3c.Tensor(color))
        blocks = grid.compute_unique_block_coordinates(depth_image, intrinsic, extrinsic, 1.0, cfg.max_depth)
        grid.integrate(blocks, depth_image, color_image, intrinsic, intrinsic, extrinsic, 1.0, cfg.max_depth)
        report("tsdf", n + 1, len(frames))
    # A surface voxel needs a few observations; short runs get a proportionally lower bar.
    cloud = grid.extract_point_cloud(weight_threshold=float(min(3.0, max(1.0, len(frames) / 4))))
    points = cloud.point.positions.numpy().astype(np.float32)
    colors = (
        np.clip(cloud.point.colors.numpy() * 255.0, 0, 255).astype(np.uint8)
        if "colors" in cloud.point
        else np.full((len(points), 3), 128, np.uint8)
    )
    return points, colors


def write_ply(path: str | Path, points: np.ndarray, colors: np.ndarray) -> None:
    """A binary little-endian PLY point cloud with uchar colours."""
    points = np.asarray(points, dtype=np.float32)
    colors = np.asarray(colors, dtype=np.uint8)
    header = (
        "ply\nformat binary_little_endian 1.0\n"
        f"element vertex {len(points)}\n"
        "property float x\nproperty float y\nproperty float z\n"
        "property uchar red\nproperty uchar green\nproperty uchar blue\nend_header\n"
    )
    record = np.empty(len(points), dtype=[("p", "<f4", 3), ("c", "u1", 3)])
    record["p"], record["c"] = points, colors
    with open(path, "wb") as fh:
        fh.write(header.encode("ascii"))
        fh.write(record.tobytes())


__all__ = [
    "Reconstruction",
    "integrate_tsdf",
    "key_coords",
    "neighbour_keys",
    "scan_sequence",
    "voxel_keys",
    "write_ply",
]
