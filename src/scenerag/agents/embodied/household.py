"""The symbolic household simulator wired to the EmbodiedRAG planner: its action table as
:class:`~scenerag.agents.embodied.environment.ActionSpec` data (:data:`HOUSEHOLD`, with the 28 object
attributes and the kitchen's rules for the planner's prompt) and a ``HouseholdEnv`` as the planner's ``Environment`` (:class:`HouseholdEpisode`).

The planner itself imports nothing from the simulator; the benchmark runner uses this module.
"""

from __future__ import annotations

from collections.abc import Mapping

from scenerag.agents.embodied.environment import ActionParameter, ActionSpec, EnvironmentSpec
from scenerag.graph.model import SceneGraph
from scenerag.sim.household.actions import ACTIONS, ActionResult
from scenerag.sim.household.attributes import (
    AFFORDANCE_ATTRIBUTES,
    AGENT_RELATIVE_ATTRIBUTES,
    ATTRIBUTE_NAMES,
)
from scenerag.sim.household.env import HouseholdEnv
from scenerag.sim.household.scene_graph import SceneGraphDiff, SceneGraphTracker
from scenerag.sim.household.world import World


def household_actions() -> tuple[ActionSpec, ...]:
    """The simulator's actions (``randomlyexplore``, ``moveto``, ``pickup``, ...) as planner data, in the
    simulator's order, without their handlers: arguments with their kind and affordances, hand rules."""
    return tuple(
        ActionSpec(
            spec.name,
            spec.description,
            tuple(
                ActionParameter(
                    p.name,
                    p.description,
                    p.required,
                    "text" if p.kind == "text" else "object",
                    p.requires,
                    p.choices,
                    p.excludes,
                    p.held_fits,
                )
                for p in spec.parameters
            ),
            "empty" if spec.hand == "empty" else "holding" if spec.hand == "holding" else "any",
            spec.held_requires,
        )
        for spec in ACTIONS.values()
    )


HOUSEHOLD_INSTRUCTIONS = """You are the task planner of a one-arm mobile robot in a kitchen: each turn, think briefly, then choose one action.
Act on discovered objects by id, within reach (moveto first). You hold one object at a time. Open a closed receptacle before taking from or putting into it. A stove burner is switched by its StoveKnob. Unknown objects: search or randomlyexplore."""

HOUSEHOLD = EnvironmentSpec(
    household_actions(),
    ATTRIBUTE_NAMES,
    AGENT_RELATIVE_ATTRIBUTES,
    instructions=HOUSEHOLD_INSTRUCTIONS,
    shown_attributes=("isInteractable",),
    example=(
        "Drawer_2 is closed and out of reach, so I move to it before opening it.",
        "drawer",
        "moveto(Drawer_2)",
    ),
    walkthrough_task="Put a book in a drawer.",
    walkthrough=(
        (
            "No book is known yet, so I search for one.",
            "book",
            "search(Book)",
            "Found Book_1 on Shelf_1.",
        ),
        ("Book_1 can: pickup, and my hand is empty.", "book", "pickup(Book_1)", "Picked up Book_1."),
        (
            "I hold Book_1; Drawer_3 can: moveto.",
            "drawer",
            "moveto(Drawer_3)",
            "Moved next to Drawer_3.",
        ),
        ("Drawer_3 can: open.", "drawer", "open(Drawer_3)", "Opened Drawer_3."),
        (
            "Drawer_3 can: placeon, so I put Book_1 in it.",
            "drawer",
            "placeon(Drawer_3)",
            "Placed Book_1 in Drawer_3.",
        ),
        ("Book_1 is in Drawer_3: the task is complete.", "none", "done()", "The task is complete."),
    ),
    discoveries_marker=" Newly discovered:",
    hidden_attributes=AFFORDANCE_ATTRIBUTES,
    state_capabilities=(
        ("isToggled", "toggleable"),
        ("isBroken", "breakable"),
        ("isFilledWithLiquid", "canFillWithLiquid"),
        ("fillLiquid", "canFillWithLiquid"),
        ("isDirty", "dirtyable"),
        ("isUsedUp", "canBeUsedUp"),
        ("isCooked", "cookable"),
        ("isSliced", "sliceable"),
        ("isOpen", "openable"),
        ("openness", "openable"),
        ("isPickedUp", "pickupable"),
    ),
    reversals=(
        ("close", "open"),
        ("open", "close"),
        ("toggleoff", "toggleon"),
        ("toggleon", "toggleoff"),
        ("placeon", "pickup"),
        ("pickup", "placeon"),
    ),
)
"""What the planner is told about the household simulator: its actions, object attributes and rules; every
object line shows ``isInteractable`` (within reach and not shut in); the walkthrough is an episode of a
task none of the benchmark's tasks asks for (a book in a drawer); the reversals are the simulator's pairs
of opposite actions (open/close, toggleon/toggleoff, pickup/placeon; not pickup after drop: an object set
down by mistake must stay reachable, and the loop refusals stop a pickup/drop cycle); answers list new
discoveries after "Newly discovered:"; each state attribute is paired with the capability flag it needs
(AI2Thor's); the type facts the preconditions read (``AFFORDANCE_ATTRIBUTES``: what a held object fits in,
whether it slices, whether an appliance runs only shut) restrict the menu but are not shown."""


class HouseholdEpisode:
    """A ``HouseholdEnv`` as the planner's ``Environment``: ``observe()`` follows its discovered scene graph
    with a ``SceneGraphTracker`` (agent-relative attributes ignored), so the first call returns everything.
    Use one per episode."""

    def __init__(self, env: HouseholdEnv) -> None:
        self.env = env
        self.tracker = SceneGraphTracker(env)

    @classmethod
    def create(cls, style: str = "l_shape", seed: int = 0, n_distractors: int = 0) -> HouseholdEpisode:
        """A fresh kitchen ``(style, seed, n_distractors)`` (see ``HouseholdEnv``)."""
        return cls(HouseholdEnv(style, seed, n_distractors))

    @property
    def layout(self) -> str:
        return self.env.config.name

    @property
    def n_distractors(self) -> int:
        return self.env.config.n_distractors

    @property
    def world(self) -> World:
        return self.env.world

    def execute(self, action: str, arguments: Mapping[str, str]) -> ActionResult:
        return self.env.execute(action, arguments)

    def observe(self) -> tuple[SceneGraph, SceneGraphDiff]:
        return self.tracker.update()


__all__ = ["HOUSEHOLD", "HOUSEHOLD_INSTRUCTIONS", "HouseholdEpisode", "household_actions"]
