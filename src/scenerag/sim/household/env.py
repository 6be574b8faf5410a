"""``HouseholdEnv``: a partially observable symbolic kitchen driven by named actions (EmbodiedRAG setting).

Contract: the agent knows only the objects it has seen (``discovered``); what it knows of each is the state
observed the last time it was visible. An object is visible when it is within ``visibility_distance_m`` of
the agent's sensor, inside the camera's field of view (or the agent looked around), and not inside a closed
receptacle. ``execute(name, arguments)`` runs one action, applies the appliance rules, observes, and returns
an ``ActionResult``; a rejected action leaves the world unchanged and says why.
"""

from __future__ import annotations

import difflib
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scenerag.sim.household.attributes import ATTRIBUTE_NAMES, ObjectState
from scenerag.sim.household.errors import HouseholdError
from scenerag.sim.household.layouts import LayoutConfig, build_world
from scenerag.sim.household.rules import StateChange, settle
from scenerag.sim.household.world import Vec3, World

if TYPE_CHECKING:
    from scenerag.graph.model import SceneGraph
    from scenerag.sim.household.actions import ActionResult

NEAR_M = 0.3  # objects this close (2D) to the agent are seen whatever its heading


@dataclass(slots=True)
class ObservedObject:
    """What the agent last saw of an object: its state, receptacle and position at ``last_seen_step``."""

    object_id: str
    symbol: str
    object_type: str
    state: ObjectState
    parent: str | None
    held: bool
    position: Vec3
    last_seen_step: int


class HouseholdEnv:
    """One episode in one kitchen. Build with a layout style, seed and distractor count (see ``layouts``).
    Layouts keep every object within 1.5 m of a place, so every object is reachable at the default
    ``interaction_distance_m`` (AI2Thor's default visibility/interaction distance)."""

    def __init__(
        self,
        style: str = "l_shape",
        seed: int = 0,
        n_distractors: int = 0,
        *,
        visibility_distance_m: float = 2.5,
        interaction_distance_m: float = 1.5,
        field_of_view_deg: float = 120.0,
    ) -> None:
        if not 0 < interaction_distance_m <= visibility_distance_m:
            raise HouseholdError(
                f"need 0 < interaction_distance_m <= visibility_distance_m, got {interaction_distance_m} and "
                f"{visibility_distance_m}",
                hint="the defaults are 1.5 m and 2.5 m",
            )
        if not 0 < field_of_view_deg <= 360:
            raise HouseholdError(f"field_of_view_deg must be in (0, 360], got {field_of_view_deg}")
        self.config = LayoutConfig(style, seed, n_distractors)
        self.world: World = build_world(self.config)
        self.visibility_distance_m = visibility_distance_m
        self.interaction_distance_m = interaction_distance_m
        self.field_of_view_rad = math.radians(field_of_view_deg)
        self.rng = random.Random(f"scenerag-household-explore:{style}:{seed}")
        self.step_count = 0
        self.discovered: dict[str, ObservedObject] = {}
        self.known_places: set[int] = set()
        self.visited_places: set[int] = {self.world.agent.place}
        self.visible: set[str] = set()
        self.focus: str | None = None  # the object the agent last moved to or acted on
        self.history: list[tuple[str, dict[str, Any], bool]] = []
        settle(self.world)
        self.observe(scan=False)

    @classmethod
    def from_config(cls, config: LayoutConfig, **sensing: float) -> HouseholdEnv:
        """Build from a ``LayoutConfig``; ``sensing`` are the keyword-only distance/field-of-view options."""
        return cls(config.style, config.seed, config.n_distractors, **sensing)

    # -- perception ----------------------------------------------------------------------------
    def visible_now(self, *, scan: bool) -> set[str]:
        """Objects the agent sees from where it stands (``scan``: looking all around, else its camera cone)."""
        world = self.world
        sensor = world.agent_position()
        ax, ay, _ = sensor
        heading = world.agent.heading
        seen: set[str] = set()
        for object_id in world.objects:
            if world.is_held(object_id):
                seen.add(object_id)
                continue
            if world.closed_enclosure(object_id) is not None:
                continue
            position = world.position(object_id)
            if math.dist(sensor, position) > self.visibility_distance_m:
                continue
            dx, dy = position[0] - ax, position[1] - ay
            if not scan and math.hypot(dx, dy) > NEAR_M:
                off_axis = abs((math.atan2(dy, dx) - heading + math.pi) % (2 * math.pi) - math.pi)
                if off_axis > self.field_of_view_rad / 2:
                    continue
            seen.add(object_id)
        # Seeing an object means seeing what it rests on (the part of the counter under the mug).
        for object_id in list(seen):
            seen.update(world.ancestors(object_id))
        return seen

    def observe(self, *, scan: bool) -> list[str]:
        """Refresh what the agent sees and knows; return the ids discovered by this observation."""
        world = self.world
        self.visible = self.visible_now(scan=scan)
        new: list[str] = []
        for object_id in world.objects:  # catalog order keeps discovery order deterministic
            if object_id not in self.visible:
                continue
            obj = world.objects[object_id]
            if object_id not in self.discovered:
                new.append(object_id)
            self.discovered[object_id] = ObservedObject(
                object_id=object_id,
                symbol=obj.symbol,
                object_type=obj.object_type,
                state=obj.state.copy(),
                parent=obj.parent,
                held=object_id == world.agent.held,
                position=world.position(object_id),
                last_seen_step=self.step_count,
            )
        ax, ay, _ = world.agent_position()
        for place in world.places:
            if math.hypot(place.position[0] - ax, place.position[1] - ay) <= self.visibility_distance_m:
                self.known_places.add(place.index)
        self.known_places.add(world.agent.place)
        for object_id in new:
            if world.objects[object_id].parent is None and object_id != world.agent.held:
                self.known_places.add(world.place_of(object_id))
        return new

    # -- queries used by actions and exporters ------------------------------------------------------
    @property
    def held(self) -> str | None:
        return self.world.agent.held

    def is_discovered(self, object_id: str) -> bool:
        return object_id in self.discovered

    def is_interactable(self, object_id: str) -> bool:
        """Within arm's reach and not shut inside a closed receptacle (held objects always are)."""
        world = self.world
        if world.is_held(object_id):
            return True
        if world.closed_enclosure(object_id) is not None:
            return False
        return world.distance(object_id) <= self.interaction_distance_m

    def resolve(self, reference: str) -> str | None:
        """The discovered object a planner means by ``reference``: an object id (any case) or a node symbol."""
        if reference in self.discovered:
            return reference
        lowered = reference.strip().lower()
        for object_id, seen in self.discovered.items():
            if object_id.lower() == lowered or seen.symbol.lower() == lowered:
                return object_id
        return None

    def suggest(self, reference: str) -> list[str]:
        """Discovered ids that look like ``reference`` (for 'did you mean' messages)."""
        return difflib.get_close_matches(reference, list(self.discovered), n=3, cutoff=0.6)

    def observed_attributes(self, object_id: str) -> dict[str, Any]:
        """The 28 attributes of a discovered object as the agent knows them (agent-relative ones are current)."""
        seen = self.discovered[object_id]
        obj = self.world.objects[object_id]
        values = {**obj.spec.capabilities(), **seen.state.as_dict()}
        values["visible"] = object_id in self.visible
        values["isInteractable"] = self.is_interactable(object_id)
        values["distance"] = round(
            0.0 if seen.held else math.dist(self.world.agent_position(), seen.position), 3
        )
        return {name: values[name] for name in ATTRIBUTE_NAMES}

    # -- the action interface ---------------------------------------------------------------------------
    def execute(self, action_name: str, arguments: Mapping[str, Any] | None = None) -> ActionResult:
        """Run one named action (see ``tool_specs()``); never raises for planner mistakes."""
        from scenerag.sim.household.actions import execute

        result = execute(self, action_name, arguments)
        self.history.append(
            (str(result.observation["action"]), dict(result.observation["arguments"]), result.success)
        )
        return result

    def act(self, action_name: str, **arguments: Any) -> ActionResult:
        """Shorthand: ``env.act("pickup", object_id="Mug_1")``."""
        return self.execute(action_name, arguments)

    def after_action(self, *, scan: bool) -> tuple[list[StateChange], list[str]]:
        """Advance one step: apply appliance rules, then observe. Returns (rule effects, new discoveries)."""
        self.step_count += 1
        changes = settle(self.world)
        new = self.observe(scan=scan)
        return changes, new

    def tool_specs(self) -> list[dict[str, Any]]:
        from scenerag.sim.household.actions import tool_specs

        return tool_specs()

    def scene_graph(self) -> SceneGraph:
        """The agent's discovered world as a ``SceneGraph`` (see ``scene_graph.export_scene_graph``)."""
        from scenerag.sim.household.scene_graph import export_scene_graph

        return export_scene_graph(self)
