"""The 28 per-object attributes of the EmbodiedRAG AI2Thor setting, and the mutable part of an object's state.

Contract: ``ATTRIBUTE_NAMES`` lists the 28 names in a fixed order; ``ObjectState`` holds the attributes that
change during an episode (the capability flags live in the object's type spec, the agent-relative ones
``visible``/``isInteractable``/``distance`` are computed from the agent's pose at observation time).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any


class Temperature(StrEnum):
    """AI2Thor's ``ObjectTemperature`` values."""

    COLD = "Cold"
    ROOM_TEMP = "RoomTemp"
    HOT = "Hot"


class Liquid(StrEnum):
    """Liquids an AI2Thor container can hold (``fillLiquid``)."""

    WATER = "water"
    COFFEE = "coffee"
    WINE = "wine"


ATTRIBUTE_NAMES: tuple[str, ...] = (
    "visible",
    "isInteractable",
    "toggleable",
    "isToggled",
    "breakable",
    "isBroken",
    "canFillWithLiquid",
    "isFilledWithLiquid",
    "fillLiquid",
    "dirtyable",
    "isDirty",
    "canBeUsedUp",
    "isUsedUp",
    "cookable",
    "isCooked",
    "temperature",
    "isHeatSource",
    "isColdSource",
    "sliceable",
    "isSliced",
    "openable",
    "isOpen",
    "openness",
    "pickupable",
    "isPickedUp",
    "moveable",
    "salientMaterials",
    "distance",
)

# Attributes that depend on where the agent stands, not on the object: they change whenever the agent moves.
AGENT_RELATIVE_ATTRIBUTES: frozenset[str] = frozenset({"visible", "isInteractable", "distance"})

# Capability flags: fixed per object type (see ``catalog.ObjectTypeSpec``).
CAPABILITY_ATTRIBUTES: tuple[str, ...] = (
    "toggleable",
    "breakable",
    "canFillWithLiquid",
    "dirtyable",
    "canBeUsedUp",
    "cookable",
    "isHeatSource",
    "isColdSource",
    "sliceable",
    "openable",
    "pickupable",
    "moveable",
    "salientMaterials",
)


@dataclass(slots=True)
class ObjectState:
    """The attributes of one object that actions and appliances change (AI2Thor names, AI2Thor defaults)."""

    isToggled: bool = False
    isBroken: bool = False
    isFilledWithLiquid: bool = False
    fillLiquid: str | None = None
    isDirty: bool = False
    isUsedUp: bool = False
    isCooked: bool = False
    temperature: str = Temperature.ROOM_TEMP.value
    isSliced: bool = False
    isOpen: bool = False
    openness: float = 0.0
    isPickedUp: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def copy(self) -> ObjectState:
        return ObjectState(**self.as_dict())


STATE_ATTRIBUTES: tuple[str, ...] = tuple(f.name for f in fields(ObjectState))

AFFORDANCE_ATTRIBUTES: tuple[str, ...] = ("fitsIn", "canSlice", "runsOnlyClosed")
"""Type-level facts the robot knows from an object's class and the actions' preconditions read, beyond the
28 attributes: the receptacle types it goes in or on, whether a held one slices, whether it switches on only
with its door shut (``ObjectTypeSpec.affordance_facts``). The scene graph carries them on every object node
so a planner can leave out the calls they forbid; prompts do not show them."""
