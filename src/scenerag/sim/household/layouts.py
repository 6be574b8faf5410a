"""Procedural AI2Thor-like kitchens: five layout styles, varied by seed, with optional distractor objects.

Contract: ``build_world(LayoutConfig(style, seed, n_distractors))`` returns a fresh ``World`` that is a pure
function of the config. Every layout holds at least one object of every kitchen type in the catalog (the
wall ``Shelf`` is optional), all openables closed and all appliances off, the core items placed so that no
task of ``tasks.TASKS`` is already satisfied, every object within interaction range of the place in front of
its outermost receptacle, and exactly ``n_distractors`` extra distractor objects spread over shelves,
counters, cabinets, drawers, the fridge, the dining table and the floor; the kitchen itself (ids, positions,
places, start pose) does not depend on ``n_distractors``.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from scenerag.sim.household.attributes import ObjectState
from scenerag.sim.household.catalog import CATALOG, DISTRACTOR_TYPES, FLOOR, ObjectTypeSpec
from scenerag.sim.household.errors import LayoutConfigError
from scenerag.sim.household.rules import settle
from scenerag.sim.household.world import AgentState, Place, SimObject, World

Vec3 = tuple[float, float, float]
Rect = tuple[float, float, float, float]  # xmin, ymin, xmax, ymax

LAYOUT_STYLES: tuple[str, ...] = ("single_wall", "galley", "l_shape", "u_shape", "island")
DISTRACTOR_SETTINGS: tuple[int, ...] = (0, 290, 1135)  # the paper's three clutter levels
MAX_DISTRACTORS = 20_000
OPTIONAL_TYPES: tuple[str, ...] = ("Shelf",)  # kitchen types a layout may lack

COUNTER_DEPTH_M = 0.6
APPROACH_GAP_M = 0.45  # a fixture's place stands this far in front of it
CLEARANCE_M = 0.3  # minimal distance from a place to any floor footprint
GRID_SPACING_M = 0.8


@dataclass(frozen=True)
class LayoutConfig:
    """Which kitchen to build: a style from ``LAYOUT_STYLES``, a seed, and how many distractors to add."""

    style: str = "l_shape"
    seed: int = 0
    n_distractors: int = 0

    def check(self) -> None:
        """Raise ``LayoutConfigError`` naming the bad field."""
        if self.style not in LAYOUT_STYLES:
            raise LayoutConfigError(
                f"unknown layout style {self.style!r}", hint=f"use one of {LAYOUT_STYLES}"
            )
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise LayoutConfigError(f"seed must be an integer, got {self.seed!r}")
        if not isinstance(self.n_distractors, int) or not 0 <= self.n_distractors <= MAX_DISTRACTORS:
            raise LayoutConfigError(
                f"n_distractors must be an integer in 0..{MAX_DISTRACTORS}, got {self.n_distractors!r}",
                hint=f"the paper's settings are {DISTRACTOR_SETTINGS}",
            )

    @property
    def name(self) -> str:
        return f"{self.style}-s{self.seed}-d{self.n_distractors}"


@dataclass(frozen=True)
class ItemPlacement:
    """How many of a core item a layout holds, where they may start, and initial state per instance."""

    object_type: str
    count: tuple[int, int]
    start_in: tuple[str, ...]
    states: tuple[dict[str, Any], ...] = ()  # state overrides of the first instances (e.g. one dirty mug)


# Where the task-relevant items start. Chosen so that every task has work left to do in every layout:
# the pan is never already on a burner, the spatula never in a drawer, the plate never on the table, etc.
ITEM_PLACEMENTS: tuple[ItemPlacement, ...] = (
    ItemPlacement("Egg", (1, 2), ("Fridge",)),
    ItemPlacement("Apple", (1, 2), ("CounterTop", "DiningTable")),
    ItemPlacement("Lettuce", (1, 1), ("Fridge", "DiningTable")),
    ItemPlacement("Tomato", (1, 2), ("Fridge", "CounterTop", "DiningTable")),
    ItemPlacement("Potato", (1, 2), ("CounterTop", "DiningTable")),
    ItemPlacement("Bread", (1, 1), ("CounterTop", "DiningTable")),
    ItemPlacement("Mug", (2, 2), ("CounterTop", "Cabinet", "DiningTable"), ({"isDirty": True},)),
    ItemPlacement("Cup", (1, 2), ("CounterTop", "Cabinet", "DiningTable")),
    ItemPlacement("Bowl", (1, 2), ("Cabinet", "CounterTop", "DiningTable")),
    ItemPlacement("Plate", (1, 2), ("Cabinet", "CounterTop")),
    ItemPlacement("Pan", (1, 1), ("Cabinet", "CounterTop")),
    ItemPlacement("Pot", (1, 1), ("StoveBurner", "Cabinet", "CounterTop")),
    ItemPlacement("Kettle", (1, 1), ("StoveBurner", "CounterTop", "Cabinet")),
    ItemPlacement("Knife", (1, 1), ("CounterTop", "Drawer", "DiningTable")),
    ItemPlacement("ButterKnife", (1, 1), ("Drawer", "CounterTop")),
    ItemPlacement("Fork", (1, 2), ("Drawer", "CounterTop", "DiningTable")),
    ItemPlacement("Spoon", (1, 2), ("Drawer", "CounterTop", "DiningTable")),
    ItemPlacement("Spatula", (1, 1), ("CounterTop",)),
    ItemPlacement("Ladle", (1, 1), ("Drawer", "CounterTop")),
    ItemPlacement("DishSponge", (1, 1), ("CounterTop",)),
    ItemPlacement("SaltShaker", (1, 1), ("CounterTop", "DiningTable")),
    ItemPlacement("PepperShaker", (1, 1), ("CounterTop", "Cabinet", "DiningTable")),
    ItemPlacement("SoapBottle", (2, 2), ("CounterTop",), ({"isUsedUp": True},)),
    ItemPlacement("WateringCan", (1, 1), ("CounterTop",)),
    ItemPlacement("HousePlant", (1, 1), ("CounterTop", "DiningTable")),
)
EXTRA_DIRTY_DISH_TYPES: tuple[str, ...] = ("Plate", "Bowl", "Cup", "Pan", "Pot")


@dataclass(frozen=True)
class _Run:
    """A straight run of base units along a wall: ``start`` on the wall, ``direction`` along it, ``normal``
    pointing into the room."""

    start: tuple[float, float]
    direction: tuple[float, float]
    normal: tuple[float, float]
    length: float

    def point(self, along: float, depth: float) -> tuple[float, float]:
        return (
            self.start[0] + self.direction[0] * along + self.normal[0] * depth,
            self.start[1] + self.direction[1] * along + self.normal[1] * depth,
        )

    def extent(self, width: float, depth: float, height: float) -> Vec3:
        return (width, depth, height) if abs(self.direction[0]) > 0.5 else (depth, width, height)

    def heading(self) -> float:
        """Heading of an agent facing the wall from the room."""
        return math.atan2(-self.normal[1], -self.normal[0])


def _rect(center: tuple[float, float], extent: Vec3) -> Rect:
    return (
        center[0] - extent[0] / 2,
        center[1] - extent[1] / 2,
        center[0] + extent[0] / 2,
        center[1] + extent[1] / 2,
    )


def _rect_distance(point: tuple[float, float], rect: Rect) -> float:
    dx = max(rect[0] - point[0], 0.0, point[0] - rect[2])
    dy = max(rect[1] - point[1], 0.0, point[1] - rect[3])
    return math.hypot(dx, dy)


@dataclass
class _KitchenBuilder:
    """Accumulates objects, floor footprints and places while a layout is generated."""

    config: LayoutConfig
    rng: random.Random
    width: float = 0.0
    depth: float = 0.0
    objects: dict[str, SimObject] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)
    footprints: list[Rect] = field(default_factory=list)
    approach_points: list[tuple[float, float]] = field(default_factory=list)
    home: dict[str, int] = field(default_factory=dict)  # top-level object -> index into approach_points
    placements: list[tuple[str, str | None]] = field(default_factory=list)  # (item, receptacle or floor)
    floor_spots: dict[str, tuple[float, float]] = field(default_factory=dict)

    # -- objects -------------------------------------------------------------------------------
    def add(
        self,
        object_type: str,
        position: Vec3 = (0.0, 0.0, 0.0),
        extent: Vec3 | None = None,
        *,
        approach: int | None = None,
        **state: Any,
    ) -> str:
        spec: ObjectTypeSpec = CATALOG[object_type]
        self.counts[object_type] += 1
        object_id = f"{object_type}_{self.counts[object_type]}"
        self.objects[object_id] = SimObject(
            object_id=object_id,
            symbol=f"O{len(self.objects)}",
            spec=spec,
            state=ObjectState(**state),
            offset=position,
            extent=extent if extent is not None else spec.size,
        )
        if approach is not None:
            self.home[object_id] = approach
        return object_id

    def approach(self, point: tuple[float, float]) -> int:
        self.approach_points.append(point)
        return len(self.approach_points) - 1

    def of_type(self, object_type: str) -> list[str]:
        return [oid for oid, o in self.objects.items() if o.spec.name == object_type]

    # -- base-unit modules along a run ----------------------------------------------------------
    def build_run(self, run: _Run, modules: Sequence[tuple[str, float]]) -> None:
        along = 0.0
        for kind, width in modules:
            centre = along + width / 2
            getattr(self, f"_module_{kind}")(run, centre, width)
            along += width

    def _counter(self, run: _Run, centre: float, width: float) -> tuple[str, int]:
        here = self.approach(run.point(centre, COUNTER_DEPTH_M + APPROACH_GAP_M))
        top = self.add(
            "CounterTop",
            (*run.point(centre, 0.3), 0.875),
            run.extent(width, COUNTER_DEPTH_M, 0.05),
            approach=here,
        )
        self.footprints.append(_rect(run.point(centre, 0.3), run.extent(width, COUNTER_DEPTH_M, 0.9)))
        return top, here

    def _module_counter(self, run: _Run, centre: float, width: float) -> None:
        _, here = self._counter(run, centre, width)
        if self.rng.random() < 0.75:
            self.add(
                "Drawer", (*run.point(centre, 0.3), 0.78), run.extent(width * 0.9, 0.5, 0.12), approach=here
            )
        if width >= 0.9 and self.rng.random() < 0.5:
            for side in (-1, 1):
                pos = run.point(centre + side * width / 4, 0.3)
                self.add("Cabinet", (*pos, 0.36), run.extent(width / 2 - 0.02, 0.55, 0.6), approach=here)
        else:
            self.add(
                "Cabinet", (*run.point(centre, 0.3), 0.36), run.extent(width - 0.02, 0.55, 0.6), approach=here
            )
        if self.rng.random() < 0.6:
            self.add("Cabinet", (*run.point(centre, 0.18), 1.7), run.extent(width, 0.35, 0.6), approach=here)

    def _module_sink(self, run: _Run, centre: float, width: float) -> None:
        _, here = self._counter(run, centre, width)
        sink = self.add("Sink", (*run.point(centre, 0.32), 0.8), run.extent(0.6, 0.45, 0.25), approach=here)
        faucet = self.add("Faucet", (*run.point(centre, 0.06), 1.0), run.extent(0.1, 0.2, 0.3), approach=here)
        self.objects[faucet].controls = sink
        self.add(
            "Cabinet", (*run.point(centre, 0.3), 0.36), run.extent(width - 0.02, 0.55, 0.6), approach=here
        )
        self.add("Window", (*run.point(centre, 0.01), 1.55), run.extent(1.0, 0.05, 0.9), approach=here)

    def _module_stove(self, run: _Run, centre: float, width: float) -> None:
        here = self.approach(run.point(centre, COUNTER_DEPTH_M + APPROACH_GAP_M))
        self.footprints.append(_rect(run.point(centre, 0.3), run.extent(width, COUNTER_DEPTH_M, 0.9)))
        burners = []
        for along, depth in ((-0.18, 0.45), (0.18, 0.45), (-0.18, 0.18), (0.18, 0.18)):
            pos = run.point(centre + along, depth)
            burners.append(self.add("StoveBurner", (*pos, 0.92), run.extent(0.25, 0.25, 0.02), approach=here))
        for burner, along in zip(burners, (-0.27, -0.09, 0.09, 0.27), strict=True):
            knob = self.add("StoveKnob", (*run.point(centre + along, 0.61), 0.85), approach=here)
            self.objects[knob].controls = burner

    def _module_fridge(self, run: _Run, centre: float, width: float) -> None:
        here = self.approach(run.point(centre, 0.75 + APPROACH_GAP_M))
        self.add("Fridge", (*run.point(centre, 0.375), 0.9), run.extent(width, 0.75, 1.8), approach=here)
        self.footprints.append(_rect(run.point(centre, 0.375), run.extent(width, 0.75, 1.8)))

    def island(self, centre: tuple[float, float]) -> None:
        """A free-standing counter (1.6 x 0.9 m) with cabinets and drawers on both long sides."""
        cx, cy = centre
        north = self.approach((cx, cy + 0.45 + APPROACH_GAP_M))
        south = self.approach((cx, cy - 0.45 - APPROACH_GAP_M))
        self.add("CounterTop", (cx, cy, 0.875), (1.6, 0.9, 0.05), approach=north)
        self.footprints.append(_rect(centre, (1.6, 0.9, 0.9)))
        for here, dy in ((north, 0.22), (south, -0.22)):
            self.add("Drawer", (cx, cy + dy, 0.78), (1.4, 0.42, 0.12), approach=here)
            self.add("Cabinet", (cx, cy + dy, 0.36), (1.4, 0.42, 0.6), approach=here)

    def dining_table(self, centre: tuple[float, float], *, long_axis_x: bool) -> None:
        extent = (1.6, 0.9, 0.75) if long_axis_x else (0.9, 1.6, 0.75)
        gap = 0.45 + APPROACH_GAP_M
        sides = ((0.0, gap), (0.0, -gap)) if long_axis_x else ((gap, 0.0), (-gap, 0.0))
        places = [self.approach((centre[0] + dx, centre[1] + dy)) for dx, dy in sides]
        self.add("DiningTable", (*centre, 0.375), extent, approach=places[0])
        self.footprints.append(_rect(centre, extent))

    def wall_item(self, object_type: str, wall: str, depth: float, height: float, width: float) -> str | None:
        """Put a wall-mounted or floor-standing fixture on a free stretch of ``wall`` (N, S, W or E), with a
        clear place in front of it; None when the wall has no such stretch left."""
        run = self.wall(wall)
        for _ in range(200):
            along = self.rng.uniform(0.5 + width / 2, run.length - 0.5 - width / 2)
            front = run.point(along, depth + APPROACH_GAP_M)
            extent = run.extent(width, depth, CATALOG[object_type].size[2])
            rect = _rect(run.point(along, depth / 2), extent)
            if min((_rect_distance(front, r) for r in self.footprints), default=9.0) < CLEARANCE_M + 0.05:
                continue
            if any(_overlap(rect, r) for r in self.footprints):
                continue
            if any(math.dist(front, p) < 0.5 for p in self.approach_points):
                continue
            here = self.approach(front)
            if height < 0.7:  # floor-standing: an obstacle for places
                self.footprints.append(rect)
            return self.add(object_type, (*run.point(along, depth / 2), height), extent, approach=here)
        return None

    def wall(self, name: str) -> _Run:
        w, d = self.width, self.depth
        return {
            "S": _Run((0.0, 0.0), (1.0, 0.0), (0.0, 1.0), w),
            "N": _Run((0.0, d), (1.0, 0.0), (0.0, -1.0), w),
            "W": _Run((0.0, 0.0), (0.0, 1.0), (1.0, 0.0), d),
            "E": _Run((w, 0.0), (0.0, 1.0), (-1.0, 0.0), d),
        }[name]


def _overlap(a: Rect, b: Rect) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _modules(
    rng: random.Random, length: float, fixed: list[tuple[str, float]], fridge_end: str | None
) -> list[tuple[str, float]]:
    """Fill a run of ``length`` m with the ``fixed`` modules (shuffled) and counters of 0.7..1.3 m."""
    fridge = [m for m in fixed if m[0] == "fridge"]
    others = [m for m in fixed if m[0] != "fridge"]
    remaining = length - sum(w for _, w in fixed)
    n_counters = max(1, round(remaining / 1.0))
    while n_counters > 1 and remaining / n_counters < 0.7:
        n_counters -= 1
    counter_width = remaining / n_counters
    if not 0.6 <= counter_width <= 1.35:
        raise LayoutConfigError(f"run of {length:.2f} m cannot hold modules {fixed}")
    middle = others + [("counter", counter_width)] * n_counters
    rng.shuffle(middle)
    if fridge_end == "start":
        return fridge + middle
    return middle + fridge


def _layout_geometry(b: _KitchenBuilder) -> tuple[str, ...]:
    """Build the runs, island and dining table of ``b.config.style``; return the free walls."""
    rng, style = b.rng, b.config.style
    fridge, stove, sink = ("fridge", 0.9), ("stove", 0.76), ("sink", 0.9)
    fridge_end = rng.choice(("start", "end"))
    if style == "single_wall":
        b.width, b.depth = rng.uniform(5.6, 7.0), rng.uniform(4.6, 5.4)
        b.build_run(
            _Run((0.1, b.depth), (1.0, 0.0), (0.0, -1.0), b.width - 0.2),
            _modules(rng, b.width - 0.2, [fridge, stove, sink], fridge_end),
        )
        b.dining_table(
            (b.width / 2 + rng.uniform(-0.8, 0.8), rng.uniform(1.35, b.depth - 2.5)), long_axis_x=True
        )
        return ("S", "W", "E")
    if style == "galley":
        b.width, b.depth = rng.uniform(5.8, 6.8), rng.uniform(3.6, 4.0)
        north_len = b.width - 2.6
        south_len = north_len - rng.uniform(0.0, 0.6)
        b.build_run(
            _Run((0.1, b.depth), (1.0, 0.0), (0.0, -1.0), north_len),
            _modules(rng, north_len, [fridge, stove], fridge_end),
        )
        b.build_run(
            _Run((0.1, 0.0), (1.0, 0.0), (0.0, 1.0), south_len), _modules(rng, south_len, [sink], None)
        )
        b.dining_table((b.width - 1.3, b.depth / 2), long_axis_x=False)
        return ("W", "E")
    if style == "l_shape":
        b.width, b.depth = rng.uniform(5.6, 6.8), rng.uniform(5.0, 5.8)
        north_len = b.width - 0.7 - rng.uniform(0.0, 0.8)
        west_start = rng.uniform(0.9, 1.4)
        west_len = b.depth - 0.6 - west_start
        b.build_run(
            _Run((0.6, b.depth), (1.0, 0.0), (0.0, -1.0), north_len),
            _modules(rng, north_len, [stove, sink], None),
        )
        b.build_run(
            _Run((0.0, west_start), (0.0, 1.0), (1.0, 0.0), west_len),
            _modules(rng, west_len, [fridge], "start"),
        )
        b.dining_table(
            (rng.uniform(max(2.6, b.width / 2), b.width - 1.3), rng.uniform(1.3, b.depth - 2.45)),
            long_axis_x=True,
        )
        return ("S", "E")
    if style == "u_shape":
        b.width, b.depth = rng.uniform(6.0, 7.0), rng.uniform(5.4, 6.0)
        north_len = b.width - 1.2
        west_start, east_start = rng.uniform(1.6, 2.2), rng.uniform(1.6, 2.2)
        modules = [fridge, stove, sink]
        rng.shuffle(modules)
        b.build_run(
            _Run((0.6, b.depth), (1.0, 0.0), (0.0, -1.0), north_len),
            _modules(rng, north_len, [modules[0]], "end"),
        )
        b.build_run(
            _Run((0.0, west_start), (0.0, 1.0), (1.0, 0.0), b.depth - 0.6 - west_start),
            _modules(rng, b.depth - 0.6 - west_start, [modules[1]], "start"),
        )
        b.build_run(
            _Run((b.width, east_start), (0.0, 1.0), (-1.0, 0.0), b.depth - 0.6 - east_start),
            _modules(rng, b.depth - 0.6 - east_start, [modules[2]], "start"),
        )
        b.dining_table((b.width / 2 + rng.uniform(-0.3, 0.3), rng.uniform(1.3, 1.5)), long_axis_x=True)
        return ("S",)
    # island
    b.width, b.depth = rng.uniform(6.2, 7.4), rng.uniform(5.6, 6.4)
    b.build_run(
        _Run((0.1, b.depth), (1.0, 0.0), (0.0, -1.0), b.width - 0.2),
        _modules(rng, b.width - 0.2, [fridge, stove, sink], fridge_end),
    )
    b.island((rng.uniform(1.7, b.width - 4.1), b.depth - 2.45))
    b.dining_table((b.width - 1.3, rng.uniform(1.4, b.depth - 2.5)), long_axis_x=False)
    return ("S", "W")


def _place_appliances_and_walls(b: _KitchenBuilder, free_walls: tuple[str, ...]) -> None:
    sink_counters = {b.objects[s].offset[:2] for s in b.of_type("Sink")}
    counters = [
        c
        for c in b.of_type("CounterTop")
        if all(math.dist(b.objects[c].offset[:2], p) > 0.2 for p in sink_counters)
    ]
    chosen = b.rng.sample(counters, 3) if len(counters) >= 3 else [b.rng.choice(counters) for _ in range(3)]
    for appliance, counter in zip(("Microwave", "Toaster", "CoffeeMachine"), chosen, strict=True):
        b.placements.append((b.add(appliance), counter))
    for object_type, depth, height, width, probability in (
        ("GarbageCan", 0.4, 0.3, 0.4, 1.0),
        ("LightSwitch", 0.02, 1.2, 0.1, 1.0),
        ("Shelf", 0.3, 1.4, 1.0, 0.7),
        ("Window", 0.05, 1.55, 1.0, 0.5),
    ):
        required = probability >= 1.0
        if not required and b.rng.random() >= probability:
            continue
        walls = list(free_walls)
        b.rng.shuffle(walls)
        if not any(b.wall_item(object_type, wall, depth, height, width) for wall in walls) and required:
            raise LayoutConfigError(f"{b.config.name}: no free wall stretch for the {object_type}")


def _place_items(b: _KitchenBuilder) -> None:
    """Choose start receptacles for the core items (constraints keep every task unsatisfied at start)."""
    load: Counter[str] = Counter()
    for placement in ITEM_PLACEMENTS:
        count = b.rng.randint(*placement.count)
        for index in range(count):
            state = placement.states[index] if index < len(placement.states) else {}
            item = b.add(placement.object_type, **state)
            allowed = list(placement.start_in)
            if placement.object_type == "Tomato" and any(
                b.objects[i].spec.name == "Lettuce" and r is not None and b.objects[r].spec.name == "Fridge"
                for i, r in b.placements
            ):
                allowed.remove("Fridge")  # lettuce, tomato and egg never all start in the fridge
            candidates = [
                r
                for t in allowed
                for r in b.of_type(t)
                if (cap := CATALOG[t].receptacle.capacity) is None or load[r] < cap  # type: ignore[union-attr]
            ]
            receptacle = b.rng.choice(candidates)
            load[receptacle] += 1
            b.placements.append((item, receptacle))
    dish_type = b.rng.choice(EXTRA_DIRTY_DISH_TYPES)
    first = b.of_type(dish_type)[0]
    b.objects[first].state.isDirty = True


def _place_distractors(b: _KitchenBuilder, grid: list[tuple[float, float]]) -> None:
    types = sorted(DISTRACTOR_TYPES)
    receptacles = {
        t: b.of_type(t) for spec in DISTRACTOR_TYPES.values() for t in spec.placeable_in if t != FLOOR
    }
    for _ in range(b.config.n_distractors):
        spec = DISTRACTOR_TYPES[b.rng.choice(types)]
        item = b.add(spec.name)
        candidates = [r for t in spec.placeable_in if t != FLOOR for r in receptacles[t]]
        if FLOOR in spec.placeable_in and (not candidates or b.rng.random() < 0.5):
            spot = b.rng.choice(grid)
            angle = b.rng.uniform(-math.pi, math.pi)
            b.floor_spots[item] = (spot[0] + 0.3 * math.cos(angle), spot[1] + 0.3 * math.sin(angle))
            b.placements.append((item, None))
        else:
            b.placements.append((item, b.rng.choice(candidates)))


def _grid_places(b: _KitchenBuilder) -> list[tuple[float, float]]:
    points: list[tuple[float, float]] = []
    nx = int((b.width - 1.0) / GRID_SPACING_M) + 1
    ny = int((b.depth - 1.0) / GRID_SPACING_M) + 1
    x0 = (b.width - (nx - 1) * GRID_SPACING_M) / 2
    y0 = (b.depth - (ny - 1) * GRID_SPACING_M) / 2
    for i in range(nx):
        for j in range(ny):
            p = (x0 + i * GRID_SPACING_M, y0 + j * GRID_SPACING_M)
            if min((_rect_distance(p, r) for r in b.footprints), default=9.0) < CLEARANCE_M + 0.1:
                continue
            if any(math.dist(p, a) < 0.5 for a in b.approach_points):
                continue
            points.append(p)
    return points


def build_world(config: LayoutConfig) -> World:
    """Generate the kitchen described by ``config`` (deterministic in the config)."""
    config.check()
    b = _KitchenBuilder(config, random.Random(f"scenerag-household:{config.style}:{config.seed}"))
    free_walls = _layout_geometry(b)
    _place_appliances_and_walls(b, free_walls)
    _place_items(b)
    grid = _grid_places(b)
    places = [Place(i, (x, y, 0.0), "approach") for i, (x, y) in enumerate(b.approach_points)]
    places += [Place(len(places) + i, (x, y, 0.0), "grid") for i, (x, y) in enumerate(grid)]
    start = b.rng.choice([p for p in places if p.kind == "grid"] or places)
    heading = b.rng.uniform(-math.pi, math.pi)
    # Distractors come last so that a kitchen is the same with and without clutter.
    _place_distractors(b, grid or b.approach_points)
    world = World(
        name=config.name,
        room_size=(b.width, b.depth),
        objects=b.objects,
        places=places,
        agent=AgentState(place=start.index, heading=heading),
        home_place=dict(b.home),
    )
    for item, receptacle in b.placements:
        if receptacle is None:
            x, y = b.floor_spots[item]
            world.put(item, None, (x, y, world.objects[item].extent[2] / 2))
            world.home_place[item] = world.nearest_place((x, y, 0.0))
        else:
            world.put(item, receptacle)
    settle(world)  # e.g. what starts in the fridge starts cold
    return world
