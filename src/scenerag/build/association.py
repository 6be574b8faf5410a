"""Frame-to-room association (KeySG III-B): a frame belongs to room R when its camera centre lies in R
and at least ``eta`` of its back-projected points (the frame's voxel-downsampled points) lie inside R's
polygon within R's floor heights. Frames that fail either test belong to no room and are never keyframes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scenerag.build.config import AssociationConfig
from scenerag.build.floors import FloorSegment
from scenerag.build.reconstruct import Reconstruction
from scenerag.build.rooms import FloorPlan, RoomMap


@dataclass
class FrameAssociation:
    """Per scanned frame: sequence index, floor and room of the camera (-1: none) and the fraction of its
    points inside that room; ``room`` is the associated room (-1 when the ``eta`` test failed)."""

    frame_indices: np.ndarray
    camera_room: np.ndarray
    inside_fraction: np.ndarray
    room: np.ndarray

    def frames_of_room(self, room: int) -> np.ndarray:
        """Sequence indices of the frames associated with ``room`` (ascending)."""
        return self.frame_indices[self.room == room]

    def rooms(self) -> list[int]:
        return sorted(int(r) for r in np.unique(self.room) if r >= 0)

    def save(self, path: str | Path) -> None:
        np.savez(
            path,
            frame_indices=self.frame_indices,
            camera_room=self.camera_room,
            inside_fraction=self.inside_fraction,
            room=self.room,
        )

    @classmethod
    def load(cls, path: str | Path) -> FrameAssociation:
        with np.load(path) as data:
            return cls(data["frame_indices"], data["camera_room"], data["inside_fraction"], data["room"])


def associate_frames(
    recon: Reconstruction,
    floors: list[FloorSegment],
    plans: list[FloorPlan],
    config: AssociationConfig | None = None,
) -> FrameAssociation:
    """Associate every scanned frame with at most one room (see module docstring)."""
    cfg = config or AssociationConfig()
    room_map = RoomMap(floors, plans, z_margin=cfg.z_margin)
    cams = recon.camera_positions
    cam_floor = np.full(len(cams), -1, np.int64)
    for fl in floors:  # the camera is between its floor surface and the ceiling
        cam_floor[(cams[:, 2] >= fl.z_floor) & (cams[:, 2] <= fl.z_ceiling)] = fl.index
    camera_room = np.full(len(cams), -1, np.int64)
    for plan in plans:
        sel = cam_floor == plan.floor
        if sel.any():
            camera_room[sel] = plan.room_at_xy(cams[sel, :2])
    voxel_room = room_map.room_of_points(recon.points)
    pair_frame = recon.frame_of_pair()
    hit = voxel_room[recon.frame_voxels] == camera_room[pair_frame]
    hit &= camera_room[pair_frame] >= 0
    n_points = np.diff(recon.frame_offsets).astype(np.float64)
    inside = np.bincount(pair_frame[hit], minlength=len(cams)).astype(np.float64)
    fraction = np.divide(inside, n_points, out=np.zeros_like(inside), where=n_points > 0)
    if cfg.require_camera_inside:
        room = np.where((fraction >= cfg.eta) & (camera_room >= 0), camera_room, -1)
    else:
        # Without the camera test a frame goes to the room holding most of its points.
        n_rooms = int(max(voxel_room.max(), camera_room.max())) + 1
        valid = voxel_room[recon.frame_voxels] >= 0
        votes = np.zeros((len(cams), max(n_rooms, 1)), np.float64)
        np.add.at(votes, (pair_frame[valid], voxel_room[recon.frame_voxels][valid]), 1.0)
        best = votes.argmax(axis=1)
        fraction = np.divide(votes.max(axis=1), n_points, out=np.zeros(len(cams)), where=n_points > 0)
        room = np.where(fraction >= cfg.eta, best, -1)
    return FrameAssociation(recon.frame_indices.copy(), camera_room, fraction.astype(np.float32), room)


__all__ = ["FrameAssociation", "associate_frames"]
