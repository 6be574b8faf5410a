"""The true world state of a symbolic kitchen: objects, containment, places, the agent, and geometry queries.

Contract: every object has a unique ``object_id`` (``Mug_1``) and graph symbol (``O12``); an object is either
held by the agent, inside/on exactly one receptacle (``parent``), or top-level (fixtures, furniture, floor
items). Positions of contained objects are stored relative to their receptacle, so carrying a pan carries
the egg in it. The world changes only through ``HouseholdEnv`` actions and ``rules.settle``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from scenerag.sim.household.attributes import ATTRIBUTE_NAMES, ObjectState
from scenerag.sim.household.catalog import ObjectTypeSpec

Vec3 = tuple[float, float, float]

AGENT_SENSOR_HEIGHT_M = 1.0  # height of the agent's camera and arm base above the floor
HAND_OFFSET_M = 0.35  # a held object sits this far in front of the agent, at sensor height
_GOLDEN = 0.6180339887498949
_PLASTIC = 0.7548776662466927  # plastic number: second low-discrepancy axis


@dataclass(slots=True)
class SimObject:
    """One object of the world. ``offset`` is absolute for top-level objects, relative to ``parent`` otherwise;
    ``extent`` is the bbox size in world axes; ``controls`` is the object this one switches (knob -> burner)."""

    object_id: str
    symbol: str
    spec: ObjectTypeSpec
    state: ObjectState
    offset: Vec3
    extent: Vec3
    parent: str | None = None
    controls: str | None = None

    @property
    def object_type(self) -> str:
        return self.spec.name


@dataclass(frozen=True, slots=True)
class Place:
    """A navigable standing point. ``kind`` is ``approach`` (in front of a fixture) or ``grid`` (free floor)."""

    index: int
    position: Vec3
    kind: Literal["approach", "grid"]

    @property
    def symbol(self) -> str:
        return f"P{self.index}"


@dataclass(slots=True)
class AgentState:
    """Where the agent stands (a place index), where it looks (radians, x axis = 0) and what it holds."""

    place: int
    heading: float
    held: str | None = None


@dataclass
class World:
    """Objects, places and agent of one kitchen episode, with containment and geometry helpers."""

    name: str
    room_size: tuple[float, float]
    objects: dict[str, SimObject]
    places: list[Place]
    agent: AgentState
    home_place: dict[str, int] = field(default_factory=dict)  # top-level object -> place in front of it
    _children: dict[str, list[str]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.rebuild_index()

    # -- containment ---------------------------------------------------------------------------
    def rebuild_index(self) -> None:
        """Recompute the receptacle -> contents index from the objects' ``parent`` fields."""
        children: dict[str, list[str]] = {}
        for obj in self.objects.values():
            if obj.parent is not None:
                children.setdefault(obj.parent, []).append(obj.object_id)
        self._children = children

    def children(self, object_id: str) -> list[str]:
        """Objects directly on/in ``object_id``, in the order they were put there."""
        return list(self._children.get(object_id, ()))

    def descendants(self, object_id: str) -> list[str]:
        """Everything on/in ``object_id``, transitively (egg in pan on burner: burner -> pan, egg)."""
        out: list[str] = []
        stack = list(reversed(self._children.get(object_id, ())))
        while stack:
            child = stack.pop()
            out.append(child)
            stack.extend(reversed(self._children.get(child, ())))
        return out

    def ancestors(self, object_id: str) -> list[str]:
        """Receptacles holding ``object_id``, innermost first."""
        out: list[str] = []
        parent = self.objects[object_id].parent
        while parent is not None:
            out.append(parent)
            parent = self.objects[parent].parent
        return out

    def root(self, object_id: str) -> str:
        """The outermost receptacle holding ``object_id`` (itself when top-level or held)."""
        chain = self.ancestors(object_id)
        return chain[-1] if chain else object_id

    def closed_enclosure(self, object_id: str) -> str | None:
        """The outermost closed openable receptacle around ``object_id`` (what hides and blocks it), or None."""
        hidden_by = None
        for parent in self.ancestors(object_id):
            holder = self.objects[parent]
            if holder.spec.openable and not holder.state.isOpen:
                hidden_by = parent
        return hidden_by

    def is_held(self, object_id: str) -> bool:
        """True for the held object and everything in it."""
        held = self.agent.held
        return held is not None and (object_id == held or held in self.ancestors(object_id))

    def put(self, object_id: str, receptacle_id: str | None, offset: Vec3 | None = None) -> None:
        """Move ``object_id`` (with its contents) onto/into ``receptacle_id`` (None: make it top-level)."""
        obj = self.objects[object_id]
        if receptacle_id is None and offset is None:
            offset = self.position(object_id)
        if obj.parent is not None:
            self._children[obj.parent].remove(object_id)
        obj.parent = receptacle_id
        if receptacle_id is None:
            assert offset is not None
            obj.offset = offset
            return
        siblings = self._children.setdefault(receptacle_id, [])
        obj.offset = offset if offset is not None else self.slot_offset(receptacle_id, obj, len(siblings))
        siblings.append(object_id)

    def slot_offset(self, receptacle_id: str, obj: SimObject, slot: int) -> Vec3:
        """Deterministic resting offset of the ``slot``-th object in a receptacle (low-discrepancy spread)."""
        holder = self.objects[receptacle_id]
        assert holder.spec.receptacle is not None, receptacle_id
        dx, dy, dz = holder.extent
        u = (0.3 + slot * _GOLDEN) % 1.0 - 0.5
        v = (0.5 + slot * _PLASTIC) % 1.0 - 0.5
        kind = holder.spec.receptacle.kind
        if kind == "surface":
            z = dz / 2 + obj.extent[2] / 2
        elif kind == "container":
            z = -dz / 2 + obj.extent[2] / 2 + 0.02
        else:  # enclosure: shelves at up to three heights
            levels = max(1, min(3, int(dz / 0.4)))
            level = slot % levels
            z = -dz / 2 + 0.05 + obj.extent[2] / 2 + level * (dz - 0.1) / levels
            z = min(z, dz / 2 - obj.extent[2] / 2)
        return (u * 0.6 * dx, v * 0.6 * dy, z)

    # -- geometry ------------------------------------------------------------------------------
    def agent_position(self) -> Vec3:
        """The agent's sensor position (its place, raised to sensor height)."""
        x, y, _ = self.places[self.agent.place].position
        return (x, y, AGENT_SENSOR_HEIGHT_M)

    def hand_position(self) -> Vec3:
        x, y, z = self.agent_position()
        h = self.agent.heading
        return (x + HAND_OFFSET_M * math.cos(h), y + HAND_OFFSET_M * math.sin(h), z)

    def position(self, object_id: str) -> Vec3:
        """Absolute position of an object's centre (held objects ride in the agent's hand)."""
        obj = self.objects[object_id]
        if obj.object_id == self.agent.held:
            return self.hand_position()
        if obj.parent is None:
            return obj.offset
        px, py, pz = self.position(obj.parent)
        ox, oy, oz = obj.offset
        return (px + ox, py + oy, pz + oz)

    def distance(self, object_id: str) -> float:
        """Euclidean distance (m) from the agent's sensor to the object (0 for held objects)."""
        if self.is_held(object_id):
            return 0.0
        return math.dist(self.agent_position(), self.position(object_id))

    def place_of(self, object_id: str) -> int:
        """The place to stand to reach ``object_id``: the home place of its outermost receptacle."""
        root = self.root(object_id)
        if root in self.home_place:
            return self.home_place[root]
        return self.nearest_place(self.position(root))

    def nearest_place(self, point: Vec3) -> int:
        return min(self.places, key=lambda p: math.dist(p.position[:2], point[:2])).index

    def bearing(self, object_id: str) -> float:
        """Heading (radians) from the agent towards ``object_id``."""
        ax, ay, _ = self.agent_position()
        ox, oy, _ = self.position(object_id)
        return math.atan2(oy - ay, ox - ax)

    # -- queries -------------------------------------------------------------------------------
    def of_type(self, *object_types: str) -> Iterator[SimObject]:
        wanted = set(object_types)
        return (o for o in self.objects.values() if o.spec.name in wanted)

    def controller_of(self, object_id: str) -> str | None:
        """The object that switches ``object_id`` (the knob of a burner), if any."""
        for obj in self.objects.values():
            if obj.controls == object_id:
                return obj.object_id
        return None

    def attributes(
        self, object_id: str, *, visible: bool, interactable: bool, distance: float
    ) -> dict[str, Any]:
        """The 28 EmbodiedRAG attributes of an object, in ``ATTRIBUTE_NAMES`` order."""
        obj = self.objects[object_id]
        values: dict[str, Any] = {**obj.spec.capabilities(), **obj.state.as_dict()}
        values.update(visible=visible, isInteractable=interactable, distance=round(distance, 3))
        return {name: values[name] for name in ATTRIBUTE_NAMES}
