"""Tests of the procedural building generator and its renderer (``scenerag.sim.building``, ``.render``)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from scipy.ndimage import label

from scenerag.graph import ontology as ont
from scenerag.graph import read_scene_graph, write_scene_graph
from scenerag.sim.building import (
    CLASS_IDS,
    CLASS_NAMES,
    KIND_OBJECT,
    ROBOT_RADIUS_M,
    Building,
    BuildingConfig,
    generate_building,
)
from scenerag.sim.render import (
    BuildingRenderer,
    Trajectory,
    TrajectoryConfig,
    camera_pose,
    default_intrinsics,
    plan_trajectory,
)

pytest.importorskip("open3d")

SMALL = BuildingConfig(n_floors=2, rooms_per_floor=2, seed=3)


@pytest.fixture(scope="module")
def default_building() -> Building:
    return generate_building()


@pytest.fixture(scope="module")
def small_building() -> Building:
    return generate_building(SMALL)


@pytest.fixture(scope="module")
def small_trajectory(small_building: Building) -> Trajectory:
    return plan_trajectory(small_building, n_frames=240)


# -- generator ------------------------------------------------------------------------------------
def test_default_counts(default_building: Building) -> None:
    b = default_building
    assert len(b.floors) >= 2
    assert len(b.rooms) >= 8
    assert len(b.objects()) >= 150
    assert len(b.functional_elements()) >= 60
    types = Counter(r.room_type for r in b.rooms)
    assert types["corridor"] == types["stairwell"] == len(b.floors)
    assert {"kitchen", "bathroom", "bedroom", "living_room", "office"} <= set(types)
    assert {i.class_name for i in b.functional_elements()} == {"knob", "handle", "switch", "button", "faucet"}
    assert Counter(i.class_name for i in b.structures())["stairs"] == len(b.floors) - 1
    assert sorted(b.instances) == list(range(1, len(b.instances) + 1))
    assert np.array_equal(np.unique(b.triangle_instance), np.arange(1, len(b.instances) + 1))


def test_object_classes_fit_room_types(default_building: Building) -> None:
    allowed_rooms = {
        "toilet": {"bathroom"},
        "bathtub": {"bathroom"},
        "bed": {"bedroom"},
        "oven": {"kitchen"},
        "fridge": {"kitchen"},
        "sofa": {"living_room"},
        "desk": {"office"},
        "washing_machine": {"laundry_room"},
    }
    for obj in default_building.objects():
        room_type = default_building.rooms[obj.room].room_type
        if obj.class_name in allowed_rooms:
            assert room_type in allowed_rooms[obj.class_name], (obj.class_name, room_type)
    kitchens = [r for r in default_building.rooms if r.room_type == "kitchen"]
    for kitchen in kitchens:
        classes = {o.class_name for o in default_building.objects() if o.room == kitchen.index}
        assert {"fridge", "oven", "sink"} <= classes


def test_objects_inside_their_room_and_floor(default_building: Building) -> None:
    b = default_building
    for inst in b.instances.values():
        if inst.kind == "structure":
            continue
        room = b.rooms[inst.room]
        floor = b.floors[room.floor]
        assert inst.floor == room.floor
        for x in (inst.aabb_min[0], inst.aabb_max[0]):
            for y in (inst.aabb_min[1], inst.aabb_max[1]):
                assert room.contains_xy(x, y), (inst.class_name, room.name, x, y)
        assert floor.z_min - 1e-9 <= inst.aabb_min[2] and inst.aabb_max[2] <= floor.z_max + 1e-9, (
            inst.class_name
        )
        assert room.index in floor.rooms


def test_points_lie_on_their_instance(default_building: Building) -> None:
    for inst in default_building.instances.values():
        assert len(inst.points) >= 16
        assert np.all(inst.points >= inst.aabb_min - 1e-4) and np.all(inst.points <= inst.aabb_max + 1e-4)


def _gap(a_lo: np.ndarray, a_hi: np.ndarray, b_lo: np.ndarray, b_hi: np.ndarray) -> float:
    """Largest axis separation between two boxes (<= 0 when they touch or overlap)."""
    return float(np.max(np.maximum(a_lo - b_hi, b_lo - a_hi)))


def test_functional_elements_attached_to_parents(default_building: Building) -> None:
    b = default_building
    parents = Counter()
    for el in b.functional_elements():
        assert el.parent is not None
        parent = b.instance(el.parent)
        parents[parent.class_name] += 1
        assert parent.kind == KIND_OBJECT or parent.class_name in ("door", "wall")
        assert parent.room == el.room and parent.floor == el.floor
        assert _gap(el.aabb_min, el.aabb_max, parent.aabb_min, parent.aabb_max) <= 1e-6, (
            el.class_name,
            parent.class_name,
        )
    assert parents["wall"] >= len(b.rooms)  # a light switch in every room
    assert parents["door"] == len(b.doors)
    assert parents["oven"] >= 4


def test_objects_do_not_overlap(default_building: Building) -> None:
    objs = default_building.objects()
    for i, a in enumerate(objs):
        for b in objs[i + 1 :]:
            if a.support == b.id or b.support == a.id:
                assert _gap(a.aabb_min, a.aabb_max, b.aabb_min, b.aabb_max) <= 1e-6  # item rests on it
                continue
            overlap = np.minimum(a.aabb_max, b.aabb_max) - np.maximum(a.aabb_min, b.aabb_min)
            assert np.min(overlap) < 0.01, (a.class_name, b.class_name)


def test_supported_items_rest_on_top(default_building: Building) -> None:
    items = [o for o in default_building.objects() if o.support is not None]
    assert len(items) >= 30
    for item in items:
        support = default_building.instance(item.support)
        assert item.room == support.room
        assert item.aabb_min[2] >= support.aabb_min[2] + 0.01
        cx, cy = item.center[:2]
        assert (
            support.aabb_min[0] <= cx <= support.aabb_max[0]
            and support.aabb_min[1] <= cy <= support.aabb_max[1]
        )


def test_determinism() -> None:
    a = generate_building(SMALL)
    b = generate_building(SMALL)
    c = generate_building(SMALL, seed=SMALL.seed + 1)
    assert np.array_equal(a.vertices, b.vertices) and np.array_equal(a.triangles, b.triangles)
    assert a.instance_table() == b.instance_table()
    assert all(np.array_equal(a.instances[i].points, b.instances[i].points) for i in a.instances)
    assert a.instance_table()["instances"] != c.instance_table()["instances"]


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="rooms_per_floor"):
        generate_building(rooms_per_floor=1)
    with pytest.raises(ValueError, match="stairwell_length"):
        generate_building(stairwell_length=3.0)
    with pytest.raises(ValueError, match="n_floors"):
        BuildingConfig(n_floors=0).check()


def test_portals_reachable_on_every_floor(default_building: Building) -> None:
    b = default_building
    for fl in b.floors:
        grid = b.occupancy_grid(fl.index)
        free = grid.clearance() > ROBOT_RADIUS_M
        labels, _ = label(free)
        comps = set()
        for r in fl.rooms:
            for px, py in b.rooms[r].portals:
                i, j = grid.cell_of(px, py)
                assert free[i, j], (b.rooms[r].name, px, py)
                comps.add(int(labels[i, j]))
        assert len(comps) == 1


def test_scene_graph(default_building: Building, tmp_path) -> None:
    b = default_building
    g = b.to_scene_graph()
    counts = g.label_counts()
    assert (
        counts[ont.BUILDING] == 1 and counts[ont.FLOOR] == len(b.floors) and counts[ont.ROOM] == len(b.rooms)
    )
    n_doors_stairs = sum(1 for s in b.structures() if s.class_name in ("door", "stairs"))
    assert counts[ont.OBJECT] == len(b.objects()) + n_doors_stairs
    assert counts[ont.FUNCTIONAL_ELEMENT] == len(b.functional_elements())
    for node in g.nodes(ont.OBJECT):
        parents = g.parents(node.symbol)
        assert len(parents) == 1 and parents[0].label == ont.ROOM
        inst = b.instance(node.attributes["instance_id"])
        assert node.class_name == inst.class_name and parents[0].symbol == b.rooms[inst.room].symbol
        assert node.attributes["color"] == inst.color_name
        assert np.allclose(node.bbox_center, inst.center) and np.allclose(node.bbox_dim, inst.size)
    for node in g.nodes(ont.FUNCTIONAL_ELEMENT):
        inst = b.instance(node.attributes["instance_id"])
        owners = g.parents(node.symbol, ont.HAS_ELEMENT)
        if b.instance(inst.parent).class_name == "wall":
            assert owners == [] and g.parents(node.symbol)[0].label == ont.ROOM
        else:
            assert [o.symbol for o in owners] == [f"O{inst.parent}"]
    for room in g.nodes(ont.ROOM):
        assert len(g.parents(room.symbol)) == 1 and g.parents(room.symbol)[0].label == ont.FLOOR
        assert len(room.attributes["polygon_xy"]) == 8
    # Rooms form one connected graph through doors, openings and stairs.
    seen, todo = {"R0"}, ["R0"]
    while todo:
        for n in g.neighbors(todo.pop(), ont.ROOM_CONNECTED):
            if n.symbol not in seen:
                seen.add(n.symbol)
                todo.append(n.symbol)
    assert len(seen) == len(b.rooms)
    write_scene_graph(g, tmp_path / "gt.json")
    again = read_scene_graph(tmp_path / "gt.json")
    assert again.label_counts() == counts and again.num_edges == g.num_edges
    with_structure = b.to_scene_graph(include_structure=True)
    assert with_structure.label_counts()[ont.OBJECT] == len(b.objects()) + len(b.structures())


def test_instance_table_classes(default_building: Building) -> None:
    table = default_building.instance_table()
    assert [c["name"] for c in table["classes"]] == list(CLASS_NAMES)
    assert len(table["instances"]) == len(default_building.instances)
    lut = default_building.instance_class_ids()
    for rec in table["instances"]:
        assert CLASS_IDS[rec["class"]] == rec["class_id"] == lut[rec["id"]]


# -- rendering ------------------------------------------------------------------------------------
def test_rays_match_open3d_pinhole(small_building: Building) -> None:
    import open3d as o3d

    k = default_intrinsics(64, 48)
    renderer = BuildingRenderer(small_building, k)
    pose = camera_pose(np.array([1.0, 2.0, 1.3]), 0.4, -0.2)
    ours = renderer.rays(pose)
    kk = k.matrix.copy()
    kk[0, 2] += 0.5  # Open3D samples pixel centres at u + 0.5
    kk[1, 2] += 0.5
    ref = o3d.t.geometry.RaycastingScene.create_rays_pinhole(
        o3d.core.Tensor(kk), o3d.core.Tensor(np.linalg.inv(pose)), k.width, k.height
    ).numpy()
    assert np.allclose(ours, ref, atol=1e-4)


def test_depth_is_z_depth_against_hand_ray_cast(small_building: Building) -> None:
    b = small_building
    k = default_intrinsics(96, 72)
    renderer = BuildingRenderer(b, k)
    walls = floors = 0
    for room in b.rooms:
        for px, py in room.portals:  # free spots just inside each doorway
            cam = np.array([px, py, room.z_min + 1.4])
            half_t = b.config.wall_thickness / 2
            east, west = room.polygon[1][0], room.polygon[0][0]
            for yaw, (lo, hi) in ((0.0, (east - half_t, east)), (math.pi, (west, west + half_t))):
                frame = renderer.render(camera_pose(cam, yaw, 0.0))  # looking at the east / west wall
                wall = next(
                    (
                        i
                        for i in b.structures()
                        if i.class_name == "wall"
                        and i.room == room.index
                        and np.isclose(i.aabb_min[0], lo)
                        and np.isclose(i.aabb_max[0], hi)
                    ),
                    None,
                )
                if wall is not None:
                    rows, cols = np.nonzero(frame.instance == wall.id)
                    if len(rows) > 100 and np.ptp(cols) > k.width / 3:
                        # A fronto-parallel wall has one z-depth everywhere (a range image grows off-centre).
                        face = wall.aabb_min[0] - cam[0] if yaw == 0 else cam[0] - wall.aabb_max[0]
                        assert np.allclose(frame.depth[rows, cols], face, atol=2e-4)
                        walls += 1
                # Floor pixels (top faces; the slab's edges show at the stair hole): intersect each pixel's
                # ray with the plane z = floor by hand.
                floor = next(i for i in b.structures() if i.class_name == "floor" and i.room == room.index)
                normals = renderer.cast(frame.pose)[2]
                rows, cols = np.nonzero((frame.instance == floor.id) & (normals[..., 2] > 0.99))
                if len(rows) > 100:
                    dirs = np.column_stack([(cols - k.cx) / k.fx, (rows - k.cy) / k.fy, np.ones(len(rows))])
                    t = (room.z_min - cam[2]) / (dirs @ frame.pose[:3, :3].T)[:, 2]
                    assert np.allclose(frame.depth[rows, cols], t, rtol=1e-4, atol=2e-4)
                    floors += 1
    assert walls >= 3 and floors >= 5


def test_instance_pixels_back_project_into_their_aabb(
    small_building: Building, small_trajectory: Trajectory
) -> None:
    b = small_building
    renderer = BuildingRenderer(b, default_intrinsics(160, 120))
    checked = 0
    for i in range(0, len(small_trajectory), 16):
        frame = renderer.render(small_trajectory.poses[i], i)
        assert np.all(frame.depth[frame.instance > 0] > 0)
        lut = b.instance_class_ids()
        assert np.array_equal(frame.class_ids, lut[frame.instance])
        for iid in np.unique(frame.instance):
            if iid == 0:
                continue
            rows, cols = np.nonzero(frame.instance == iid)
            pts = frame.pixels_to_world(rows, cols)
            inst = b.instance(int(iid))
            tol = 1e-3 + 1e-5 * frame.depth[rows, cols].max()
            assert np.all(pts >= inst.aabb_min - tol) and np.all(pts <= inst.aabb_max + tol), inst.class_name
            checked += 1
    assert checked > 100


def test_trajectory_is_smooth_and_collision_free(
    small_building: Building, small_trajectory: Trajectory
) -> None:
    b, tr = small_building, small_trajectory
    assert len(tr) == 240 and np.all(np.diff(tr.times) > 0)
    rot = tr.poses[:, :3, :3]
    assert np.allclose(np.einsum("nij,nik->njk", rot, rot), np.eye(3), atol=1e-9)
    assert np.allclose(np.linalg.det(rot), 1.0)
    # No jumps: per-frame motion stays within the configured speed and turn rate (default config).
    cfg = TrajectoryConfig()
    dt = float(tr.times[1] - tr.times[0])
    steps = np.linalg.norm(np.diff(tr.positions, axis=0), axis=1)
    assert steps.max() <= cfg.speed_mps * dt * 1.05 + 1e-6
    rel = np.einsum("nji,njk->nik", rot[:-1], rot[1:])
    angles = np.degrees(np.arccos(np.clip((np.trace(rel, axis1=1, axis2=2) - 1) / 2, -1, 1)))
    assert angles.max() <= cfg.turn_rate_dps * dt * 1.5
    # Off the stairs, the robot stands on free floor (it walks through doors, not walls).
    grids = {fl.index: b.occupancy_grid(fl.index) for fl in b.floors}
    on_floor = 0
    for pos, floor in zip(tr.positions, tr.floors, strict=True):
        if floor < 0 or not math.isclose(pos[2], b.floors[floor].z_min + 1.35, abs_tol=1e-3):
            continue
        grid = grids[int(floor)]
        assert not grid.occupied[grid.cell_of(pos[0], pos[1])]
        on_floor += 1
    assert on_floor > 0.8 * len(tr)
    assert set(tr.floors.tolist()) >= {fl.index for fl in b.floors}


def test_every_room_is_seen(small_building: Building, small_trajectory: Trajectory) -> None:
    b = small_building
    renderer = BuildingRenderer(b, default_intrinsics(64, 48))
    room_of = np.zeros(len(b.instances) + 1, dtype=np.int64) - 1
    for inst in b.instances.values():
        if inst.class_name in ("floor", "wall"):
            room_of[inst.id] = inst.room
    seen: set[int] = set()
    for pose in small_trajectory.poses:
        ids = np.unique(renderer.render(pose).instance)
        seen.update(int(r) for r in room_of[ids] if r >= 0)
    assert seen == {r.index for r in b.rooms}
    assert set(small_trajectory.rooms.tolist()) - {-1} == {r.index for r in b.rooms}


def test_default_trajectory_length(default_building: Building) -> None:
    tr = plan_trajectory(default_building)
    assert len(tr) >= 1500
    assert set(tr.rooms.tolist()) - {-1} == {r.index for r in default_building.rooms}
