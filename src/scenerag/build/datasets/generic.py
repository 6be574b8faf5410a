"""A generic posed RGB-D folder: ``rgb/`` (png/jpg), ``depth/`` (16-bit png scaled by ``depth_scale``, or
float ``.npy`` in metres), poses in ``poses.txt`` (one pose per line: 16, 12, 7 or timestamp + 7 numbers;
see ``read_pose_lines``) or ``poses/N.txt`` (4x4 each), and ``intrinsics.json``
(``{fx, fy, cx, cy, width, height, depth_scale}`` or ``K`` + size). Poses are camera-to-world, OpenCV axes.
Frames pair up by the number in their file names; ``poses.txt`` lines follow that order.
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
    match_frames,
    numbered_files,
    read_pose_file,
    read_pose_lines,
    resolve_intrinsics,
)


class GenericSequence(RGBDSequence):
    """A generic ``rgb/ depth/ poses.txt|poses/ intrinsics.json`` folder."""

    layout = "generic"

    def __init__(self, root: str | Path, *, intrinsics: CameraIntrinsics | None = None) -> None:
        root = Path(root)
        if not root.is_dir():
            raise DatasetError(root, "sequence folder not found")
        rgb = numbered_files(root / "rgb", IMAGE_SUFFIXES, what="colour")
        depth = numbered_files(root / "depth", (".png", ".npy"), what="depth")
        numbers = match_frames([("colour", root / "rgb", rgb), ("depth", root / "depth", depth)])
        pose_dir, pose_txt = root / "poses", root / "poses.txt"
        if pose_txt.is_file():
            poses = read_pose_lines(pose_txt)
            if len(poses) != len(numbers):
                raise DatasetError(
                    pose_txt,
                    f"{len(poses)} poses but {len(numbers)} frames in {root / 'rgb'}",
                    hint="poses.txt needs one pose per frame, in frame-number order",
                )
            files = [FrameFiles(rgb[n], depth[n]) for n in numbers]
        elif pose_dir.is_dir():
            pose_files = numbered_files(pose_dir, (".txt",), what="pose")
            match_frames([("colour", root / "rgb", rgb), ("pose", pose_dir, pose_files)])
            poses = np.array([check_pose(read_pose_file(pose_files[n]), pose_files[n]) for n in numbers])
            files = [FrameFiles(rgb[n], depth[n], pose_files[n]) for n in numbers]
        else:
            raise DatasetError(root, "no poses: neither poses.txt nor a poses/ folder exists")
        k = resolve_intrinsics(
            intrinsics,
            [root / "intrinsics.json"],
            root,
            default_depth_scale=1000.0,
            hint="add intrinsics.json ({fx, fy, cx, cy, width, height, depth_scale}) "
            "or pass intrinsics=CameraIntrinsics(...)",
        )
        super().__init__(root, files, poses, k)
