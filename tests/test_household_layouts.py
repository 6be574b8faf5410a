"""Kitchen layouts of ``scenerag.sim.household``: contents, geometry, distractors and determinism."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from scenerag.sim.household import (
    CATALOG,
    DISTRACTOR_SETTINGS,
    DISTRACTOR_TYPES,
    KITCHEN_TYPES,
    LAYOUT_STYLES,
    TASKS,
    LayoutConfig,
    LayoutConfigError,
    World,
    build_world,
)
from scenerag.sim.household.catalog import FLOOR
from scenerag.sim.household.layouts import OPTIONAL_TYPES
from scenerag.sim.household.world import AGENT_SENSOR_HEIGHT_M

INTERACTION_M = 1.5
SEEDS = (0, 1, 2, 3)


@pytest.fixture(
    scope="module",
    params=[(style, seed) for style in LAYOUT_STYLES for seed in SEEDS],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
def world(request: pytest.FixtureRequest) -> World:
    style, seed = request.param
    return build_world(LayoutConfig(style, seed, 290))


def test_at_least_four_styles() -> None:
    assert len(LAYOUT_STYLES) >= 4 and DISTRACTOR_SETTINGS == (0, 290, 1135)


def test_every_kitchen_type_is_present(world: World) -> None:
    counts = Counter(o.object_type for o in world.objects.values())
    required = set(KITCHEN_TYPES) - set(OPTIONAL_TYPES)
    assert required <= set(counts), required - set(counts)
    assert counts["Fridge"] == 1 and counts["StoveBurner"] == counts["StoveKnob"] == 4
    assert counts["Sink"] == counts["Faucet"] == 1


def test_initial_states(world: World) -> None:
    for obj in world.objects.values():
        state = obj.state
        assert not state.isOpen and state.openness == 0.0, obj.object_id
        assert not state.isToggled and not state.isPickedUp and not state.isCooked and not state.isSliced
        if not obj.spec.is_distractor and obj.object_type not in (
            "Mug",
            *("Plate", "Bowl", "Cup", "Pan", "Pot"),
        ):
            assert not state.isDirty
    assert any(m.state.isDirty for m in world.of_type("Mug"))
    assert sum(s.state.isUsedUp for s in world.of_type("SoapBottle")) == 1
    for obj in world.of_type("Fridge"):
        assert all(world.objects[o].state.temperature == "Cold" for o in world.descendants(obj.object_id))
    assert world.agent.held is None


def test_containment_is_consistent(world: World) -> None:
    for obj in world.objects.values():
        if obj.parent is None:
            continue
        holder = world.objects[obj.parent]
        assert holder.spec.receptacle is not None
        assert holder.object_type in obj.spec.placeable_in, (obj.object_id, holder.object_id)
        assert obj.object_id in world.children(holder.object_id)
    for obj in world.objects.values():
        capacity = obj.spec.receptacle.capacity if obj.spec.receptacle else None
        if capacity is not None:
            assert len(world.children(obj.object_id)) <= capacity
    floor_items = [o for o in world.objects.values() if o.parent is None and o.spec.kind == "item"]
    assert all(FLOOR in o.spec.placeable_in for o in floor_items)
    faucets = list(world.of_type("Faucet"))
    assert all(world.objects[f.controls].object_type == "Sink" for f in faucets if f.controls)
    knobs = {k.controls for k in world.of_type("StoveKnob")}
    assert knobs == {b.object_id for b in world.of_type("StoveBurner")}


def test_geometry_every_object_reachable_from_its_place(world: World) -> None:
    width, depth = world.room_size
    for place in world.places:
        x, y, _ = place.position
        assert 0.2 < x < width - 0.2 and 0.2 < y < depth - 0.2
    for object_id in world.objects:
        px, py, _ = world.places[world.place_of(object_id)].position
        position = world.position(object_id)
        assert 0.0 <= position[0] <= width and 0.0 <= position[1] <= depth and 0.0 <= position[2] <= 2.2
        assert math.dist((px, py, AGENT_SENSOR_HEIGHT_M), position) <= INTERACTION_M, object_id


@pytest.mark.parametrize("n_distractors", DISTRACTOR_SETTINGS)
def test_distractor_counts_and_plausible_spots(n_distractors: int) -> None:
    world = build_world(LayoutConfig("island", 7, n_distractors))
    distractors = [o for o in world.objects.values() if o.spec.is_distractor]
    assert len(distractors) == n_distractors
    for obj in distractors:
        where = world.objects[obj.parent].object_type if obj.parent else FLOOR
        assert where in obj.spec.placeable_in
    if n_distractors:
        assert len({o.object_type for o in distractors}) > 20
        spots = Counter(world.objects[o.parent].object_type if o.parent else FLOOR for o in distractors)
        assert {"CounterTop", "Cabinet", "Drawer", "DiningTable", FLOOR} <= set(spots)


def test_distractors_do_not_change_the_kitchen() -> None:
    plain = build_world(LayoutConfig("l_shape", 3, 0))
    cluttered = build_world(LayoutConfig("l_shape", 3, 1135))
    for object_id, obj in plain.objects.items():
        other = cluttered.objects[object_id]
        assert (other.symbol, other.parent, other.state) == (obj.symbol, obj.parent, obj.state)
        assert cluttered.position(object_id) == pytest.approx(plain.position(object_id))
    assert cluttered.places == plain.places and cluttered.agent == plain.agent


def test_distractor_types_are_disjoint_from_task_types() -> None:
    task_types = {t for task in TASKS for t in task.required_types}
    task_types |= {t for task in TASKS for r in task.requirements for t in (*r.types, *r.inside)}
    assert not task_types & set(DISTRACTOR_TYPES)
    assert set(DISTRACTOR_TYPES) | set(KITCHEN_TYPES) == set(CATALOG)


def test_layouts_are_deterministic_and_vary_by_seed() -> None:
    def signature(config: LayoutConfig) -> tuple[object, ...]:
        w = build_world(config)
        return w.room_size, [(o.object_id, o.parent, w.position(o.object_id)) for o in w.objects.values()]

    for style in LAYOUT_STYLES:
        assert signature(LayoutConfig(style, 11, 290)) == signature(LayoutConfig(style, 11, 290))
        assert signature(LayoutConfig(style, 11, 0)) != signature(LayoutConfig(style, 12, 0))


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        (LayoutConfig("castle", 0, 0), "unknown layout style 'castle'"),
        (LayoutConfig("galley", 0, -1), "n_distractors must be an integer"),
        (LayoutConfig("galley", 0, 10**9), "n_distractors must be an integer"),
        (LayoutConfig("galley", "1", 0), "seed must be an integer"),  # type: ignore[arg-type]
    ],
)
def test_bad_configs_raise_clear_errors(config: LayoutConfig, needle: str) -> None:
    with pytest.raises(LayoutConfigError) as info:
        build_world(config)
    assert needle in str(info.value)
