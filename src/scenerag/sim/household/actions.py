"""The action/tool API of the household environment: names, argument schemas, preconditions and effects.

Contract: ``ACTIONS`` maps each action name (``randomlyexplore``, ``moveto``, ``pickup``, ``placeon``, ...) to
an ``ActionSpec`` with a planner-facing description and a JSON schema of its arguments; ``tool_specs()`` lists
them for a ReAct prompt or native tool calling; ``execute(env, name, arguments)`` validates the call, checks
the action's preconditions in order (``PRECONDITIONS``), applies its effect, lets appliances act, observes,
and returns an ``ActionResult``. A failed action changes nothing and its message says why and what to do.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scenerag.sim.household.attributes import Liquid
from scenerag.sim.household.catalog import CATALOG
from scenerag.sim.household.rules import StateChange, attribute_value

if TYPE_CHECKING:
    from scenerag.sim.household.env import HouseholdEnv

MAX_LISTED = 15  # names listed in a message before "(+N more)"


@dataclass(frozen=True)
class ActionResult:
    """Outcome of one action: ``observation`` holds the agent pose, what is visible, new discoveries,
    appliance effects, action-specific data and, on failure, an ``error`` code."""

    success: bool
    message: str
    observation: dict[str, Any] = field(default_factory=dict)

    @property
    def error(self) -> str | None:
        """The failure's code (``out_of_reach``, ``receptacle_closed``, ...); None on success."""
        value = self.observation.get("error")
        return None if value is None else str(value)

    @property
    def mentions(self) -> list[str]:
        """The discovered objects the action's own message names (the object found, the receptacle to open,
        the faucet to switch on, ...), in the order named, at most ``MAX_MENTIONS``; the lists of newly
        discovered objects and rule effects appended to the message are not counted, and neither are the
        inventories of the listing actions (``getvisibleobjects``, ``getdiscoveredobjects``): they name
        every object in sight, none in particular."""
        return list(self.observation.get("mentions", ()))

    @property
    def discovered(self) -> list[str]:
        """The objects the action newly discovered (listed at the end of the message)."""
        return list(self.observation.get("new_objects", ()))


@dataclass
class Outcome:
    """What an action handler reports before the step is settled and observed."""

    success: bool
    message: str
    error: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    scan: bool = False  # the agent looked all around (exploration), not just ahead


def fail(error: str, message: str) -> Outcome:
    return Outcome(False, message, error=error)


@dataclass(frozen=True)
class Parameter:
    """One string argument: ``kind`` ``object`` (a discovered object's id) or ``text`` (words; ``choices``
    is their vocabulary for a planner's grammar, empty for any);
    ``requires``: the ``(attribute, value)`` pairs an object must show to be a sensible argument (its
    affordance as the robot knows it: ``("openable", True), ("isOpen", False)`` for ``open``);
    ``excludes``: states that rule an object out although it shows ``requires``, each a conjunction of
    pairs (``placeon``: a receptacle that opens and is closed); ``held_fits``: the attribute of the held
    object that lists the classes the argument may be (``placeon``: ``fitsIn``, the receptacle types the
    held object goes in or on), "" for no such rule."""

    name: str
    description: str
    required: bool = True
    kind: str = "object"
    requires: tuple[tuple[str, Any], ...] = ()
    choices: tuple[str, ...] = ()  # the words a text argument may take (empty: any)
    excludes: tuple[tuple[tuple[str, Any], ...], ...] = ()
    held_fits: str = ""  # the held object's attribute listing the classes this argument may be ("" none)


@dataclass(frozen=True)
class ActionSpec:
    """A planner-callable action: ``handler(env, **arguments) -> Outcome``; ``hand``: what the robot's hand
    must hold for it (``any``, ``empty``, ``holding``); ``held_requires``: ``(attribute, value)`` pairs the
    held object must show (``slice``: a held object that can slice)."""

    name: str
    description: str
    parameters: tuple[Parameter, ...]
    handler: Callable[..., Outcome]
    hand: str = "any"
    held_requires: tuple[tuple[str, Any], ...] = ()

    def json_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {p.name: {"type": "string", "description": p.description} for p in self.parameters},
            "required": [p.name for p in self.parameters if p.required],
            "additionalProperties": False,
        }

    def tool_spec(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.json_schema()}

    def signature(self) -> str:
        args = ", ".join(p.name if p.required else f"{p.name}?" for p in self.parameters)
        return f"{self.name}({args})"


ACTIONS: dict[str, ActionSpec] = {}

_OBJECT = Parameter(
    "object_id", "id of a discovered object, e.g. 'Mug_1' (its node symbol such as 'O12' works too)"
)


IN_REACH: tuple[str, Any] = ("isInteractable", True)
"""The affordance every manipulation shares: the object is within arm's reach and not shut in a closed
receptacle (``isInteractable``, agent-relative, current at every observation)."""
OUT_OF_REACH: tuple[str, Any] = ("isInteractable", False)
CLOSED: tuple[tuple[str, Any], ...] = (("openable", True), ("isOpen", False))
"""The state of a receptacle that opens and is shut: nothing goes in until it is opened."""


def _object(*requires: tuple[str, Any]) -> Parameter:
    """The ``object_id`` parameter of an action that only makes sense on objects showing ``requires``."""
    return Parameter(_OBJECT.name, _OBJECT.description, requires=tuple(requires))


def _action(
    name: str,
    description: str,
    *parameters: Parameter,
    hand: str = "any",
    held_requires: tuple[tuple[str, Any], ...] = (),
) -> Callable[[Callable[..., Outcome]], Callable[..., Outcome]]:
    def register(handler: Callable[..., Outcome]) -> Callable[..., Outcome]:
        ACTIONS[name] = ActionSpec(name, description, parameters, handler, hand, held_requires)
        return handler

    return register


# -- preconditions: each returns None when satisfied, else the failing Outcome ------------------------
Check = Callable[["HouseholdEnv", str], Outcome | None]


def _not_held(env: HouseholdEnv, object_id: str) -> Outcome | None:
    if env.world.is_held(object_id):
        return fail(
            "holding_target", f"you are holding {object_id}; act on another object or placeon it first"
        )
    return None


def _reachable(env: HouseholdEnv, object_id: str) -> Outcome | None:
    world = env.world
    if world.is_held(object_id):
        return None
    enclosure = world.closed_enclosure(object_id)
    if enclosure is not None:
        return fail(
            "receptacle_closed", f"{object_id} is inside {enclosure}, which is closed; open {enclosure} first"
        )
    distance = world.distance(object_id)
    if distance > env.interaction_distance_m:
        return fail(
            "out_of_reach",
            f"{object_id} is {distance:.1f} m away (arm reach {env.interaction_distance_m:.1f} m); "
            f"moveto {object_id} first",
        )
    return None


def _capable(flag: str, error: str, wording: str) -> Check:
    def check(env: HouseholdEnv, object_id: str) -> Outcome | None:
        obj = env.world.objects[object_id]
        if not getattr(obj.spec, flag):
            return fail(error, f"{object_id} ({obj.object_type}) {wording}")
        return None

    return check


def _state_is(attribute: str, value: Any, error: str, wording: str) -> Check:
    def check(env: HouseholdEnv, object_id: str) -> Outcome | None:
        if attribute_value(env.world.objects[object_id], attribute) != value:
            return fail(error, f"{object_id} {wording}")
        return None

    return check


def _hands_empty(env: HouseholdEnv, object_id: str) -> Outcome | None:
    if env.held is not None:
        return fail("hands_full", f"your hand is full: you hold {env.held}; placeon a receptacle first")
    return None


def _not_switched_elsewhere(env: HouseholdEnv, object_id: str) -> Outcome | None:
    obj = env.world.objects[object_id]
    if obj.spec.controlled_by is not None:
        controller = env.world.controller_of(object_id) or obj.spec.controlled_by
        return fail(
            "controlled_elsewhere",
            f"{object_id} is switched by its {controller}; toggle {controller} instead",
        )
    return None


def _door_shut_if_needed(env: HouseholdEnv, object_id: str) -> Outcome | None:
    obj = env.world.objects[object_id]
    if obj.spec.toggle_requires_closed and obj.state.isOpen:
        return fail("must_be_closed", f"{object_id} only runs with its door shut; close {object_id} first")
    return None


_PICKUPABLE = _capable("pickupable", "not_pickupable", "cannot be picked up (fixed or too large)")
_OPENABLE = _capable("openable", "not_openable", "cannot be opened or closed")
_TOGGLEABLE = _capable("toggleable", "not_toggleable", "cannot be switched on or off")
_SLICEABLE = _capable("sliceable", "not_sliceable", "cannot be sliced")
_NOT_BROKEN = _state_is("isBroken", False, "broken", "is broken")

# Preconditions of the object-targeted actions, checked in order; the first failure is reported.
PRECONDITIONS: dict[str, tuple[Check, ...]] = {
    "pickup": (_not_held, _reachable, _PICKUPABLE, _hands_empty),
    "open": (_reachable, _OPENABLE, _state_is("isOpen", False, "already_open", "is already open")),
    "close": (_reachable, _OPENABLE, _state_is("isOpen", True, "already_closed", "is already closed")),
    "toggleon": (
        _reachable,
        _not_switched_elsewhere,
        _TOGGLEABLE,
        _NOT_BROKEN,
        _state_is("isToggled", False, "already_on", "is already on"),
        _door_shut_if_needed,
    ),
    "toggleoff": (
        _reachable,
        _not_switched_elsewhere,
        _TOGGLEABLE,
        _state_is("isToggled", True, "already_off", "is already off"),
    ),
    "slice": (
        _not_held,
        _reachable,
        _SLICEABLE,
        _state_is("isSliced", False, "already_sliced", "is already sliced"),
    ),
}


def _first_failure(env: HouseholdEnv, action: str, object_id: str) -> Outcome | None:
    for check in PRECONDITIONS[action]:
        failure = check(env, object_id)
        if failure is not None:
            return failure
    return None


def _held(env: HouseholdEnv, hint: str) -> str | Outcome:
    """The id of the object in the robot's hand, or, with an empty hand, the ``hands_empty`` failure
    "you are not holding anything; ``hint``" (``hint`` says what to do first)."""
    held = env.held
    if held is None:
        return fail("hands_empty", f"you are not holding anything; {hint}")
    return held


def _discovered(env: HouseholdEnv, reference: str) -> str | Outcome:
    """The discovered object ``reference`` names, or the failure telling the planner how to find it."""
    object_id = env.resolve(reference)
    if object_id is not None:
        return object_id
    hint = env.suggest(reference)
    also = f" Did you mean {', '.join(hint)}?" if hint else ""
    return fail(
        "not_discovered",
        f"no discovered object {reference!r}.{also} Use getdiscoveredobjects, search or randomlyexplore.",
    )


def _preposition(env: HouseholdEnv, receptacle_id: str) -> str:
    spec = env.world.objects[receptacle_id].spec.receptacle
    return "on" if spec is not None and spec.kind == "surface" else "in"


def _where(env: HouseholdEnv, object_id: str) -> str:
    """Where the agent believes ``object_id`` is, in words."""
    seen = env.discovered[object_id]
    if seen.held:
        return "in your hand"
    if seen.parent is not None:
        return f"{_preposition(env, seen.parent)} {seen.parent}"
    return f"at {env.world.places[env.world.place_of(object_id)].symbol}"


def _listing(ids: list[str]) -> str:
    shown = ", ".join(ids[:MAX_LISTED])
    return shown + (f" (+{len(ids) - MAX_LISTED} more)" if len(ids) > MAX_LISTED else "")


def _go_to(env: HouseholdEnv, object_id: str) -> int:
    """Stand in front of ``object_id`` and face it; returns the place index."""
    world = env.world
    place = world.place_of(object_id)
    world.agent.place = place
    world.agent.heading = world.bearing(object_id)
    env.visited_places.add(place)
    env.focus = object_id
    return place


def _face(env: HouseholdEnv, object_id: str) -> None:
    """Turn the robot towards ``object_id`` (a robot looks at what it handles), so the observation after
    the action sees the object's new state: the mug it just put on the counter is no longer believed to
    be in its hand. Held objects are not faced (they are always seen)."""
    if not env.world.is_held(object_id):
        env.world.agent.heading = env.world.bearing(object_id)


# -- exploration and perception --------------------------------------------------------------------
@_action(
    "randomlyexplore",
    "Explore a place not visited yet.",
)
def _randomlyexplore(env: HouseholdEnv) -> Outcome:
    world = env.world
    unexplored = [p for p in world.places if p.index not in env.visited_places]
    if unexplored:
        place = env.rng.choice(unexplored)
        note = ""
    else:
        place = env.rng.choice([p for p in world.places if p.index != world.agent.place] or world.places)
        note = " (every location has been explored already)"
    world.agent.place = place.index
    world.agent.heading = env.rng.uniform(-math.pi, math.pi)
    env.visited_places.add(place.index)
    return Outcome(
        True, f"Explored {place.symbol}{note} and looked around.", data={"place": place.symbol}, scan=True
    )


def _summary(env: HouseholdEnv, object_id: str) -> dict[str, Any]:
    seen = env.discovered[object_id]
    attributes = env.observed_attributes(object_id)
    return {
        "object_id": object_id,
        "symbol": seen.symbol,
        "type": seen.object_type,
        "location": _where(env, object_id),
        "distance": attributes["distance"],
        "visible": attributes["visible"],
    }


@_action(
    "getdiscoveredobjects",
    "List every discovered object.",
)
def _getdiscoveredobjects(env: HouseholdEnv) -> Outcome:
    rows = [_summary(env, object_id) for object_id in env.discovered]
    text = "; ".join(f"{r['object_id']} ({r['type']}, {r['location']}, {r['distance']:.1f} m)" for r in rows)
    return Outcome(True, f"{len(rows)} discovered objects: {text}", data={"objects": rows, "mentions": []})


@_action("getvisibleobjects", "List the visible objects.")
def _getvisibleobjects(env: HouseholdEnv) -> Outcome:
    rows = [_summary(env, object_id) for object_id in env.discovered if object_id in env.visible]
    text = "; ".join(f"{r['object_id']} ({r['type']}, {r['location']}, {r['distance']:.1f} m)" for r in rows)
    return Outcome(True, f"{len(rows)} visible objects: {text}", data={"objects": rows, "mentions": []})


@_action(
    "moveto",
    "Go within reach of an object.",
    _object(OUT_OF_REACH, ("isPickedUp", False)),
)
def _moveto(env: HouseholdEnv, object_id: str) -> Outcome:
    target = _discovered(env, object_id)
    if isinstance(target, Outcome):
        return target
    if (held := _not_held(env, target)) is not None:
        return held
    place = _go_to(env, target)
    distance = env.world.distance(target)
    return Outcome(
        True,
        f"Moved to {env.world.places[place].symbol} next to {env.world.root(target)}; "
        f"{target} is {distance:.1f} m away.",
        data={"place": env.world.places[place].symbol, "distance": round(distance, 3)},
    )


@_action(
    "inspect",
    "Show an object's attributes.",
    _OBJECT,
)
def _inspect(env: HouseholdEnv, object_id: str) -> Outcome:
    target = _discovered(env, object_id)
    if isinstance(target, Outcome):
        return target
    attributes = env.observed_attributes(target)
    seen = env.discovered[target]
    age = env.step_count - seen.last_seen_step
    freshness = "seen now" if attributes["visible"] else f"last seen {age} step(s) ago"
    states = ", ".join(
        f"{k}={v}"
        for k, v in attributes.items()
        if k not in ("visible", "isInteractable", "distance", "salientMaterials")
        and (isinstance(v, str) or v is True or (k == "openness" and v))
    )
    return Outcome(
        True,
        f"{target} ({seen.object_type}) {_where(env, target)}, {attributes['distance']:.1f} m away, {freshness}: "
        f"{states or 'no notable state'}.",
        data={
            "object_id": target,
            "type": seen.object_type,
            "location": _where(env, target),
            "attributes": attributes,
        },
    )


def _type_words(object_type: str) -> list[str]:
    """``StoveBurner`` -> ``["stove", "burner"]``."""
    return [w.lower() for w in re.findall(r"[A-Z][a-z]*|[a-z]+|\d+", object_type)]


def match_object_types(query: str) -> list[str]:
    """Object types a search query names: the type itself in any case or spacing (``stove burner``,
    ``stove_burner``, ``StoveBurner``), a plural (``eggs``), else every type whose name contains all the
    query's words (``knob`` -> ``StoveKnob``); empty when nothing matches."""
    squeezed = re.sub(r"[^a-z0-9]", "", query.lower())
    if not squeezed:
        return []
    by_squeezed = {name.lower(): name for name in CATALOG}
    for form in (
        squeezed,
        squeezed[:-1] if squeezed.endswith("s") else "",
        squeezed[:-2] if squeezed.endswith("es") else "",
    ):
        if form in by_squeezed:
            return [by_squeezed[form]]
    words = [w[:-1] if w.endswith("s") and len(w) > 3 else w for w in re.findall(r"[a-z0-9]+", query.lower())]
    return sorted(name for name in CATALOG if all(w in _type_words(name) for w in words))


@_action(
    "search",
    "Go to the nearest object of a type (e.g. Egg), or name the closed receptacle it is in.",
    Parameter(
        "query",
        "an object type such as 'Mug' or an object id such as 'Mug_2'",
        kind="text",
        choices=tuple(sorted(CATALOG)),
    ),
)
def _search(env: HouseholdEnv, query: str) -> Outcome:
    world = env.world
    wanted = query.strip().lower()
    ids = {object_id.lower(): object_id for object_id in world.objects}
    matches = [] if wanted in ids else match_object_types(query)
    if len(matches) == 1:
        label = matches[0]
        candidates = [o.object_id for o in world.of_type(label)]
    elif wanted in ids:
        label = world.objects[ids[wanted]].object_type
        candidates = [ids[wanted]]
    elif matches:
        return fail(
            "nothing_found", f"{query!r} could be any of {', '.join(matches)}: search for one of them"
        )
    else:
        close = difflib.get_close_matches(query.strip(), list(CATALOG), n=3)
        also = f"; did you mean {', '.join(close)}?" if close else ""
        return fail("nothing_found", f"{query!r} is neither a known object type nor an object id{also}")
    if candidates and all(world.is_held(c) for c in candidates):
        return fail("holding_target", f"you are already holding {candidates[0]}")
    candidates = [c for c in candidates if not world.is_held(c)]
    if not candidates:
        return fail("nothing_found", f"searched the plausible places and found no {label} in this kitchen")
    best = min(candidates, key=lambda c: (world.closed_enclosure(c) is not None, world.distance(c), c))
    enclosure = world.closed_enclosure(best)
    place = _go_to(env, enclosure or best)
    symbol = world.places[place].symbol
    if enclosure is not None:
        return Outcome(
            True,
            f"No {label} in plain sight; moved to {symbol}: the likeliest place is inside {enclosure}, "
            f"which is closed. Open {enclosure} to look inside.",
            data={"found": None, "container": enclosure, "place": symbol},
        )
    holder = world.objects[best].parent
    where = f" {_preposition(env, holder)} {holder}" if holder else ""
    return Outcome(
        True,
        f"Found {best}{where}; moved to {symbol}, {world.distance(best):.1f} m from it.",
        data={"found": best, "container": holder, "place": symbol},
    )


@_action(
    "adjustpositioning",
    "Step to a better spot and look around.",
    Parameter("object_id", _OBJECT.description, required=False),
)
def _adjustpositioning(env: HouseholdEnv, object_id: str | None = None) -> Outcome:
    target = env.focus
    if object_id is not None:
        resolved = _discovered(env, object_id)
        if isinstance(resolved, Outcome):
            return resolved
        target = resolved
    if target is not None and (not env.is_discovered(target) or env.world.is_held(target)):
        target = None
    if target is not None:
        place = _go_to(env, target)
        text = f"Adjusted position to {env.world.places[place].symbol} facing {target} and looked around."
    else:
        text = f"Looked around from {env.world.places[env.world.agent.place].symbol}."
    return Outcome(True, text, data={"focus": target}, scan=True)


# -- manipulation -----------------------------------------------------------------------------------------
@_action(
    "pickup",
    "Pick up an object (hand empty).",
    _object(("pickupable", True), ("isPickedUp", False), IN_REACH),
    hand="empty",
)
def _pickup(env: HouseholdEnv, object_id: str) -> Outcome:
    target = _discovered(env, object_id)
    if isinstance(target, Outcome):
        return target
    if (failure := _first_failure(env, "pickup", target)) is not None:
        return failure
    world = env.world
    _face(env, target)
    holder = world.objects[target].parent
    carried = world.descendants(target)
    world.put(target, None, (0.0, 0.0, 0.0))
    world.agent.held = target
    world.objects[target].state.isPickedUp = True
    env.focus = target
    source = f" from {holder}" if holder else ""
    extra = f", together with {_listing(carried)} in it" if carried else ""
    return Outcome(True, f"Picked up {target}{source}{extra}.")


@_action(
    "placeon",
    "Put the held object in/on a receptacle.",
    Parameter(
        "receptacle_id",
        "id of the discovered receptacle, e.g. 'CounterTop_2'",
        requires=(("receptacle", True), ("isPickedUp", False), IN_REACH),
        excludes=(CLOSED,),
        held_fits="fitsIn",
    ),
    hand="holding",
)
def _placeon(env: HouseholdEnv, receptacle_id: str) -> Outcome:
    world = env.world
    held = _held(env, "pickup an object first")
    if isinstance(held, Outcome):
        return held
    target = _discovered(env, receptacle_id)
    if isinstance(target, Outcome):
        return target
    if world.is_held(target):
        return fail("self_placement", f"{target} is in your hand: an object cannot go on/in itself")
    if (failure := _reachable(env, target)) is not None:
        return failure
    receptacle = world.objects[target]
    item = world.objects[held]
    spec = receptacle.spec.receptacle
    if spec is None:
        return fail("not_receptacle", f"{target} ({receptacle.object_type}) cannot hold objects")
    if receptacle.spec.openable and not receptacle.state.isOpen:
        return fail("receptacle_closed", f"{target} is closed; open {target} first")
    if receptacle.object_type not in item.spec.placeable_in:
        fits = ", ".join(t for t in item.spec.placeable_in if t in CATALOG)
        where = f"it fits: {fits}" if fits else "it goes on no receptacle"
        return fail(
            "incompatible_receptacle",
            f"a {item.object_type} does not go on/in a {receptacle.object_type}; {where} "
            "(drop sets it down on the floor)",
        )
    if spec.capacity is not None and len(world.children(target)) >= spec.capacity:
        return fail(
            "receptacle_full", f"{target} is full ({spec.capacity} object(s)); take something out first"
        )
    for attribute, value in spec.requires.items():
        if attribute_value(item, attribute) != value:
            return fail(
                "requirement_unmet",
                f"{target} only takes objects with {attribute}={value}; "
                f"{held} has {attribute}={attribute_value(item, attribute)}",
            )
    world.put(held, target)
    world.agent.held = None
    item.state.isPickedUp = False
    env.focus = target
    _face(env, target)
    return Outcome(True, f"Placed {held} {_preposition(env, target)} {target}.")


@_action("drop", "Drop the held object on the floor where you stand.", hand="holding")
def _drop(env: HouseholdEnv) -> Outcome:
    world = env.world
    held = _held(env, "there is nothing to put down")
    if isinstance(held, Outcome):
        return held
    item = world.objects[held]
    x, y, _ = world.hand_position()
    world.put(held, None, (x, y, item.extent[2] / 2))
    world.home_place[held] = world.agent.place
    world.agent.held = None
    item.state.isPickedUp = False
    env.focus = held
    place = world.places[world.agent.place].symbol
    return Outcome(True, f"Put {held} down on the floor at {place}.", data={"place": place})


@_action(
    "open",
    "Open a door or drawer.",
    _object(("openable", True), ("isOpen", False), IN_REACH),
)
def _open(env: HouseholdEnv, object_id: str) -> Outcome:
    target = _discovered(env, object_id)
    if isinstance(target, Outcome):
        return target
    if (failure := _first_failure(env, "open", target)) is not None:
        return failure
    obj = env.world.objects[target]
    obj.state.isOpen, obj.state.openness = True, 1.0
    env.focus = target
    _face(env, target)
    note = ""
    if obj.spec.toggle_requires_closed and obj.state.isToggled:
        obj.state.isToggled = False
        note = f" Opening it switched {target} off."
    contents = env.world.children(target)
    inside = f" Inside: {_listing(contents)}." if contents else f" {target} is empty."
    return Outcome(True, f"Opened {target}.{note}{inside}")


@_action("close", "Close an open object.", _object(("openable", True), ("isOpen", True), IN_REACH))
def _close(env: HouseholdEnv, object_id: str) -> Outcome:
    target = _discovered(env, object_id)
    if isinstance(target, Outcome):
        return target
    if (failure := _first_failure(env, "close", target)) is not None:
        return failure
    obj = env.world.objects[target]
    obj.state.isOpen, obj.state.openness = False, 0.0
    env.focus = target
    _face(env, target)
    return Outcome(True, f"Closed {target}.")


def _switch(env: HouseholdEnv, object_id: str, on: bool) -> Outcome:
    action = "toggleon" if on else "toggleoff"
    target = _discovered(env, object_id)
    if isinstance(target, Outcome):
        return target
    if (failure := _first_failure(env, action, target)) is not None:
        return failure
    world = env.world
    obj = world.objects[target]
    obj.state.isToggled = on
    switched = [target]
    if obj.controls is not None and world.objects[obj.controls].spec.controlled_by is not None:
        world.objects[obj.controls].state.isToggled = on
        switched.append(obj.controls)
    env.focus = target
    _face(env, target)
    return Outcome(True, f"Switched {' and '.join(switched)} {'on' if on else 'off'}.")


@_action(
    "toggleon",
    "Switch on (faucet, stove knob, light switch...).",
    Parameter(
        _OBJECT.name,
        _OBJECT.description,
        requires=(("toggleable", True), ("isToggled", False), IN_REACH),
        excludes=((("isBroken", True),), (("runsOnlyClosed", True), ("isOpen", True))),
    ),
)
def _toggleon(env: HouseholdEnv, object_id: str) -> Outcome:
    return _switch(env, object_id, True)


@_action(
    "toggleoff",
    "Switch off.",
    _object(("toggleable", True), ("isToggled", True), IN_REACH),
)
def _toggleoff(env: HouseholdEnv, object_id: str) -> Outcome:
    return _switch(env, object_id, False)


@_action(
    "slice",
    "Slice it, holding a knife.",
    _object(("sliceable", True), ("isSliced", False), ("isPickedUp", False), IN_REACH),
    hand="holding",
    held_requires=(("canSlice", True),),
)
def _slice(env: HouseholdEnv, object_id: str) -> Outcome:
    held = env.held
    if held is None or not env.world.objects[held].spec.can_slice:
        holding = f"you hold {held}" if held else "your hand is empty"
        return fail("no_slicing_tool", f"slicing needs a knife in hand ({holding}); pickup a Knife first")
    target = _discovered(env, object_id)
    if isinstance(target, Outcome):
        return target
    if (failure := _first_failure(env, "slice", target)) is not None:
        return failure
    env.world.objects[target].state.isSliced = True
    env.focus = target
    _face(env, target)
    return Outcome(True, f"Sliced {target} with {held}.")


# -- liquids ------------------------------------------------------------------------------------------------
@_action(
    "fillheldobjectwithwater",
    "Fill the held container at a running faucet.",
    hand="holding",
    held_requires=(("canFillWithLiquid", True), ("isFilledWithLiquid", False)),
)
def _fillheldobjectwithwater(env: HouseholdEnv) -> Outcome:
    world = env.world
    held = _held(env, "pickup a container first")
    if isinstance(held, Outcome):
        return held
    item = world.objects[held]
    if not item.spec.canFillWithLiquid:
        return fail("not_fillable", f"{held} ({item.object_type}) cannot hold water")
    if item.state.isBroken:
        return fail("broken", f"{held} is broken and cannot hold water")
    if item.state.isFilledWithLiquid:
        return fail(
            "already_filled",
            f"{held} already holds {item.state.fillLiquid}; pourwaterinto a Sink to empty it first",
        )
    faucets = [
        f.object_id
        for f in world.of_type("Faucet")
        if world.distance(f.object_id) <= env.interaction_distance_m
    ]
    if not faucets:
        return fail("no_water_source", "no faucet within reach; moveto a Sink or Faucet first")
    running = [f for f in faucets if world.objects[f].state.isToggled]
    if not running:
        return fail("faucet_off", f"{faucets[0]} is off; toggleon {faucets[0]} first")
    item.state.isFilledWithLiquid, item.state.fillLiquid = True, Liquid.WATER.value
    return Outcome(True, f"Filled {held} with water from {running[0]}.")


@_action(
    "pourwaterinto",
    "Pour the held liquid into it.",
    _object(("canFillWithLiquid", True), ("isFilledWithLiquid", False), ("isPickedUp", False), IN_REACH),
    hand="holding",
    held_requires=(("isFilledWithLiquid", True),),
)
def _pourwaterinto(env: HouseholdEnv, object_id: str) -> Outcome:
    world = env.world
    held = _held(env, "pickup a filled container first")
    if isinstance(held, Outcome):
        return held
    source = world.objects[held]
    if not source.state.isFilledWithLiquid:
        return fail("empty_container", f"{held} holds no liquid; fillheldobjectwithwater first")
    target = _discovered(env, object_id)
    if isinstance(target, Outcome):
        return target
    if world.is_held(target):
        return fail("self_placement", f"{target} is in your hand; pour into another object")
    if (failure := _reachable(env, target)) is not None:
        return failure
    liquid = source.state.fillLiquid
    receiver = world.objects[target]
    if receiver.object_type in ("Sink", "GarbageCan"):
        text = f"Poured the {liquid} from {held} into {target}; {held} is empty now."
    elif not receiver.spec.canFillWithLiquid:
        return fail("not_fillable", f"{target} ({receiver.object_type}) cannot take liquid")
    elif receiver.state.isBroken:
        return fail("broken", f"{target} is broken and cannot hold liquid")
    elif receiver.state.isFilledWithLiquid:
        return fail("already_filled", f"{target} already holds {receiver.state.fillLiquid}")
    else:
        receiver.state.isFilledWithLiquid, receiver.state.fillLiquid = True, liquid
        verb = "Watered" if receiver.object_type == "HousePlant" else "Filled"
        text = f"{verb} {target} with the {liquid} from {held}; {held} is empty now."
    source.state.isFilledWithLiquid, source.state.fillLiquid = False, None
    env.focus = target
    _face(env, target)
    return Outcome(True, text)


# -- dispatch -------------------------------------------------------------------------------------------------
def tool_specs() -> list[dict[str, Any]]:
    """Name, description and JSON schema of the arguments of every action (for ReAct prompts / tool calls)."""
    return [spec.tool_spec() for spec in ACTIONS.values()]


def describe_tools() -> str:
    """One line per action, ``name(args): description``, for a text prompt."""
    return "\n".join(f"- {spec.signature()}: {spec.description}" for spec in ACTIONS.values())


def _validate(name: Any, arguments: Any) -> tuple[ActionSpec | None, dict[str, Any], Outcome | None]:
    if not isinstance(name, str) or name.strip().lower() not in ACTIONS:
        close = difflib.get_close_matches(str(name).strip().lower(), list(ACTIONS), n=2)
        also = f" Did you mean {', '.join(close)}?" if close else ""
        return (
            None,
            {},
            fail("unknown_action", f"unknown action {name!r}.{also} Available: {', '.join(ACTIONS)}"),
        )
    spec = ACTIONS[name.strip().lower()]
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        return (
            spec,
            {},
            fail("bad_arguments", f"{spec.name} arguments must be an object/dict, got {arguments!r}"),
        )
    allowed = {p.name for p in spec.parameters}
    takes = ", ".join(p.name for p in spec.parameters) or "no arguments"
    extra = sorted(set(arguments) - allowed)
    if extra:
        return spec, {}, fail("bad_arguments", f"{spec.name} does not take {extra}; it takes: {takes}")
    for parameter in spec.parameters:
        value = arguments.get(parameter.name)
        if value is None:
            if parameter.required:
                return (
                    spec,
                    {},
                    fail("bad_arguments", f"{spec.name} needs '{parameter.name}': {parameter.description}"),
                )
            continue
        if not isinstance(value, str) or not value.strip():
            return (
                spec,
                {},
                fail(
                    "bad_arguments",
                    f"{spec.name}: '{parameter.name}' must be a non-empty string, got {value!r}",
                ),
            )
    return spec, {k: v.strip() for k, v in arguments.items() if v is not None}, None


def _effects_text(changes: list[StateChange]) -> str:
    return "; ".join(f"{c.object_id} {c.attribute}={c.new}" for c in changes)


MAX_MENTIONS = 4
_OBJECT_ID = re.compile(r"\b[A-Z][A-Za-z]*_\d+\b")


def mentioned_objects(env: HouseholdEnv, text: str, limit: int = MAX_MENTIONS) -> list[str]:
    """The discovered object ids ``text`` names, in order of first mention, at most ``limit``."""
    out: list[str] = []
    for match in _OBJECT_ID.finditer(text):
        object_id = match.group(0)
        if object_id not in out and env.is_discovered(object_id):
            out.append(object_id)
            if len(out) == limit:
                break
    return out


def execute(env: HouseholdEnv, name: Any, arguments: Any = None) -> ActionResult:
    """Validate and run one action on ``env`` and observe; planner mistakes come back as failed results."""
    spec, kwargs, outcome = _validate(name, arguments)
    if outcome is None and spec is not None:
        outcome = spec.handler(env, **kwargs)
    assert outcome is not None
    changes: list[StateChange] = []
    new: list[str] = []
    message = outcome.message
    if outcome.success:
        changes, new = env.after_action(scan=outcome.scan)
        if changes:
            message += f" Effects: {_effects_text(changes)}."
        if new:
            message += f" Newly discovered: {_listing(new)}."
    world = env.world
    x, y, _ = world.agent_position()
    observation: dict[str, Any] = {
        "action": spec.name if spec is not None else str(name),
        "arguments": dict(kwargs),
        "step": env.step_count,
        "error": outcome.error,
        "agent": {
            "place": world.places[world.agent.place].symbol,
            "position": [round(x, 3), round(y, 3)],
            "heading_deg": round(math.degrees(world.agent.heading), 1),
            "holding": world.agent.held,
        },
        "mentions": mentioned_objects(env, outcome.message),
        "visible_objects": [o for o in world.objects if o in env.visible],
        "new_objects": new,
        "effects": [
            {"object_id": c.object_id, "attribute": c.attribute, "value": c.new, "rule": c.rule}
            for c in changes
        ],
        **outcome.data,
    }
    return ActionResult(outcome.success, message, observation)
