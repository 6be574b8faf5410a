"""Tests of the RGB-D writers (``scenerag.sim.render``) and dataset loaders (``scenerag.build.datasets``):
round trips for every layout and clear errors on broken folders."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from scenerag.build.datasets import (
    CameraIntrinsics,
    DatasetError,
    GenericSequence,
    HM3DSequence,
    ReplicaSequence,
    RGBDFrame,
    ScanNetSequence,
    detect_layout,
    open_sequence,
)
from scenerag.build.datasets.base import read_depth, read_pose_lines
from scenerag.graph import ontology as ont
from scenerag.sim.building import Building, BuildingConfig, generate_building
from scenerag.sim.render import (
    LAYOUTS,
    Trajectory,
    default_intrinsics,
    encode_depth,
    iter_frames,
    plan_trajectory,
    write_sequence,
)

pytest.importorskip("open3d")

N_FRAMES = 12
INTRINSICS = default_intrinsics(64, 48)
LOADER_TYPES = {
    "replica": ReplicaSequence,
    "scannet": ScanNetSequence,
    "hm3d": HM3DSequence,
    "generic": GenericSequence,
}


@pytest.fixture(scope="module")
def building() -> Building:
    return generate_building(BuildingConfig(n_floors=2, rooms_per_floor=2, seed=11))


@pytest.fixture(scope="module")
def trajectory(building: Building) -> Trajectory:
    return plan_trajectory(building, n_frames=N_FRAMES)


@pytest.fixture(scope="module")
def reference(building: Building, trajectory: Trajectory) -> list[RGBDFrame]:
    return list(iter_frames(building, trajectory, INTRINSICS))


@pytest.fixture(scope="module")
def written(
    tmp_path_factory: pytest.TempPathFactory, building: Building, trajectory: Trajectory
) -> dict[str, Path]:
    """One sequence per layout (read-only for the tests; copy before breaking one)."""
    root = tmp_path_factory.mktemp("sequences")
    out = {}
    for layout in LAYOUTS:
        out[layout] = write_sequence(
            building, root / layout, layout=layout, trajectory=trajectory, intrinsics=INTRINSICS
        )
    return out


@pytest.fixture
def broken(tmp_path: Path, written: dict[str, Path]):
    """Copy of a written sequence that a test may damage."""

    copies = iter(range(1_000))

    def copy(layout: str) -> Path:
        dst = tmp_path / f"{layout}-{next(copies)}"
        shutil.copytree(written[layout], dst)
        return dst

    return copy


# -- round trips ----------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS)
def test_round_trip(
    layout: str, written: dict[str, Path], reference: list[RGBDFrame], building: Building
) -> None:
    seq = open_sequence(written[layout])
    assert detect_layout(written[layout]) == layout
    assert type(seq) is LOADER_TYPES[layout] and seq.layout == layout
    assert len(seq) == N_FRAMES and len(list(seq)) == N_FRAMES
    k = seq.intrinsics
    assert (k.fx, k.fy, k.cx, k.cy, k.width, k.height) == pytest.approx(
        (INTRINSICS.fx, INTRINSICS.fy, INTRINSICS.cx, INTRINSICS.cy, 64, 48)
    )
    quantum = 1.0 / k.depth_scale
    for i in (0, N_FRAMES // 2, N_FRAMES - 1):
        frame, ref = seq[i], reference[i]
        assert frame.index == i
        assert frame.rgb.shape == (48, 64, 3) and frame.rgb.dtype == np.uint8
        assert frame.depth.shape == (48, 64) and frame.depth.dtype == np.float32
        assert np.allclose(frame.pose, ref.pose, atol=1e-7)
        valid = frame.depth > 0
        assert np.all(np.abs(frame.depth - ref.depth)[valid] <= quantum / 2 + 1e-6)
        assert np.all(ref.depth[~valid] > 65535 / k.depth_scale - quantum) or not (~valid).any()
        diff = np.abs(frame.rgb.astype(int) - ref.rgb.astype(int)).mean()
        assert diff == 0 if layout in ("hm3d", "generic") else diff < 6  # png lossless, jpeg lossy
        assert np.array_equal(frame.instance, ref.instance) and np.array_equal(frame.class_ids, ref.class_ids)
    assert np.allclose(seq.poses[-1], seq[-1].pose)
    graph = seq.ground_truth_graph()
    assert graph.label_counts()[ont.ROOM] == len(building.rooms)
    table = seq.instance_table()
    assert len(table["instances"]) == len(building.instances)
    gt = written[layout] / "gt"
    points = np.load(gt / "instance_points.npz")
    assert set(np.unique(points["ids"]).tolist()) == set(building.instances)
    frames = json.loads((gt / "frames.json").read_text())
    assert len(frames) == N_FRAMES and {"floor", "room"} <= set(frames[0])


def test_back_projection_lands_in_instance_boxes(written: dict[str, Path], building: Building) -> None:
    seq = open_sequence(written["generic"])
    frame = seq[N_FRAMES // 2]
    for iid in np.unique(frame.instance):
        if iid == 0:
            continue
        rows, cols = np.nonzero((frame.instance == iid) & (frame.depth > 0))
        pts = frame.pixels_to_world(rows, cols)
        inst = building.instance(int(iid))
        assert np.all(pts >= inst.aabb_min - 2e-3) and np.all(pts <= inst.aabb_max + 2e-3)
    pts, colours = frame.point_cloud(stride=2)
    assert pts.shape[1] == 3 and len(pts) == len(colours) > 100


def test_progress_hook_and_replica_files(tmp_path: Path, building: Building, trajectory: Trajectory) -> None:
    calls: list[tuple[str, int, int]] = []
    root = write_sequence(
        building,
        tmp_path / "seq",
        trajectory=trajectory,
        intrinsics=INTRINSICS,
        progress=lambda stage, done, total: calls.append((stage, done, total)),
    )
    renders = [c for c in calls if c[0] == "render"]
    assert renders[0] == ("render", 0, N_FRAMES) and renders[-1] == ("render", N_FRAMES, N_FRAMES)
    assert [c[1] for c in renders] == list(range(N_FRAMES + 1))
    assert calls[-1] == ("ground_truth", 1, 1)
    assert sorted(p.name for p in (root / "results").iterdir())[:2] == ["depth000000.png", "depth000001.png"]
    assert len((root / "traj.txt").read_text().splitlines()) == N_FRAMES
    cam = json.loads((root / "cam_params.json").read_text())["camera"]
    assert cam["scale"] == 6553.5 and cam["w"] == 64
    with Image.open(root / "results" / "depth000000.png") as im:
        assert im.mode in ("I;16", "I")


def test_write_sequence_plans_its_own_trajectory(tmp_path: Path, building: Building) -> None:
    root = write_sequence(
        building, tmp_path / "g", layout="generic", n_frames=5, intrinsics=INTRINSICS, ground_truth=False
    )
    seq = open_sequence(root)
    assert len(seq) == 5 and not seq.has_ground_truth and seq.instance_image(0) is None
    assert seq.ground_truth_graph() is None


def test_encode_depth_invalidates_out_of_range() -> None:
    depth = np.array([[0.0, 1.0, 9.9, 10.5]], dtype=np.float32)
    assert encode_depth(depth, 6553.5).tolist() == [[0, 6554, 64880, 0]]
    assert encode_depth(depth, 1000.0).tolist() == [[0, 1000, 9900, 10500]]


# -- pose / intrinsics parsing ----------------------------------------------------------------------
def test_pose_line_formats(tmp_path: Path) -> None:
    path = tmp_path / "poses.txt"
    path.write_text(
        "# a comment\n"
        "1 0 0 1  0 1 0 2  0 0 1 3  0 0 0 1\n"
        "1 0 0 1  0 1 0 2  0 0 1 3\n"
        "1 2 3 0 0 0.7071068 0.7071068\n"
        "12.5 1 2 3 0 0 0 1\n"
    )
    poses = read_pose_lines(path)
    assert poses.shape == (4, 4, 4)
    assert np.allclose(poses[:, :3, 3], [[1, 2, 3]] * 4)
    assert np.allclose(poses[2, :3, :3], [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-6)
    assert np.allclose(poses[3], np.array([[1, 0, 0, 1], [0, 1, 0, 2], [0, 0, 1, 3], [0, 0, 0, 1]]))
    path.write_text("1 2 3 4 5\n")
    with pytest.raises(DatasetError, match=r"poses.txt: line 1 has 5 numbers"):
        read_pose_lines(path)


def test_intrinsics_forms(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="fx"):
        CameraIntrinsics(-1.0, 1.0, 0.0, 0.0, 10, 10)
    with pytest.raises(ValueError, match="width/height"):
        CameraIntrinsics(1.0, 1.0, 0.0, 0.0, 0, 10)
    p = tmp_path / "k.json"
    p.write_text(json.dumps({"K": [[100, 0, 50], [0, 90, 40], [0, 0, 1]], "width": 100, "height": 80}))
    k = CameraIntrinsics.from_json(p)
    assert (k.fx, k.fy, k.cx, k.cy, k.depth_scale) == (100, 90, 50, 40, 1000.0)
    p.write_text(json.dumps({"fx": 1.0, "fy": 1.0, "cx": 0.0}))
    with pytest.raises(DatasetError, match=r"k.json: camera intrinsics lack cy, width, height"):
        CameraIntrinsics.from_json(p)
    p.write_text("{not json")
    with pytest.raises(DatasetError, match=r"k.json: invalid JSON"):
        CameraIntrinsics.from_json(p)
    hab = CameraIntrinsics.from_fov(640, 480, 90.0)
    assert hab.fx == pytest.approx(320.0) and (hab.cx, hab.cy) == (320.0, 240.0)


# -- loader errors ----------------------------------------------------------------------------------
def test_missing_folder_and_unknown_layout(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="nowhere: sequence folder not found"):
        open_sequence(tmp_path / "nowhere")
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "images").mkdir()
    with pytest.raises(DatasetError, match=r"odd: cannot tell the dataset layout \(found: images/\)"):
        open_sequence(tmp_path / "odd")
    with pytest.raises(DatasetError, match="unknown layout 'tum'"):
        open_sequence(tmp_path / "odd", layout="tum")
    with pytest.raises(DatasetError, match="colour folder not found"):
        open_sequence(tmp_path / "odd", layout="generic")


def test_count_mismatch_names_the_missing_frame(broken) -> None:
    root = broken("scannet")
    (root / "depth" / "5.png").unlink()
    with pytest.raises(DatasetError, match=r"missing in .*depth: frame\(s\) 5") as err:
        open_sequence(root)
    assert f"{N_FRAMES} colour files but {N_FRAMES - 1} depth files" in str(err.value)
    root = broken("hm3d")
    (root / "pose" / "000003.txt").unlink()
    with pytest.raises(DatasetError, match=r"missing in .*pose: frame\(s\) 3"):
        open_sequence(root)


def test_replica_traj_line_count(broken) -> None:
    root = broken("replica")
    lines = (root / "traj.txt").read_text().splitlines()
    (root / "traj.txt").write_text("\n".join(lines[:-2]) + "\n")
    with pytest.raises(DatasetError, match=rf"traj.txt: {N_FRAMES - 2} poses but {N_FRAMES} frames"):
        open_sequence(root)


def test_generic_poses_count_and_folder(broken) -> None:
    root = broken("generic")
    (root / "rgb" / "000000.png").unlink()
    with pytest.raises(DatasetError, match=r"missing in .*rgb: frame\(s\) 0"):
        open_sequence(root)
    root = broken("generic")
    poses = read_pose_lines(root / "poses.txt")
    (root / "poses.txt").unlink()
    (root / "poses").mkdir()
    for i, pose in enumerate(poses):
        np.savetxt(root / "poses" / f"{i:06d}.txt", pose)
    seq = open_sequence(root)
    assert np.allclose(seq.poses, poses)
    (root / "poses").rename(root / "elsewhere")
    with pytest.raises(DatasetError, match="cannot tell the dataset layout"):
        open_sequence(root)
    with pytest.raises(DatasetError, match=r"no poses: neither poses\.txt nor a poses/ folder"):
        open_sequence(root, layout="generic")


def test_unreadable_images(broken) -> None:
    root = broken("generic")
    (root / "rgb" / "000000.png").write_bytes(b"not an image at all")
    with pytest.raises(DatasetError, match=r"rgb/000000.png: unreadable image"):
        open_sequence(root)
    root = broken("scannet")
    (root / "color" / "7.jpg").write_bytes(b"\xff\xd8 truncated")
    seq = open_sequence(root)  # images load lazily: frame 7 fails only when read
    assert seq[6].rgb.shape == (48, 64, 3)
    with pytest.raises(DatasetError, match=r"color/7.jpg: unreadable image"):
        _ = seq[7]


def test_bad_poses(broken) -> None:
    root = broken("scannet")
    (root / "pose" / "2.txt").write_text("1 0 0 0\n0 1 0 0\n0 0 1 0\n")
    with pytest.raises(DatasetError, match=r"pose/2.txt: pose file must hold 16 numbers .* found 12"):
        open_sequence(root)
    root = broken("scannet")
    (root / "pose" / "4.txt").write_text("-inf -inf -inf -inf\n" * 4)
    with pytest.raises(DatasetError, match=r"pose/4.txt: pose has non-finite values") as err:
        open_sequence(root)
    assert "skip_invalid_poses=True" in str(err.value)
    seq = open_sequence(root, skip_invalid_poses=True)
    assert len(seq) == N_FRAMES - 1 and all(f.rgb is not None for f in seq.frames(3, 6))
    root = broken("replica")
    lines = (root / "traj.txt").read_text().splitlines()
    lines[1] = " ".join(["2"] * 16)
    (root / "traj.txt").write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=r"traj.txt:2: pose last row must be 0 0 0 1"):
        open_sequence(root)
    lines[1] = "2 0 0 0 0 2 0 0 0 0 2 0 0 0 0 1"
    (root / "traj.txt").write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=r"traj.txt:2: pose rotation is not a proper rotation"):
        open_sequence(root)


def test_wrong_depth_dtype(broken) -> None:
    root = broken("generic")
    Image.fromarray(np.zeros((48, 64), np.uint8)).save(root / "depth" / "000002.png")
    seq = open_sequence(root)
    with pytest.raises(DatasetError, match=r"depth/000002.png: depth image has mode L \(8-bit grey\)"):
        seq.depth(2)
    Image.fromarray(np.zeros((48, 64, 3), np.uint8)).save(root / "depth" / "000000.png")
    with pytest.raises(DatasetError, match=r"depth/000000.png: depth image has mode RGB"):
        open_sequence(root)[0]
    np.save(root / "depth" / "x.npy", np.zeros((4, 4), np.int32))
    with pytest.raises(DatasetError, match=r"x\.npy: depth array has dtype int32"):
        read_depth(root / "depth" / "x.npy", 1000.0)
    np.save(root / "depth" / "y.npy", np.full((4, 4), 2.5, np.float32))
    assert np.all(read_depth(root / "depth" / "y.npy", 1000.0) == 2.5)


def test_size_mismatch_names_file(broken) -> None:
    root = broken("generic")
    Image.fromarray(np.zeros((24, 32, 3), np.uint8)).save(root / "rgb" / "000004.png")
    seq = open_sequence(root)
    with pytest.raises(DatasetError, match=r"rgb/000004.png: image is 32x24 but the intrinsics say 64x48"):
        seq.rgb(4)


def test_missing_intrinsics(broken, written: dict[str, Path]) -> None:
    root = broken("replica")
    (root / "cam_params.json").unlink()
    with pytest.raises(DatasetError, match=r"no camera intrinsics: none of .*cam_params.json") as err:
        open_sequence(root)
    assert "intrinsics=CameraIntrinsics" in str(err.value)
    seq = open_sequence(root, intrinsics=replace(INTRINSICS, depth_scale=6553.5))
    assert np.allclose(seq[0].depth, open_sequence(written["replica"])[0].depth)
    root = broken("generic")
    (root / "intrinsics.json").unlink()
    with pytest.raises(DatasetError, match=r"intrinsics.json"):
        open_sequence(root)
    root = broken("scannet")
    (root / "intrinsic" / "intrinsic_depth.txt").unlink()
    with pytest.raises(DatasetError, match=r"intrinsic_depth.txt: intrinsics file not found"):
        open_sequence(root)
    root = broken("hm3d")  # no intrinsics.json: Habitat's default 90 degree sensor
    (root / "intrinsics.json").unlink()
    k = open_sequence(root).intrinsics
    assert k.fx == pytest.approx(32.0) and (k.cx, k.cy) == (32.0, 24.0)
    assert open_sequence(root, hfov_deg=60.0).intrinsics.fx == pytest.approx(32.0 / np.tan(np.radians(30)))


def test_scannet_colour_resized_to_depth(broken) -> None:
    root = broken("scannet")
    for path in (root / "color").iterdir():
        with Image.open(path) as im:
            im.resize((128, 96)).save(path, quality=95)
    seq = open_sequence(root)
    assert seq[0].rgb.shape == (48, 64, 3)


def test_indexing(written: dict[str, Path]) -> None:
    seq = open_sequence(written["generic"])
    assert seq[-1].index == N_FRAMES - 1
    with pytest.raises(IndexError):
        seq[N_FRAMES]
    with pytest.raises(TypeError, match="slices"):
        seq[0:2]
    assert [f.index for f in seq.frames(0, 6, 2)] == [0, 2, 4]
    assert "GenericSequence" in repr(seq) and "64x48" in repr(seq)
