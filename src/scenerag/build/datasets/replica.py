"""Replica in the NICE-SLAM / iMAP layout: ``results/frameNNNNNN.jpg``, ``results/depthNNNNNN.png`` and
``traj.txt`` (one row-major 4x4 camera-to-world pose per line, OpenCV axes).

Depth PNGs are uint16 with ``depth_scale`` 6553.5 by default. The layout has no per-sequence intrinsics:
pass ``intrinsics=CameraIntrinsics(...)`` or put a ``cam_params.json`` (``{"camera": {w, h, fx, fy, cx, cy,
scale}}``, as shipped with NICE-SLAM's Replica) in the sequence folder or its parent.
"""

from __future__ import annotations

from pathlib import Path

from scenerag.build.datasets.base import (
    IMAGE_SUFFIXES,
    CameraIntrinsics,
    DatasetError,
    FrameFiles,
    RGBDSequence,
    match_frames,
    numbered_files,
    read_pose_lines,
    resolve_intrinsics,
)

REPLICA_DEPTH_SCALE = 6553.5
CAM_PARAMS = "cam_params.json"


class ReplicaSequence(RGBDSequence):
    """A Replica (NICE-SLAM layout) sequence: frame ``i`` is ``frame{i:06d}`` / ``depth{i:06d}``, line ``i``
    of ``traj.txt``."""

    layout = "replica"

    def __init__(self, root: str | Path, *, intrinsics: CameraIntrinsics | None = None) -> None:
        root = Path(root)
        if not root.is_dir():
            raise DatasetError(root, "sequence folder not found")
        results = root / "results"
        rgb = numbered_files(results, IMAGE_SUFFIXES, prefix="frame", what="colour (frame*)")
        depth = numbered_files(results, (".png", ".npy"), prefix="depth", what="depth (depth*)")
        numbers = match_frames([("colour", results, rgb), ("depth", results, depth)])
        poses = read_pose_lines(root / "traj.txt")
        if len(poses) != len(numbers):
            raise DatasetError(
                root / "traj.txt",
                f"{len(poses)} poses but {len(numbers)} frames in {results}",
                hint="traj.txt needs one pose line per frame, in frame order",
            )
        k = resolve_intrinsics(
            intrinsics,
            [root / CAM_PARAMS, root.parent / CAM_PARAMS],
            root,
            default_depth_scale=REPLICA_DEPTH_SCALE,
            hint="pass intrinsics=CameraIntrinsics(...) or add cam_params.json (NICE-SLAM's Replica: "
            "w=1200, h=680, fx=fy=600, cx=599.5, cy=339.5, scale=6553.5)",
        )
        files = [FrameFiles(rgb[n], depth[n]) for n in numbers]
        super().__init__(root, files, poses, k)
