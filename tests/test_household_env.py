"""Partial observability, the tool API and determinism of ``scenerag.sim.household.HouseholdEnv``."""

from __future__ import annotations

import json
import math

import pytest

from scenerag.sim.household import (
    ACTIONS,
    ATTRIBUTE_NAMES,
    HouseholdEnv,
    HouseholdError,
    LayoutConfig,
    OracleSolver,
    describe_tools,
    tool_specs,
)

ACTION_NAMES = {
    "randomlyexplore",
    "getdiscoveredobjects",
    "getvisibleobjects",
    "moveto",
    "inspect",
    "pickup",
    "placeon",
    "drop",
    "open",
    "close",
    "toggleon",
    "toggleoff",
    "search",
    "fillheldobjectwithwater",
    "pourwaterinto",
    "adjustpositioning",
    "slice",
}


def test_attribute_names_are_the_papers_28() -> None:
    assert len(ATTRIBUTE_NAMES) == 28 == len(set(ATTRIBUTE_NAMES))
    assert ATTRIBUTE_NAMES[0] == "visible" and ATTRIBUTE_NAMES[-1] == "distance"
    assert {"temperature", "isHeatSource", "isColdSource", "salientMaterials", "openness"} <= set(
        ATTRIBUTE_NAMES
    )


def test_initial_view_is_partial_and_honest() -> None:
    env = HouseholdEnv("u_shape", 1)
    world = env.world
    assert 0 < len(env.discovered) < len(world.objects)
    assert env.visible <= set(env.discovered)
    for object_id in env.visible:
        if world.is_held(object_id):
            continue
        assert world.closed_enclosure(object_id) is None
        # visible objects are within range, or hold something that is
        in_range = [o for o in [object_id, *world.descendants(object_id)] if world.distance(o) <= 2.5 + 1e-9]
        assert in_range, object_id
    for object_id, seen in env.discovered.items():  # what the agent saw is the truth of that moment
        assert seen.state == world.objects[object_id].state
        assert seen.parent == world.objects[object_id].parent
        truth = world.attributes(
            object_id,
            visible=object_id in env.visible,
            interactable=env.is_interactable(object_id),
            distance=world.distance(object_id),
        )
        assert env.observed_attributes(object_id) == truth


def test_closed_receptacles_hide_their_contents_until_opened() -> None:
    env = HouseholdEnv("island", 2)
    solver = OracleSolver(env)
    fridge = next(o.object_id for o in env.world.of_type("Fridge"))
    inside = env.world.children(fridge)
    assert inside
    solver.approach(fridge)
    env.execute("adjustpositioning", {})
    assert fridge in env.visible and not any(env.is_discovered(o) for o in inside)
    result = env.execute("open", {"object_id": fridge})
    assert set(inside) <= set(result.observation["new_objects"])
    assert all(o in env.visible for o in inside)
    env.execute("close", {"object_id": fridge})
    assert not any(o in env.visible for o in inside)
    assert all(env.is_discovered(o) for o in inside)  # still remembered
    egg = inside[0]
    assert env.observed_attributes(egg)["visible"] is False
    assert "last seen 1 step(s) ago" in env.execute("inspect", {"object_id": egg}).message


def test_exploring_every_place_reveals_everything_not_shut_away() -> None:
    env = HouseholdEnv("l_shape", 4, 290)
    for _ in range(len(env.world.places)):
        env.execute("randomlyexplore", {})
    world = env.world
    open_air = {o for o in world.objects if world.closed_enclosure(o) is None}
    assert open_air <= set(env.discovered)
    shut = {o for o in world.objects if world.closed_enclosure(o) is not None}
    assert shut and not shut & set(env.discovered)
    assert env.known_places == {p.index for p in world.places}


def test_observation_payload_and_listing_actions() -> None:
    env = HouseholdEnv("galley", 0)
    result = env.execute("getdiscoveredobjects", {})
    assert result.success
    rows = result.observation["objects"]
    assert [r["object_id"] for r in rows] == list(env.discovered)
    assert all(r["type"] == env.world.objects[r["object_id"]].object_type for r in rows)
    visible = env.execute("getvisibleobjects", {}).observation["objects"]
    assert {r["object_id"] for r in visible} == env.visible & set(env.discovered)
    observation = result.observation
    assert observation["agent"]["place"].startswith("P") and observation["agent"]["holding"] is None
    json.dumps(observation)  # the payload is plain JSON
    some = rows[0]["object_id"]
    attributes = env.execute("inspect", {"object_id": some}).observation["attributes"]
    assert list(attributes) == list(ATTRIBUTE_NAMES)
    assert attributes["distance"] == pytest.approx(env.world.distance(some), abs=1e-3)


def test_objects_can_be_named_by_symbol_or_any_case() -> None:
    env = HouseholdEnv("galley", 0)
    object_id = next(iter(env.discovered))
    symbol = env.discovered[object_id].symbol
    assert env.resolve(symbol) == object_id
    assert env.resolve(object_id.upper()) == object_id
    assert env.execute("moveto", {"object_id": symbol}).success


def test_tool_specs_describe_every_action() -> None:
    specs = tool_specs()
    assert {s["name"] for s in specs} == ACTION_NAMES == set(ACTIONS)
    for spec in specs:
        schema = spec["parameters"]
        assert spec["description"] and schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
    by_name = {s["name"]: s for s in specs}
    assert by_name["placeon"]["parameters"]["required"] == ["receptacle_id"]
    assert by_name["search"]["parameters"]["required"] == ["query"]
    assert by_name["randomlyexplore"]["parameters"]["properties"] == {}
    assert by_name["adjustpositioning"]["parameters"]["required"] == []
    json.dumps(specs)
    text = describe_tools()
    assert "- moveto(object_id):" in text and "- adjustpositioning(object_id?):" in text
    assert HouseholdEnv("galley", 0).tool_specs() == specs


@pytest.mark.parametrize(
    ("name", "arguments", "needle"),
    [
        ("fly", {}, "unknown action 'fly'"),
        ("pick_up", {"object_id": "Mug_1"}, "Did you mean pickup"),
        ("pickup", {}, "pickup needs 'object_id'"),
        ("pickup", {"object_id": "Mug_1", "force": "yes"}, "does not take ['force']"),
        ("pickup", {"object_id": 3}, "must be a non-empty string"),
        ("pickup", ["Mug_1"], "arguments must be an object"),
        ("randomlyexplore", {"where": "P1"}, "it takes: no arguments"),
    ],
)
def test_malformed_calls_fail_with_clear_messages(name: str, arguments: object, needle: str) -> None:
    env = HouseholdEnv("galley", 0)
    step = env.step_count
    result = env.execute(name, arguments)  # type: ignore[arg-type]
    assert not result.success and needle in result.message
    assert result.observation["error"] in {"unknown_action", "bad_arguments"}
    assert env.step_count == step


def test_same_seed_same_episode_different_seed_different_kitchen() -> None:
    def episode(seed: int) -> tuple[object, ...]:
        env = HouseholdEnv("u_shape", seed, 290)
        messages = [env.execute("randomlyexplore", {}).message for _ in range(6)]
        messages.append(env.execute("search", {"query": "Mug"}).message)
        positions = {o: env.world.position(o) for o in env.world.objects}
        return messages, list(env.discovered), positions, env.world.room_size

    assert episode(5) == episode(5)
    assert episode(5) != episode(6)


def test_distance_attribute_follows_the_agent() -> None:
    env = HouseholdEnv("island", 0)
    target = next(iter(env.discovered))
    env.execute("moveto", {"object_id": target})
    near = env.observed_attributes(target)["distance"]
    assert near <= env.interaction_distance_m
    for _ in range(3):
        env.execute("randomlyexplore", {})
    far = env.observed_attributes(target)["distance"]
    x, y, z = env.world.agent_position()
    assert far == pytest.approx(math.dist((x, y, z), env.world.position(target)), abs=1e-3)


def test_sensing_options_are_validated() -> None:
    with pytest.raises(HouseholdError, match="interaction_distance_m"):
        HouseholdEnv("galley", 0, interaction_distance_m=3.0, visibility_distance_m=2.0)
    with pytest.raises(HouseholdError, match="field_of_view_deg"):
        HouseholdEnv("galley", 0, field_of_view_deg=0)
    narrow = HouseholdEnv.from_config(LayoutConfig("galley", 0), field_of_view_deg=30.0)
    wide = HouseholdEnv.from_config(LayoutConfig("galley", 0), field_of_view_deg=360.0)
    assert narrow.visible <= wide.visible and len(narrow.visible) < len(wide.visible)
    assert wide.visible == wide.visible_now(scan=True)


def test_listing_actions_mention_no_object_in_particular() -> None:
    """An inventory (getvisibleobjects, getdiscoveredobjects) names every object in sight and mentions
    none, so a retrieving planner does not pull them all into its next subgraph (a pillow listed as
    visible became pickable in a spatula task); a search mentions the object it found."""
    env = HouseholdEnv("galley", 0)
    visible = env.execute("getvisibleobjects", {})
    assert visible.success and visible.observation["objects"] and visible.mentions == []
    assert env.execute("getdiscoveredobjects", {}).mentions == []
    found = env.execute("search", {"query": "Fridge"})
    assert found.success and found.mentions[:1] == ["Fridge_1"]
