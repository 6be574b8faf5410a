"""Reconstruction, floors, rooms and frame-to-room association (``scenerag.build``) on a small rendered
building and on synthetic rasters."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from scenerag.build.association import associate_frames
from scenerag.build.config import AssociationConfig, ReconstructionConfig, RoomConfig
from scenerag.build.datasets import open_sequence
from scenerag.build.errors import BuildError
from scenerag.build.evaluate import GroundTruth, evaluate_floors, evaluate_rooms
from scenerag.build.floors import FloorSegment, camera_floor, detect_floors
from scenerag.build.reconstruct import (
    Reconstruction,
    integrate_tsdf,
    key_coords,
    neighbour_keys,
    scan_sequence,
    voxel_keys,
    write_ply,
)
from scenerag.build.rooms import RoomMap, _merge_open_gaps, close_wall_gaps, segment_rooms

pytest.importorskip("open3d")
pytest.importorskip("skimage")


@pytest.fixture(scope="module")
def recon(seq_root: Path) -> Reconstruction:
    return scan_sequence(open_sequence(seq_root))


@pytest.fixture(scope="module")
def floors(recon: Reconstruction) -> list[FloorSegment]:
    return detect_floors(recon)


def test_voxel_keys_round_trip() -> None:
    pts = np.array([[0.01, -3.2, 5.99], [-100.0, 42.0, -0.01], [0.0, 0.0, 0.0]])
    keys = voxel_keys(pts, 0.05)
    np.testing.assert_array_equal(key_coords(keys), np.floor(pts / 0.05).astype(int))
    nb = neighbour_keys(keys)
    assert nb.shape == (27, 3) and np.all(nb[13] == keys)
    with pytest.raises(BuildError, match="beyond"):
        voxel_keys(np.array([[1e6, 0.0, 0.0]]), 0.05)


def test_scan_keeps_a_bounded_voxel_map(seq_root: Path, recon: Reconstruction) -> None:
    seq = open_sequence(seq_root)
    assert recon.n_frames == len(seq) == 240
    assert len(recon.points) == len(recon.keys) == len(recon.colors) == len(recon.counts)
    assert np.all(np.diff(recon.keys) > 0)  # sorted and unique
    assert recon.frame_voxels.max() < len(recon.points) and recon.frame_voxels.min() >= 0
    # Every voxel holds its centroid (up to float32 rounding on voxel faces).
    assert np.mean(voxel_keys(recon.points, recon.voxel_size) == recon.keys) > 0.999
    table = seq.instance_table()
    x0, y0, x1, y1 = table["footprint"]
    assert recon.points[:, 0].min() >= x0 - 0.2 and recon.points[:, 0].max() <= x1 + 0.2
    assert recon.points[:, 1].min() >= y0 - 0.2 and recon.points[:, 1].max() <= y1 + 0.2
    # Far fewer points than pixels: 240 frames of 320x240 are 18M pixels.
    assert len(recon.points) < 0.05 * 240 * 320 * 240
    np.testing.assert_allclose(recon.camera_positions, seq.poses[:, :3, 3])
    stepped = scan_sequence(seq, ReconstructionConfig(frame_step=40, pixel_stride=8))
    assert stepped.frame_indices.tolist() == [0, 40, 80, 120, 160, 200]
    assert stepped.lookup(recon.keys[:5]).min() >= -1


def test_reconstruction_save_load(tmp_path: Path, recon: Reconstruction) -> None:
    recon.save(tmp_path / "r.npz")
    back = Reconstruction.load(tmp_path / "r.npz")
    np.testing.assert_array_equal(back.frame_voxels, recon.frame_voxels)
    np.testing.assert_array_equal(back.points, recon.points)
    assert back.voxel_size == recon.voxel_size
    assert back.lookup(np.array([recon.keys[3], -5])).tolist() == [3, -1]


def test_tsdf_fusion_and_ply(seq_root: Path, tmp_path: Path) -> None:
    pts, cols = integrate_tsdf(open_sequence(seq_root), ReconstructionConfig(tsdf_frame_step=40))
    assert len(pts) > 1000 and pts.shape == cols.shape
    write_ply(tmp_path / "s.ply", pts, cols)
    data = (tmp_path / "s.ply").read_bytes()
    assert data.startswith(b"ply\nformat binary_little_endian 1.0\n")
    assert f"element vertex {len(pts)}".encode() in data
    assert len(data) > 15 * len(pts)


def test_floors_match_the_ground_truth(seq_root: Path, floors: list[FloorSegment]) -> None:
    gt = GroundTruth.from_sequence(open_sequence(seq_root))
    result = evaluate_floors(floors, gt, tolerance=0.1)
    assert result.all_correct, (floors, gt.table["floors"])
    assert [f.index for f in floors] == [0, 1]
    cams = np.array([1.35, 4.35, -1.0, 2.9])
    assert camera_floor(floors, cams, 0.3).tolist() == [0, 1, -1, 0]


def test_floors_need_a_visible_floor() -> None:
    empty = Reconstruction(0.05, *(np.zeros(0, np.int64),), np.zeros((0, 3), np.float32), np.zeros((0, 3), np.uint8),
                           np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros(1, np.int64),
                           np.zeros(0, np.int32))  # fmt: skip
    with pytest.raises(BuildError, match="empty"):
        detect_floors(empty)


def test_rooms_match_the_ground_truth(
    seq_root: Path, recon: Reconstruction, floors: list[FloorSegment]
) -> None:
    rooms, plans = segment_rooms(recon, floors)
    gt = GroundTruth.from_sequence(open_sequence(seq_root))
    result = evaluate_rooms(rooms, gt)
    assert result.n_pred == result.n_gt == 8
    assert result.mean_iou >= 0.8, result.ious
    for room in rooms:
        x, y = room.polygon[:, 0], room.polygon[:, 1]
        assert 0.5 * (np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))) > 0  # counter-clockwise
    # The room map puts each ground-truth room centre into its matched predicted room.
    room_map = RoomMap(floors, plans)
    for gi, pj, _ in result.matches:
        g = gt.table["rooms"][gi]
        cx, cy = np.mean(g["polygon"], axis=0)
        assert room_map.room_of_points(np.array([[cx, cy, g["z_min"] + 1.0]])).tolist() == [pj]
    assert room_map.room_of_points(np.array([[0.0, 0.0, 50.0]])).tolist() == [-1]


def test_collinear_gaps_close_but_corridors_stay_open() -> None:
    cfg = RoomConfig()  # 5 cm cells, gaps up to 2 m, runs of at least 1 m
    walls = np.zeros((120, 200), bool)
    walls[60:62, 10:80] = True  # a wall, 1.5 m gap, the same wall continued
    walls[60:62, 110:190] = True
    walls[10:12, 10:190] = True  # two parallel walls 1.5 m apart: a corridor, not a gap
    walls[40:42, 10:190] = True
    closed = close_wall_gaps(walls, cfg)
    assert closed[60:62, 80:110].all()
    assert not closed[13:39, 100].any()


def test_opening_across_a_whole_corridor_is_merged_back() -> None:
    cfg = RoomConfig()
    labels = np.zeros((40, 200), np.int32)
    labels[10:30, 0:99] = 1  # a corridor cut in two by a closed "gap" at columns 99-101
    labels[10:30, 102:200] = 2
    synthetic = np.zeros_like(labels, bool)
    synthetic[10:30, 99:102] = True
    assert len(set(np.unique(_merge_open_gaps(labels, synthetic, cfg))) - {0}) == 1
    # A doorway: the gap is narrower than the room beyond it, so the rooms stay apart.
    big = np.zeros((120, 200), np.int32)
    big[50:70, 0:99] = 1
    big[0:120, 102:200] = 2
    door = np.zeros_like(big, bool)
    door[50:70, 99:102] = True
    assert set(np.unique(_merge_open_gaps(big, door, cfg))) == {0, 1, 2}


def test_frames_go_to_the_room_their_camera_is_in(
    seq_root: Path, recon: Reconstruction, floors: list[FloorSegment]
) -> None:
    rooms, plans = segment_rooms(recon, floors)
    seq = open_sequence(seq_root)
    gt = GroundTruth.from_sequence(seq)
    to_gt = {pj: gi for gi, pj, _ in evaluate_rooms(rooms, gt).matches}
    assoc = associate_frames(recon, floors, plans)
    assigned = np.flatnonzero(assoc.room >= 0)
    assert len(assigned) > 0.5 * len(assoc.room)
    assert np.all(assoc.inside_fraction[assigned] >= 0.5)
    truth = json.loads((seq_root / "gt" / "frames.json").read_text())
    # On the stairs the ground truth keeps the floor being left until the top; compare standing frames.
    height = (
        recon.camera_positions[:, 2]
        - np.array([f["z_min"] for f in gt.table["floors"]])[np.clip([t["floor"] for t in truth], 0, None)]
    )
    standing = [i for i in assigned if abs(height[i] - 1.35) < 0.1]
    agree = [to_gt.get(int(assoc.room[i])) == truth[i]["room"] for i in standing]
    assert len(standing) > 0.8 * len(assigned)
    assert np.mean(agree) >= 0.95
    strict = associate_frames(recon, floors, plans, AssociationConfig(eta=0.9))
    assert (strict.room >= 0).sum() < len(assigned)
    loose = associate_frames(recon, floors, plans, AssociationConfig(require_camera_inside=False))
    assert (loose.room >= 0).sum() >= 0.5 * len(assoc.room)
    assert sorted(assoc.rooms()) == sorted({int(r) for r in assoc.room if r >= 0})
    assert all(np.all(np.diff(assoc.frames_of_room(r)) > 0) for r in assoc.rooms())
