"""The 40 kitchen tasks (20 easy, 20 hard) of the EmbodiedRAG AI2Thor evaluation, with automatic checks.

Contract: each ``Task`` has an id (``easy_01`` .. ``hard_20``), a difficulty, a natural-language
instruction, the object types a planner needs to know about (``required_types``, for retrieval recall) and
declarative ``requirements`` on the *true* world state; ``task.check(world)`` is True when all hold.
A requirement selects objects by type (and an optional ``where`` filter), asks for ``state`` values and,
optionally, that the object sit (transitively) in a receptacle of one of the ``inside`` types whose own
state matches ``receptacle_state``; ``same_receptacle`` groups must share one receptacle. ``all`` needs every
selected object (at least one) to comply, ``any`` one of them.

The paper's appendix task list (B.1) was not available; these tasks follow the examples it gives
("Cook an egg", "Water the plant", "Place all kitchen utensils that are not knives away in drawers", ...)
and AI2Thor's kitchen interactions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from scenerag.sim.household.errors import UnknownTaskError
from scenerag.sim.household.rules import attribute_value
from scenerag.sim.household.world import SimObject, World

Difficulty = Literal["easy", "hard"]


def _frozen(values: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(values or {}))


@dataclass(frozen=True)
class Requirement:
    """A condition on objects of ``types`` (see the module docstring for the semantics)."""

    types: tuple[str, ...]
    state: Mapping[str, Any] = field(default_factory=lambda: _frozen(None))
    inside: tuple[str, ...] = ()
    receptacle_state: Mapping[str, Any] = field(default_factory=lambda: _frozen(None))
    quantifier: Literal["any", "all"] = "any"
    where: Mapping[str, Any] = field(default_factory=lambda: _frozen(None))
    same_receptacle: str | None = None

    def selects(self, obj: SimObject) -> bool:
        return obj.object_type in self.types and _matches(obj, self.where)

    def holders(self, world: World, obj: SimObject) -> list[str]:
        """Receptacles around ``obj`` that satisfy ``inside``/``receptacle_state`` (all ancestors if no
        ``inside`` constraint)."""
        return [
            r
            for r in world.ancestors(obj.object_id)
            if (not self.inside or world.objects[r].object_type in self.inside)
            and _matches(world.objects[r], self.receptacle_state)
        ]

    def complies(self, world: World, obj: SimObject) -> bool:
        if not _matches(obj, self.state):
            return False
        return not self.inside or bool(self.holders(world, obj))

    def satisfied(self, world: World) -> bool:
        selected = [o for o in world.objects.values() if self.selects(o)]
        complying = [o for o in selected if self.complies(world, o)]
        if self.quantifier == "all":
            return bool(selected) and len(complying) == len(selected)
        return bool(complying)


def _matches(obj: SimObject, wanted: Mapping[str, Any]) -> bool:
    return all(attribute_value(obj, k) == v for k, v in wanted.items())


@dataclass(frozen=True)
class Task:
    """One household task; ``check(world)`` evaluates it on the true world state."""

    task_id: str
    difficulty: Difficulty
    instruction: str
    required_types: tuple[str, ...]
    requirements: tuple[Requirement, ...]

    def check(self, world: World) -> bool:
        if not all(r.satisfied(world) for r in self.requirements):
            return False
        groups: dict[str, list[Requirement]] = {}
        for requirement in self.requirements:
            if requirement.same_receptacle is not None:
                groups.setdefault(requirement.same_receptacle, []).append(requirement)
        return all(_share_receptacle(world, members) for members in groups.values())

    def unmet(self, world: World) -> list[Requirement]:
        """The requirements that do not hold yet (a progress signal; groups are not checked here)."""
        return [r for r in self.requirements if not r.satisfied(world)]


def _share_receptacle(world: World, members: list[Requirement]) -> bool:
    """True when one receptacle holds a complying object of every requirement in ``members``."""
    common: set[str] | None = None
    for requirement in members:
        holders = {
            h
            for o in world.objects.values()
            if requirement.selects(o) and requirement.complies(world, o)
            for h in requirement.holders(world, o)
        }
        common = holders if common is None else common & holders
    return bool(common)


def _req(*types: str, **kwargs: Any) -> Requirement:
    for key in ("state", "receptacle_state", "where"):
        if key in kwargs:
            kwargs[key] = _frozen(kwargs[key])
    if isinstance(kwargs.get("inside"), str):
        kwargs["inside"] = (kwargs["inside"],)
    return Requirement(types=types, **kwargs)


_WATER = {"isFilledWithLiquid": True, "fillLiquid": "water"}
_COFFEE = {"isFilledWithLiquid": True, "fillLiquid": "coffee"}
UTENSILS_NOT_KNIVES: tuple[str, ...] = ("Fork", "Spoon", "Spatula", "Ladle")
DISH_TYPES: tuple[str, ...] = ("Plate", "Bowl", "Mug", "Cup", "Pan", "Pot")


def _task(task_id: str, instruction: str, required: tuple[str, ...], *requirements: Requirement) -> Task:
    difficulty: Difficulty = "easy" if task_id.startswith("easy") else "hard"
    return Task(task_id, difficulty, instruction, required, requirements)


TASKS: tuple[Task, ...] = (
    # -- easy: one state change or one pick-and-place ----------------------------------------------------
    _task("easy_01", "Turn on the light.", ("LightSwitch",), _req("LightSwitch", state={"isToggled": True})),
    _task("easy_02", "Open the fridge.", ("Fridge",), _req("Fridge", state={"isOpen": True})),
    _task("easy_03", "Turn on the faucet.", ("Faucet",), _req("Faucet", state={"isToggled": True})),
    _task("easy_04", "Pick up an apple.", ("Apple",), _req("Apple", state={"isPickedUp": True})),
    _task("easy_05", "Put an apple in the fridge.", ("Apple", "Fridge"), _req("Apple", inside="Fridge")),
    _task("easy_06", "Slice a tomato.", ("Tomato", "Knife"), _req("Tomato", state={"isSliced": True})),
    _task("easy_07", "Put a mug in the sink.", ("Mug", "Sink"), _req("Mug", inside="Sink")),
    _task(
        "easy_08",
        "Turn on the coffee machine.",
        ("CoffeeMachine",),
        _req("CoffeeMachine", state={"isToggled": True}),
    ),
    _task("easy_09", "Put the bread on a plate.", ("Bread", "Plate"), _req("Bread", inside="Plate")),
    _task("easy_10", "Open a drawer.", ("Drawer",), _req("Drawer", state={"isOpen": True})),
    _task("easy_11", "Put the spatula in a drawer.", ("Spatula", "Drawer"), _req("Spatula", inside="Drawer")),
    _task(
        "easy_12",
        "Throw a potato in the garbage can.",
        ("Potato", "GarbageCan"),
        _req("Potato", inside="GarbageCan"),
    ),
    _task(
        "easy_13", "Put the pan on a stove burner.", ("Pan", "StoveBurner"), _req("Pan", inside="StoveBurner")
    ),
    _task(
        "easy_14",
        "Put the lettuce on the counter.",
        ("Lettuce", "CounterTop"),
        _req("Lettuce", inside="CounterTop"),
    ),
    _task("easy_15", "Fill a cup with water.", ("Cup", "Faucet", "Sink"), _req("Cup", state=_WATER)),
    _task("easy_16", "Put an egg in a bowl.", ("Egg", "Bowl"), _req("Egg", inside="Bowl")),
    _task("easy_17", "Open the microwave.", ("Microwave",), _req("Microwave", state={"isOpen": True})),
    _task(
        "easy_18",
        "Put the dish sponge in the sink.",
        ("DishSponge", "Sink"),
        _req("DishSponge", inside="Sink"),
    ),
    _task(
        "easy_19",
        "Put the salt shaker in a cabinet.",
        ("SaltShaker", "Cabinet"),
        _req("SaltShaker", inside="Cabinet"),
    ),
    _task(
        "easy_20",
        "Turn on a stove burner.",
        ("StoveBurner", "StoveKnob"),
        _req("StoveBurner", state={"isToggled": True}),
    ),
    # -- hard: several objects, tools, appliances or hidden objects -----------------------------------
    _task(
        "hard_01",
        "Cook an egg.",
        ("Egg", "Pan", "StoveBurner", "StoveKnob", "Fridge"),
        _req("Egg", state={"isCooked": True}),
    ),
    _task(
        "hard_02",
        "Water the plant.",
        ("HousePlant", "WateringCan", "Faucet", "Sink"),
        _req("HousePlant", state=_WATER),
    ),
    _task("hard_03", "Make coffee.", ("Mug", "CoffeeMachine"), _req("Mug", state=_COFFEE)),
    _task(
        "hard_04",
        "Toast a slice of bread.",
        ("Bread", "Knife", "Toaster"),
        _req("Bread", state={"isSliced": True, "isCooked": True}),
    ),
    _task(
        "hard_05",
        "Clean the dirty mug.",
        ("Mug", "Sink", "Faucet"),
        _req("Mug", state={"isDirty": False}, quantifier="all"),
    ),
    _task(
        "hard_06",
        "Place all kitchen utensils that are not knives away in drawers.",
        (*UTENSILS_NOT_KNIVES, "Drawer"),
        _req(*UTENSILS_NOT_KNIVES, inside="Drawer", quantifier="all"),
    ),
    _task(
        "hard_07",
        "Chill an apple in the fridge, then serve it on a plate.",
        ("Apple", "Fridge", "Plate"),
        _req("Apple", state={"temperature": "Cold"}, inside="Plate"),
    ),
    _task(
        "hard_08",
        "Boil water in the kettle.",
        ("Kettle", "Faucet", "Sink", "StoveBurner", "StoveKnob"),
        _req("Kettle", state={**_WATER, "temperature": "Hot"}),
    ),
    _task(
        "hard_09",
        "Cook a potato in the microwave.",
        ("Potato", "Microwave"),
        _req("Potato", state={"isCooked": True}, inside="Microwave"),
    ),
    _task(
        "hard_10",
        "Make a salad: slice a lettuce and a tomato and put both in the same bowl.",
        ("Lettuce", "Tomato", "Knife", "Bowl"),
        _req("Lettuce", state={"isSliced": True}, inside="Bowl", same_receptacle="bowl"),
        _req("Tomato", state={"isSliced": True}, inside="Bowl", same_receptacle="bowl"),
    ),
    _task(
        "hard_11",
        "Cook an egg and serve it on a plate.",
        ("Egg", "Pan", "StoveBurner", "StoveKnob", "Plate"),
        _req("Egg", state={"isCooked": True}, inside="Plate"),
    ),
    _task(
        "hard_12",
        "Wash all the dirty dishes.",
        (*DISH_TYPES, "Sink", "Faucet"),
        _req(*DISH_TYPES, state={"isDirty": False}, quantifier="all"),
    ),
    _task(
        "hard_13",
        "Set the table with a plate, a fork and a cup.",
        ("DiningTable", "Plate", "Fork", "Cup"),
        _req("Plate", inside="DiningTable"),
        _req("Fork", inside="DiningTable"),
        _req("Cup", inside="DiningTable"),
    ),
    _task(
        "hard_14",
        "Heat a cup of water in the microwave.",
        ("Cup", "Faucet", "Sink", "Microwave"),
        _req("Cup", state={**_WATER, "temperature": "Hot"}),
    ),
    _task(
        "hard_15",
        "Store the bread in a cabinet and close it.",
        ("Bread", "Cabinet"),
        _req("Bread", inside="Cabinet", receptacle_state={"isOpen": False}),
    ),
    _task(
        "hard_16",
        "Put the knife in the sink and the butter knife in a drawer.",
        ("Knife", "ButterKnife", "Sink", "Drawer"),
        _req("Knife", inside="Sink"),
        _req("ButterKnife", inside="Drawer"),
    ),
    _task(
        "hard_17",
        "Make coffee and bring the mug to the dining table.",
        ("Mug", "CoffeeMachine", "DiningTable"),
        _req("Mug", state=_COFFEE, inside="DiningTable"),
    ),
    _task(
        "hard_18",
        "Put the lettuce, a tomato and an egg in the fridge and close it.",
        ("Lettuce", "Tomato", "Egg", "Fridge"),
        *(_req(t, inside="Fridge", receptacle_state={"isOpen": False}) for t in ("Lettuce", "Tomato", "Egg")),
    ),
    _task(
        "hard_19",
        "Throw away the empty soap bottle.",
        ("SoapBottle", "GarbageCan"),
        _req("SoapBottle", where={"isUsedUp": True}, inside="GarbageCan", quantifier="all"),
    ),
    _task(
        "hard_20",
        "Chill a cup of water in the fridge.",
        ("Cup", "Faucet", "Sink", "Fridge"),
        _req("Cup", state={**_WATER, "temperature": "Cold"}),
    ),
)

TASKS_BY_ID: Mapping[str, Task] = MappingProxyType({t.task_id: t for t in TASKS})


def get_task(task_id: str) -> Task:
    """The task with ``task_id`` (``easy_01`` .. ``hard_20``)."""
    try:
        return TASKS_BY_ID[task_id]
    except KeyError:
        raise UnknownTaskError(
            f"unknown task id {task_id!r}", hint="ids are easy_01..easy_20 and hard_01..hard_20"
        ) from None
