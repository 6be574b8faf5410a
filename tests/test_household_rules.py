"""Rules of the symbolic kitchen (``scenerag.sim.household``): for each rule a correct sequence succeeds and a
violating one fails with the right error code and a message that says what to do."""

from __future__ import annotations

from typing import Any

import pytest

from scenerag.sim.household import ActionResult, HouseholdEnv, OracleSolver
from scenerag.sim.household.world import World


def ok(env: HouseholdEnv, name: str, **arguments: Any) -> ActionResult:
    result = env.execute(name, arguments)
    assert result.success, result.message
    assert result.observation["error"] is None
    return result


def rejected(env: HouseholdEnv, error: str, name: str, **arguments: Any) -> ActionResult:
    before = _world_state(env.world)
    result = env.execute(name, arguments)
    assert not result.success, f"{name}({arguments}) unexpectedly succeeded: {result.message}"
    assert result.observation["error"] == error, result.message
    assert _world_state(env.world) == before, "a rejected action must not change the world"
    return result


def _world_state(world: World) -> tuple[Any, ...]:
    objects = tuple((o.object_id, o.parent, o.state.as_dict()) for o in world.objects.values())
    return objects, world.agent.place, world.agent.held


@pytest.fixture()
def kitchen() -> tuple[HouseholdEnv, OracleSolver]:
    env = HouseholdEnv("l_shape", 0)
    return env, OracleSolver(env)


def _first(env: HouseholdEnv, object_type: str) -> str:
    return next(o.object_id for o in env.world.of_type(object_type))


def _far_from_agent(env: HouseholdEnv, object_type: str) -> str:
    return max((o.object_id for o in env.world.of_type(object_type)), key=env.world.distance)


def test_pickup_rules(kitchen: tuple[HouseholdEnv, OracleSolver]) -> None:
    env, solver = kitchen
    egg = _first(env, "Egg")
    rejected(env, "not_discovered", "pickup", object_id=egg)  # inside the closed fridge: never seen
    fridge = _first(env, "Fridge")
    solver.approach(fridge)
    failure = rejected(env, "not_discovered", "pickup", object_id=egg)
    assert "search" in failure.message
    counter = _first(env, "CounterTop")
    solver.approach(counter)
    assert "cannot be picked up" in rejected(env, "not_pickupable", "pickup", object_id=counter).message
    ok(env, "moveto", object_id=fridge)
    ok(env, "open", object_id=fridge)
    ok(env, "close", object_id=fridge)
    assert "open Fridge_1 first" in rejected(env, "receptacle_closed", "pickup", object_id=egg).message
    ok(env, "open", object_id=fridge)
    result = ok(env, "pickup", object_id=egg)
    assert env.held == egg and env.world.objects[egg].state.isPickedUp
    assert result.observation["agent"]["holding"] == egg
    rejected(env, "holding_target", "pickup", object_id=egg)
    other = next(o for o in env.world.children(fridge) if o != egg)
    assert "hand is full" in rejected(env, "hands_full", "pickup", object_id=other).message


def _teleport_far_from(env: HouseholdEnv, object_id: str) -> None:
    """Test setup only: stand at the place farthest from ``object_id``."""
    x, y, _ = env.world.position(object_id)
    far = max(env.world.places, key=lambda p: (p.position[0] - x) ** 2 + (p.position[1] - y) ** 2)
    env.world.agent.place = far.index


def test_must_be_within_reach(kitchen: tuple[HouseholdEnv, OracleSolver]) -> None:
    env, solver = kitchen
    apple = _first(env, "Apple")
    solver.reveal(apple)
    _teleport_far_from(env, apple)
    failure = rejected(env, "out_of_reach", "pickup", object_id=apple)
    assert f"moveto {apple} first" in failure.message
    ok(env, "moveto", object_id=apple)
    assert env.is_interactable(apple)
    ok(env, "pickup", object_id=apple)


def test_placeon_rules(kitchen: tuple[HouseholdEnv, OracleSolver]) -> None:
    env, solver = kitchen
    counter = _first(env, "CounterTop")
    solver.approach(counter)
    assert "not holding" in rejected(env, "hands_empty", "placeon", receptacle_id=counter).message
    pan, toaster, fridge = _first(env, "Pan"), _first(env, "Toaster"), _first(env, "Fridge")
    solver.hold(pan)
    solver.approach(toaster)
    failure = rejected(env, "incompatible_receptacle", "placeon", receptacle_id=toaster)
    assert "Pan does not go on/in a Toaster" in failure.message and "StoveBurner" in failure.message
    solver.open(fridge)
    rejected(env, "incompatible_receptacle", "placeon", receptacle_id=fridge)  # a pan does not go in a fridge
    solver.close(fridge)
    solver.put(pan, solver._burner_for(pan))
    # a burner holds one vessel
    kettle = _first(env, "Kettle")
    solver.hold(kettle)
    burner = env.world.objects[pan].parent
    assert burner is not None and env.world.objects[burner].object_type == "StoveBurner"
    solver.approach(burner)
    rejected(env, "receptacle_full", "placeon", receptacle_id=burner)
    rejected(env, "self_placement", "placeon", receptacle_id=kettle)
    # a closed fridge cannot receive anything
    apple = _first(env, "Apple")
    solver.hold(apple)
    solver.approach(fridge)
    assert (
        "open Fridge_1 first" in rejected(env, "receptacle_closed", "placeon", receptacle_id=fridge).message
    )
    ok(env, "open", object_id=fridge)
    ok(env, "placeon", receptacle_id=fridge)
    assert env.world.objects[apple].parent == fridge and env.held is None


def test_toaster_takes_only_sliced_bread(kitchen: tuple[HouseholdEnv, OracleSolver]) -> None:
    env, solver = kitchen
    bread, toaster = _first(env, "Bread"), _first(env, "Toaster")
    solver.hold(bread)
    solver.approach(toaster)
    failure = rejected(env, "requirement_unmet", "placeon", receptacle_id=toaster)
    assert "isSliced=True" in failure.message
    solver.slice(bread)
    solver.put(bread, toaster)
    assert not env.world.objects[bread].state.isCooked
    result = ok(env, "toggleon", object_id=toaster)
    assert env.world.objects[bread].state.isCooked
    assert {"object_id": bread, "attribute": "isCooked", "value": True, "rule": "toaster_toasts"} in (
        result.observation["effects"]
    )


def test_open_close_rules(kitchen: tuple[HouseholdEnv, OracleSolver]) -> None:
    env, solver = kitchen
    cabinet = _first(env, "Cabinet")
    solver.approach(cabinet)
    rejected(env, "already_closed", "close", object_id=cabinet)
    ok(env, "open", object_id=cabinet)
    state = env.world.objects[cabinet].state
    assert state.isOpen and state.openness == 1.0
    rejected(env, "already_open", "open", object_id=cabinet)
    ok(env, "close", object_id=cabinet)
    assert not state.isOpen and state.openness == 0.0
    counter = _first(env, "CounterTop")
    solver.approach(counter)
    assert "cannot be opened" in rejected(env, "not_openable", "open", object_id=counter).message


def test_toggle_rules_and_stove_knobs(kitchen: tuple[HouseholdEnv, OracleSolver]) -> None:
    env, solver = kitchen
    burner = _first(env, "StoveBurner")
    knob = env.world.controller_of(burner)
    assert knob is not None
    solver.approach(burner)
    failure = rejected(env, "controlled_elsewhere", "toggleon", object_id=burner)
    assert knob in failure.message
    solver.approach(knob)
    ok(env, "toggleon", object_id=knob)
    assert env.world.objects[burner].state.isToggled and env.world.objects[knob].state.isToggled
    rejected(env, "already_on", "toggleon", object_id=knob)
    ok(env, "toggleoff", object_id=knob)
    assert not env.world.objects[burner].state.isToggled
    rejected(env, "already_off", "toggleoff", object_id=knob)
    mug = _first(env, "Mug")
    solver.approach(mug)
    rejected(env, "not_toggleable", "toggleon", object_id=mug)


def test_microwave_runs_only_closed(kitchen: tuple[HouseholdEnv, OracleSolver]) -> None:
    env, solver = kitchen
    potato, oven = _first(env, "Potato"), _first(env, "Microwave")
    solver.put(potato, oven)
    assert env.world.objects[oven].state.isOpen
    assert "close Microwave_1 first" in rejected(env, "must_be_closed", "toggleon", object_id=oven).message
    ok(env, "close", object_id=oven)
    ok(env, "toggleon", object_id=oven)
    potato_state = env.world.objects[potato].state
    assert potato_state.isCooked and potato_state.temperature == "Hot"
    result = ok(env, "open", object_id=oven)
    assert not env.world.objects[oven].state.isToggled and "switched Microwave_1 off" in result.message


def test_cooking_needs_a_lit_burner(kitchen: tuple[HouseholdEnv, OracleSolver]) -> None:
    env, solver = kitchen
    egg, pan = _first(env, "Egg"), _first(env, "Pan")
    burner = solver._burner_for(pan)
    solver.put(pan, burner)
    solver.put(egg, pan)
    assert not env.world.objects[egg].state.isCooked  # burner still off
    solver.switch_on(burner)
    egg_state = env.world.objects[egg].state
    assert egg_state.isCooked and egg_state.temperature == "Hot"
    assert env.world.objects[pan].state.temperature == "Hot"
    # taking the egg out keeps it cooked; cookware itself is never "cooked"
    solver.hold(egg)
    assert egg_state.isCooked and not env.world.objects[pan].state.isCooked


def test_fridge_chills_and_contents_move_with_their_receptacle(
    kitchen: tuple[HouseholdEnv, OracleSolver],
) -> None:
    env, solver = kitchen
    apple, bowl, fridge = _first(env, "Apple"), _first(env, "Bowl"), _first(env, "Fridge")
    assert env.world.objects[apple].state.temperature == "RoomTemp"
    solver.put(apple, bowl)
    solver.hold(bowl)
    assert env.world.position(apple)[:2] == pytest.approx(env.world.position(bowl)[:2], abs=0.2)
    solver.put(bowl, fridge)
    assert env.world.objects[apple].state.temperature == "Cold"
    assert env.world.objects[bowl].state.temperature == "Cold"
    assert env.world.ancestors(apple) == [bowl, fridge]


def test_coffee_machine_fills_only_empty_mugs(kitchen: tuple[HouseholdEnv, OracleSolver]) -> None:
    env, solver = kitchen
    mug, machine = _first(env, "Mug"), _first(env, "CoffeeMachine")
    solver.fill_with_water(mug)
    solver.put(mug, machine)
    ok(env, "toggleon", object_id=machine)
    assert env.world.objects[mug].state.fillLiquid == "water"  # a full mug gets no coffee
    ok(env, "toggleoff", object_id=machine)
    solver.empty(mug)
    solver.put(mug, machine)
    ok(env, "toggleon", object_id=machine)
    state = env.world.objects[mug].state
    assert state.isFilledWithLiquid and state.fillLiquid == "coffee" and state.temperature == "Hot"


def test_running_faucet_cleans_and_fills_what_is_in_the_sink(
    kitchen: tuple[HouseholdEnv, OracleSolver],
) -> None:
    env, solver = kitchen
    dirty = next(o.object_id for o in env.world.of_type("Mug") if o.state.isDirty)
    sink = _first(env, "Sink")
    faucet = next(o.object_id for o in env.world.of_type("Faucet") if o.controls == sink)
    solver.put(dirty, sink)
    assert env.world.objects[dirty].state.isDirty
    result = ok(env, "toggleon", object_id=faucet)
    state = env.world.objects[dirty].state
    assert not state.isDirty and state.fillLiquid == "water"
    assert f"{dirty} isDirty=False" in result.message


def test_filling_needs_a_running_faucet_within_reach(kitchen: tuple[HouseholdEnv, OracleSolver]) -> None:
    env, solver = kitchen
    rejected(env, "hands_empty", "fillheldobjectwithwater")
    apple, cup, faucet = _first(env, "Apple"), _first(env, "Cup"), _first(env, "Faucet")
    solver.hold(apple)
    rejected(env, "not_fillable", "fillheldobjectwithwater")
    solver.hold(cup)
    _teleport_far_from(env, faucet)
    rejected(env, "no_water_source", "fillheldobjectwithwater")
    solver.approach(faucet)
    assert "toggleon Faucet_1 first" in rejected(env, "faucet_off", "fillheldobjectwithwater").message
    ok(env, "toggleon", object_id=faucet)
    ok(env, "fillheldobjectwithwater")
    assert env.world.objects[cup].state.fillLiquid == "water"
    rejected(env, "already_filled", "fillheldobjectwithwater")


def test_pouring_waters_the_plant_and_empties_into_the_sink(
    kitchen: tuple[HouseholdEnv, OracleSolver],
) -> None:
    env, solver = kitchen
    can, plant, sink = _first(env, "WateringCan"), _first(env, "HousePlant"), _first(env, "Sink")
    solver.hold(can)
    solver.approach(plant)
    assert (
        "fillheldobjectwithwater first"
        in rejected(env, "empty_container", "pourwaterinto", object_id=plant).message
    )
    solver.fill_with_water(can)
    counter = _first(env, "CounterTop")
    solver.approach(counter)
    rejected(env, "not_fillable", "pourwaterinto", object_id=counter)
    solver.approach(plant)
    result = ok(env, "pourwaterinto", object_id=plant)
    assert result.message.startswith("Watered")
    assert env.world.objects[plant].state.fillLiquid == "water"
    assert not env.world.objects[can].state.isFilledWithLiquid
    solver.fill_with_water(can)
    solver.approach(plant)
    rejected(env, "already_filled", "pourwaterinto", object_id=plant)
    solver.approach(sink)
    ok(env, "pourwaterinto", object_id=sink)
    assert not env.world.objects[can].state.isFilledWithLiquid


def test_slicing_needs_a_knife(kitchen: tuple[HouseholdEnv, OracleSolver]) -> None:
    env, solver = kitchen
    tomato, knife, mug = _first(env, "Tomato"), _first(env, "Knife"), _first(env, "Mug")
    solver.approach(tomato)
    assert "pickup a Knife first" in rejected(env, "no_slicing_tool", "slice", object_id=tomato).message
    solver.hold(knife)
    solver.approach(mug)
    rejected(env, "not_sliceable", "slice", object_id=mug)
    solver.approach(tomato)
    ok(env, "slice", object_id=tomato)
    assert env.world.objects[tomato].state.isSliced
    rejected(env, "already_sliced", "slice", object_id=tomato)


def test_broken_containers_hold_no_water(kitchen: tuple[HouseholdEnv, OracleSolver]) -> None:
    env, solver = kitchen
    cup, faucet = _first(env, "Cup"), _first(env, "Faucet")
    env.world.objects[cup].state.isBroken = True  # test setup: no action breaks things
    solver.hold(cup)
    solver.approach(faucet)
    ok(env, "toggleon", object_id=faucet)
    rejected(env, "broken", "fillheldobjectwithwater")


def test_search_reveals_or_names_the_closed_receptacle(kitchen: tuple[HouseholdEnv, OracleSolver]) -> None:
    env, _ = kitchen
    result = ok(env, "search", query="egg")
    fridge = _first(env, "Fridge")
    assert result.observation["found"] is None and result.observation["container"] == fridge
    assert f"Open {fridge}" in result.message
    assert env.is_discovered(fridge) and not any(
        env.is_discovered(e.object_id) for e in env.world.of_type("Egg")
    )
    ok(env, "open", object_id=fridge)
    assert all(env.is_discovered(e.object_id) for e in env.world.of_type("Egg"))
    found = ok(env, "search", query="Spatula")
    spatula = found.observation["found"]
    assert spatula is not None and env.is_discovered(spatula) and env.is_interactable(spatula)
    missing = rejected(env, "nothing_found", "search", query="Banana")
    assert "neither a known object type" in missing.message


def test_search_understands_readable_type_names(kitchen: tuple[HouseholdEnv, OracleSolver]) -> None:
    from scenerag.sim.household.actions import match_object_types

    assert match_object_types("light switch") == match_object_types("light_switch") == ["LightSwitch"]
    assert match_object_types("light") == ["LightSwitch"] and match_object_types("knob") == ["StoveKnob"]
    assert match_object_types("eggs") == ["Egg"] and match_object_types("tomatoes") == ["Tomato"]
    assert match_object_types("pot") == ["Pot"]  # a whole word, not the start of Potato
    assert match_object_types("stove") == ["StoveBurner", "StoveKnob"]
    assert match_object_types("banana") == [] and match_object_types(" ") == []
    env, _ = kitchen
    found = ok(env, "search", query="coffee machine")
    assert found.observation["found"] == _first(env, "CoffeeMachine")
    ambiguous = rejected(env, "nothing_found", "search", query="stove")
    assert "StoveBurner, StoveKnob" in ambiguous.message
    by_id = ok(env, "search", query=_first(env, "Sink").lower())
    assert by_id.observation["found"] == _first(env, "Sink")


def test_adjustpositioning_looks_all_around(kitchen: tuple[HouseholdEnv, OracleSolver]) -> None:
    env, solver = kitchen
    fridge = _first(env, "Fridge")
    solver.approach(fridge)
    ahead = env.visible_now(scan=False)
    result = ok(env, "adjustpositioning")
    assert result.observation["focus"] == fridge
    assert env.visible >= ahead and len(env.visible) > len(ahead)
    assert env.world.places[env.world.agent.place].index == env.world.place_of(fridge)


def test_randomlyexplore_visits_new_places_deterministically() -> None:
    runs = []
    for _ in range(2):
        env = HouseholdEnv("galley", 3)
        start = env.world.places[env.world.agent.place].symbol
        steps = len(env.world.places) - 1
        places = [ok(env, "randomlyexplore").observation["place"] for _ in range(steps)]
        assert sorted([*places, start]) == sorted(p.symbol for p in env.world.places)
        assert "every location has been explored" in ok(env, "randomlyexplore").message
        runs.append((places, list(env.discovered)))
    assert runs[0] == runs[1]


@pytest.mark.parametrize(
    ("name", "arguments", "hint"),
    [
        ("placeon", {"receptacle_id": "CounterTop_1"}, "pickup an object first"),
        ("drop", {}, "there is nothing to put down"),
        ("fillheldobjectwithwater", {}, "pickup a container first"),
        ("pourwaterinto", {"object_id": "Sink_1"}, "pickup a filled container first"),
    ],
)
def test_actions_on_the_held_object_fail_with_an_empty_hand(
    kitchen: tuple[HouseholdEnv, OracleSolver], name: str, arguments: dict[str, str], hint: str
) -> None:
    """Every action on the held object refuses an empty hand the same way, before looking at its argument:
    ``hands_empty``, "you are not holding anything; " and what to do first."""
    env, _ = kitchen
    assert env.held is None
    failure = rejected(env, "hands_empty", name, **arguments)
    assert failure.message == f"you are not holding anything; {hint}"
