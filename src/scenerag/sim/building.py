"""Procedural multi-floor buildings with exact ground truth, for rendering posed RGB-D (KeySG inputs).

Contract: ``generate_building(config)`` returns a ``Building`` whose triangle mesh carries one instance id
per triangle (ids start at 1; 0 means "nothing"), an instance table (class, colour, room, floor, kind,
parent, AABB, surface point samples), room polygons, floor z-ranges, doors and staircases. Every object
lies inside its room polygon and its floor's z-range; every functional element is attached to (touches)
its parent; the same config always gives the same building.

Geometry: z is up, metres. Floor ``k`` has its walking surface at ``z = k * floor_height`` and its ceiling
``slab_thickness`` below the next walking surface. Each floor is a corridor along +x with rooms on both
sides (doors onto the corridor) and a stairwell at the east end; a straight flight in the stairwell climbs
from each floor to the next through a hole in the slab above.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph

# -- instance kinds and classes ---------------------------------------------------------------------
KIND_OBJECT = "object"
KIND_FUNCTIONAL = "functional"
KIND_STRUCTURE = "structure"

STRUCTURE_CLASSES: tuple[str, ...] = ("wall", "floor", "ceiling", "door", "stairs")
FUNCTIONAL_CLASSES: tuple[str, ...] = ("knob", "handle", "switch", "button", "faucet")
OBJECT_CLASSES: tuple[str, ...] = (
    "bed",
    "nightstand",
    "wardrobe",
    "dresser",
    "sofa",
    "armchair",
    "coffee_table",
    "tv_stand",
    "tv",
    "bookshelf",
    "lamp",
    "plant",
    "table",
    "chair",
    "desk",
    "monitor",
    "laptop",
    "toilet",
    "sink",
    "bathtub",
    "mirror",
    "towel",
    "oven",
    "fridge",
    "cabinet",
    "microwave",
    "dishwasher",
    "trash_can",
    "washing_machine",
    "dryer",
    "radiator",
    "bench",
    "shoe_cabinet",
    "painting",
    "clock",
    "printer",
    "mug",
    "bowl",
    "plate",
    "bottle",
    "vase",
    "book",
    "remote",
    "pillow",
)
# Class id = position + 1 in this tuple; 0 is "no class" (background) in class-id images.
CLASS_NAMES: tuple[str, ...] = STRUCTURE_CLASSES + OBJECT_CLASSES + FUNCTIONAL_CLASSES
CLASS_IDS: dict[str, int] = {name: i + 1 for i, name in enumerate(CLASS_NAMES)}

ROOM_TYPES: tuple[str, ...] = (
    "kitchen",
    "living_room",
    "dining_room",
    "bathroom",
    "bedroom",
    "office",
    "laundry_room",
    "corridor",
    "stairwell",
)
_GROUND_FLOOR_ROOMS = ("kitchen", "living_room", "bathroom", "dining_room", "office", "laundry_room")
_UPPER_FLOOR_ROOMS = ("bedroom", "bathroom", "bedroom", "office", "living_room", "bedroom")

# Named colours (sRGB 0-255); objects carry the name as their ``color`` attribute.
PALETTE: dict[str, tuple[int, int, int]] = {
    "white": (236, 236, 232),
    "cream": (240, 228, 200),
    "beige": (212, 190, 152),
    "light_grey": (196, 196, 196),
    "grey": (128, 128, 130),
    "dark_grey": (70, 70, 74),
    "black": (30, 30, 32),
    "silver": (178, 180, 186),
    "gold": (200, 160, 60),
    "brown": (118, 78, 48),
    "oak": (184, 140, 92),
    "walnut": (102, 68, 44),
    "red": (186, 48, 42),
    "orange": (222, 128, 48),
    "yellow": (226, 196, 64),
    "green": (70, 140, 72),
    "olive": (112, 120, 52),
    "teal": (44, 140, 140),
    "light_blue": (170, 200, 226),
    "blue": (50, 92, 172),
    "navy": (34, 48, 94),
    "purple": (118, 72, 150),
    "pink": (222, 146, 168),
    "peach": (242, 196, 166),
    "light_green": (190, 222, 180),
    "lavender": (206, 196, 230),
    "terracotta": (190, 98, 64),
}

ROBOT_RADIUS_M = 0.22  # footprint radius used for the free-space checks (and by the trajectory planner)
STANDING_CLEARANCE_M = 0.4  # every room keeps a reachable spot this far from any obstacle
_BODY_HEIGHT_M = 1.6  # objects starting below this height above the floor block the robot
_GRID_RES_M = 0.05
_WALL_GAP_M = 0.01  # objects stand this far off a wall face
_STAIR_RUN_PER_M = 1.4  # horizontal run of a flight per metre of rise
_STAIR_APPROACH_M = 0.9  # free floor west of a flight, inside the stairwell
_STAIR_LANDING_M = 0.85  # free floor east of a flight (where the robot steps off)


@dataclass(frozen=True)
class BuildingConfig:
    """Size, layout and seed of a procedural building; the defaults give 2 floors, 16 rooms, >150 objects.

    ``rooms_per_floor`` counts the rooms beside the corridor; every floor also has a corridor and a
    stairwell (both are rooms of the ground truth).
    """

    n_floors: int = 2
    rooms_per_floor: int = 6
    floor_height: float = 3.0
    slab_thickness: float = 0.2
    wall_thickness: float = 0.1
    room_width_range: tuple[float, float] = (3.8, 5.2)  # along the corridor
    room_depth_range: tuple[float, float] = (4.2, 5.0)  # away from the corridor
    corridor_width: float = 1.8
    stairwell_length: float = 6.0
    stair_width: float = 1.1
    door_width: float = 1.0
    door_height: float = 2.1
    clutter: float = 1.0  # scales the number of small items placed on surfaces
    points_per_m2: float = 300.0  # density of the per-instance surface point samples
    max_points_per_instance: int = 1024
    seed: int = 0

    def check(self) -> None:
        """Raise ``ValueError`` naming the field for a config the generator cannot honour."""
        if self.n_floors < 1:
            raise ValueError(f"n_floors must be at least 1, got {self.n_floors}")
        if self.rooms_per_floor < 2:
            raise ValueError(f"rooms_per_floor must be at least 2, got {self.rooms_per_floor}")
        if not 2.4 <= self.floor_height <= 6.0:
            raise ValueError(f"floor_height must be in 2.4..6.0 m, got {self.floor_height}")
        if not 0.05 <= self.slab_thickness <= 0.5:
            raise ValueError(f"slab_thickness must be in 0.05..0.5 m, got {self.slab_thickness}")
        if not 0.02 <= self.wall_thickness <= 0.4:
            raise ValueError(f"wall_thickness must be in 0.02..0.4 m, got {self.wall_thickness}")
        for name in ("room_width_range", "room_depth_range"):
            lo, hi = getattr(self, name)
            if not 3.0 <= lo <= hi <= 12.0:
                raise ValueError(f"{name} must satisfy 3.0 <= lo <= hi <= 12.0, got {(lo, hi)}")
        if not 1.4 <= self.corridor_width <= 4.0:
            raise ValueError(f"corridor_width must be in 1.4..4.0 m, got {self.corridor_width}")
        if not 0.8 <= self.door_width <= 1.6:
            raise ValueError(f"door_width must be in 0.8..1.6 m, got {self.door_width}")
        if not 1.9 <= self.door_height <= self.floor_height - self.slab_thickness - 0.1:
            raise ValueError(f"door_height must be in 1.9..(clear height - 0.1) m, got {self.door_height}")
        if not 0.8 <= self.stair_width <= 1.6:
            raise ValueError(f"stair_width must be in 0.8..1.6 m, got {self.stair_width}")
        need = _STAIR_RUN_PER_M * self.floor_height + _STAIR_APPROACH_M + _STAIR_LANDING_M
        if self.stairwell_length < need:
            raise ValueError(
                f"stairwell_length must be at least {need:.2f} m for a {self.floor_height} m storey, "
                f"got {self.stairwell_length}"
            )
        if self.clutter < 0:
            raise ValueError(f"clutter must be non-negative, got {self.clutter}")
        if self.points_per_m2 <= 0 or self.max_points_per_instance < 1:
            raise ValueError("points_per_m2 and max_points_per_instance must be positive")

    @property
    def clear_height(self) -> float:
        """Height from a floor's walking surface to its ceiling."""
        return self.floor_height - self.slab_thickness


@dataclass
class Instance:
    """One instance of the ground truth: an object, a functional element or a piece of structure.

    ``room`` is the index of the room it belongs to (structure too: every wall, floor and ceiling piece
    belongs to one room); ``parent`` is the instance a functional element is attached to (an object, a door
    or a wall);
    ``support`` is the object an item rests on; ``points`` are surface samples (float32, world frame).
    """

    id: int
    class_name: str
    kind: str
    floor: int
    room: int
    color_name: str
    color_rgb: tuple[int, int, int]
    aabb_min: np.ndarray
    aabb_max: np.ndarray
    parent: int | None = None
    support: int | None = None
    mount: str = "floor"  # floor | wall | surface | structure | attached
    points: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.float32))

    @property
    def class_id(self) -> int:
        return CLASS_IDS[self.class_name]

    @property
    def center(self) -> np.ndarray:
        return (self.aabb_min + self.aabb_max) / 2.0

    @property
    def size(self) -> np.ndarray:
        return self.aabb_max - self.aabb_min

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record (no point samples)."""
        return {
            "id": self.id,
            "class": self.class_name,
            "class_id": self.class_id,
            "kind": self.kind,
            "floor": self.floor,
            "room": self.room,
            "parent": self.parent,
            "support": self.support,
            "mount": self.mount,
            "color": self.color_name,
            "color_rgb": list(self.color_rgb),
            "aabb_min": [round(float(v), 6) for v in self.aabb_min],
            "aabb_max": [round(float(v), 6) for v in self.aabb_max],
        }


@dataclass
class Room:
    """A room: ``polygon`` is its 2D outline (counter-clockwise, wall centre lines), ``interior`` the
    axis-aligned free rectangle inside its walls ``(x0, y0, x1, y1)``, ``portals`` the xy points a robot
    must be able to reach (just inside each doorway / opening / stair end)."""

    index: int
    floor: int
    room_type: str
    name: str
    polygon: np.ndarray
    interior: tuple[float, float, float, float]
    z_min: float
    z_max: float
    portals: list[tuple[float, float]] = field(default_factory=list)

    @property
    def symbol(self) -> str:
        return f"R{self.index}"

    @property
    def centroid(self) -> np.ndarray:
        return self.polygon.mean(axis=0)

    @property
    def area(self) -> float:
        x, y = self.polygon[:, 0], self.polygon[:, 1]
        return float(0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))

    def contains_xy(self, x: float, y: float, tol: float = 1e-6) -> bool:
        """True when ``(x, y)`` lies inside the polygon (generated rooms are axis-aligned rectangles),
        boundary included."""
        lo, hi = self.polygon.min(axis=0), self.polygon.max(axis=0)
        return bool(lo[0] - tol <= x <= hi[0] + tol and lo[1] - tol <= y <= hi[1] + tol)


@dataclass(frozen=True)
class Floor:
    """One storey: walking surface at ``z_min``, ceiling at ``z_max``; ``rooms`` are room indices."""

    index: int
    z_min: float
    z_max: float
    rooms: tuple[int, ...]

    @property
    def symbol(self) -> str:
        return f"F{self.index}"


@dataclass(frozen=True)
class Door:
    """A doorway between ``room`` and ``other_room`` (the corridor); ``leaf`` is the door instance id.
    ``inward`` is the unit xy normal pointing into ``room``."""

    leaf: int
    floor: int
    room: int
    other_room: int
    center: tuple[float, float]
    width: float
    inward: tuple[float, float]


@dataclass(frozen=True)
class Staircase:
    """A straight flight from ``floor_from`` to ``floor_from + 1`` climbing along +x over
    ``[x0, x1] x [y0, y1]``; ``bottom`` and ``top`` are the xy points where a robot steps on and off."""

    instance: int
    floor_from: int
    x0: float
    x1: float
    y0: float
    y1: float
    z0: float
    z1: float
    bottom: tuple[float, float]
    top: tuple[float, float]

    def surface_z(self, x: float | np.ndarray) -> float | np.ndarray:
        """Height of the (ramp-approximated) stair surface at ``x``, clamped to the flight."""
        t = np.clip((np.asarray(x, dtype=np.float64) - self.x0) / (self.x1 - self.x0), 0.0, 1.0)
        z = self.z0 + t * (self.z1 - self.z0)
        return float(z) if np.ndim(z) == 0 else z


@dataclass(frozen=True)
class OccupancyGrid:
    """A 2D grid over a floor: cell ``(i, j)`` is centred at ``(x0 + (j+.5) * res, y0 + (i+.5) * res)``."""

    x0: float
    y0: float
    resolution: float
    occupied: np.ndarray

    def cell_of(self, x: float, y: float) -> tuple[int, int]:
        i = int(np.clip((y - self.y0) // self.resolution, 0, self.occupied.shape[0] - 1))
        j = int(np.clip((x - self.x0) // self.resolution, 0, self.occupied.shape[1] - 1))
        return i, j

    def center_of(self, i: int | np.ndarray, j: int | np.ndarray) -> tuple[Any, Any]:
        return self.x0 + (np.asarray(j) + 0.5) * self.resolution, self.y0 + (
            np.asarray(i) + 0.5
        ) * self.resolution

    def clearance(self) -> np.ndarray:
        """Distance in metres from each cell centre to the nearest occupied cell."""
        from scipy.ndimage import distance_transform_edt

        return distance_transform_edt(~self.occupied) * self.resolution


# -- geometry primitives ----------------------------------------------------------------------------
Part = tuple[np.ndarray, np.ndarray]  # (vertices (V, 3) float64, triangles (T, 3) int64)

_CUBE_CORNERS = np.array([[x, y, z] for z in (0, 1) for y in (0, 1) for x in (0, 1)], dtype=np.float64)
_CUBE_TRIS = np.array(
    [
        [0, 2, 1],
        [1, 2, 3],
        [4, 5, 6],
        [5, 7, 6],
        [0, 1, 4],
        [1, 5, 4],
        [2, 6, 3],
        [3, 6, 7],
        [0, 4, 2],
        [2, 4, 6],
        [1, 3, 5],
        [3, 7, 5],
    ],
    dtype=np.int64,
)
_CYL_SEGMENTS = 12


def box(x0: float, y0: float, z0: float, x1: float, y1: float, z1: float) -> Part:
    """An axis-aligned box as 8 vertices and 12 outward-facing triangles."""
    lo = np.array([x0, y0, z0])
    hi = np.array([x1, y1, z1])
    return lo + _CUBE_CORNERS * (hi - lo), _CUBE_TRIS.copy()


def cylinder(cx: float, cy: float, cz: float, radius: float, length: float, axis: str = "z") -> Part:
    """A closed cylinder centred at ``(cx, cy, cz)`` along ``axis`` (``x``, ``y`` or ``z``)."""
    n = _CYL_SEGMENTS
    ang = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)
    ring = np.column_stack([radius * np.cos(ang), radius * np.sin(ang)])
    half = length / 2.0
    verts = np.vstack(
        [
            np.column_stack([ring, np.full(n, -half)]),
            np.column_stack([ring, np.full(n, half)]),
            [[0.0, 0.0, -half], [0.0, 0.0, half]],
        ]
    )
    i = np.arange(n)
    j = (i + 1) % n
    bottom_c, top_c = 2 * n, 2 * n + 1
    tris = np.vstack(
        [
            np.column_stack([i, j, n + j]),
            np.column_stack([i, n + j, n + i]),
            np.column_stack([np.full(n, bottom_c), j, i]),
            np.column_stack([np.full(n, top_c), n + i, n + j]),
        ]
    )
    if axis == "x":
        verts = verts[:, [2, 0, 1]]
    elif axis == "y":
        verts = verts[:, [1, 2, 0]]
    elif axis != "z":
        raise ValueError(f"cylinder axis must be x, y or z, got {axis!r}")
    return verts + np.array([cx, cy, cz]), tris


def _merge(parts: list[Part]) -> Part:
    verts, tris, offset = [], [], 0
    for v, t in parts:
        verts.append(v)
        tris.append(t + offset)
        offset += len(v)
    if not verts:
        return np.zeros((0, 3)), np.zeros((0, 3), np.int64)
    return np.vstack(verts), np.vstack(tris)


def _rot(k: int) -> np.ndarray:
    """Exact rotation by ``k * 90`` degrees about +z (as a 3x3 matrix)."""
    c, s = [(1, 0), (0, 1), (-1, 0), (0, -1)][k % 4]
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]], dtype=np.float64)


def _front(k: int) -> tuple[float, float]:
    """World xy direction of an object's local +y (its front) after a ``k * 90`` degree yaw."""
    return [(0.0, 1.0), (-1.0, 0.0), (0.0, -1.0), (1.0, 0.0)][k % 4]


# -- object shapes (local frame: footprint centred on the origin, z up from 0, front = +y) -----------
@dataclass
class _Shape:
    parts: list[Part]
    elements: list[tuple[str, list[Part]]] = field(default_factory=list)
    surface: tuple[float, float, float, float, float] | None = None  # local (x0, y0, x1, y1, z)


def _legs(w: float, d: float, h: float, t: float = 0.05) -> list[Part]:
    x, y = w / 2 - t, d / 2 - t
    return [
        box(sx * x - t / 2, sy * y - t / 2, 0.0, sx * x + t / 2, sy * y + t / 2, h)
        for sx in (-1, 1)
        for sy in (-1, 1)
    ]


def _handle_v(x: float, y: float, zc: float, length: float = 0.25) -> list[Part]:
    """A vertical bar handle on a front face at ``y`` (protrudes 3 cm)."""
    return [box(x - 0.012, y, zc - length / 2, x + 0.012, y + 0.03, zc + length / 2)]


def _handle_h(xc: float, y: float, z: float, length: float = 0.3) -> list[Part]:
    return [box(xc - length / 2, y, z - 0.012, xc + length / 2, y + 0.03, z + 0.012)]


def _knob(x: float, y: float, z: float, r: float = 0.02) -> list[Part]:
    return [cylinder(x, y + 0.015, z, r, 0.03, axis="y")]


def _plain_box(w: float, d: float, h: float) -> list[Part]:
    return [box(-w / 2, -d / 2, 0.0, w / 2, d / 2, h)]


def _shape_table(w: float, d: float, h: float) -> _Shape:
    return _Shape(
        [box(-w / 2, -d / 2, h - 0.04, w / 2, d / 2, h), *_legs(w, d, h - 0.04)],
        surface=(-w / 2, -d / 2, w / 2, d / 2, h),
    )


def _shape_desk(w: float, d: float, h: float) -> _Shape:
    parts = [
        box(-w / 2, -d / 2, h - 0.04, w / 2, d / 2, h),
        *_legs(w, d, h - 0.04),
        box(w / 2 - 0.45, -d / 2 + 0.05, h - 0.2, w / 2 - 0.05, d / 2 - 0.02, h - 0.04),
    ]
    return _Shape(
        parts,
        [("handle", _handle_h(w / 2 - 0.25, d / 2 - 0.02, h - 0.12, 0.18))],
        surface=(-w / 2, -d / 2, w / 2, d / 2, h),
    )


def _shape_chair(w: float, d: float, h: float) -> _Shape:
    seat = 0.46
    return _Shape(
        [
            box(-w / 2, -d / 2, seat - 0.04, w / 2, d / 2, seat),
            *_legs(w, d, seat - 0.04, 0.04),
            box(-w / 2, -d / 2, seat, w / 2, -d / 2 + 0.05, h),
        ]
    )


def _shape_sofa(w: float, d: float, h: float) -> _Shape:
    seat = 0.42
    arm = min(0.18, w * 0.12)
    parts = [
        box(-w / 2, -d / 2, 0.0, w / 2, d / 2, seat),
        box(-w / 2, -d / 2, seat, w / 2, -d / 2 + 0.22, h),
        box(-w / 2, -d / 2 + 0.22, seat, -w / 2 + arm, d / 2, 0.62),
        box(w / 2 - arm, -d / 2 + 0.22, seat, w / 2, d / 2, 0.62),
    ]
    return _Shape(parts, surface=(-w / 2 + arm, -d / 2 + 0.22, w / 2 - arm, d / 2, seat))


def _shape_bed(w: float, d: float, h: float) -> _Shape:
    parts = [
        box(-w / 2, -d / 2, 0.0, w / 2, d / 2, 0.3),
        box(-w / 2 + 0.03, -d / 2 + 0.06, 0.3, w / 2 - 0.03, d / 2 - 0.03, 0.52),
        box(-w / 2, -d / 2, 0.0, w / 2, -d / 2 + 0.06, h),
    ]
    return _Shape(parts, surface=(-w / 2 + 0.03, -d / 2 + 0.06, w / 2 - 0.03, d / 2 - 0.03, 0.52))


def _shape_cabinet(w: float, d: float, h: float) -> _Shape:
    y = d / 2
    elements = [("handle", _handle_v(-0.06, y, h - 0.25)), ("handle", _handle_v(0.06, y, h - 0.25))]
    return _Shape(_plain_box(w, d, h), elements, surface=(-w / 2, -d / 2, w / 2, d / 2, h))


def _shape_wardrobe(w: float, d: float, h: float) -> _Shape:
    y = d / 2
    return _Shape(
        _plain_box(w, d, h),
        [("handle", _handle_v(-0.07, y, 1.05, 0.4)), ("handle", _handle_v(0.07, y, 1.05, 0.4))],
    )


def _shape_dresser(w: float, d: float, h: float) -> _Shape:
    y = d / 2
    elements = [
        ("handle", _handle_h(0.0, y, h - 0.12, 0.25)),
        ("handle", _handle_h(0.0, y, h / 2 - 0.05, 0.25)),
    ]
    return _Shape(_plain_box(w, d, h), elements, surface=(-w / 2, -d / 2, w / 2, d / 2, h))


def _shape_nightstand(w: float, d: float, h: float) -> _Shape:
    return _Shape(
        _plain_box(w, d, h),
        [("knob", _knob(0.0, d / 2, h - 0.12))],
        surface=(-w / 2, -d / 2, w / 2, d / 2, h),
    )


def _shape_shelf(w: float, d: float, h: float) -> _Shape:
    t = 0.03
    parts = [
        box(-w / 2, -d / 2, 0.0, w / 2, -d / 2 + t, h),
        box(-w / 2, -d / 2, 0.0, -w / 2 + t, d / 2, h),
        box(w / 2 - t, -d / 2, 0.0, w / 2, d / 2, h),
    ]
    n_shelves = max(2, int(h / 0.38))
    for i in range(n_shelves + 1):
        z = min(h - t, i * (h - t) / n_shelves)
        parts.append(box(-w / 2 + t, -d / 2 + t, z, w / 2 - t, d / 2, z + t))
    return _Shape(parts, surface=(-w / 2, -d / 2, w / 2, d / 2, h))


def _shape_lamp(w: float, d: float, h: float) -> _Shape:
    r = min(w, d) / 2
    shade_h = min(0.35, h * 0.35)
    parts = [
        cylinder(0, 0, 0.015, r * 0.7, 0.03),
        cylinder(0, 0, (h - shade_h) / 2 + 0.015, 0.015, h - shade_h),
        cylinder(0, 0, h - shade_h / 2, r, shade_h),
    ]
    zs = min(0.9, (h - shade_h) * 0.6)
    return _Shape(parts, [("switch", [box(-0.02, 0.015, zs - 0.03, 0.02, 0.045, zs + 0.03)])])


def _shape_plant(w: float, d: float, h: float) -> _Shape:
    r = min(w, d) / 2
    pot = h * 0.35
    return _Shape([cylinder(0, 0, pot / 2, r * 0.6, pot), cylinder(0, 0, pot + (h - pot) / 2, r, h - pot)])


def _shape_tv(w: float, d: float, h: float) -> _Shape:
    parts = [
        box(-w * 0.15, -d / 2, 0.0, w * 0.15, d / 2, 0.02),
        box(-0.03, -0.02, 0.02, 0.03, 0.02, 0.08),
        box(-w / 2, -0.03, 0.08, w / 2, 0.03, h),
    ]
    return _Shape(parts, [("button", [box(w / 2 - 0.06, 0.03, 0.1, w / 2 - 0.03, 0.045, 0.12)])])


def _shape_monitor(w: float, d: float, h: float) -> _Shape:
    return _Shape(
        [
            box(-0.1, -d / 2, 0.0, 0.1, d / 2, 0.02),
            box(-0.02, -0.02, 0.02, 0.02, 0.02, 0.12),
            box(-w / 2, -0.02, 0.12, w / 2, 0.02, h),
        ]
    )


def _shape_laptop(w: float, d: float, h: float) -> _Shape:
    return _Shape(
        [box(-w / 2, -d / 2, 0.0, w / 2, d / 2, 0.02), box(-w / 2, -d / 2, 0.02, w / 2, -d / 2 + 0.015, h)]
    )


def _shape_toilet(w: float, d: float, h: float) -> _Shape:
    parts = [
        box(-w * 0.35, -d / 2 + 0.18, 0.0, w * 0.35, d / 2, 0.42),
        box(-w / 2, -d / 2, 0.0, w / 2, -d / 2 + 0.18, h),
    ]
    return _Shape(parts, [("button", [cylinder(0.0, -d / 2 + 0.09, h + 0.008, 0.025, 0.016)])])


def _shape_sink(w: float, d: float, h: float) -> _Shape:
    top = h - 0.04
    parts = [
        box(-w / 2, -d / 2, 0.0, w / 2, d / 2, top),
        box(-w / 2, -d / 2, top, w / 2, -d / 2 + 0.1, h),
        box(-w / 2, d / 2 - 0.05, top, w / 2, d / 2, h),
        box(-w / 2, -d / 2 + 0.1, top, -w / 2 + 0.05, d / 2 - 0.05, h),
        box(w / 2 - 0.05, -d / 2 + 0.1, top, w / 2, d / 2 - 0.05, h),
    ]
    faucet = [
        cylinder(0.0, -d / 2 + 0.05, h + 0.1, 0.015, 0.2),
        box(-0.012, -d / 2 + 0.05, h + 0.17, 0.012, -d / 2 + 0.2, h + 0.2),
    ]
    return _Shape(
        parts,
        [("faucet", faucet), ("knob", _knob(0.0, d / 2, h - 0.25, 0.018))],
        surface=(-w / 2, -d / 2, w / 2, -d / 2 + 0.1, h),
    )


def _shape_bathtub(w: float, d: float, h: float) -> _Shape:
    t = 0.07
    parts = [
        box(-w / 2, -d / 2, 0.0, w / 2, d / 2, 0.1),
        box(-w / 2, -d / 2, 0.1, w / 2, -d / 2 + t, h),
        box(-w / 2, d / 2 - t, 0.1, w / 2, d / 2, h),
        box(-w / 2, -d / 2 + t, 0.1, -w / 2 + t, d / 2 - t, h),
        box(w / 2 - t, -d / 2 + t, 0.1, w / 2, d / 2 - t, h),
    ]
    faucet = [
        cylinder(-w / 2 + 0.04, 0.0, h + 0.08, 0.015, 0.16),
        box(-w / 2 + 0.04, -0.012, h + 0.13, -w / 2 + 0.18, 0.012, h + 0.16),
    ]
    return _Shape(parts, [("faucet", faucet)])


def _shape_oven(w: float, d: float, h: float) -> _Shape:
    y = d / 2
    elements: list[tuple[str, list[Part]]] = [
        ("knob", _knob(x, y, h - 0.06)) for x in (-0.2, -0.08, 0.08, 0.2)
    ]
    elements.append(("handle", _handle_h(0.0, y, h - 0.17, w * 0.7)))
    return _Shape(_plain_box(w, d, h), elements, surface=(-w / 2, -d / 2, w / 2, d / 2, h))


def _shape_fridge(w: float, d: float, h: float) -> _Shape:
    x = w / 2 - 0.08
    return _Shape(
        _plain_box(w, d, h),
        [("handle", _handle_v(x, d / 2, h - 0.35, 0.3)), ("handle", _handle_v(x, d / 2, h * 0.45, 0.4))],
    )


def _shape_microwave(w: float, d: float, h: float) -> _Shape:
    y = d / 2
    return _Shape(
        _plain_box(w, d, h),
        [
            ("button", [box(w / 2 - 0.1, y, h / 2 - 0.05, w / 2 - 0.04, y + 0.01, h / 2 + 0.05)]),
            ("handle", _handle_v(w / 2 - 0.14, y, h / 2, h * 0.6)),
        ],
    )


def _shape_dishwasher(w: float, d: float, h: float) -> _Shape:
    y = d / 2
    return _Shape(
        _plain_box(w, d, h),
        [
            ("handle", _handle_h(0.0, y, h - 0.1, w * 0.6)),
            ("button", [box(w / 2 - 0.1, y, h - 0.05, w / 2 - 0.06, y + 0.01, h - 0.02)]),
        ],
        surface=(-w / 2, -d / 2, w / 2, d / 2, h),
    )


def _shape_washer(w: float, d: float, h: float) -> _Shape:
    y = d / 2
    parts = [*_plain_box(w, d, h), cylinder(0.0, y + 0.01, h * 0.45, w * 0.3, 0.02, axis="y")]
    return _Shape(
        parts,
        [
            ("knob", _knob(-w / 2 + 0.12, y, h - 0.07, 0.03)),
            ("button", [box(w / 2 - 0.12, y, h - 0.09, w / 2 - 0.06, y + 0.012, h - 0.05)]),
        ],
        surface=(-w / 2, -d / 2, w / 2, d / 2, h),
    )


def _shape_radiator(w: float, d: float, h: float) -> _Shape:
    parts = [box(-w / 2 + i * w / 8, -d / 2, 0.0, -w / 2 + i * w / 8 + w / 10, d / 2, h) for i in range(8)]
    parts.append(box(-w / 2, -d / 2, h * 0.1, w / 2, -d / 2 + 0.02, h * 0.9))
    return _Shape(parts, [("knob", [cylinder(w / 2 + 0.02, 0.0, h * 0.7, 0.02, 0.04, axis="x")])])


def _shape_bench(w: float, d: float, h: float) -> _Shape:
    return _Shape(
        [box(-w / 2, -d / 2, h - 0.05, w / 2, d / 2, h), *_legs(w, d, h - 0.05)],
        surface=(-w / 2, -d / 2, w / 2, d / 2, h),
    )


def _shape_printer(w: float, d: float, h: float) -> _Shape:
    return _Shape(
        _plain_box(w, d, h),
        [("button", [box(w / 2 - 0.08, d / 2, h - 0.06, w / 2 - 0.04, d / 2 + 0.01, h - 0.03)])],
    )


def _shape_clock(w: float, d: float, h: float) -> _Shape:
    return _Shape([cylinder(0.0, 0.0, h / 2, w / 2, d, axis="y")])


def _shape_cyl(w: float, d: float, h: float) -> _Shape:
    return _Shape([cylinder(0.0, 0.0, h / 2, min(w, d) / 2, h)])


def _shape_bottle(w: float, d: float, h: float) -> _Shape:
    r = min(w, d) / 2
    return _Shape([cylinder(0, 0, h * 0.35, r, h * 0.7), cylinder(0, 0, h * 0.85, r * 0.4, h * 0.3)])


def _shape_box(w: float, d: float, h: float) -> _Shape:
    return _Shape(_plain_box(w, d, h))


def _shape_tv_stand(w: float, d: float, h: float) -> _Shape:
    return _Shape(
        _plain_box(w, d, h),
        [("knob", _knob(-w / 4, d / 2, h / 2)), ("knob", _knob(w / 4, d / 2, h / 2))],
        surface=(-w / 2, -d / 2, w / 2, d / 2, h),
    )


@dataclass(frozen=True)
class _ClassSpec:
    size: tuple[float, float, float]  # (width along local x, depth along local y, height)
    colors: tuple[str, ...]
    shape: Callable[[float, float, float], _Shape]
    jitter: float = 0.1


_WOOD = ("oak", "walnut", "white", "brown", "grey")
_VIVID = ("white", "red", "blue", "yellow", "green", "orange", "teal", "terracotta", "pink")
_APPLIANCE = ("white", "silver", "black")
CLASS_SPECS: dict[str, _ClassSpec] = {
    "bed": _ClassSpec((1.6, 2.05, 1.0), ("white", "grey", "beige", "navy", "brown"), _shape_bed),
    "nightstand": _ClassSpec((0.45, 0.4, 0.55), _WOOD, _shape_nightstand),
    "wardrobe": _ClassSpec((1.2, 0.6, 2.0), _WOOD, _shape_wardrobe),
    "dresser": _ClassSpec((1.0, 0.48, 0.82), _WOOD, _shape_dresser),
    "sofa": _ClassSpec(
        (2.0, 0.9, 0.82), ("grey", "blue", "green", "beige", "red", "navy", "teal"), _shape_sofa
    ),
    "armchair": _ClassSpec(
        (0.85, 0.85, 0.85), ("grey", "blue", "green", "beige", "red", "yellow"), _shape_sofa
    ),
    "coffee_table": _ClassSpec((1.1, 0.6, 0.45), (*_WOOD, "black"), _shape_table),
    "tv_stand": _ClassSpec((1.5, 0.45, 0.5), (*_WOOD, "black"), _shape_tv_stand),
    "tv": _ClassSpec((1.1, 0.25, 0.7), ("black", "dark_grey"), _shape_tv),
    "bookshelf": _ClassSpec((0.9, 0.35, 1.85), _WOOD, _shape_shelf),
    "lamp": _ClassSpec((0.4, 0.4, 1.6), ("white", "black", "yellow", "silver"), _shape_lamp),
    "plant": _ClassSpec((0.45, 0.45, 0.95), ("green", "olive"), _shape_plant, 0.25),
    "table": _ClassSpec((1.4, 0.85, 0.75), (*_WOOD, "black"), _shape_table),
    "chair": _ClassSpec(
        (0.46, 0.5, 0.92), ("oak", "walnut", "black", "white", "red", "grey"), _shape_chair, 0.05
    ),
    "desk": _ClassSpec((1.4, 0.7, 0.75), (*_WOOD, "black"), _shape_desk),
    "monitor": _ClassSpec((0.55, 0.2, 0.45), ("black", "dark_grey", "silver"), _shape_monitor),
    "laptop": _ClassSpec((0.34, 0.24, 0.23), ("black", "silver", "dark_grey"), _shape_laptop),
    "toilet": _ClassSpec((0.42, 0.68, 0.78), ("white",), _shape_toilet, 0.05),
    "sink": _ClassSpec((0.7, 0.5, 0.88), ("white", "light_grey"), _shape_sink),
    "bathtub": _ClassSpec((1.7, 0.75, 0.56), ("white",), _shape_bathtub, 0.05),
    "mirror": _ClassSpec((0.6, 0.03, 0.8), ("silver",), _shape_box),
    "towel": _ClassSpec((0.5, 0.05, 0.7), ("white", "blue", "pink", "yellow", "teal"), _shape_box),
    "oven": _ClassSpec((0.6, 0.6, 0.9), _APPLIANCE, _shape_oven, 0.03),
    "fridge": _ClassSpec((0.7, 0.68, 1.8), _APPLIANCE, _shape_fridge, 0.05),
    "cabinet": _ClassSpec((0.8, 0.55, 0.9), _WOOD, _shape_cabinet),
    "microwave": _ClassSpec((0.5, 0.35, 0.3), _APPLIANCE, _shape_microwave, 0.05),
    "dishwasher": _ClassSpec((0.6, 0.6, 0.86), _APPLIANCE, _shape_dishwasher, 0.03),
    "trash_can": _ClassSpec((0.35, 0.35, 0.5), ("grey", "silver", "black", "white"), _shape_cyl),
    "washing_machine": _ClassSpec((0.6, 0.6, 0.85), ("white", "silver"), _shape_washer, 0.03),
    "dryer": _ClassSpec((0.6, 0.6, 0.85), ("white", "silver"), _shape_washer, 0.03),
    "radiator": _ClassSpec((0.9, 0.1, 0.6), ("white", "light_grey"), _shape_radiator),
    "bench": _ClassSpec((1.1, 0.38, 0.45), _WOOD, _shape_bench),
    "shoe_cabinet": _ClassSpec((0.8, 0.32, 0.9), _WOOD, _shape_cabinet),
    "painting": _ClassSpec((0.8, 0.03, 0.6), (*_VIVID, "purple", "navy"), _shape_box, 0.3),
    "clock": _ClassSpec((0.32, 0.05, 0.32), ("white", "black", "silver"), _shape_clock),
    "printer": _ClassSpec((0.45, 0.4, 0.25), ("white", "black", "dark_grey"), _shape_printer),
    "mug": _ClassSpec((0.09, 0.09, 0.1), _VIVID, _shape_cyl),
    "bowl": _ClassSpec((0.18, 0.18, 0.08), _VIVID, _shape_cyl),
    "plate": _ClassSpec((0.24, 0.24, 0.02), ("white", "blue", "yellow", "terracotta"), _shape_cyl),
    "bottle": _ClassSpec((0.08, 0.08, 0.28), ("green", "teal", "white", "blue", "orange"), _shape_bottle),
    "vase": _ClassSpec((0.14, 0.14, 0.28), (*_VIVID, "purple"), _shape_cyl),
    "book": _ClassSpec((0.17, 0.24, 0.04), ("red", "blue", "green", "yellow", "navy", "orange"), _shape_box),
    "remote": _ClassSpec((0.05, 0.17, 0.02), ("black", "grey"), _shape_box),
    "pillow": _ClassSpec((0.5, 0.35, 0.14), ("white", "red", "yellow", "blue", "pink", "grey"), _shape_box),
}
_FUNCTIONAL_COLORS: dict[str, tuple[str, ...]] = {
    "knob": ("silver", "black", "gold"),
    "handle": ("silver", "black", "gold"),
    "switch": ("white",),
    "button": ("black", "white", "red"),
    "faucet": ("silver",),
}


@dataclass(frozen=True)
class _Recipe:
    """``count`` objects of ``cls`` in a room, placed by ``how``:
    ``wall`` | ``corner`` | ``center`` | ``wall_mount`` | ``around:<cls>`` | ``front:<cls>`` (facing it) |
    ``ahead:<cls>`` (same heading, in front) | ``beside:<cls>`` | ``above:<cls>`` | ``on:<cls>,<cls>``."""

    cls: str
    count: tuple[int, int]
    how: str
    item: bool = False  # small item whose count scales with ``BuildingConfig.clutter``
    z_range: tuple[float, float] | None = None  # wall mounts: centre height above the floor


def _r(
    cls: str, lo: int, hi: int, how: str, *, item: bool = False, z: tuple[float, float] | None = None
) -> _Recipe:
    return _Recipe(cls, (lo, hi), how, item, z)


_HANG = (1.35, 1.75)
RECIPES: dict[str, tuple[_Recipe, ...]] = {
    "kitchen": (
        _r("fridge", 1, 1, "corner"),
        _r("oven", 1, 1, "wall"),
        _r("sink", 1, 1, "wall"),
        _r("cabinet", 2, 3, "wall"),
        _r("dishwasher", 0, 1, "wall"),
        _r("table", 1, 1, "center"),
        _r("chair", 2, 4, "around:table"),
        _r("trash_can", 1, 1, "corner"),
        _r("radiator", 1, 1, "wall"),
        _r("plant", 0, 1, "corner"),
        _r("clock", 0, 1, "wall_mount", z=(1.7, 2.0)),
        _r("microwave", 1, 1, "on:cabinet,dishwasher"),
        _r("mug", 1, 3, "on:table,cabinet", item=True),
        _r("bowl", 1, 2, "on:table,cabinet", item=True),
        _r("bottle", 1, 2, "on:cabinet,table", item=True),
        _r("plate", 0, 2, "on:table", item=True),
    ),
    "living_room": (
        _r("sofa", 1, 1, "wall"),
        _r("coffee_table", 1, 1, "ahead:sofa"),
        _r("tv_stand", 1, 1, "wall"),
        _r("armchair", 1, 2, "wall"),
        _r("bookshelf", 1, 1, "wall"),
        _r("lamp", 1, 1, "corner"),
        _r("plant", 1, 2, "corner"),
        _r("radiator", 1, 1, "wall"),
        _r("painting", 1, 2, "wall_mount", z=_HANG),
        _r("tv", 1, 1, "on:tv_stand"),
        _r("remote", 1, 1, "on:coffee_table,sofa", item=True),
        _r("book", 1, 3, "on:coffee_table,bookshelf", item=True),
        _r("vase", 1, 1, "on:tv_stand,coffee_table", item=True),
        _r("pillow", 1, 2, "on:sofa,armchair", item=True),
    ),
    "dining_room": (
        _r("table", 1, 1, "center"),
        _r("chair", 4, 6, "around:table"),
        _r("cabinet", 1, 2, "wall"),
        _r("lamp", 1, 1, "corner"),
        _r("plant", 1, 2, "corner"),
        _r("radiator", 1, 1, "wall"),
        _r("painting", 1, 2, "wall_mount", z=_HANG),
        _r("clock", 0, 1, "wall_mount", z=(1.7, 2.0)),
        _r("vase", 1, 1, "on:table,cabinet", item=True),
        _r("bowl", 1, 2, "on:table", item=True),
        _r("plate", 1, 3, "on:table", item=True),
        _r("bottle", 0, 1, "on:table,cabinet", item=True),
    ),
    "bathroom": (
        _r("bathtub", 1, 1, "wall"),
        _r("toilet", 1, 1, "wall"),
        _r("sink", 1, 1, "wall"),
        _r("mirror", 1, 1, "above:sink"),
        _r("cabinet", 0, 1, "wall"),
        _r("trash_can", 1, 1, "corner"),
        _r("radiator", 1, 1, "wall"),
        _r("towel", 1, 2, "wall_mount", z=(1.1, 1.4)),
        _r("plant", 0, 1, "corner"),
        _r("bottle", 1, 2, "on:sink,cabinet", item=True),
    ),
    "bedroom": (
        _r("bed", 1, 1, "wall"),
        _r("nightstand", 1, 2, "beside:bed"),
        _r("wardrobe", 1, 1, "wall"),
        _r("dresser", 1, 1, "wall"),
        _r("chair", 0, 1, "wall"),
        _r("plant", 0, 1, "corner"),
        _r("radiator", 1, 1, "wall"),
        _r("painting", 0, 1, "wall_mount", z=_HANG),
        _r("mirror", 0, 1, "wall_mount", z=(1.4, 1.6)),
        _r("lamp", 1, 2, "on:nightstand"),
        _r("pillow", 1, 2, "on:bed", item=True),
        _r("book", 1, 2, "on:nightstand,dresser", item=True),
        _r("vase", 0, 1, "on:dresser", item=True),
    ),
    "office": (
        _r("desk", 1, 1, "wall"),
        _r("chair", 1, 1, "front:desk"),
        _r("bookshelf", 1, 2, "wall"),
        _r("cabinet", 1, 1, "wall"),
        _r("plant", 1, 1, "corner"),
        _r("trash_can", 1, 1, "corner"),
        _r("radiator", 1, 1, "wall"),
        _r("painting", 0, 1, "wall_mount", z=_HANG),
        _r("clock", 0, 1, "wall_mount", z=(1.7, 2.0)),
        _r("monitor", 1, 1, "on:desk"),
        _r("laptop", 0, 1, "on:desk"),
        _r("lamp", 0, 1, "on:desk"),
        _r("printer", 1, 1, "on:cabinet"),
        _r("book", 1, 3, "on:bookshelf,desk", item=True),
        _r("mug", 0, 1, "on:desk", item=True),
    ),
    "laundry_room": (
        _r("washing_machine", 1, 1, "wall"),
        _r("dryer", 1, 1, "wall"),
        _r("sink", 1, 1, "wall"),
        _r("cabinet", 1, 2, "wall"),
        _r("trash_can", 1, 1, "corner"),
        _r("radiator", 1, 1, "wall"),
        _r("towel", 0, 1, "wall_mount", z=(1.1, 1.4)),
        _r("bottle", 1, 3, "on:washing_machine,dryer,cabinet", item=True),
    ),
    "corridor": (
        _r("shoe_cabinet", 1, 1, "wall"),
        _r("bench", 0, 1, "wall"),
        _r("plant", 1, 1, "corner"),
        _r("painting", 1, 3, "wall_mount", z=_HANG),
        _r("vase", 0, 1, "on:shoe_cabinet", item=True),
    ),
    "stairwell": (
        _r("plant", 1, 2, "corner"),
        _r("painting", 1, 1, "wall_mount", z=_HANG),
    ),
}
_SHALLOW_ROOMS = ("corridor",)  # only objects at most this deep may stand in them
_MAX_CORRIDOR_DEPTH_M = 0.42
_WALL_COLORS = ("white", "cream", "light_blue", "light_green", "peach", "lavender", "light_grey")
_FLOOR_COLORS: dict[str, tuple[str, ...]] = {
    "kitchen": ("light_grey", "beige"),
    "bathroom": ("light_grey", "beige"),
    "laundry_room": ("light_grey",),
}


# -- the building -----------------------------------------------------------------------------------
@dataclass
class Building:
    """A generated building: triangle mesh with per-triangle instance ids, instance table and layout.

    ``vertices`` (V, 3) float64, ``triangles`` (T, 3) int32, ``triangle_instance`` (T,) int32 (instance id
    of each triangle). ``instances`` maps id -> ``Instance`` (ids are 1..N in creation order).
    """

    config: BuildingConfig
    floors: list[Floor]
    rooms: list[Room]
    instances: dict[int, Instance]
    vertices: np.ndarray
    triangles: np.ndarray
    triangle_instance: np.ndarray
    doors: list[Door]
    staircases: list[Staircase]
    room_connections: list[tuple[int, int, str]]  # (room a, room b, via: door | opening | stairs)
    footprint: tuple[float, float, float, float]  # (x0, y0, x1, y1) of the outer walls

    # -- access -------------------------------------------------------------------------------------
    def instance(self, instance_id: int) -> Instance:
        try:
            return self.instances[instance_id]
        except KeyError:
            raise KeyError(f"no instance with id {instance_id} (ids are 1..{len(self.instances)})") from None

    def of_kind(self, kind: str) -> list[Instance]:
        return [inst for inst in self.instances.values() if inst.kind == kind]

    def objects(self) -> list[Instance]:
        return self.of_kind(KIND_OBJECT)

    def functional_elements(self) -> list[Instance]:
        return self.of_kind(KIND_FUNCTIONAL)

    def structures(self) -> list[Instance]:
        return self.of_kind(KIND_STRUCTURE)

    @property
    def class_names(self) -> tuple[str, ...]:
        return CLASS_NAMES

    def instance_class_ids(self) -> np.ndarray:
        """Lookup table ``lut[instance_id] -> class id`` (``lut[0] == 0``)."""
        lut = np.zeros(max(self.instances, default=0) + 1, dtype=np.int32)
        for inst in self.instances.values():
            lut[inst.id] = inst.class_id
        return lut

    def room_at(self, x: float, y: float, z: float) -> Room | None:
        """The room whose polygon holds ``(x, y)`` on the floor whose z-range holds ``z``."""
        for fl in self.floors:
            if fl.z_min - 1e-6 <= z <= fl.z_max + 1e-6:
                for r in fl.rooms:
                    if self.rooms[r].contains_xy(x, y):
                        return self.rooms[r]
        return None

    def occupancy_grid(self, floor: int, resolution: float = _GRID_RES_M) -> OccupancyGrid:
        """What blocks a ground robot on ``floor``: every triangle of the floor's walls, doors, stairs and
        objects that reaches into the robot's body height band (so door openings stay free), the hole of
        the flight arriving from below, and the outer border."""
        fl = self.floors[floor]
        x0, y0, x1, y1 = self.footprint
        nx = math.ceil((x1 - x0) / resolution)
        ny = math.ceil((y1 - y0) / resolution)
        grid = np.zeros((ny, nx), dtype=bool)
        blocking = np.zeros(len(self.instances) + 1, dtype=bool)
        for inst in self.instances.values():
            blocking[inst.id] = (
                inst.floor == floor
                and inst.kind != KIND_FUNCTIONAL
                and inst.class_name not in ("floor", "ceiling")
            )
        tri = self.triangles[blocking[self.triangle_instance]]
        corners = self.vertices[tri]  # (T, 3, 3)
        zlo, zhi = corners[:, :, 2].min(axis=1), corners[:, :, 2].max(axis=1)
        band = (zlo < fl.z_min + _BODY_HEIGHT_M) & (zhi > fl.z_min + 0.02)
        lo, hi = corners[band].min(axis=1), corners[band].max(axis=1)
        boxes = list(
            zip(lo[:, 0].tolist(), lo[:, 1].tolist(), hi[:, 0].tolist(), hi[:, 1].tolist(), strict=True)
        )
        for st in self.staircases:
            if st.floor_from + 1 == floor:
                boxes.append((st.x0, st.y0, st.x1, st.y1))
        _rasterize(grid, x0, y0, resolution, boxes)
        grid[0, :] = grid[-1, :] = True
        grid[:, 0] = grid[:, -1] = True
        return OccupancyGrid(x0, y0, resolution, grid)

    # -- ground truth export ------------------------------------------------------------------------
    def to_scene_graph(self, *, include_structure: bool = False) -> SceneGraph:
        """The ground-truth hierarchical scene graph.

        Building ``B0`` -CONTAINS-> floors ``F<k>`` -CONTAINS-> rooms ``R<i>`` -CONTAINS-> objects
        ``O<instance id>`` -HAS_ELEMENT-> functional elements ``E<instance id>``. Doors and staircases are
        ``Object`` nodes with ``kind='structure'``; wall-mounted light switches hang off their room by
        CONTAINS (``mounted_on='wall'``). With ``include_structure`` walls, floors and ceilings are added as
        ``Object`` nodes too and each switch also gets HAS_ELEMENT from its wall. Rooms joined by a door,
        opening or flight of stairs get ROOM_CONNECTED (``via``).
        """
        g = SceneGraph(
            metadata={
                "generator": "scenerag.sim.building",
                "seed": self.config.seed,
                "config": _config_dict(self.config),
                "classes": list(CLASS_NAMES),
                # what the (oracle) perception can name: asked-for classes with no instance are absent
                ont.KNOWN_CLASSES: {
                    ont.OBJECT: sorted({*OBJECT_CLASSES, "door", "stairs"}),
                    ont.FUNCTIONAL_ELEMENT: sorted(FUNCTIONAL_CLASSES),
                },
            }
        )
        x0, y0, x1, y1 = self.footprint
        top = self.floors[-1].z_max
        g.add(
            "B0",
            ont.BUILDING,
            "building",
            ((x0 + x1) / 2, (y0 + y1) / 2, top / 2),
            bbox_center=((x0 + x1) / 2, (y0 + y1) / 2, top / 2),
            bbox_dim=(x1 - x0, y1 - y0, top),
            n_floors=len(self.floors),
            n_rooms=len(self.rooms),
        )
        for fl in self.floors:
            zc = (fl.z_min + fl.z_max) / 2
            g.add(
                fl.symbol,
                ont.FLOOR,
                "floor",
                ((x0 + x1) / 2, (y0 + y1) / 2, zc),
                bbox_center=((x0 + x1) / 2, (y0 + y1) / 2, zc),
                bbox_dim=(x1 - x0, y1 - y0, fl.z_max - fl.z_min),
                level=fl.index,
                z_min=fl.z_min,
                z_max=fl.z_max,
                name=f"floor {fl.index}",
            )
            g.add_edge("B0", fl.symbol, ont.CONTAINS)
        for room in self.rooms:
            lo, hi = room.polygon.min(axis=0), room.polygon.max(axis=0)
            c = room.centroid
            zc = (room.z_min + room.z_max) / 2
            g.add(
                room.symbol,
                ont.ROOM,
                room.room_type,
                (float(c[0]), float(c[1]), zc),
                bbox_center=(float(c[0]), float(c[1]), zc),
                bbox_dim=(float(hi[0] - lo[0]), float(hi[1] - lo[1]), room.z_max - room.z_min),
                description=f"{room.name} on floor {room.floor}",
                name=room.name,
                floor_level=room.floor,
                polygon_xy=[round(float(v), 4) for v in room.polygon.ravel()],
                area_m2=round(room.area, 3),
                z_min=room.z_min,
                z_max=room.z_max,
            )
            g.add_edge(self.floors[room.floor].symbol, room.symbol, ont.CONTAINS)
        for a, b, via in self.room_connections:
            g.add_edge(self.rooms[a].symbol, self.rooms[b].symbol, ont.ROOM_CONNECTED, via=via)

        shown = {
            i
            for i, inst in self.instances.items()
            if inst.kind == KIND_OBJECT
            or inst.class_name in ("door", "stairs")
            or (include_structure and inst.kind == KIND_STRUCTURE)
        }
        for iid in sorted(shown):
            inst = self.instances[iid]
            room = self.rooms[inst.room]
            attrs: dict[str, Any] = {
                "instance_id": iid,
                "color": inst.color_name,
                "color_rgb": list(inst.color_rgb),
                "kind": inst.kind,
                "floor_level": inst.floor,
                "room": room.symbol,
                "mount": inst.mount,
            }
            desc = f"{inst.color_name} {inst.class_name.replace('_', ' ')} in the {room.name}"
            if inst.support is not None:
                attrs["on"] = f"O{inst.support}"
                desc += f", on the {self.instances[inst.support].class_name.replace('_', ' ')}"
            if inst.class_name == "stairs":
                st = next(s for s in self.staircases if s.instance == iid)
                attrs["connects_floors"] = [st.floor_from, st.floor_from + 1]
            c = inst.center
            g.add(
                f"O{iid}",
                ont.OBJECT,
                inst.class_name,
                tuple(float(v) for v in c),
                bbox_center=tuple(float(v) for v in c),
                bbox_dim=tuple(float(v) for v in inst.size),
                description=desc,
                **attrs,
            )
            g.add_edge(room.symbol, f"O{iid}", ont.CONTAINS)
        for inst in self.functional_elements():
            parent = self.instances[inst.parent] if inst.parent is not None else None
            room = self.rooms[inst.room]
            c = inst.center
            attrs = {
                "instance_id": inst.id,
                "color": inst.color_name,
                "color_rgb": list(inst.color_rgb),
                "floor_level": inst.floor,
                "room": room.symbol,
            }
            on_wall = parent is not None and parent.class_name == "wall"
            if on_wall:
                attrs["mounted_on"] = "wall"
            if parent is not None:
                attrs["parent_class"] = parent.class_name
            pname = parent.class_name.replace("_", " ") if parent is not None else "room"
            g.add(
                f"E{inst.id}",
                ont.FUNCTIONAL_ELEMENT,
                inst.class_name,
                tuple(float(v) for v in c),
                bbox_center=tuple(float(v) for v in c),
                bbox_dim=tuple(float(v) for v in inst.size),
                description=f"{inst.color_name} {inst.class_name} of the {pname} in the {room.name}",
                **attrs,
            )
            if parent is not None and parent.id in shown:
                g.add_edge(f"O{parent.id}", f"E{inst.id}", ont.HAS_ELEMENT)
            if on_wall or parent is None:
                g.add_edge(room.symbol, f"E{inst.id}", ont.CONTAINS)
        return g

    def instance_table(self) -> dict[str, Any]:
        """JSON-ready ground truth: classes, floors, rooms (polygons), doors, staircases and instances."""
        return {
            "format": "scenerag.building_gt",
            "version": 1,
            "config": _config_dict(self.config),
            "classes": [{"id": CLASS_IDS[n], "name": n} for n in CLASS_NAMES],
            "footprint": list(self.footprint),
            "floors": [
                {
                    "index": f.index,
                    "symbol": f.symbol,
                    "z_min": f.z_min,
                    "z_max": f.z_max,
                    "rooms": list(f.rooms),
                }
                for f in self.floors
            ],
            "rooms": [
                {
                    "index": r.index,
                    "symbol": r.symbol,
                    "floor": r.floor,
                    "type": r.room_type,
                    "name": r.name,
                    "polygon": r.polygon.round(6).tolist(),
                    "z_min": r.z_min,
                    "z_max": r.z_max,
                }
                for r in self.rooms
            ],
            "connections": [{"a": a, "b": b, "via": via} for a, b, via in self.room_connections],
            "doors": [asdict(d) for d in self.doors],
            "staircases": [asdict(s) for s in self.staircases],
            "instances": [inst.to_dict() for inst in self.instances.values()],
        }

    def summary(self) -> str:
        return (
            f"{len(self.floors)} floors, {len(self.rooms)} rooms, {len(self.objects())} objects, "
            f"{len(self.functional_elements())} functional elements, {len(self.structures())} structure "
            f"instances, {len(self.triangles)} triangles"
        )


def _config_dict(cfg: BuildingConfig) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(cfg).items()}


def _rasterize(
    grid: np.ndarray, x0: float, y0: float, res: float, boxes: list[tuple[float, float, float, float]]
) -> None:
    """Mark every cell that a box ``(xa, ya, xb, yb)`` touches (degenerate, zero-width boxes included)."""
    ny, nx = grid.shape
    for xa, ya, xb, yb in boxes:
        j0 = max(0, math.floor((xa - x0) / res))
        j1 = min(nx, math.floor((xb - x0) / res) + 1)
        i0 = max(0, math.floor((ya - y0) / res))
        i1 = min(ny, math.floor((yb - y0) / res) + 1)
        if j1 > j0 and i1 > i0:
            grid[i0:i1, j0:j1] = True


# -- generation -------------------------------------------------------------------------------------
@dataclass
class _Placed:
    iid: int
    cls: str
    k: int
    lo: np.ndarray  # AABB including functional elements
    hi: np.ndarray
    surface: tuple[float, float, float, float, float] | None  # world (x0, y0, x1, y1, z)
    items_on: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)


class _Builder:
    """Accumulates meshes and instances while the generator lays out the building."""

    def __init__(self, cfg: BuildingConfig, rng: np.random.Generator) -> None:
        self.cfg = cfg
        self.rng = rng
        self.parts: list[tuple[np.ndarray, np.ndarray, int]] = []
        self.instances: dict[int, Instance] = {}

    def add(
        self,
        cls: str,
        kind: str,
        floor: int,
        room: int,
        color: str,
        parts: list[Part],
        *,
        parent: int | None = None,
        support: int | None = None,
        mount: str = "floor",
    ) -> int:
        iid = len(self.instances) + 1
        v, t = _merge(parts)
        self.parts.append((v, t, iid))
        self.instances[iid] = Instance(
            id=iid,
            class_name=cls,
            kind=kind,
            floor=floor,
            room=room,
            color_name=color,
            color_rgb=PALETTE[color],
            aabb_min=v.min(axis=0),
            aabb_max=v.max(axis=0),
            parent=parent,
            support=support,
            mount=mount,
        )
        return iid

    def pick(self, options: tuple[str, ...]) -> str:
        return options[int(self.rng.integers(len(options)))]


@dataclass
class _RoomPlan:
    """Per-room bookkeeping while a floor is laid out (not part of the result)."""

    room: Room
    side: str = ""  # south | north for rooms beside the corridor
    openings: list[tuple[str, float, float, float]] = field(default_factory=list)  # (side, s0, s1, top)
    walls: dict[str, int] = field(default_factory=dict)  # room side -> wall instance id
    keepout: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)  # 3D boxes kept free
    static: list[tuple[float, float, float, float]] = field(default_factory=list)  # fixed 2D obstacles

    def keep_free(self, lo: tuple[float, float, float], hi: tuple[float, float, float]) -> None:
        self.keepout.append((np.array(lo, dtype=np.float64), np.array(hi, dtype=np.float64)))


def generate_building(config: BuildingConfig | None = None, **overrides: Any) -> Building:
    """Generate a building from ``config`` (defaults if ``None``) with ``overrides`` applied; seeded."""
    cfg = replace(config or BuildingConfig(), **overrides)
    cfg.check()
    rng = np.random.default_rng(cfg.seed)
    b = _Builder(cfg, rng)
    n_south = (cfg.rooms_per_floor + 1) // 2
    n_north = cfg.rooms_per_floor - n_south
    depth_s = float(rng.uniform(*cfg.room_depth_range))
    depth_n = float(rng.uniform(*cfg.room_depth_range))
    cw = cfg.corridor_width
    length = float(np.mean(cfg.room_width_range)) * n_south
    x_end = length + cfg.stairwell_length
    y_lo, y_hi = -cw / 2 - depth_s, cw / 2 + depth_n
    half_t = cfg.wall_thickness / 2
    h = cfg.clear_height

    # Stair flights all climb along +x; even flights hug the south wall, odd ones the north wall.
    run = cfg.floor_height * _STAIR_RUN_PER_M
    sx0 = length + _STAIR_APPROACH_M
    sx1 = sx0 + run
    lanes = [
        (y_lo + half_t + 0.05, y_lo + half_t + 0.05 + cfg.stair_width),
        (y_hi - half_t - 0.05 - cfg.stair_width, y_hi - half_t - 0.05),
    ]

    rooms: list[Room] = []
    floors: list[Floor] = []
    doors: list[Door] = []
    staircases: list[Staircase] = []
    connections: list[tuple[int, int, str]] = []
    type_counts: dict[str, int] = {}

    def new_room(floor: int, rtype: str, rect: tuple[float, float, float, float]) -> _RoomPlan:
        type_counts[rtype] = type_counts.get(rtype, 0) + 1
        xa, ya, xb, yb = rect
        poly = np.array([[xa, ya], [xb, ya], [xb, yb], [xa, yb]], dtype=np.float64)
        z0 = floor * cfg.floor_height
        room = Room(
            len(rooms),
            floor,
            rtype,
            f"{rtype.replace('_', ' ')} {type_counts[rtype]}",
            poly,
            (xa + half_t, ya + half_t, xb - half_t, yb - half_t),
            z0,
            z0 + h,
        )
        rooms.append(room)
        return _RoomPlan(room)

    for k in range(cfg.n_floors):
        z0 = k * cfg.floor_height
        types = list(_GROUND_FLOOR_ROOMS if k == 0 else _UPPER_FLOOR_ROOMS)
        while len(types) < cfg.rooms_per_floor:
            types.extend(_UPPER_FLOOR_ROOMS)
        types = types[: cfg.rooms_per_floor]
        types = [types[i] for i in rng.permutation(len(types))]
        side_rects: list[tuple[tuple[float, float, float, float], str]] = []
        for n_side, (ya, yb), side in (
            (n_south, (y_lo, -cw / 2), "south"),
            (n_north, (cw / 2, y_hi), "north"),
        ):
            widths = rng.uniform(*cfg.room_width_range, size=n_side)
            edges = np.concatenate([[0.0], np.cumsum(widths / widths.sum() * length)])
            side_rects += [((float(edges[i]), ya, float(edges[i + 1]), yb), side) for i in range(n_side)]
        side_plans: list[_RoomPlan] = []
        for (rect, side), rtype in zip(side_rects, types, strict=True):
            plan = new_room(k, rtype, rect)
            plan.side = side
            side_plans.append(plan)
        corridor = new_room(k, "corridor", (0.0, -cw / 2, length, cw / 2))
        stairwell = new_room(k, "stairwell", (length, y_lo, x_end, y_hi))
        plans = [*side_plans, corridor, stairwell]
        floors.append(Floor(k, z0, z0 + h, tuple(p.room.index for p in plans)))

        # Door openings onto the corridor, and the full-height passage from the corridor to the stairwell.
        door_specs: list[tuple[_RoomPlan, float, float, bool]] = []
        for plan in side_plans:
            xa, xb = float(plan.room.polygon[0][0]), float(plan.room.polygon[1][0])
            margin = 0.35 + cfg.door_width / 2
            dc = float(rng.uniform(xa + margin, xb - margin))
            d0, d1 = dc - cfg.door_width / 2, dc + cfg.door_width / 2
            south = plan.side == "south"
            plan.openings.append(("N" if south else "S", d0, d1, cfg.door_height))
            corridor.openings.append(("S" if south else "N", d0, d1, cfg.door_height))
            door_specs.append((plan, d0, d1, bool(rng.integers(2))))
            connections.append((plan.room.index, corridor.room.index, "door"))
        corridor.openings.append(("E", -cw / 2, cw / 2, h))
        stairwell.openings.append(("W", -cw / 2, cw / 2, h))
        connections.append((corridor.room.index, stairwell.room.index, "opening"))

        # Holes in this floor (flight arriving from below) and in its ceiling (flight leaving upwards).
        hole_below = (sx0, lanes[(k - 1) % 2][0], sx1, lanes[(k - 1) % 2][1]) if k > 0 else None
        hole_above = (sx0, lanes[k % 2][0], sx1, lanes[k % 2][1]) if k < cfg.n_floors - 1 else None

        floor_color = b.pick(("oak", "walnut", "beige"))
        slab_half = cfg.slab_thickness / 2
        for plan in plans:
            room = plan.room
            wall_color = b.pick(_WALL_COLORS)
            fcol = b.pick(_FLOOR_COLORS[room.room_type]) if room.room_type in _FLOOR_COLORS else floor_color
            rect = (
                float(room.polygon[0][0]),
                float(room.polygon[0][1]),
                float(room.polygon[2][0]),
                float(room.polygon[2][1]),
            )
            holes_f = [hole_below] if plan is stairwell else []
            holes_c = [hole_above] if plan is stairwell else []
            b.add(
                "floor",
                KIND_STRUCTURE,
                k,
                room.index,
                fcol,
                [box(r[0], r[1], z0 - slab_half, r[2], r[3], z0) for r in _rect_minus(rect, holes_f)],
                mount="structure",
            )
            b.add(
                "ceiling",
                KIND_STRUCTURE,
                k,
                room.index,
                "white",
                [box(r[0], r[1], z0 + h, r[2], r[3], z0 + h + slab_half) for r in _rect_minus(rect, holes_c)],
                mount="structure",
            )
            for side in "SNWE":
                parts = _wall_parts(room, side, plan.openings, half_t, z0, h)
                if parts:
                    plan.walls[side] = b.add(
                        "wall", KIND_STRUCTURE, k, room.index, wall_color, parts, mount="structure"
                    )

        # Open door leaves inside each room, their handles, a light switch beside each door, keep-outs.
        for plan, d0, d1, hinge_low in door_specs:
            room = plan.room
            south = plan.side == "south"
            wall_y = float(room.polygon[2][1] if south else room.polygon[0][1])
            inward = -1.0 if south else 1.0
            face = wall_y + inward * half_t
            hinge = d0 + 0.02 if hinge_low else d1 - 0.06
            y_far = face + inward * (cfg.door_width - 0.06)
            ya_, yb_ = sorted((face, y_far))
            leaf = [box(hinge, ya_, z0 + 0.01, hinge + 0.04, yb_, z0 + cfg.door_height - 0.01)]
            leaf_id = b.add(
                "door",
                KIND_STRUCTURE,
                k,
                room.index,
                b.pick(("white", "oak", "walnut")),
                leaf,
                mount="structure",
            )
            hy = y_far - inward * 0.1
            b.add(
                "handle",
                KIND_FUNCTIONAL,
                k,
                room.index,
                b.pick(_FUNCTIONAL_COLORS["handle"]),
                [box(hinge - 0.05, hy - 0.06, z0 + 0.98, hinge + 0.09, hy + 0.06, z0 + 1.02)],
                parent=leaf_id,
                mount="attached",
            )
            dc = (d0 + d1) / 2
            doors.append(
                Door(leaf_id, k, room.index, corridor.room.index, (dc, wall_y), cfg.door_width, (0.0, inward))
            )
            room.portals.append((dc, face + inward * 0.7))
            corridor.room.portals.append((dc, 0.0))
            sx = d1 + 0.2 if hinge_low else d0 - 0.2
            fa, fb = sorted((face, face + inward * 0.02))
            b.add(
                "switch",
                KIND_FUNCTIONAL,
                k,
                room.index,
                "white",
                [box(sx - 0.04, fa, z0 + 1.06, sx + 0.04, fb, z0 + 1.18)],
                parent=plan.walls["N" if south else "S"],
                mount="attached",
            )
            ka, kb = sorted((face, face + inward * 1.4))
            plan.keep_free((d0 - 0.25, ka, z0), (d1 + 0.25, kb, z0 + cfg.door_height + 0.1))
            ka, kb = sorted((face, face + inward * 0.4))
            plan.keep_free((sx - 0.3, ka, z0), (sx + 0.3, kb, z0 + 1.5))
            corridor.keep_free((d0 - 0.3, -cw / 2, z0), (d1 + 0.3, cw / 2, z0 + h))

        # Corridor: switch on its west end wall; stairwell: switch beside the passage from the corridor.
        corridor.room.portals.append((length - 0.3, 0.0))
        corridor.keep_free((length - 1.0, -cw / 2, z0), (length, cw / 2, z0 + h))
        stairwell.room.portals.append((length + 0.5, 0.0))
        stairwell.keep_free((length, -cw / 2 - 0.3, z0), (length + 1.2, cw / 2 + 0.3, z0 + h))
        for plan, s in ((corridor, 0.3), (stairwell, cw / 2 + 0.3)):
            fx = float(plan.room.polygon[0][0]) + half_t
            b.add(
                "switch",
                KIND_FUNCTIONAL,
                k,
                plan.room.index,
                "white",
                [box(fx, s - 0.04, z0 + 1.06, fx + 0.02, s + 0.04, z0 + 1.18)],
                parent=plan.walls["W"],
                mount="attached",
            )
            plan.keep_free((fx, s - 0.35, z0), (fx + 0.5, s + 0.35, z0 + 1.5))

        # The flight leaving this floor; the flight and the hole of the one arriving are fixed obstacles.
        if hole_above is not None:
            ya_, yb_ = lanes[k % 2]
            n_steps = max(8, round(cfg.floor_height / 0.18))
            rise, tread = cfg.floor_height / n_steps, run / n_steps
            steps = [
                box(sx0 + i * tread, ya_, z0, sx0 + (i + 1) * tread, yb_, z0 + (i + 1) * rise)
                for i in range(n_steps)
            ]
            sid = b.add(
                "stairs",
                KIND_STRUCTURE,
                k,
                stairwell.room.index,
                b.pick(("grey", "oak", "light_grey")),
                steps,
                mount="structure",
            )
            yc = (ya_ + yb_) / 2
            staircases.append(
                Staircase(
                    sid, k, sx0, sx1, ya_, yb_, z0, z0 + cfg.floor_height, (sx0 - 0.45, yc), (sx1 + 0.42, yc)
                )
            )
            stairwell.static.append((sx0, ya_, sx1, yb_))
            stairwell.room.portals.append((sx0 - 0.45, yc))
            stairwell.keep_free((sx0 - 1.3, ya_ - 0.4, z0), (sx1, yb_ + 0.4, z0 + h))
        if hole_below is not None:
            ya_, yb_ = hole_below[1], hole_below[3]
            stairwell.static.append(hole_below)
            stairwell.room.portals.append((sx1 + 0.42, (ya_ + yb_) / 2))
            stairwell.keep_free((sx0 - 0.3, ya_ - 0.4, z0), (x_end, yb_ + 1.2, z0 + h))

        for plan in plans:
            _furnish(b, plan, RECIPES[plan.room.room_type])

    for k in range(cfg.n_floors - 1):
        lower = next(r for r in rooms if r.floor == k and r.room_type == "stairwell")
        upper = next(r for r in rooms if r.floor == k + 1 and r.room_type == "stairwell")
        connections.append((lower.index, upper.index, "stairs"))

    vertices, triangles, tri_inst = _assemble(b.parts)
    _sample_points(b.instances, vertices, triangles, tri_inst, cfg, np.random.default_rng(cfg.seed + 1))
    return Building(
        cfg,
        floors,
        rooms,
        b.instances,
        vertices,
        triangles,
        tri_inst,
        doors,
        staircases,
        connections,
        (0.0, y_lo, x_end, y_hi),
    )


def _rect_minus(
    rect: tuple[float, float, float, float], holes: list[tuple[float, float, float, float] | None]
) -> list[tuple[float, float, float, float]]:
    """Split ``rect`` into axis-aligned rectangles that cover it minus the (clipped) ``holes``."""
    pieces = [rect]
    for hole in holes:
        if hole is None:
            continue
        hx0, hy0, hx1, hy1 = hole
        out = []
        for x0, y0, x1, y1 in pieces:
            cx0, cy0, cx1, cy1 = max(x0, hx0), max(y0, hy0), min(x1, hx1), min(y1, hy1)
            if cx0 >= cx1 or cy0 >= cy1:
                out.append((x0, y0, x1, y1))
                continue
            candidates = [(x0, y0, x1, cy0), (x0, cy1, x1, y1), (x0, cy0, cx0, cy1), (cx1, cy0, x1, cy1)]
            out += [c for c in candidates if c[2] - c[0] > 1e-9 and c[3] - c[1] > 1e-9]
        pieces = out
    return pieces


def _wall_parts(
    room: Room, side: str, openings: list[tuple[str, float, float, float]], half_t: float, z0: float, h: float
) -> list[Part]:
    """Boxes of one inner wall of ``room`` (thickness ``half_t``), with door and passage openings cut out."""
    xa, ya = room.polygon[0]
    xb, yb = room.polygon[2]
    along_x = side in "SN"
    s_lo, s_hi = (xa, xb) if along_x else (ya, yb)
    cuts = sorted((s0, s1, top) for sd, s0, s1, top in openings if sd == side)
    parts: list[Part] = []

    def slab(s0: float, s1: float, za: float, zb: float) -> None:
        if s1 - s0 <= 1e-9 or zb - za <= 1e-9:
            return
        if side == "S":
            parts.append(box(s0, ya, za, s1, ya + half_t, zb))
        elif side == "N":
            parts.append(box(s0, yb - half_t, za, s1, yb, zb))
        elif side == "W":
            parts.append(box(xa, s0, za, xa + half_t, s1, zb))
        else:
            parts.append(box(xb - half_t, s0, za, xb, s1, zb))

    cursor = s_lo
    for s0, s1, top in cuts:
        slab(cursor, s0, z0, z0 + h)
        slab(s0, s1, z0 + top, z0 + h)
        cursor = s1
    slab(cursor, s_hi, z0, z0 + h)
    return parts


def _assemble(parts: list[tuple[np.ndarray, np.ndarray, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    verts, tris, ids, offset = [], [], [], 0
    for v, t, iid in parts:
        verts.append(v)
        tris.append(t + offset)
        ids.append(np.full(len(t), iid, dtype=np.int32))
        offset += len(v)
    return np.vstack(verts), np.vstack(tris).astype(np.int32), np.concatenate(ids)


def _sample_points(
    instances: dict[int, Instance],
    vertices: np.ndarray,
    triangles: np.ndarray,
    tri_inst: np.ndarray,
    cfg: BuildingConfig,
    rng: np.random.Generator,
) -> None:
    """Area-weighted surface samples per instance (at least 16, at most ``max_points_per_instance``)."""
    a, b_, c = vertices[triangles[:, 0]], vertices[triangles[:, 1]], vertices[triangles[:, 2]]
    area = 0.5 * np.linalg.norm(np.cross(b_ - a, c - a), axis=1)
    order = np.argsort(tri_inst, kind="stable")
    bounds = np.searchsorted(tri_inst[order], np.arange(1, len(instances) + 2))
    for iid in range(1, len(instances) + 1):
        tri = order[bounds[iid - 1] : bounds[iid]]
        w = area[tri]
        total = float(w.sum())
        n = int(np.clip(round(total * cfg.points_per_m2), 16, cfg.max_points_per_instance))
        pick = tri[rng.choice(len(tri), size=n, p=w / total)] if total > 0 else tri[np.zeros(n, int)]
        u, v = rng.random(n), rng.random(n)
        flip = u + v > 1
        u[flip], v[flip] = 1 - u[flip], 1 - v[flip]
        pa, pb, pc = vertices[triangles[pick, 0]], vertices[triangles[pick, 1]], vertices[triangles[pick, 2]]
        instances[iid].points = (pa + u[:, None] * (pb - pa) + v[:, None] * (pc - pa)).astype(np.float32)


# -- furnishing a room ------------------------------------------------------------------------------
class _RoomGrid:
    """Free-space check for one room: portals stay mutually reachable and a standing spot remains."""

    def __init__(self, room: Room, static: list[tuple[float, float, float, float]]) -> None:
        x0, y0, x1, y1 = room.interior
        self.x0, self.y0 = x0, y0
        self.base = np.zeros((math.ceil((y1 - y0) / _GRID_RES_M), math.ceil((x1 - x0) / _GRID_RES_M)), bool)
        _rasterize(self.base, x0, y0, _GRID_RES_M, static)
        self.portals = [
            (
                min(self.base.shape[0] - 1, max(0, int((py - y0) / _GRID_RES_M))),
                min(self.base.shape[1] - 1, max(0, int((px - x0) / _GRID_RES_M))),
            )
            for px, py in room.portals
        ]
        self.boxes: list[tuple[float, float, float, float]] = []

    def ok_with(self, extra: tuple[float, float, float, float] | None) -> bool:
        from scipy.ndimage import distance_transform_edt, label

        grid = self.base.copy()
        # Cells outside the interior (a wall) are implicit: pad with obstacles.
        _rasterize(grid, self.x0, self.y0, _GRID_RES_M, self.boxes + ([extra] if extra else []))
        padded = np.pad(grid, 1, constant_values=True)
        clearance = distance_transform_edt(~padded)[1:-1, 1:-1] * _GRID_RES_M
        free = clearance > ROBOT_RADIUS_M
        labels, _ = label(free)
        if not self.portals:
            return bool((clearance >= STANDING_CLEARANCE_M).any())
        ids = {int(labels[i, j]) for i, j in self.portals}
        if 0 in ids or len(ids) != 1:
            return False
        comp = labels == ids.pop()
        return bool((clearance[comp] >= STANDING_CLEARANCE_M).any())

    def add(self, footprint: tuple[float, float, float, float]) -> None:
        self.boxes.append(footprint)


def _overlap(lo: np.ndarray, hi: np.ndarray, lo2: np.ndarray, hi2: np.ndarray, gap: float) -> bool:
    return bool(np.all(lo < hi2 + gap) and np.all(lo2 < hi + gap))


def _furnish(b: _Builder, plan: _RoomPlan, recipes: tuple[_Recipe, ...]) -> None:
    """Place the recipe's objects in the room: no overlaps, inside the walls, portals kept reachable."""
    rng, cfg, room = b.rng, b.cfg, plan.room
    grid = _RoomGrid(room, plan.static)
    keepout = plan.keepout
    placed: list[_Placed] = []
    ix0, iy0, ix1, iy1 = room.interior
    z0, z1 = room.z_min, room.z_max
    for recipe in recipes:
        lo_n, hi_n = recipe.count
        n = int(rng.integers(lo_n, hi_n + 1))
        if recipe.item:
            n = round(n * cfg.clutter)
        for _ in range(n):
            spec = CLASS_SPECS[recipe.cls]
            dims = np.array(spec.size) * rng.uniform(1 - spec.jitter, 1 + spec.jitter, size=3)
            if recipe.cls == "lamp" and recipe.how.startswith("on:"):
                dims = np.array([0.28, 0.28, 0.45]) * rng.uniform(0.9, 1.1, size=3)
            if room.room_type in _SHALLOW_ROOMS:
                dims[1] = min(dims[1], _MAX_CORRIDOR_DEPTH_M)
            shape = spec.shape(*[float(v) for v in dims])
            local_v, _ = _merge(shape.parts + [p for _, ps in shape.elements for p in ps])
            llo, lhi = local_v.min(axis=0), local_v.max(axis=0)
            for _attempt in range(40):
                pose = _propose(rng, recipe, room, placed, llo, lhi)
                if pose is None:
                    continue
                k, tx, ty, tz, support = pose
                rot = _rot(k)
                corners = np.array(
                    [[x, y, z] for x in (llo[0], lhi[0]) for y in (llo[1], lhi[1]) for z in (llo[2], lhi[2])]
                ) @ rot.T + [tx, ty, tz]
                wlo, whi = corners.min(axis=0), corners.max(axis=0)
                if (
                    wlo[0] < ix0 - 1e-6
                    or wlo[1] < iy0 - 1e-6
                    or whi[0] > ix1 + 1e-6
                    or whi[1] > iy1 + 1e-6
                    or wlo[2] < z0 - 1e-6
                    or whi[2] > z1 - 0.02
                ):
                    continue
                if support is None and any(_overlap(wlo, whi, a, c, 0.0) for a, c in keepout):
                    continue
                gap = 0.0 if support is not None else 0.02
                if any(_overlap(wlo, whi, p.lo, p.hi, gap) for p in placed if p is not support):
                    continue
                if support is not None and any(_overlap(wlo, whi, a, c, 0.005) for a, c in support.items_on):
                    continue
                footprint = (float(wlo[0]), float(wlo[1]), float(whi[0]), float(whi[1]))
                blocks = support is None and wlo[2] < z0 + _BODY_HEIGHT_M
                if blocks and not grid.ok_with(footprint):
                    continue
                _commit(b, room, recipe, spec, shape, rot, (tx, ty, tz), k, support, placed, wlo, whi)
                if blocks:
                    grid.add(footprint)
                break


def _commit(
    b: _Builder,
    room: Room,
    recipe: _Recipe,
    spec: _ClassSpec,
    shape: _Shape,
    rot: np.ndarray,
    t: tuple[float, float, float],
    k: int,
    support: _Placed | None,
    placed: list[_Placed],
    wlo: np.ndarray,
    whi: np.ndarray,
) -> None:
    tv = np.array(t)

    def world(parts: list[Part]) -> list[Part]:
        return [(v @ rot.T + tv, tri) for v, tri in parts]

    mount = (
        "surface"
        if support is not None
        else (
            "wall"
            if recipe.how in ("wall_mount",) or recipe.how.startswith("above:") or recipe.cls == "radiator"
            else "floor"
        )
    )
    oid = b.add(
        recipe.cls,
        KIND_OBJECT,
        room.floor,
        room.index,
        b.pick(spec.colors),
        world(shape.parts),
        support=None if support is None else support.iid,
        mount=mount,
    )
    for fcls, parts in shape.elements:
        b.add(
            fcls,
            KIND_FUNCTIONAL,
            room.floor,
            room.index,
            b.pick(_FUNCTIONAL_COLORS[fcls]),
            world(parts),
            parent=oid,
            mount="attached",
        )
    surface = None
    if shape.surface is not None:
        sx0, sy0, sx1, sy1, sz = shape.surface
        c = np.array([[sx0, sy0, sz], [sx1, sy1, sz]]) @ rot.T + tv
        surface = (
            float(c[:, 0].min()),
            float(c[:, 1].min()),
            float(c[:, 0].max()),
            float(c[:, 1].max()),
            float(c[0, 2]),
        )
    placed.append(_Placed(oid, recipe.cls, k, wlo, whi, surface))
    if support is not None:
        support.items_on.append((wlo, whi))


def _propose(
    rng: np.random.Generator,
    recipe: _Recipe,
    room: Room,
    placed: list[_Placed],
    llo: np.ndarray,
    lhi: np.ndarray,
) -> tuple[int, float, float, float, _Placed | None] | None:
    """One candidate pose ``(k, tx, ty, tz, support)`` for an object with local bounds ``llo..lhi``."""
    ix0, iy0, ix1, iy1 = room.interior
    z0 = room.z_min
    how, _, arg = recipe.how.partition(":")
    targets = [p for p in placed if p.cls in arg.split(",")] if arg else []

    def against(side: str, along: float, z: float) -> tuple[int, float, float, float]:
        """Pose with the object's back on wall ``side`` at position ``along`` (fraction 0..1)."""
        k = {"S": 0, "E": 1, "N": 2, "W": 3}[side]
        rlo, rhi = _rotated_bounds(llo, lhi, k)
        if side in "SN":
            tx = ix0 - rlo[0] + along * max(0.0, (ix1 - ix0) - (rhi[0] - rlo[0]))
            ty = iy0 + _WALL_GAP_M - rlo[1] if side == "S" else iy1 - _WALL_GAP_M - rhi[1]
        else:
            ty = iy0 - rlo[1] + along * max(0.0, (iy1 - iy0) - (rhi[1] - rlo[1]))
            tx = ix0 + _WALL_GAP_M - rlo[0] if side == "W" else ix1 - _WALL_GAP_M - rhi[0]
        return k, float(tx), float(ty), z

    side = "SNWE"[int(rng.integers(4))]
    if how == "wall":
        z = z0 + (0.12 if recipe.cls == "radiator" else 0.0)
        return (*against(side, float(rng.random()), z), None)
    if how == "corner":
        return (*against(side, float(rng.integers(2)), z0), None)
    if how == "wall_mount":
        zlo, zhi = recipe.z_range or _HANG
        zc = float(rng.uniform(zlo, zhi))
        return (*against(side, float(rng.uniform(0.1, 0.9)), z0 + zc - (lhi[2] - llo[2]) / 2), None)
    if how == "center":
        k = int(rng.integers(4))
        cx, cy = (ix0 + ix1) / 2, (iy0 + iy1) / 2
        tx = cx + rng.uniform(-0.2, 0.2) * (ix1 - ix0)
        ty = cy + rng.uniform(-0.2, 0.2) * (iy1 - iy0)
        return k, float(tx), float(ty), z0, None
    if not targets:
        return None
    target = targets[int(rng.integers(len(targets)))]
    if how == "on":
        if target.surface is None:
            return None
        sx0, sy0, sx1, sy1, sz = target.surface
        k = int(rng.integers(4))
        rlo, rhi = _rotated_bounds(llo, lhi, k)
        if rhi[0] - rlo[0] > sx1 - sx0 or rhi[1] - rlo[1] > sy1 - sy0:
            return None
        tx = rng.uniform(sx0 - rlo[0], sx1 - rhi[0])
        ty = rng.uniform(sy0 - rlo[1], sy1 - rhi[1])
        return k, float(tx), float(ty), sz, target
    tlo, thi = target.lo, target.hi
    if how == "around":
        side = "SNWE"[int(rng.integers(4))]
        k = {"S": 0, "N": 2, "W": 3, "E": 1}[side]  # chair faces the table
        rlo, rhi = _rotated_bounds(llo, lhi, k)
        gap = 0.05
        if side in "SN":
            tx = rng.uniform(tlo[0] - rlo[0], max(tlo[0] - rlo[0], thi[0] - rhi[0]))
            ty = tlo[1] - gap - rhi[1] if side == "S" else thi[1] + gap - rlo[1]
        else:
            ty = rng.uniform(tlo[1] - rlo[1], max(tlo[1] - rlo[1], thi[1] - rhi[1]))
            tx = tlo[0] - gap - rhi[0] if side == "W" else thi[0] + gap - rlo[0]
        return k, float(tx), float(ty), z0, None
    if how in ("front", "ahead"):
        fx, fy = _front(target.k)
        k = (target.k + 2) % 4 if how == "front" else target.k
        rlo, rhi = _rotated_bounds(llo, lhi, k)
        gap = 0.1 if how == "front" else 0.45
        cx, cy = (tlo[0] + thi[0]) / 2, (tlo[1] + thi[1]) / 2
        if fx > 0:
            tx, ty = thi[0] + gap - rlo[0], cy - (rlo[1] + rhi[1]) / 2
        elif fx < 0:
            tx, ty = tlo[0] - gap - rhi[0], cy - (rlo[1] + rhi[1]) / 2
        elif fy > 0:
            tx, ty = cx - (rlo[0] + rhi[0]) / 2, thi[1] + gap - rlo[1]
        else:
            tx, ty = cx - (rlo[0] + rhi[0]) / 2, tlo[1] - gap - rhi[1]
        return k, float(tx), float(ty), z0, None
    if how == "beside":
        k = target.k
        rlo, rhi = _rotated_bounds(llo, lhi, k)
        fx, fy = _front(k)
        sign = 1.0 if rng.random() < 0.5 else -1.0
        gap = 0.05
        if fx == 0:  # target faces +-y: beside means along x; align backs (the wall side)
            tx = thi[0] + gap - rlo[0] if sign > 0 else tlo[0] - gap - rhi[0]
            ty = tlo[1] - rlo[1] if fy > 0 else thi[1] - rhi[1]
        else:
            ty = thi[1] + gap - rlo[1] if sign > 0 else tlo[1] - gap - rhi[1]
            tx = tlo[0] - rlo[0] if fx > 0 else thi[0] - rhi[0]
        return k, float(tx), float(ty), z0, None
    if how == "above":
        k = target.k
        rlo, rhi = _rotated_bounds(llo, lhi, k)
        fx, fy = _front(k)
        cx, cy = (tlo[0] + thi[0]) / 2, (tlo[1] + thi[1]) / 2
        z = thi[2] + 0.2
        if fx == 0:
            tx = cx - (rlo[0] + rhi[0]) / 2
            ty = iy0 + _WALL_GAP_M - rlo[1] if fy > 0 else iy1 - _WALL_GAP_M - rhi[1]
        else:
            ty = cy - (rlo[1] + rhi[1]) / 2
            tx = ix0 + _WALL_GAP_M - rlo[0] if fx > 0 else ix1 - _WALL_GAP_M - rhi[0]
        return k, float(tx), float(ty), float(z), None
    raise ValueError(f"unknown placement {recipe.how!r} for {recipe.cls}")


def _rotated_bounds(llo: np.ndarray, lhi: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    rot = _rot(k)
    corners = np.array([[x, y, 0.0] for x in (llo[0], lhi[0]) for y in (llo[1], lhi[1])]) @ rot.T
    return corners.min(axis=0)[:2], corners.max(axis=0)[:2]


__all__ = [
    "CLASS_IDS",
    "CLASS_NAMES",
    "FUNCTIONAL_CLASSES",
    "KIND_FUNCTIONAL",
    "KIND_OBJECT",
    "KIND_STRUCTURE",
    "OBJECT_CLASSES",
    "PALETTE",
    "ROOM_TYPES",
    "STRUCTURE_CLASSES",
    "Building",
    "BuildingConfig",
    "Door",
    "Floor",
    "Instance",
    "OccupancyGrid",
    "Room",
    "Staircase",
    "box",
    "cylinder",
    "generate_building",
]
