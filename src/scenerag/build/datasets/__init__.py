"""Posed RGB-D dataset loaders (Replica, ScanNet, HM3D, generic folder) behind one ``open_sequence``.

``open_sequence(path, layout="auto")`` detects the layout from the folder's entries:
``results/`` + ``traj.txt`` -> replica; ``color/`` + ``depth/`` + ``pose/`` -> scannet;
``rgb/`` + ``depth/`` + ``pose/`` -> hm3d; ``rgb/`` + ``depth/`` + ``poses.txt`` or ``poses/`` -> generic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scenerag.build.datasets.base import (
    CameraIntrinsics,
    DatasetError,
    FrameFiles,
    RGBDFrame,
    RGBDSequence,
)
from scenerag.build.datasets.generic import GenericSequence
from scenerag.build.datasets.hm3d import HM3DSequence
from scenerag.build.datasets.replica import ReplicaSequence
from scenerag.build.datasets.scannet import ScanNetSequence

LOADERS: dict[str, type[RGBDSequence]] = {
    "replica": ReplicaSequence,
    "scannet": ScanNetSequence,
    "hm3d": HM3DSequence,
    "generic": GenericSequence,
}
LAYOUTS: tuple[str, ...] = ("auto", *LOADERS)


def detect_layout(path: str | Path) -> str:
    """The layout name of a sequence folder, or ``DatasetError`` listing what was found."""
    root = Path(path)
    if not root.exists():
        raise DatasetError(root, "sequence folder not found")
    if not root.is_dir():
        raise DatasetError(root, "is a file; expected a sequence folder")

    def has_dir(name: str) -> bool:
        return (root / name).is_dir()

    if has_dir("results") and (root / "traj.txt").is_file():
        return "replica"
    if has_dir("color") and has_dir("depth") and has_dir("pose"):
        return "scannet"
    if has_dir("rgb") and has_dir("depth") and has_dir("pose"):
        return "hm3d"
    if has_dir("rgb") and has_dir("depth") and ((root / "poses.txt").is_file() or has_dir("poses")):
        return "generic"
    entries = sorted(p.name + ("/" if p.is_dir() else "") for p in root.iterdir())
    shown = ", ".join(entries[:12]) + (" ..." if len(entries) > 12 else "") if entries else "nothing"
    raise DatasetError(
        root,
        f"cannot tell the dataset layout (found: {shown})",
        hint="expected results/ + traj.txt (Replica), color/ depth/ pose/ (ScanNet), "
        "rgb/ depth/ pose/ (HM3D) "
        "or rgb/ depth/ poses.txt|poses/ (generic); or pass layout=",
    )


def open_sequence(path: str | Path, layout: str = "auto", **options: Any) -> RGBDSequence:
    """Open a posed RGB-D sequence. ``layout`` is ``auto`` or one of ``replica``, ``scannet``, ``hm3d``,
    ``generic``; ``options`` go to the loader (``intrinsics=CameraIntrinsics(...)`` for all of them,
    ``skip_invalid_poses`` for ScanNet, ``hfov_deg`` for HM3D)."""
    if layout not in LAYOUTS:
        raise DatasetError(path, f"unknown layout {layout!r}", hint=f"use one of {', '.join(LAYOUTS)}")
    name = detect_layout(path) if layout == "auto" else layout
    return LOADERS[name](Path(path), **options)


__all__ = [
    "LAYOUTS",
    "LOADERS",
    "CameraIntrinsics",
    "DatasetError",
    "FrameFiles",
    "GenericSequence",
    "HM3DSequence",
    "RGBDFrame",
    "RGBDSequence",
    "ReplicaSequence",
    "ScanNetSequence",
    "detect_layout",
    "open_sequence",
]
