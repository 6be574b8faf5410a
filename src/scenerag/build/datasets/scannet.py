"""ScanNet as exported by its SensReader: ``color/N.jpg``, ``depth/N.png`` (uint16 millimetres),
``pose/N.txt`` (4x4 camera-to-world, OpenCV axes) and ``intrinsic/intrinsic_depth.txt`` (4x4 K).

Colour images larger than the depth images (1296x968 vs 640x480 in ScanNet) are resized to the depth size
so that every frame is registered to the depth intrinsics. ScanNet marks lost tracking with ``-inf`` poses:
by default that is an error naming the file; ``skip_invalid_poses=True`` drops those frames instead.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scenerag.build.datasets.base import (
    IMAGE_SUFFIXES,
    CameraIntrinsics,
    DatasetError,
    FrameFiles,
    RGBDSequence,
    check_pose,
    image_size,
    match_frames,
    numbered_files,
    read_pose_file,
)

SCANNET_DEPTH_SCALE = 1000.0


def read_intrinsic_matrix(path: Path) -> np.ndarray:
    """A 3x3 K from a ScanNet ``intrinsic_*.txt`` (4x4 or 3x3 numbers)."""
    if not path.is_file():
        raise DatasetError(
            path,
            "intrinsics file not found",
            hint="ScanNet exports write intrinsic/intrinsic_depth.txt; or pass intrinsics=...",
        )
    try:
        values = np.array([float(t) for t in path.read_text().split()])
    except ValueError as exc:
        raise DatasetError(path, f"not a list of numbers ({exc})") from None
    if values.size == 16:
        k = values.reshape(4, 4)[:3, :3]
    elif values.size == 9:
        k = values.reshape(3, 3)
    else:
        raise DatasetError(path, f"expected a 4x4 or 3x3 matrix, found {values.size} numbers")
    if not np.isfinite(k).all() or k[0, 0] <= 0 or k[1, 1] <= 0:
        raise DatasetError(path, "intrinsic matrix has non-finite or non-positive focal lengths")
    return k


class ScanNetSequence(RGBDSequence):
    """A ScanNet (SensReader export) sequence; frames are matched by the number in their file names."""

    layout = "scannet"

    def __init__(
        self,
        root: str | Path,
        *,
        intrinsics: CameraIntrinsics | None = None,
        skip_invalid_poses: bool = False,
    ) -> None:
        root = Path(root)
        if not root.is_dir():
            raise DatasetError(root, "sequence folder not found")
        rgb = numbered_files(root / "color", IMAGE_SUFFIXES, what="colour")
        depth = numbered_files(root / "depth", (".png",), what="depth")
        pose_files = numbered_files(root / "pose", (".txt",), what="pose")
        numbers = match_frames(
            [
                ("colour", root / "color", rgb),
                ("depth", root / "depth", depth),
                ("pose", root / "pose", pose_files),
            ]
        )
        files, poses = [], []
        for n in numbers:
            raw = read_pose_file(pose_files[n])
            if skip_invalid_poses and not np.isfinite(raw).all():
                continue
            poses.append(check_pose(raw, pose_files[n]))
            files.append(FrameFiles(rgb[n], depth[n], pose_files[n]))
        if not files:
            raise DatasetError(root / "pose", "every pose is invalid (non-finite)")
        if intrinsics is None:
            k = read_intrinsic_matrix(root / "intrinsic" / "intrinsic_depth.txt")
            w, h = image_size(files[0].depth)
            intrinsics = CameraIntrinsics(
                float(k[0, 0]), float(k[1, 1]), float(k[0, 2]), float(k[1, 2]), w, h, SCANNET_DEPTH_SCALE
            )
        super().__init__(root, files, np.array(poses), intrinsics, resize_rgb=True)
