"""HM3D / Habitat exports in the HOV-SG layout: ``rgb/N.png``, ``depth/N.png`` (uint16 millimetres) and
``pose/N.txt`` (16 numbers, camera-to-world with the Habitat/OpenGL camera axes: x right, y up, z back).

Poses are converted to the OpenCV axes every loader returns (``T @ diag(1, -1, -1, 1)``). Intrinsics come
from ``intrinsics=``, else ``intrinsics.json`` in the folder, else Habitat's pinhole with ``hfov_deg``
(90 degrees, the default sensor) and the image size.
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

HM3D_DEPTH_SCALE = 1000.0
HABITAT_HFOV_DEG = 90.0
GL_TO_CV = np.diag([1.0, -1.0, -1.0, 1.0])  # flips camera y and z; its own inverse


class HM3DSequence(RGBDSequence):
    """An HM3D/Habitat RGB-D export (HOV-SG layout); frames are matched by the number in their names."""

    layout = "hm3d"

    def __init__(
        self,
        root: str | Path,
        *,
        intrinsics: CameraIntrinsics | None = None,
        hfov_deg: float = HABITAT_HFOV_DEG,
    ) -> None:
        root = Path(root)
        if not root.is_dir():
            raise DatasetError(root, "sequence folder not found")
        rgb = numbered_files(root / "rgb", IMAGE_SUFFIXES, what="colour")
        depth = numbered_files(root / "depth", (".png", ".npy"), what="depth")
        pose_files = numbered_files(root / "pose", (".txt",), what="pose")
        numbers = match_frames(
            [
                ("colour", root / "rgb", rgb),
                ("depth", root / "depth", depth),
                ("pose", root / "pose", pose_files),
            ]
        )
        poses = np.array(
            [check_pose(read_pose_file(pose_files[n]), pose_files[n]) @ GL_TO_CV for n in numbers]
        )
        files = [FrameFiles(rgb[n], depth[n], pose_files[n]) for n in numbers]
        if intrinsics is None:
            if (root / "intrinsics.json").is_file():
                intrinsics = CameraIntrinsics.from_json(
                    root / "intrinsics.json", default_depth_scale=HM3D_DEPTH_SCALE
                )
            else:
                if not 1.0 < hfov_deg < 179.0:
                    raise DatasetError(root, f"hfov_deg must be in (1, 179), got {hfov_deg}")
                w, h = image_size(files[0].rgb)
                intrinsics = CameraIntrinsics.from_fov(w, h, hfov_deg, HM3D_DEPTH_SCALE)
        super().__init__(root, files, poses, intrinsics)
