"""Affordances the object's state or the held object forbid, against the real household simulator: the
``drop`` action (a held object that fits no receptacle can always be set down), ``toggleon`` left out
for a broken object or an appliance that runs only shut while it is open, ``placeon`` offered only for
receptacles the held object goes in or on, ``slice``/``fillheldobjectwithwater``/``pourwaterinto`` only
with a held object that can do it; and a scripted episode that recovers from picking up such an object."""

from __future__ import annotations

from typing import Any

from tests.test_embodied_planner import Router, act, run

from scenerag.agents.embodied import HOUSEHOLD, AgentKind, EmbodiedPlanner, HouseholdEpisode
from scenerag.agents.embodied.menu import ActionMenu, build_menu
from scenerag.graph import ontology as ont
from scenerag.sim.household import HouseholdEnv
from scenerag.sim.household.attributes import AFFORDANCE_ATTRIBUTES
from scenerag.sim.household.catalog import CATALOG, FLOOR


class _NoModel:
    """A chat model the test never calls (the planner only builds menus and prompts here)."""

    name = "none"

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def _menu(episode: HouseholdEpisode) -> ActionMenu:
    graph, _ = episode.observe()
    return EmbodiedPlanner(_NoModel(), AgentKind.FULL_MEM, HOUSEHOLD).menu(graph, None)


def _found(episode: HouseholdEpisode, query: str) -> str:
    result = episode.execute("search", {"query": query})
    assert result.success, result.message
    found = result.observation.get("found")
    assert isinstance(found, str), result.message
    return found


# -- the simulator ------------------------------------------------------------------------------------
def test_drop_sets_the_held_object_on_the_floor_where_the_robot_stands() -> None:
    env = HouseholdEnv("l_shape", 0, 0)
    assert env.act("drop").error == "hands_empty"
    assert env.act("search", query="Mug").success and env.act("pickup", object_id="Mug_1").success
    place = env.world.agent.place
    result = env.act("drop")
    assert result.success and result.message.startswith(f"Put Mug_1 down on the floor at P{place}")
    mug = env.world.objects["Mug_1"]
    assert env.held is None and mug.parent is None and not mug.state.isPickedUp
    assert env.world.place_of("Mug_1") == place and env.is_interactable("Mug_1") and "Mug_1" in env.visible
    assert env.discovered["Mug_1"].parent is None and not env.discovered["Mug_1"].held
    graph = env.scene_graph()
    node = next(n for n in graph.nodes(ont.OBJECT) if n.attributes["objectId"] == "Mug_1")
    assert [p.symbol for p in graph.parents(node.symbol, ont.CONTAINS)] == [f"P{place}"]
    assert env.act("pickup", object_id="Mug_1").success  # it can be taken up again from the floor


def test_an_object_that_fits_no_receptacle_is_put_down_not_stuck_in_the_hand() -> None:
    """A garbage bag goes on the floor only: placeon is refused with a message naming drop, which works."""
    env = HouseholdEnv("l_shape", 0, 290)
    assert CATALOG["GarbageBag"].placeable_in == (FLOOR,)
    bag = env.act("search", query="GarbageBag").observation["found"]
    assert env.act("pickup", object_id=bag).success
    counter = env.act("search", query="CounterTop").observation["found"]
    refused = env.act("placeon", receptacle_id=counter)
    assert refused.error == "incompatible_receptacle"
    assert "goes on no receptacle" in refused.message and "drop" in refused.message
    assert env.act("drop").success and env.held is None


def test_every_type_lists_only_catalog_receptacles_it_fits() -> None:
    for spec in CATALOG.values():
        assert isinstance(spec.placeable_in, tuple), spec.name  # ("Floor") once was a string
        facts = spec.affordance_facts()
        assert tuple(facts) == AFFORDANCE_ATTRIBUTES
        assert all(t in CATALOG for t in facts["fitsIn"]), spec.name


# -- the menu against the simulator ------------------------------------------------------------------------
def test_toggleon_is_not_offered_for_an_open_appliance_that_runs_only_shut() -> None:
    episode = HouseholdEpisode.create("l_shape", 0, 0)
    microwave = _found(episode, "Microwave")
    assert episode.execute("open", {"object_id": microwave}).success
    opened = _menu(episode)
    assert f"toggleon({microwave})" not in opened.calls() and f"close({microwave})" in opened.calls()
    reply = opened.parse(f"Thought: x\nAction: toggleon({microwave})")
    assert reply.error is not None and "runsOnlyClosed=true, isOpen=true" in reply.error
    assert episode.execute("toggleon", {"object_id": microwave}).error == "must_be_closed"  # agrees
    assert episode.execute("close", {"object_id": microwave}).success
    assert f"toggleon({microwave})" in _menu(episode).calls()
    assert episode.execute("toggleon", {"object_id": microwave}).success


def test_toggleon_is_not_offered_for_a_broken_object() -> None:
    objects: dict[str, dict[str, Any]] = {
        "CellPhone_1": {"toggleable": True, "isToggled": False, "isBroken": False, "isInteractable": True},
        "CellPhone_2": {"toggleable": True, "isToggled": False, "isBroken": True, "isInteractable": True},
    }
    menu = build_menu(HOUSEHOLD.actions, ["toggleon", "done"], objects, holding=False)
    assert menu.calls() == ["toggleon(CellPhone_1)"]


def test_placeon_offers_only_receptacles_the_held_object_fits_and_drop_always() -> None:
    episode = HouseholdEpisode.create("l_shape", 0, 290)
    bag = _found(episode, "GarbageBag")
    assert episode.execute("pickup", {"object_id": bag}).success
    counter = _found(episode, "CounterTop")
    holding_bag = _menu(episode)
    assert holding_bag.action("placeon") is None and holding_bag.action("drop") is not None
    reply = holding_bag.parse(f"Thought: x\nAction: placeon({counter})")
    assert reply.error is not None and "does not go in or on a CounterTop" in reply.error
    assert episode.execute("drop", {}).success
    apple = _found(episode, "Apple")
    assert episode.execute("pickup", {"object_id": apple}).success
    holding_apple = _menu(episode)
    offered = holding_apple.action("placeon")
    assert offered is not None and offered.choices[0]
    for receptacle in offered.choices[0]:
        kind = episode.env.world.objects[receptacle].object_type
        assert kind in CATALOG["Apple"].placeable_in, receptacle


def test_slice_is_offered_only_holding_something_that_slices() -> None:
    episode = HouseholdEpisode.create("l_shape", 0, 0)
    tomato = _found(episode, "Tomato")
    assert episode.execute("pickup", {"object_id": tomato}).success
    holding_tomato = _menu(episode)
    assert holding_tomato.action("slice") is None
    assert holding_tomato.action("fillheldobjectwithwater") is None  # a tomato holds no water
    reply = holding_tomato.parse(f"Thought: x\nAction: slice({tomato})")
    assert reply.error is not None and "canSlice=true" in reply.error
    assert episode.execute("drop", {}).success
    knife = next(o for o in episode.env.world.objects if o.startswith("Knife_"))
    enclosure = episode.env.world.closed_enclosure(knife)
    if enclosure is not None:  # search names the closed drawer the knife is in
        assert episode.execute("search", {"query": "Knife"}).observation["container"] == enclosure
        assert episode.execute("open", {"object_id": enclosure}).success
    else:
        assert _found(episode, "Knife") == knife
    assert episode.execute("pickup", {"object_id": knife}).success
    assert episode.execute("moveto", {"object_id": tomato}).success
    sliceable = _menu(episode).action("slice")
    assert sliceable is not None and tomato in (sliceable.choices[0] or ())


def test_prompts_never_show_the_affordance_only_attributes() -> None:
    """Full-Mem's lines show every attribute but these (they would inflate its prompts)."""
    episode = HouseholdEpisode.create("l_shape", 0, 0)
    _found(episode, "Microwave")
    graph, _ = episode.observe()
    planner = EmbodiedPlanner(_NoModel(), AgentKind.FULL_MEM, HOUSEHOLD)
    text, count = planner.context_text(graph, None, planner.menu(graph, None))
    assert count > 0 and "toggleable=" in text
    assert not any(f"{name}=" in text for name in AFFORDANCE_ATTRIBUTES)


# -- an episode -----------------------------------------------------------------------------------------
def test_an_episode_recovers_from_picking_up_an_object_that_fits_nowhere() -> None:
    """easy_12 (a potato in the garbage can) among 290 distractors: the scripted model first picks up a
    garbage bag (as the live model did), is offered no receptacle for it, sets it down with drop and
    does the task; an object set down stays on the menu for pickup (a task object put down by mistake must
    stay reachable)."""
    probe = HouseholdEnv("l_shape", 0, 290)
    bag = probe.act("search", query="GarbageBag").observation["found"]
    potato = probe.act("search", query="Potato").observation["found"]
    can = probe.act("search", query="GarbageCan").observation["found"]
    router = Router(
        [
            act("search", "GarbageBag"),
            act("pickup", bag),
            act("placeon", "CounterTop_5"),
            act("drop"),
            act("search", "Potato"),
            act("pickup", potato),
            act("search", "GarbageCan"),
            act("placeon", can),
        ],
        entities=[{"name": "potato", "attributes": []}, {"name": "garbage can", "attributes": []}],
    )
    result, _ = run("embodiedrag-feedback", router, "easy_12", distractors=290, max_steps=10, list_calls=True)
    steps = result.trajectory
    assert [s.action for s in steps[:4]] == ["search", "pickup", "placeon", "drop"]
    refused = steps[2].observation  # nothing takes a garbage bag: placeon is not on the menu, drop is
    assert steps[2].cause == "invalid_reply" and "'placeon' is not an action you can take now" in refused
    assert "drop" in refused
    assert steps[3].ok and "down on the floor" in steps[3].observation
    after_drop = router.prompts[4][-1].content
    assert f"pickup({bag})" in after_drop  # the listed calls (--list-calls) offer it again
    assert result.success, [(s.action, s.arguments, s.observation[:80]) for s in steps]


def test_the_robot_faces_what_it_handles_so_a_placed_object_leaves_its_hand() -> None:
    """easy_06's kitchen: the tomato is put on a counter beside the robot's camera cone; the robot turns to
    the counter as it places it, so the next observation no longer shows the tomato in its hand (it did,
    and the planner was told "I hold Tomato_1" after the tomato was put down)."""
    episode = HouseholdEpisode.create("single_wall", 0, 290)
    for action, arguments in (
        ("search", {"query": "Tomato"}),
        ("pickup", {"object_id": "Tomato_1"}),
        ("adjustpositioning", {}),
        ("placeon", {"receptacle_id": "CounterTop_3"}),
    ):
        assert episode.execute(action, arguments).success, action
    graph, _ = episode.observe()
    seen = episode.env.discovered["Tomato_1"]
    assert not seen.held and seen.parent == "CounterTop_3"
    assert next(iter(graph.nodes(ont.AGENT))).attributes["holding"] != "Tomato_1"
    assert not any(graph.children(a.symbol, "HOLDS") for a in graph.nodes(ont.AGENT))
