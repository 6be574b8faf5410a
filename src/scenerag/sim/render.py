"""Robot trajectories through a generated building, RGB-D + ground-truth rendering, and dataset writers.

``plan_trajectory`` walks a ground robot through every room of every floor (through doors, up the
stairs, looking around in each room) and returns smooth camera-to-world poses (OpenCV camera axes: x right,
y down, z forward). ``BuildingRenderer`` ray-casts the building with Open3D: z-depth in metres, instance
ids, class ids and shaded RGB from the instance colours. ``write_sequence`` renders and writes frame by
frame (memory stays bounded) into the Replica, ScanNet, HM3D or generic layout that
``scenerag.build.datasets.open_sequence`` reads, plus ground-truth sidecars under ``gt/``::

    gt/instance/NNNNNN.png   uint16 instance id per pixel (0 = nothing)
    gt/class/NNNNNN.png      uint16 class id per pixel (ids in gt/instances.json "classes")
    gt/scene_graph.json      ground-truth SceneGraph (scenerag native JSON)
    gt/instances.json        instance table, rooms (polygons), floors, doors, staircases
    gt/instance_points.npz   surface samples: ids (M,), points (M, 3) float32
    gt/frames.json           per frame: floor and room the camera is in (-1 between floors)
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from scenerag.build.datasets.base import GT_DIR, CameraIntrinsics, RGBDFrame
from scenerag.errors import SceneRagError
from scenerag.graph.io import write_scene_graph
from scenerag.sim.building import ROBOT_RADIUS_M, Building, OccupancyGrid, Room, Staircase

Progress = Callable[[str, int, int], None]
LAYOUTS: tuple[str, ...] = ("replica", "scannet", "hm3d", "generic")
_GL_FROM_CV = np.diag([1.0, -1.0, -1.0, 1.0])


class RenderError(SceneRagError):
    """The trajectory could not be planned or the frames could not be rendered or written."""


# -- camera -----------------------------------------------------------------------------------------
def default_intrinsics(
    width: int = 320, height: int = 240, focal_ratio: float = 0.8, depth_scale: float = 1000.0
) -> CameraIntrinsics:
    """Square pixels, ``fx = fy = focal_ratio * width``, principal point at the image centre."""
    f = focal_ratio * width
    return CameraIntrinsics(f, f, (width - 1) / 2.0, (height - 1) / 2.0, width, height, depth_scale)


def camera_pose(position: np.ndarray, yaw: float, pitch: float) -> np.ndarray:
    """Camera-to-world 4x4 (OpenCV axes) at ``position`` looking along heading ``yaw`` (radians from +x,
    counter-clockwise) tilted up by ``pitch`` (radians; negative looks down), with no roll."""
    cp, sp, cy, sy = math.cos(pitch), math.sin(pitch), math.cos(yaw), math.sin(yaw)
    forward = np.array([cp * cy, cp * sy, sp])
    right = np.array([sy, -cy, 0.0])
    down = np.cross(forward, right)
    pose = np.eye(4)
    pose[:3, 0], pose[:3, 1], pose[:3, 2], pose[:3, 3] = right, down, forward, position
    return pose


# -- trajectory -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrajectoryConfig:
    """How the robot moves: ``n_frames`` poses sampled uniformly in time over the whole tour."""

    n_frames: int = 1500
    camera_height: float = 1.35
    speed_mps: float = 0.6
    stair_speed_mps: float = 0.35
    turn_rate_dps: float = 50.0
    walk_pitch_deg: float = -5.0
    look_pitch_deg: float = -15.0  # while looking around in a room
    stair_pitch_deg: float = 8.0
    smoothing_s: float = 0.3  # Gaussian smoothing of the motion (positions; heading twice as much)

    def check(self) -> None:
        if self.n_frames < 2:
            raise ValueError(f"n_frames must be at least 2, got {self.n_frames}")
        if not 0.3 <= self.camera_height <= 2.2:
            raise ValueError(f"camera_height must be in 0.3..2.2 m, got {self.camera_height}")
        for name in ("speed_mps", "stair_speed_mps", "turn_rate_dps"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.smoothing_s < 0:
            raise ValueError(f"smoothing_s must be non-negative, got {self.smoothing_s}")


@dataclass(frozen=True)
class Trajectory:
    """Camera-to-world poses (N, 4, 4), their times (s), and the floor / room (-1: none) of each pose."""

    poses: np.ndarray
    times: np.ndarray
    floors: np.ndarray
    rooms: np.ndarray

    def __len__(self) -> int:
        return len(self.poses)

    @property
    def positions(self) -> np.ndarray:
        return self.poses[:, :3, 3]


class _Timeline:
    """Key poses ``(t, x, y, z, yaw, pitch)`` of a robot that turns in place, then drives straight."""

    def __init__(self, cfg: TrajectoryConfig, x: float, y: float, z: float, yaw: float) -> None:
        self.cfg = cfg
        self.keys: list[list[float]] = [[0.0, x, y, z, yaw, math.radians(cfg.walk_pitch_deg)]]

    @property
    def last(self) -> list[float]:
        return self.keys[-1]

    def _push(self, dt: float, x: float, y: float, z: float, yaw: float, pitch: float) -> None:
        if dt <= 1e-9:
            self.keys[-1] = [self.last[0], x, y, z, yaw, pitch]
        else:
            self.keys.append([self.last[0] + dt, x, y, z, yaw, pitch])

    def turn_to(self, heading: float, pitch: float) -> None:
        _, x, y, z, yaw, p0 = self.last
        delta = (heading - yaw + math.pi) % (2 * math.pi) - math.pi
        rate = math.radians(self.cfg.turn_rate_dps)
        dt = max(abs(delta) / rate, abs(pitch - p0) / rate)
        self._push(dt, x, y, z, yaw + delta, pitch)

    def drive(self, points: list[tuple[float, float, float]], speed: float, pitch: float) -> None:
        for px, py, pz in points:
            _, x, y, z, _yaw, _ = self.last
            dist = math.hypot(px - x, py - y)
            if dist < 1e-6 and abs(pz - z) < 1e-6:
                continue
            if dist > 1e-6:
                self.turn_to(math.atan2(py - y, px - x), pitch)
            self._push(math.hypot(dist, pz - z) / speed, px, py, pz, self.last[4], pitch)

    def look_around(self) -> None:
        look = math.radians(self.cfg.look_pitch_deg)
        self.turn_to(self.last[4], look)
        rate = math.radians(self.cfg.turn_rate_dps)
        for _ in range(4):
            _, x, y, z, yaw, _ = self.last
            self._push(math.pi / 2 / rate, x, y, z, yaw + math.pi / 2, look)


class _FloorPlanner:
    """Shortest collision-free paths on one floor's occupancy grid (robot footprint ``ROBOT_RADIUS_M``)."""

    def __init__(self, building: Building, floor: int) -> None:
        from scipy.sparse import coo_matrix

        self.grid: OccupancyGrid = building.occupancy_grid(floor)
        self.clearance = self.grid.clearance()
        self.free = self.clearance > ROBOT_RADIUS_M
        ny, nx = self.free.shape
        idx = np.arange(ny * nx).reshape(ny, nx)
        rows, cols, weights = [], [], []
        for di, dj in ((0, 1), (1, 0), (1, 1), (1, -1)):
            a = (slice(0, ny - di), slice(max(0, -dj), nx - max(0, dj)))
            b = (slice(di, ny), slice(max(0, dj), nx - max(0, -dj)))
            both = self.free[a] & self.free[b]
            step = math.hypot(di, dj) * self.grid.resolution
            clear = np.minimum(self.clearance[a], self.clearance[b])[both]
            # Prefer the middle of free space: up to 3x cost right next to the robot-radius boundary.
            w = step * (1.0 + 2.0 * np.clip(0.6 - clear, 0.0, None) / 0.6)
            rows.append(idx[a][both])
            cols.append(idx[b][both])
            weights.append(w)
        n = ny * nx
        self.graph = coo_matrix(
            (np.concatenate(weights), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n)
        ).tocsr()

    def snap(self, x: float, y: float) -> tuple[int, int]:
        """The free cell nearest to ``(x, y)``."""
        i, j = self.grid.cell_of(x, y)
        if self.free[i, j]:
            return i, j
        cand = np.argwhere(self.free)
        if len(cand) == 0:
            raise RenderError("the floor has no free space for the robot")
        d = (cand[:, 0] - i) ** 2 + (cand[:, 1] - j) ** 2
        best = cand[int(np.argmin(d))]
        return int(best[0]), int(best[1])

    def distances(self, x: float, y: float) -> tuple[np.ndarray, np.ndarray]:
        """Path costs and predecessors from the free cell nearest ``(x, y)`` to every cell."""
        from scipy.sparse.csgraph import dijkstra

        i, j = self.snap(x, y)
        src = i * self.free.shape[1] + j
        dist, pred = dijkstra(self.graph, directed=False, indices=src, return_predecessors=True)
        return dist, pred

    def path(self, start: tuple[float, float], goal: tuple[float, float]) -> list[tuple[float, float]]:
        """Waypoints (after ``start``, ending at the free cell nearest ``goal``), shortcut where visible."""
        dist, pred = self.distances(*start)
        gi, gj = self.snap(*goal)
        nx = self.free.shape[1]
        node = gi * nx + gj
        if not np.isfinite(dist[node]):
            raise RenderError(f"no collision-free path from {start} to {goal} on this floor")
        cells = [node]
        while pred[node] >= 0:
            node = int(pred[node])
            cells.append(node)
        cells.reverse()
        ii, jj = np.divmod(np.array(cells), nx)
        xs, ys = self.grid.center_of(ii, jj)
        pts = list(zip(xs.tolist(), ys.tolist(), strict=True))
        snapped_start = not self._visible(start, pts[min(1, len(pts) - 1)])
        out = [pts[0]]
        k = 0
        while k < len(pts) - 1:
            far = len(pts) - 1
            while far > k + 1 and not self._visible(pts[k], pts[far]):
                far = (k + 1 + far) // 2 if far - k > 8 else far - 1
            out.append(pts[far])
            k = far
        return out if snapped_start else out[1:]

    def _visible(self, a: tuple[float, float], b: tuple[float, float]) -> bool:
        n = max(2, int(math.hypot(b[0] - a[0], b[1] - a[1]) / (self.grid.resolution / 2)) + 1)
        xs = np.linspace(a[0], b[0], n)
        ys = np.linspace(a[1], b[1], n)
        ii = np.clip(((ys - self.grid.y0) // self.grid.resolution).astype(int), 0, self.free.shape[0] - 1)
        jj = np.clip(((xs - self.grid.x0) // self.grid.resolution).astype(int), 0, self.free.shape[1] - 1)
        return bool(self.free[ii, jj].all())

    def standing_point(self, room: Room, reachable_from: tuple[float, float]) -> tuple[float, float]:
        """A reachable spot in ``room`` with ample clearance, as close to its centre as allows."""
        dist, _ = self.distances(*reachable_from)
        dist = dist.reshape(self.free.shape)
        x0, y0, x1, y1 = room.interior
        ii, jj = np.nonzero(self.free & np.isfinite(dist))
        xs, ys = self.grid.center_of(ii, jj)
        inside = (xs > x0) & (xs < x1) & (ys > y0) & (ys < y1)
        if not inside.any():
            raise RenderError(f"room {room.name} has no reachable free space")
        ii, jj, xs, ys = ii[inside], jj[inside], xs[inside], ys[inside]
        clear = self.clearance[ii, jj]
        good = clear >= min(0.6, float(clear.max()))
        cx, cy = room.centroid
        d = np.hypot(xs[good] - cx, ys[good] - cy)
        best = int(np.argmin(d))
        return float(xs[good][best]), float(ys[good][best])


def plan_trajectory(
    building: Building, config: TrajectoryConfig | None = None, **overrides: Any
) -> Trajectory:
    """A smooth tour of the whole building: on each floor the robot visits every room beside the corridor
    (entering through its door), the corridor and the stairwell, stops in each to look around (a full turn,
    camera tilted down), then climbs the stairs to the next floor."""
    cfg = replace(config or TrajectoryConfig(), **overrides)
    cfg.check()
    cam_h = cfg.camera_height
    walk = math.radians(cfg.walk_pitch_deg)
    n_floors = len(building.floors)
    corridor0 = next(r for r in building.rooms if r.floor == 0 and r.room_type == "corridor")
    start = (corridor0.interior[0] + 0.6, float(corridor0.centroid[1]))
    tl = _Timeline(cfg, start[0], start[1], building.floors[0].z_min + cam_h, 0.0)
    for k in range(n_floors):
        planner = _FloorPlanner(building, k)
        z = building.floors[k].z_min + cam_h
        here = (tl.last[1], tl.last[2])
        floor_rooms = [building.rooms[i] for i in building.floors[k].rooms]
        stairwell = next(r for r in floor_rooms if r.room_type == "stairwell")
        others = [r for r in floor_rooms if r is not stairwell]
        # West to east on floors entered from the west end, east to west on floors entered by the stairs.
        east_first = k > 0
        others.sort(
            key=lambda r: _entry(r)[0] if r.room_type != "corridor" else r.centroid[0], reverse=east_first
        )
        order = [stairwell, *others] if east_first else [*others, stairwell]
        for room in order:
            goal = planner.standing_point(room, here)
            if room.room_type not in ("corridor", "stairwell"):
                tl.drive([(px, py, z) for px, py in planner.path(here, _entry(room))], cfg.speed_mps, walk)
                here = (tl.last[1], tl.last[2])
            tl.drive([(px, py, z) for px, py in planner.path(here, goal)], cfg.speed_mps, walk)
            tl.look_around()
            here = (tl.last[1], tl.last[2])
        flight = next((s for s in building.staircases if s.floor_from == k), None)
        if flight is not None and k < n_floors - 1:
            tl.drive([(px, py, z) for px, py in planner.path(here, flight.bottom)], cfg.speed_mps, walk)
            _climb(tl, flight, cfg)
    return _sample(tl, building, cfg)


def _entry(room: Room) -> tuple[float, float]:
    """Where the robot aims to step into a room: its first portal (just inside the door)."""
    return room.portals[0] if room.portals else (float(room.centroid[0]), float(room.centroid[1]))


def _climb(tl: _Timeline, flight: Staircase, cfg: TrajectoryConfig) -> None:
    cam_h = cfg.camera_height
    pitch = math.radians(cfg.stair_pitch_deg)
    bx, by = flight.bottom
    tx, ty = flight.top
    tl.drive([(bx, by, flight.z0 + cam_h)], cfg.speed_mps, math.radians(cfg.walk_pitch_deg))
    tl.turn_to(0.0, pitch)
    tl.drive(
        [(flight.x0, by, flight.z0 + cam_h), (flight.x1, ty, flight.z1 + cam_h)], cfg.stair_speed_mps, pitch
    )
    tl.drive([(tx, ty, flight.z1 + cam_h)], cfg.speed_mps, math.radians(cfg.walk_pitch_deg))


def _sample(tl: _Timeline, building: Building, cfg: TrajectoryConfig) -> Trajectory:
    """Resample the key poses at 20 Hz, smooth them, then take ``n_frames`` poses evenly spaced in time."""
    from scipy.ndimage import gaussian_filter1d

    keys = np.array(tl.keys)
    t_end = float(keys[-1, 0])
    hz = 20.0
    t_dense = np.linspace(0.0, t_end, max(2, int(t_end * hz) + 1))
    dense = np.column_stack([np.interp(t_dense, keys[:, 0], keys[:, c]) for c in range(1, 6)])
    if cfg.smoothing_s > 0:
        sigma = cfg.smoothing_s * hz
        for c, s in ((0, sigma), (1, sigma), (2, sigma), (3, 2 * sigma), (4, 2 * sigma)):
            dense[:, c] = gaussian_filter1d(dense[:, c], s, mode="nearest")
    times = np.linspace(0.0, t_end, cfg.n_frames)
    states = np.column_stack([np.interp(times, t_dense, dense[:, c]) for c in range(5)])
    poses = np.array([camera_pose(s[:3], s[3], s[4]) for s in states])
    floors = np.full(cfg.n_frames, -1, dtype=np.int32)
    rooms = np.full(cfg.n_frames, -1, dtype=np.int32)
    for i, (x, y, z, _, _) in enumerate(states):
        room = building.room_at(x, y, z - cfg.camera_height)
        if room is not None:
            rooms[i], floors[i] = room.index, room.floor
    return Trajectory(poses, times, floors, rooms)


# -- rendering --------------------------------------------------------------------------------------
class BuildingRenderer:
    """Ray-casts a ``Building`` with Open3D's ``RaycastingScene``.

    Pixel ``(u, v)`` casts the ray ``R @ ((u - cx)/fx, (v - cy)/fy, 1)`` from the camera centre; with this
    unnormalised direction the hit distance ``t_hit`` is the z-depth. Open3D's own ``create_rays_pinhole``
    puts pixel centres at ``u + 0.5``: it gives the same rays for ``cx + 0.5``.
    """

    def __init__(self, building: Building, intrinsics: CameraIntrinsics, *, nthreads: int = 0) -> None:
        import open3d as o3d

        self._o3d = o3d
        self.building = building
        self.intrinsics = intrinsics
        self.nthreads = nthreads
        self.scene = o3d.t.geometry.RaycastingScene()
        self.scene.add_triangles(
            o3d.core.Tensor(building.vertices.astype(np.float32)),
            o3d.core.Tensor(building.triangles.astype(np.uint32)),
        )
        n_ids = max(building.instances) + 1
        self.instance_lut = np.zeros(len(building.triangles) + 1, dtype=np.int32)
        self.instance_lut[:-1] = building.triangle_instance  # index -1 (a miss) maps to 0
        self.class_lut = building.instance_class_ids()
        self.color_lut = np.zeros((n_ids, 3), dtype=np.float32)
        for inst in building.instances.values():
            self.color_lut[inst.id] = inst.color_rgb
        k = intrinsics
        u, v = np.meshgrid(np.arange(k.width, dtype=np.float64), np.arange(k.height, dtype=np.float64))
        # Camera-frame ray directions, kept planar (x, y; z is 1): (N, 3) @ (3, 3) matmuls are slow in numpy.
        self._dx = ((u - k.cx) / k.fx).astype(np.float32).ravel()
        self._dy = ((v - k.cy) / k.fy).astype(np.float32).ravel()
        self._inv_norm = (1.0 / np.sqrt(self._dx.astype(np.float64) ** 2 + self._dy**2 + 1.0)).astype(
            np.float32
        )
        self._rays = np.empty((k.height * k.width, 6), dtype=np.float32)

    def _world_dirs(self, pose: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r = pose[:3, :3].astype(np.float32)
        x, y, z = (r[c, 0] * self._dx + r[c, 1] * self._dy + r[c, 2] for c in range(3))
        return x, y, z

    def rays(self, pose: np.ndarray) -> np.ndarray:
        """The (H, W, 6) float32 ray tensor of a camera-to-world ``pose`` (a fresh array)."""
        return (
            self._fill_rays(pose, self._world_dirs(pose))
            .copy()
            .reshape(self.intrinsics.height, self.intrinsics.width, 6)
        )

    def _fill_rays(self, pose: np.ndarray, dirs: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
        rays = self._rays
        rays[:, 0:3] = pose[:3, 3].astype(np.float32)
        for c in range(3):
            rays[:, 3 + c] = dirs[c]
        return rays

    def _cast_dirs(
        self, pose: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
        dirs = self._world_dirs(pose)
        rays = self._fill_rays(pose, dirs)
        out = self.scene.cast_rays(self._o3d.core.Tensor.from_numpy(rays), nthreads=self.nthreads)
        t_hit = out["t_hit"].numpy()
        prim = out["primitive_ids"].numpy().astype(np.int64)
        prim[~np.isfinite(t_hit)] = -1
        return t_hit, prim, out["primitive_normals"].numpy(), dirs

    def cast(self, pose: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Raw hits: z-depth (H, W) float32 (``inf`` on a miss), triangle index (H, W) int64 (-1 on a miss),
        unit triangle normals (H, W, 3)."""
        k = self.intrinsics
        t_hit, prim, normals, _ = self._cast_dirs(pose)
        return (
            t_hit.reshape(k.height, k.width),
            prim.reshape(k.height, k.width),
            normals.reshape(k.height, k.width, 3),
        )

    def render(self, pose: np.ndarray, index: int = 0) -> RGBDFrame:
        """One frame: shaded RGB, depth (m, 0 = no hit), instance ids and class ids (0 = nothing)."""
        k = self.intrinsics
        t_hit, prim, normals, dirs = self._cast_dirs(pose)
        hit = prim >= 0
        depth = np.where(hit, t_hit, np.float32(0.0))
        instance = self.instance_lut[prim]
        nx, ny, nz = normals[:, 0], normals[:, 1], normals[:, 2]
        facing = np.abs(nx * dirs[0] + ny * dirs[1] + nz * dirs[2]) * self._inv_norm
        sky = np.clip(np.float32(0.25) * nx + np.float32(0.15) * ny + np.float32(0.96) * nz, 0.0, None)
        shade = (np.float32(0.32) + np.float32(0.5) * facing + np.float32(0.22) * sky) / (
            np.float32(1.0) + np.float32(0.03) * depth
        )
        rgb = self.color_lut[instance] * shade[:, None]
        rgb[~hit] = 0.0
        shape = (k.height, k.width)
        return RGBDFrame(
            index,
            np.clip(rgb, 0, 255).astype(np.uint8).reshape(*shape, 3),
            depth.astype(np.float32).reshape(shape),
            pose.copy(),
            self.intrinsics,
            instance.reshape(shape),
            self.class_lut[instance].reshape(shape),
        )


def iter_frames(
    building: Building,
    trajectory: Trajectory,
    intrinsics: CameraIntrinsics | None = None,
    *,
    renderer: BuildingRenderer | None = None,
) -> Iterator[RGBDFrame]:
    """Render the trajectory one frame at a time (nothing is kept between frames)."""
    renderer = renderer or BuildingRenderer(building, intrinsics or default_intrinsics())
    for i, pose in enumerate(trajectory.poses):
        yield renderer.render(pose, i)


# -- writers ----------------------------------------------------------------------------------------
def _save_png16(path: Path, image: np.ndarray) -> None:
    from PIL import Image

    if image.size and (image.min() < 0 or image.max() > 65535):
        raise RenderError(f"{path}: values outside 0..65535 cannot be stored in a 16-bit PNG")
    Image.fromarray(image.astype(np.uint16)).save(path, compress_level=1)


def _save_rgb(path: Path, rgb: np.ndarray, quality: int) -> None:
    from PIL import Image

    im = Image.fromarray(rgb)
    if path.suffix == ".png":
        im.save(path, compress_level=1)
    else:
        im.save(path, quality=quality)


def encode_depth(depth: np.ndarray, scale: float) -> np.ndarray:
    """Metres -> uint16 ``round(depth * scale)``; depth that does not fit (or is 0) becomes 0 (invalid)."""
    scaled = np.round(depth.astype(np.float64) * scale)
    return np.where((scaled > 0) & (scaled <= 65535), scaled, 0).astype(np.uint16)


def _pose_line(pose: np.ndarray) -> str:
    return " ".join(f"{v:.9g}" for v in pose.reshape(-1)) + "\n"


class SequenceWriter:
    """Writes frames of one on-disk layout as they come; ``close`` finishes the index files.

    ``ground_truth`` adds ``gt/instance`` and ``gt/class`` id images for frames that carry them.
    """

    layout = "base"

    def __init__(
        self,
        root: str | Path,
        intrinsics: CameraIntrinsics,
        *,
        ground_truth: bool = True,
        jpeg_quality: int = 95,
    ) -> None:
        self.root = Path(root)
        self.intrinsics = intrinsics
        self.ground_truth = ground_truth
        self.jpeg_quality = jpeg_quality
        self.count = 0
        self.root.mkdir(parents=True, exist_ok=True)
        if ground_truth:
            (self.root / GT_DIR / "instance").mkdir(parents=True, exist_ok=True)
            (self.root / GT_DIR / "class").mkdir(parents=True, exist_ok=True)
        self._open()

    def _open(self) -> None:
        """Create the layout's folders and fixed files."""

    def _write(self, i: int, frame: RGBDFrame) -> None:
        raise NotImplementedError

    def write(self, frame: RGBDFrame) -> None:
        """Append ``frame`` as frame number ``self.count``."""
        k = self.intrinsics
        if frame.rgb.shape != (k.height, k.width, 3) or frame.depth.shape != (k.height, k.width):
            raise RenderError(
                f"frame {frame.index} is {frame.rgb.shape}/{frame.depth.shape}, "
                f"the writer expects {k.width}x{k.height}"
            )
        i = self.count
        self._write(i, frame)
        if self.ground_truth and frame.instance is not None and frame.class_ids is not None:
            _save_png16(self.root / GT_DIR / "instance" / f"{i:06d}.png", frame.instance)
            _save_png16(self.root / GT_DIR / "class" / f"{i:06d}.png", frame.class_ids)
        self.count += 1

    def close(self) -> None:
        """Flush and close the index files."""

    def __enter__(self) -> SequenceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ReplicaWriter(SequenceWriter):
    """``results/frameNNNNNN.jpg``, ``results/depthNNNNNN.png`` (uint16, scale 6553.5: 0-10 m),
    ``traj.txt`` (row-major 4x4 per line) and ``cam_params.json`` (NICE-SLAM form)."""

    layout = "replica"

    def _open(self) -> None:
        (self.root / "results").mkdir(exist_ok=True)
        k = self.intrinsics
        cam = {
            "camera": {
                "w": k.width,
                "h": k.height,
                "fx": k.fx,
                "fy": k.fy,
                "cx": k.cx,
                "cy": k.cy,
                "scale": k.depth_scale,
            }
        }
        (self.root / "cam_params.json").write_text(json.dumps(cam, indent=2) + "\n")
        self._traj = (self.root / "traj.txt").open("w")

    def _write(self, i: int, frame: RGBDFrame) -> None:
        _save_rgb(self.root / "results" / f"frame{i:06d}.jpg", frame.rgb, self.jpeg_quality)
        _save_png16(
            self.root / "results" / f"depth{i:06d}.png",
            encode_depth(frame.depth, self.intrinsics.depth_scale),
        )
        self._traj.write(_pose_line(frame.pose))

    def close(self) -> None:
        if not self._traj.closed:
            self._traj.close()


class ScanNetWriter(SequenceWriter):
    """``color/N.jpg``, ``depth/N.png`` (uint16 mm), ``pose/N.txt`` (4 rows of 4) and
    ``intrinsic/intrinsic_{depth,color}.txt`` (4x4 K) like ScanNet's SensReader export."""

    layout = "scannet"

    def _open(self) -> None:
        for name in ("color", "depth", "pose", "intrinsic"):
            (self.root / name).mkdir(exist_ok=True)
        k4 = np.eye(4)
        k4[:3, :3] = self.intrinsics.matrix
        text = "\n".join(" ".join(f"{v:.6f}" for v in row) for row in k4) + "\n"
        for name in ("intrinsic_depth.txt", "intrinsic_color.txt"):
            (self.root / "intrinsic" / name).write_text(text)
        ident = "\n".join(" ".join(f"{v:.6f}" for v in row) for row in np.eye(4)) + "\n"
        for name in ("extrinsic_depth.txt", "extrinsic_color.txt"):
            (self.root / "intrinsic" / name).write_text(ident)

    def _write(self, i: int, frame: RGBDFrame) -> None:
        _save_rgb(self.root / "color" / f"{i}.jpg", frame.rgb, self.jpeg_quality)
        _save_png16(self.root / "depth" / f"{i}.png", encode_depth(frame.depth, 1000.0))
        rows = "\n".join(" ".join(f"{v:.9g}" for v in row) for row in frame.pose) + "\n"
        (self.root / "pose" / f"{i}.txt").write_text(rows)


class HM3DWriter(SequenceWriter):
    """``rgb/NNNNNN.png``, ``depth/NNNNNN.png`` (uint16 mm), ``pose/NNNNNN.txt`` (one line of 16 numbers,
    Habitat/OpenGL camera axes) as in HOV-SG's HM3D exports, plus ``intrinsics.json``. HOV-SG itself assumes
    Habitat's 90 degree sensor: render with ``CameraIntrinsics.from_fov(w, h, 90)`` for that tool."""

    layout = "hm3d"

    def _open(self) -> None:
        for name in ("rgb", "depth", "pose"):
            (self.root / name).mkdir(exist_ok=True)
        replace(self.intrinsics, depth_scale=1000.0).write_json(self.root / "intrinsics.json")

    def _write(self, i: int, frame: RGBDFrame) -> None:
        _save_rgb(self.root / "rgb" / f"{i:06d}.png", frame.rgb, self.jpeg_quality)
        _save_png16(self.root / "depth" / f"{i:06d}.png", encode_depth(frame.depth, 1000.0))
        (self.root / "pose" / f"{i:06d}.txt").write_text(_pose_line(frame.pose @ _GL_FROM_CV))


class GenericWriter(SequenceWriter):
    """``rgb/NNNNNN.png``, ``depth/NNNNNN.png`` (uint16, ``depth_scale`` of the intrinsics),
    ``poses.txt`` (row-major 4x4 per line) and ``intrinsics.json``."""

    layout = "generic"

    def _open(self) -> None:
        for name in ("rgb", "depth"):
            (self.root / name).mkdir(exist_ok=True)
        self.intrinsics.write_json(self.root / "intrinsics.json")
        self._poses = (self.root / "poses.txt").open("w")

    def _write(self, i: int, frame: RGBDFrame) -> None:
        _save_rgb(self.root / "rgb" / f"{i:06d}.png", frame.rgb, self.jpeg_quality)
        _save_png16(
            self.root / "depth" / f"{i:06d}.png", encode_depth(frame.depth, self.intrinsics.depth_scale)
        )
        self._poses.write(_pose_line(frame.pose))

    def close(self) -> None:
        if not self._poses.closed:
            self._poses.close()


WRITERS: dict[str, type[SequenceWriter]] = {
    "replica": ReplicaWriter,
    "scannet": ScanNetWriter,
    "hm3d": HM3DWriter,
    "generic": GenericWriter,
}


def layout_intrinsics(layout: str, intrinsics: CameraIntrinsics) -> CameraIntrinsics:
    """``intrinsics`` with the depth scale the layout stores (Replica 6553.5, ScanNet/HM3D 1000)."""
    if layout == "replica":
        return replace(intrinsics, depth_scale=6553.5)
    if layout in ("scannet", "hm3d"):
        return replace(intrinsics, depth_scale=1000.0)
    return intrinsics


def write_ground_truth(building: Building, root: str | Path, trajectory: Trajectory | None = None) -> Path:
    """Write the scene graph, instance table, point samples (and per-frame rooms) under ``root/gt``."""
    gt = Path(root) / GT_DIR
    gt.mkdir(parents=True, exist_ok=True)
    write_scene_graph(building.to_scene_graph(), gt / "scene_graph.json")
    (gt / "instances.json").write_text(json.dumps(building.instance_table()) + "\n")
    ids = np.concatenate([np.full(len(i.points), i.id, np.int32) for i in building.instances.values()])
    pts = np.concatenate([i.points for i in building.instances.values()]).astype(np.float32)
    np.savez_compressed(gt / "instance_points.npz", ids=ids, points=pts)
    if trajectory is not None:
        frames = [
            {"index": i, "floor": int(f), "room": int(r)}
            for i, (f, r) in enumerate(zip(trajectory.floors, trajectory.rooms, strict=True))
        ]
        (gt / "frames.json").write_text(json.dumps(frames) + "\n")
    return gt


def write_sequence(
    building: Building,
    root: str | Path,
    *,
    layout: str = "replica",
    trajectory: Trajectory | None = None,
    intrinsics: CameraIntrinsics | None = None,
    n_frames: int | None = None,
    ground_truth: bool = True,
    progress: Progress | None = None,
    jpeg_quality: int = 95,
) -> Path:
    """Plan (unless ``trajectory`` is given), render and write a sequence of ``building`` to ``root``.

    Frames are rendered and written one at a time. ``progress(stage, done, total)`` is called with
    stage ``plan``, ``render`` (once per frame) and ``ground_truth``. Returns ``root``.
    """
    if layout not in WRITERS:
        raise RenderError(f"unknown layout {layout!r}", hint=f"use one of {', '.join(LAYOUTS)}")
    report = progress or (lambda stage, done, total: None)
    if trajectory is None:
        report("plan", 0, 1)
        trajectory = plan_trajectory(building, **({} if n_frames is None else {"n_frames": n_frames}))
        report("plan", 1, 1)
    k = layout_intrinsics(layout, intrinsics or default_intrinsics())
    renderer = BuildingRenderer(building, k)
    total = len(trajectory)
    with WRITERS[layout](root, k, ground_truth=ground_truth, jpeg_quality=jpeg_quality) as writer:
        report("render", 0, total)
        for i, frame in enumerate(iter_frames(building, trajectory, renderer=renderer)):
            writer.write(frame)
            report("render", i + 1, total)
    if ground_truth:
        report("ground_truth", 0, 1)
        write_ground_truth(building, root, trajectory)
        report("ground_truth", 1, 1)
    return Path(root)


def rich_progress(description: str = "rendering") -> AbstractContextManager[Progress]:
    """A ``progress(stage, done, total)`` callback driving rich progress bars (see ``scenerag.progress``)."""
    from scenerag.progress import progress_bar

    return progress_bar(description)


__all__ = [
    "LAYOUTS",
    "WRITERS",
    "BuildingRenderer",
    "GenericWriter",
    "HM3DWriter",
    "Progress",
    "RenderError",
    "ReplicaWriter",
    "ScanNetWriter",
    "SequenceWriter",
    "Trajectory",
    "TrajectoryConfig",
    "camera_pose",
    "default_intrinsics",
    "encode_depth",
    "iter_frames",
    "layout_intrinsics",
    "plan_trajectory",
    "rich_progress",
    "write_ground_truth",
    "write_sequence",
]
