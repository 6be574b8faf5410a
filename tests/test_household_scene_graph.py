"""Scene-graph export of the agent's discovered kitchen and incremental diffs between snapshots."""

from __future__ import annotations

import pytest

from scenerag.graph import ontology as ont
from scenerag.graph.io.native import graph_from_dict, graph_to_dict
from scenerag.graph.model import SceneGraph
from scenerag.sim.household import (
    ATTRIBUTE_NAMES,
    CATALOG,
    HouseholdEnv,
    OracleSolver,
    SceneGraphDiff,
    SceneGraphTracker,
    diff_scene_graphs,
    export_scene_graph,
)
from scenerag.sim.household.scene_graph import AGENT_SYMBOL, HOLDS, ROOM_SYMBOL


def _object_node(graph: SceneGraph, object_id: str) -> str:
    return next(n.symbol for n in graph.nodes(ont.OBJECT) if n.attributes["objectId"] == object_id)


def test_export_matches_what_the_agent_knows() -> None:
    env = HouseholdEnv("island", 3, 290)
    for _ in range(4):
        env.execute("randomlyexplore", {})
    graph = env.scene_graph()
    counts = graph.label_counts()
    assert counts[ont.OBJECT] == len(env.discovered)
    assert counts[ont.PLACE] == len(env.known_places) and counts[ont.ROOM] == 1 and counts[ont.AGENT] == 1
    assert graph.metadata["n_distractors"] == 290 and graph.metadata["step"] == env.step_count
    for node in graph.nodes():
        node.validate()
    for node in graph.nodes(ont.OBJECT):
        object_id = node.attributes["objectId"]
        assert node.class_name == env.world.objects[object_id].object_type in CATALOG
        assert list(node.attributes)[:28] == list(ATTRIBUTE_NAMES)
        observed = {k: "none" if v is None else v for k, v in env.observed_attributes(object_id).items()}
        assert node.attributes == {
            **observed,
            "objectId": object_id,
            "receptacle": env.world.objects[object_id].spec.is_receptacle,
            **env.world.objects[object_id].spec.affordance_facts(),
        }
        assert None not in node.attributes.values()
        assert node.description and object_id in node.description
        parents = graph.parents(node.symbol)
        assert len(parents) <= 1
        seen_parent = env.discovered[object_id].parent
        if seen_parent is not None:
            assert parents[0].attributes["objectId"] == seen_parent
        elif parents:
            assert parents[0].label == ont.PLACE
    undiscovered = set(env.world.objects) - set(env.discovered)
    assert undiscovered and not undiscovered & {n.attributes["objectId"] for n in graph.nodes(ont.OBJECT)}
    assert [p.label for p in graph.parents(AGENT_SYMBOL)] == [ont.PLACE]
    assert all(
        p.symbol == ROOM_SYMBOL for place in graph.nodes(ont.PLACE) for p in graph.parents(place.symbol)
    )
    assert graph.edge_type_counts()[ont.PLACE_CONNECTED] > 0


def test_export_round_trips_through_the_native_format() -> None:
    env = HouseholdEnv("galley", 1)
    env.execute("search", {"query": "Mug"})
    graph = env.scene_graph()
    again = graph_from_dict(graph_to_dict(graph))
    assert again.summary() == graph.summary()
    assert diff_scene_graphs(graph, again).is_empty


def test_diffs_follow_the_robot() -> None:
    env = HouseholdEnv("l_shape", 0)
    solver = OracleSolver(env)
    tracker = SceneGraphTracker(env)
    graph, diff = tracker.update()
    assert set(diff.added_nodes) == {n.symbol for n in graph.nodes()} and not diff.changed_nodes
    assert set(diff.added_edges) == {e.key for e in graph.edges()}

    env.execute("getvisibleobjects", {})  # looking changes nothing
    assert tracker.update()[1].is_empty

    fridge = next(o.object_id for o in env.world.of_type("Fridge"))
    solver.approach(fridge)
    tracker.update()
    env.execute("open", {"object_id": fridge})
    graph, diff = tracker.update()
    fridge_node = _object_node(graph, fridge)
    assert set(diff.changed_nodes[fridge_node]) == {"description", "isOpen", "openness"}
    contents = {env.discovered[o].symbol for o in env.world.children(fridge)}
    assert contents and contents <= set(diff.added_nodes)
    assert {(fridge_node, ont.CONTAINS, c) for c in contents} <= set(diff.added_edges)
    assert fridge_node in diff.touched_nodes()

    egg = next(o.object_id for o in env.world.of_type("Egg"))
    env.execute("pickup", {"object_id": egg})
    graph, diff = tracker.update()
    egg_node = _object_node(graph, egg)
    assert diff.added_edges == ((AGENT_SYMBOL, HOLDS, egg_node),)
    assert diff.removed_edges == ((fridge_node, ont.CONTAINS, egg_node),)
    assert "isPickedUp" in diff.changed_nodes[egg_node] and "holding" in diff.changed_nodes[AGENT_SYMBOL]
    assert not diff.removed_nodes


def test_agent_relative_attributes_are_ignored_by_default() -> None:
    env = HouseholdEnv("u_shape", 2)
    quiet, noisy = SceneGraphTracker(env), SceneGraphTracker(env, ignore_attributes=())
    quiet.update()
    noisy.update()
    target = next(o for o in env.discovered if env.world.objects[o].parent is None)
    env.execute("moveto", {"object_id": target})
    _, calm = quiet.update()
    _, busy = noisy.update()
    objects = {n.symbol for n in quiet.graph.nodes(ont.OBJECT)} if quiet.graph else set()
    assert not objects & set(calm.changed_nodes), calm.changed_nodes  # objects did not change, the robot did
    assert AGENT_SYMBOL in calm.changed_nodes
    assert any("distance" in keys for keys in busy.changed_nodes.values())
    assert calm.added_nodes == busy.added_nodes


def test_diff_reports_removals_and_summary() -> None:
    env = HouseholdEnv("galley", 0)
    before = export_scene_graph(env)
    after = export_scene_graph(env)
    victim = next(n.symbol for n in after.nodes(ont.OBJECT) if after.parents(n.symbol))
    lost_edges = {e.key for e in after.edges() if victim in (e.source, e.target)}
    after.remove_node(victim)
    diff = diff_scene_graphs(before, after)
    assert diff.removed_nodes == (victim,) and set(diff.removed_edges) == lost_edges
    assert victim not in diff.touched_nodes() and diff.touched_nodes()
    assert diff.summary() == f"+0 ~0 -1 nodes, +0 -{len(lost_edges)} edges"
    assert SceneGraphDiff().is_empty


@pytest.mark.parametrize("n_distractors", [0, 1135])
def test_export_scales_with_clutter(n_distractors: int) -> None:
    env = HouseholdEnv("island", 0, n_distractors)
    for _ in range(len(env.world.places)):
        env.execute("randomlyexplore", {})
    graph = env.scene_graph()
    distractors = sum(1 for n in graph.nodes(ont.OBJECT) if CATALOG[n.class_name].is_distractor)
    assert distractors <= n_distractors and (distractors > n_distractors // 4 or n_distractors == 0)
