"""Contextual interactions (AI2Thor "contextual interactions"): what running appliances do to their contents.

Contract: ``CONTEXT_RULES`` is a table, one ``ContextRule`` per appliance behaviour; ``settle(world)`` applies
every active rule once to the objects it reaches and returns the state changes it made. The environment
calls ``settle`` after every action, so an egg put in a pan on a lit burner is cooked on that same step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from scenerag.sim.household.attributes import STATE_ATTRIBUTES, Liquid, Temperature
from scenerag.sim.household.world import SimObject, World

Scope = Literal["contents", "direct_contents", "linked_contents"]


@dataclass(frozen=True)
class Effect:
    """Set ``updates`` on every reached object whose attributes equal ``applies_if``."""

    updates: Mapping[str, Any]
    applies_if: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class ContextRule:
    """An appliance behaviour. ``scope``: ``contents`` = everything on/in the source, transitively;
    ``direct_contents`` = only what sits directly in it; ``linked_contents`` = contents of the object the
    source ``controls`` (a faucet runs water into its sink)."""

    name: str
    source_type: str
    needs_on: bool
    needs_closed: bool
    scope: Scope
    effects: tuple[Effect, ...]
    description: str


@dataclass(frozen=True)
class StateChange:
    """One attribute change made by a rule."""

    object_id: str
    attribute: str
    old: Any
    new: Any
    rule: str


_EMPTY_CONTAINER = MappingProxyType(
    {"canFillWithLiquid": True, "isFilledWithLiquid": False, "isBroken": False}
)
HEAT = Effect(MappingProxyType({"temperature": Temperature.HOT.value}))
CHILL = Effect(MappingProxyType({"temperature": Temperature.COLD.value}))
COOK = Effect(MappingProxyType({"isCooked": True}), MappingProxyType({"cookable": True}))
CLEAN = Effect(MappingProxyType({"isDirty": False}), MappingProxyType({"dirtyable": True, "isDirty": True}))
FILL_WATER = Effect(
    MappingProxyType({"isFilledWithLiquid": True, "fillLiquid": Liquid.WATER.value}), _EMPTY_CONTAINER
)
BREW_COFFEE = Effect(
    MappingProxyType(
        {"isFilledWithLiquid": True, "fillLiquid": Liquid.COFFEE.value, "temperature": Temperature.HOT.value}
    ),
    _EMPTY_CONTAINER,
)

CONTEXT_RULES: tuple[ContextRule, ...] = (
    ContextRule(
        "stove_burner_cooks",
        "StoveBurner",
        True,
        False,
        "contents",
        (HEAT, COOK),
        "a lit burner heats the pan/pot/kettle on it and cooks what is inside",
    ),
    ContextRule(
        "microwave_cooks",
        "Microwave",
        True,
        True,
        "contents",
        (HEAT, COOK),
        "a running, closed microwave heats and cooks its contents",
    ),
    ContextRule(
        "toaster_toasts",
        "Toaster",
        True,
        False,
        "contents",
        (HEAT, COOK),
        "a running toaster toasts the bread slices in it",
    ),
    ContextRule(
        "coffee_machine_brews",
        "CoffeeMachine",
        True,
        False,
        "direct_contents",
        (BREW_COFFEE,),
        "a running coffee machine fills the empty mug under it with hot coffee",
    ),
    ContextRule(
        "faucet_rinses",
        "Faucet",
        True,
        False,
        "linked_contents",
        (CLEAN, FILL_WATER),
        "running water cleans what is in the sink and fills empty containers there with water",
    ),
    ContextRule(
        "fridge_chills",
        "Fridge",
        False,
        False,
        "contents",
        (CHILL,),
        "the fridge makes everything inside it cold",
    ),
)


def attribute_value(obj: SimObject, name: str) -> Any:
    """An attribute of ``obj`` by AI2Thor name: mutable state first, then the type's capability flags."""
    if name in STATE_ATTRIBUTES:
        return getattr(obj.state, name)
    return getattr(obj.spec, name)


def _reached(world: World, source: SimObject, scope: Scope) -> list[str]:
    if scope == "direct_contents":
        return world.children(source.object_id)
    if scope == "linked_contents":
        return world.descendants(source.controls) if source.controls is not None else []
    return world.descendants(source.object_id)


def is_active(rule: ContextRule, source: SimObject) -> bool:
    """Whether ``source`` currently runs ``rule`` (switched on / door shut as the rule requires)."""
    if rule.needs_on and not source.state.isToggled:
        return False
    return not (rule.needs_closed and source.state.isOpen)


def settle(world: World) -> list[StateChange]:
    """Apply every active contextual rule once; return the changes in application order."""
    changes: list[StateChange] = []
    for rule in CONTEXT_RULES:
        for source in world.of_type(rule.source_type):
            if not is_active(rule, source):
                continue
            for target_id in _reached(world, source, rule.scope):
                target = world.objects[target_id]
                for effect in rule.effects:
                    if any(attribute_value(target, k) != v for k, v in effect.applies_if.items()):
                        continue
                    for attribute, value in effect.updates.items():
                        old = getattr(target.state, attribute)
                        if old != value:
                            setattr(target.state, attribute, value)
                            changes.append(StateChange(target_id, attribute, old, value, rule.name))
    return changes
