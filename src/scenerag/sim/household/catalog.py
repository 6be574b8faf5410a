"""Catalog of AI2Thor kitchen object types: capability flags, materials, sizes and receptacle behaviour.

Contract: ``CATALOG`` maps an AI2Thor ``objectType`` name to an immutable ``ObjectTypeSpec``. Capability
flags use AI2Thor's metadata names (``canChangeTempToHot`` is exposed as ``isHeatSource`` and
``canChangeTempToCold`` as ``isColdSource``, as in EmbodiedRAG). ``placeable_in`` is AI2Thor's "default
compatible receptacles" list for the type, most typical first; the pseudo receptacle ``Floor`` means the
object may stand on the floor. Task-relevant types and distractor types are disjoint (``is_distractor``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from scenerag.sim.household.attributes import CAPABILITY_ATTRIBUTES

Vec3 = tuple[float, float, float]
ReceptacleKind = Literal["surface", "container", "enclosure"]
ObjectKind = Literal["fixture", "furniture", "appliance", "item"]

FLOOR = "Floor"  # pseudo receptacle: the object stands on the floor with no parent


@dataclass(frozen=True)
class ReceptacleSpec:
    """How a receptacle holds things: ``surface`` (on top), ``container`` (open top), ``enclosure``
    (behind a door, hides its contents when closed). ``capacity`` None = unbounded; ``requires`` are
    state values an object must have to be put in (a toaster only takes sliced bread)."""

    kind: ReceptacleKind
    capacity: int | None = None
    requires: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class ObjectTypeSpec:
    """One AI2Thor object type. Flags not listed default to False; ``size`` is the bbox (dx, dy, dz) in m."""

    name: str
    kind: ObjectKind
    size: Vec3
    salient_materials: tuple[str, ...]
    placeable_in: tuple[str, ...] = ()
    receptacle: ReceptacleSpec | None = None
    toggleable: bool = False
    breakable: bool = False
    canFillWithLiquid: bool = False
    dirtyable: bool = False
    canBeUsedUp: bool = False
    cookable: bool = False
    isHeatSource: bool = False
    isColdSource: bool = False
    sliceable: bool = False
    openable: bool = False
    pickupable: bool = False
    moveable: bool = False
    can_slice: bool = False  # a held object of this type can slice things (knives)
    toggle_requires_closed: bool = False  # e.g. a microwave only runs with its door shut
    controlled_by: str | None = None  # toggled through another object type (a burner through its knob)
    is_distractor: bool = False

    @property
    def is_receptacle(self) -> bool:
        return self.receptacle is not None

    def affordance_facts(self) -> dict[str, Any]:
        """The type's facts an action's preconditions read beyond the 28 attributes (see
        ``AFFORDANCE_ATTRIBUTES``): ``fitsIn``, the object types it goes in or on (the floor not counted),
        ``canSlice`` (a held one slices) and ``runsOnlyClosed`` (it switches on only with its door shut)."""
        return {
            "fitsIn": [t for t in self.placeable_in if t != FLOOR],
            "canSlice": self.can_slice,
            "runsOnlyClosed": self.toggle_requires_closed,
        }

    def capabilities(self) -> dict[str, Any]:
        """The capability attributes (AI2Thor names) with this type's values."""
        out: dict[str, Any] = {
            name: getattr(self, name) for name in CAPABILITY_ATTRIBUTES if name != "salientMaterials"
        }
        out["salientMaterials"] = list(self.salient_materials)
        return out


_SURFACE = ReceptacleSpec("surface")
_CONTAINER = ReceptacleSpec("container")
_ENCLOSURE = ReceptacleSpec("enclosure")

# Receptacle lists shared by several item types (AI2Thor defaults restricted to kitchen receptacles).
_PRODUCE = (
    "Fridge",
    "CounterTop",
    "DiningTable",
    "Bowl",
    "Plate",
    "Pot",
    "Pan",
    "Microwave",
    "Sink",
    "GarbageCan",
)
_CUTLERY = ("Drawer", "CounterTop", "DiningTable", "Sink", "Plate", "Bowl", "Mug", "Cup", "Pot", "Pan")
_COOKING_TOOL = ("Drawer", "CounterTop", "DiningTable", "Sink", "Plate", "Bowl", "Pot", "Pan")
_DISHWARE = ("Cabinet", "CounterTop", "DiningTable", "Sink", "Shelf", "Microwave", "Fridge")
_SHAKER = ("CounterTop", "DiningTable", "Cabinet", "Drawer", "Shelf")


def _specs(*specs: ObjectTypeSpec) -> dict[str, ObjectTypeSpec]:
    return {s.name: s for s in specs}


# The kitchen: fixtures, appliances, furniture and the items the tasks use.
KITCHEN_TYPES: dict[str, ObjectTypeSpec] = _specs(
    # fixtures (part of the building; neither moveable nor pickupable)
    ObjectTypeSpec("CounterTop", "fixture", (1.0, 0.6, 0.05), ("Stone",), receptacle=_SURFACE),
    ObjectTypeSpec("Cabinet", "fixture", (0.5, 0.55, 0.7), ("Wood",), receptacle=_ENCLOSURE, openable=True),
    ObjectTypeSpec("Drawer", "fixture", (0.5, 0.5, 0.15), ("Wood",), receptacle=_ENCLOSURE, openable=True),
    ObjectTypeSpec("Sink", "fixture", (0.7, 0.5, 0.25), ("Metal",), receptacle=_CONTAINER),
    ObjectTypeSpec("Faucet", "fixture", (0.1, 0.2, 0.3), ("Metal",), toggleable=True),
    ObjectTypeSpec(
        "StoveBurner",
        "fixture",
        (0.25, 0.25, 0.02),
        ("Metal",),
        receptacle=ReceptacleSpec("surface", capacity=1),
        isHeatSource=True,
        controlled_by="StoveKnob",
    ),
    ObjectTypeSpec("StoveKnob", "fixture", (0.05, 0.05, 0.05), ("Plastic",), toggleable=True),
    ObjectTypeSpec("Window", "fixture", (1.0, 0.05, 1.0), ("Glass",), breakable=True),
    ObjectTypeSpec("LightSwitch", "fixture", (0.1, 0.02, 0.1), ("Plastic",), toggleable=True),
    ObjectTypeSpec("Shelf", "fixture", (1.0, 0.3, 0.04), ("Wood",), receptacle=_SURFACE),
    # large appliances and furniture (moveable, not pickupable)
    ObjectTypeSpec(
        "Fridge",
        "appliance",
        (0.9, 0.75, 1.8),
        ("Metal",),
        receptacle=_ENCLOSURE,
        openable=True,
        isColdSource=True,
    ),
    ObjectTypeSpec(
        "Microwave",
        "appliance",
        (0.5, 0.35, 0.3),
        ("Metal", "Glass"),
        placeable_in=("CounterTop",),
        receptacle=ReceptacleSpec("enclosure", capacity=4),
        openable=True,
        toggleable=True,
        isHeatSource=True,
        moveable=True,
        toggle_requires_closed=True,
    ),
    ObjectTypeSpec(  # a toaster only takes sliced bread (AI2Thor's BreadSliced)
        "Toaster",
        "appliance",
        (0.3, 0.2, 0.2),
        ("Metal",),
        placeable_in=("CounterTop",),
        receptacle=ReceptacleSpec("container", capacity=2, requires=MappingProxyType({"isSliced": True})),
        toggleable=True,
        isHeatSource=True,
        moveable=True,
    ),
    ObjectTypeSpec(
        "CoffeeMachine",
        "appliance",
        (0.3, 0.3, 0.4),
        ("Metal", "Plastic"),
        placeable_in=("CounterTop",),
        receptacle=ReceptacleSpec("surface", capacity=1),
        toggleable=True,
        isHeatSource=True,
        moveable=True,
    ),
    ObjectTypeSpec(
        "GarbageCan", "furniture", (0.4, 0.4, 0.6), ("Plastic",), receptacle=_CONTAINER, moveable=True
    ),
    ObjectTypeSpec(
        "DiningTable", "furniture", (1.6, 0.9, 0.75), ("Wood",), receptacle=_SURFACE, moveable=True
    ),
    ObjectTypeSpec(
        "HousePlant",
        "furniture",
        (0.3, 0.3, 0.5),
        ("Organic", "Ceramic"),
        placeable_in=("CounterTop", "DiningTable", "Shelf"),
        canFillWithLiquid=True,
        moveable=True,
    ),
    # cookware and dishware (pickupable receptacles)
    ObjectTypeSpec(
        "Pan",
        "item",
        (0.45, 0.28, 0.08),
        ("Metal",),
        placeable_in=("StoveBurner", "Cabinet", "CounterTop", "DiningTable", "Sink"),
        receptacle=ReceptacleSpec("container", capacity=3),
        dirtyable=True,
        pickupable=True,
    ),
    ObjectTypeSpec(
        "Pot",
        "item",
        (0.3, 0.3, 0.18),
        ("Metal",),
        placeable_in=("StoveBurner", "Cabinet", "CounterTop", "DiningTable", "Sink", "Fridge", "Shelf"),
        receptacle=ReceptacleSpec("container", capacity=4),
        dirtyable=True,
        canFillWithLiquid=True,
        pickupable=True,
    ),
    ObjectTypeSpec(
        "Kettle",
        "item",
        (0.22, 0.18, 0.25),
        ("Metal",),
        placeable_in=("StoveBurner", "CounterTop", "Cabinet", "DiningTable", "Sink", "Shelf"),
        canFillWithLiquid=True,
        pickupable=True,
    ),
    ObjectTypeSpec(
        "Mug",
        "item",
        (0.12, 0.09, 0.1),
        ("Ceramic",),
        placeable_in=(*_DISHWARE, "CoffeeMachine"),
        receptacle=ReceptacleSpec("container", capacity=2),
        breakable=True,
        canFillWithLiquid=True,
        dirtyable=True,
        pickupable=True,
    ),
    ObjectTypeSpec(
        "Cup",
        "item",
        (0.08, 0.08, 0.12),
        ("Glass",),
        placeable_in=_DISHWARE,
        receptacle=ReceptacleSpec("container", capacity=2),
        breakable=True,
        canFillWithLiquid=True,
        dirtyable=True,
        pickupable=True,
    ),
    ObjectTypeSpec(
        "Bowl",
        "item",
        (0.18, 0.18, 0.08),
        ("Ceramic",),
        placeable_in=_DISHWARE,
        receptacle=ReceptacleSpec("container", capacity=4),
        breakable=True,
        canFillWithLiquid=True,
        dirtyable=True,
        pickupable=True,
    ),
    ObjectTypeSpec(
        "Plate",
        "item",
        (0.26, 0.26, 0.03),
        ("Ceramic",),
        placeable_in=_DISHWARE,
        receptacle=ReceptacleSpec("surface", capacity=4),
        breakable=True,
        dirtyable=True,
        pickupable=True,
    ),
    # utensils
    ObjectTypeSpec(
        "Knife", "item", (0.3, 0.03, 0.02), ("Metal",), placeable_in=_CUTLERY, pickupable=True, can_slice=True
    ),
    ObjectTypeSpec(
        "ButterKnife",
        "item",
        (0.2, 0.02, 0.01),
        ("Metal",),
        placeable_in=_CUTLERY,
        pickupable=True,
        can_slice=True,
    ),
    ObjectTypeSpec("Fork", "item", (0.19, 0.025, 0.015), ("Metal",), placeable_in=_CUTLERY, pickupable=True),
    ObjectTypeSpec("Spoon", "item", (0.18, 0.04, 0.015), ("Metal",), placeable_in=_CUTLERY, pickupable=True),
    ObjectTypeSpec(
        "Spatula", "item", (0.32, 0.07, 0.02), ("Plastic",), placeable_in=_COOKING_TOOL, pickupable=True
    ),
    ObjectTypeSpec(
        "Ladle", "item", (0.32, 0.09, 0.06), ("Metal",), placeable_in=_COOKING_TOOL, pickupable=True
    ),
    # food
    ObjectTypeSpec(
        "Egg",
        "item",
        (0.05, 0.05, 0.06),
        ("Food",),
        placeable_in=_PRODUCE,
        breakable=True,
        cookable=True,
        pickupable=True,
    ),
    ObjectTypeSpec(
        "Apple", "item", (0.08, 0.08, 0.09), ("Food",), placeable_in=_PRODUCE, sliceable=True, pickupable=True
    ),
    ObjectTypeSpec(
        "Tomato",
        "item",
        (0.08, 0.08, 0.07),
        ("Food",),
        placeable_in=_PRODUCE,
        sliceable=True,
        pickupable=True,
    ),
    ObjectTypeSpec(
        "Potato",
        "item",
        (0.1, 0.07, 0.06),
        ("Food",),
        placeable_in=_PRODUCE,
        cookable=True,
        sliceable=True,
        pickupable=True,
    ),
    ObjectTypeSpec(
        "Lettuce",
        "item",
        (0.18, 0.18, 0.16),
        ("Food",),
        placeable_in=_PRODUCE,
        sliceable=True,
        pickupable=True,
    ),
    ObjectTypeSpec(
        "Bread",
        "item",
        (0.3, 0.12, 0.12),
        ("Food",),
        placeable_in=(
            "CounterTop",
            "DiningTable",
            "Plate",
            "Cabinet",
            "Fridge",
            "Toaster",
            "Microwave",
            "GarbageCan",
        ),
        cookable=True,
        sliceable=True,
        pickupable=True,
    ),
    # cleaning, seasoning, plants
    ObjectTypeSpec(
        "SoapBottle",
        "item",
        (0.08, 0.08, 0.2),
        ("Plastic",),
        placeable_in=("CounterTop", "Sink", "Cabinet", "DiningTable", "Shelf", "GarbageCan"),
        canBeUsedUp=True,
        pickupable=True,
    ),
    ObjectTypeSpec(
        "DishSponge",
        "item",
        (0.1, 0.06, 0.03),
        ("Sponge",),
        placeable_in=(
            "CounterTop",
            "Sink",
            "Cabinet",
            "Drawer",
            "DiningTable",
            "Plate",
            "Bowl",
            "GarbageCan",
        ),
        pickupable=True,
    ),
    ObjectTypeSpec(
        "SaltShaker", "item", (0.04, 0.04, 0.1), ("Glass", "Metal"), placeable_in=_SHAKER, pickupable=True
    ),
    ObjectTypeSpec(
        "PepperShaker", "item", (0.04, 0.04, 0.1), ("Glass", "Metal"), placeable_in=_SHAKER, pickupable=True
    ),
    ObjectTypeSpec(
        "WateringCan",
        "item",
        (0.35, 0.15, 0.25),
        ("Plastic",),
        placeable_in=("CounterTop", "Shelf", "DiningTable", "Sink", FLOOR),
        canFillWithLiquid=True,
        pickupable=True,
    ),
)

_SMALL = ("CounterTop", "DiningTable", "Shelf", "Cabinet", "Drawer")
_BOOKISH = ("Shelf", "DiningTable", "CounterTop", "Cabinet", "Drawer")
_BOTTLE = ("Fridge", "CounterTop", "Cabinet", "Shelf", "DiningTable")
_FLOOR_ONLY = (FLOOR,)


def _distractor(
    name: str, size: Vec3, materials: tuple[str, ...], where: tuple[str, ...], **flags: Any
) -> ObjectTypeSpec:
    flags.setdefault("pickupable", True)
    return ObjectTypeSpec(name, "item", size, materials, placeable_in=where, is_distractor=True, **flags)


# Distractors: plausible household items (AI2Thor types) that no task refers to, so adding hundreds of them
# enlarges the scene graph without changing what any task asks for.
DISTRACTOR_TYPES: dict[str, ObjectTypeSpec] = _specs(
    _distractor("Bottle", (0.08, 0.08, 0.28), ("Glass",), _BOTTLE, breakable=True, canFillWithLiquid=True),
    _distractor(
        "WineBottle", (0.08, 0.08, 0.32), ("Glass",), _BOTTLE, breakable=True, canFillWithLiquid=True
    ),
    _distractor(
        "Vase",
        (0.15, 0.15, 0.3),
        ("Ceramic",),
        ("Shelf", "DiningTable", "CounterTop", "Cabinet"),
        breakable=True,
        canFillWithLiquid=True,
    ),
    _distractor(
        "Statue", (0.12, 0.12, 0.25), ("Ceramic",), ("Shelf", "DiningTable", "CounterTop"), breakable=True
    ),
    _distractor("Book", (0.2, 0.15, 0.04), ("Paper",), _BOOKISH, openable=True),
    _distractor("Newspaper", (0.3, 0.25, 0.02), ("Paper",), _BOOKISH),
    _distractor("KeyChain", (0.06, 0.03, 0.02), ("Metal",), _SMALL),
    _distractor(
        "CellPhone", (0.15, 0.07, 0.01), ("Plastic", "Glass"), _SMALL, breakable=True, toggleable=True
    ),
    _distractor("CreditCard", (0.085, 0.055, 0.002), ("Plastic",), _SMALL),
    _distractor("Pen", (0.14, 0.01, 0.01), ("Plastic",), _SMALL),
    _distractor("Pencil", (0.18, 0.008, 0.008), ("Wood",), _SMALL),
    _distractor(
        "Candle",
        (0.07, 0.07, 0.12),
        ("Wax",),
        ("CounterTop", "DiningTable", "Shelf", "Cabinet"),
        toggleable=True,
    ),
    _distractor(
        "Box",
        (0.4, 0.3, 0.3),
        ("Paper",),
        ("Shelf", "DiningTable", "CounterTop", "Cabinet", FLOOR),
        openable=True,
    ),
    _distractor("Watch", (0.05, 0.04, 0.01), ("Metal",), _SMALL, breakable=True),
    _distractor("RemoteControl", (0.18, 0.05, 0.02), ("Plastic",), _SMALL),
    _distractor("TissueBox", (0.24, 0.12, 0.1), ("Paper",), _SMALL, canBeUsedUp=True),
    _distractor(
        "PaperTowelRoll",
        (0.12, 0.12, 0.28),
        ("Paper",),
        ("CounterTop", "DiningTable", "Cabinet", "Shelf"),
        canBeUsedUp=True,
    ),
    _distractor("AluminumFoil", (0.3, 0.05, 0.05), ("Metal",), ("Drawer", "Cabinet", "CounterTop")),
    _distractor("Cloth", (0.3, 0.3, 0.01), ("Fabric",), ("Drawer", "Cabinet", "CounterTop"), dirtyable=True),
    _distractor("HandTowel", (0.3, 0.05, 0.4), ("Fabric",), ("Drawer", "Cabinet", "CounterTop")),
    _distractor(
        "SprayBottle", (0.1, 0.06, 0.25), ("Plastic",), ("Cabinet", "CounterTop", "Shelf"), canBeUsedUp=True
    ),
    _distractor("ScrubBrush", (0.2, 0.06, 0.05), ("Plastic",), ("Cabinet", "CounterTop", "Drawer")),
    _distractor("SoapBar", (0.09, 0.06, 0.03), ("Soap",), ("Cabinet", "CounterTop", "Drawer")),
    _distractor("ToiletPaper", (0.11, 0.11, 0.1), ("Paper",), ("Cabinet", "Shelf"), canBeUsedUp=True),
    _distractor(
        "Laptop",
        (0.35, 0.25, 0.02),
        ("Plastic", "Metal"),
        ("DiningTable", "CounterTop", "Shelf"),
        breakable=True,
        openable=True,
        toggleable=True,
    ),
    _distractor("AlarmClock", (0.12, 0.06, 0.1), ("Plastic",), ("Shelf", "CounterTop", "DiningTable")),
    _distractor("TeddyBear", (0.25, 0.2, 0.3), ("Fabric",), ("Shelf", FLOOR)),
    _distractor("Pillow", (0.4, 0.4, 0.12), ("Fabric",), (FLOOR,)),
    _distractor("TennisRacket", (0.68, 0.27, 0.03), ("Plastic",), _FLOOR_ONLY),
    _distractor("BaseballBat", (0.85, 0.07, 0.07), ("Wood",), _FLOOR_ONLY),
    _distractor("BasketBall", (0.24, 0.24, 0.24), ("Rubber",), _FLOOR_ONLY),
    _distractor("Dumbbell", (0.3, 0.1, 0.1), ("Metal",), _FLOOR_ONLY),
    _distractor("GarbageBag", (0.4, 0.4, 0.6), ("Plastic",), _FLOOR_ONLY),
    _distractor("Boots", (0.3, 0.12, 0.3), ("Leather",), _FLOOR_ONLY),
    _distractor("TableTopDecor", (0.15, 0.15, 0.2), ("Ceramic",), ("DiningTable", "Shelf", "CounterTop")),
    _distractor("Footstool", (0.4, 0.4, 0.4), ("Wood",), _FLOOR_ONLY, pickupable=False, moveable=True),
)

CATALOG: Mapping[str, ObjectTypeSpec] = MappingProxyType({**KITCHEN_TYPES, **DISTRACTOR_TYPES})
