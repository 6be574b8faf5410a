"""scenerag.planning on the real Hydra graph: plans per goal kind, validation, reduction, failure modes."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from conftest import APARTMENT
from scenerag import SceneGraph, read_scene_graph
from scenerag.lang.pddl_goal import HERACLES_DOMAIN
from scenerag.planning import (
    HERACLES_PLANNING_DOMAIN,
    GoalGroundingError,
    NavigationGraph,
    PlanningError,
    PlanResult,
    PlanStep,
    build_problem,
    graph_from_store,
    plan_for_goal,
    simulate_plan,
    solve,
    validate_with_unified_planning,
)
from scenerag.sim.outdoor import generate_outdoor_graph

# In the Hydra example, P3105 lies in hallway R2; R2 joins R1 (lounge), R3 and R4; R3 and R4 both lead to
# R5. P61369 is an isolated mesh place and P58530-P58531 a two-place island (both in R1).
START = "P3105"


@pytest.fixture(scope="module")
def nav(hydra_graph: SceneGraph) -> NavigationGraph:
    return NavigationGraph.from_scene_graph(hydra_graph)


def _plan(graph: SceneGraph, goal: str, **kwargs: object) -> PlanResult:
    kwargs.setdefault("start", START)
    result = plan_for_goal(graph, goal, **kwargs)  # type: ignore[arg-type]
    assert result.status == "solved", result.message
    assert result.validated
    check = simulate_plan(result.problem, result.plan)  # type: ignore[arg-type]
    assert check.valid and check.goal_reached, check.reason
    assert check.cost == result.cost
    return result


def _moves(result: PlanResult) -> list[PlanStep]:
    return [s for s in result.plan if s.action == "move"]


# ---------------------------------------------------------------------------------------------------
# Domain and export


def test_domain_covers_goal_predicates_and_parses_as_pddl(hydra_graph: SceneGraph, tmp_path: Path) -> None:
    for predicate, kinds in HERACLES_DOMAIN.predicates.items():
        declared = HERACLES_PLANNING_DOMAIN.predicates[predicate]
        assert len(declared.parameters) == len(kinds)
    problem = build_problem(hydra_graph, "(and (holding O17) (visited-room R4))", start=START)
    domain_path, problem_path = problem.write_pddl(tmp_path)
    assert "(:action pick-up" in domain_path.read_text()
    text = problem_path.read_text()
    assert "(at-place p3105)" in text and "(:goal (and (holding o17) (visited-room r4)))" in text

    from unified_planning.io import PDDLReader

    parsed = PDDLReader().parse_problem(str(domain_path), str(problem_path))
    assert {a.name for a in parsed.actions} == set(HERACLES_PLANNING_DOMAIN.actions)
    assert {o.name for o in parsed.all_objects} == {
        s.lower() for s in (*problem.places, *problem.objects, *problem.rooms)
    }


# ---------------------------------------------------------------------------------------------------
# Plans on the Hydra example


def test_visit_object_plan_ends_next_to_it(hydra_graph: SceneGraph, nav: NavigationGraph) -> None:
    result = _plan(hydra_graph, "(visited-object O9)")
    assert result.plan[-1] == PlanStep("goto-object", ("O9", nav.objects["O9"].place))
    moves = _moves(result)
    for previous, step in pairwise(moves):
        assert previous.args[1] == step.args[0]
        assert step.args[1] in nav.neighbors[step.args[0]]
    assert "go to O9 (seating) at" in result.render()


def test_holding_plan_inspects_then_picks_up(hydra_graph: SceneGraph) -> None:
    result = _plan(hydra_graph, "(holding O17)")
    actions = [s.action for s in result.plan]
    assert actions[-3:] == ["goto-object", "inspect", "pick-up"]
    assert "inspect O17 (storage)" in result.render()
    ok, message = validate_with_unified_planning(result.problem, result.plan)  # type: ignore[arg-type]
    assert ok, message


def test_room_goal_enters_and_stays(hydra_graph: SceneGraph, nav: NavigationGraph) -> None:
    result = _plan(hydra_graph, "(and (visited-room R3) (in-room R3))")
    assert result.plan[-1].args[1] in nav.room_places("R3")
    assert "enter R3 (hallway)" in result.render()


def test_disjunctive_goal_picks_one_branch_and_unified_planning_agrees(hydra_graph: SceneGraph) -> None:
    goal = "(or (holding O17) (visited-room R5))"
    satisficing = _plan(hydra_graph, goal)
    final = simulate_plan(satisficing.problem, satisficing.plan).final_atoms  # type: ignore[arg-type]
    assert ("holding", ("O17",)) in final or ("visited-room", ("R5",)) in final
    optimal = _plan(hydra_graph, goal, search="optimal")
    assert optimal.cost is not None and satisficing.cost is not None and optimal.cost <= satisficing.cost
    ok, message = validate_with_unified_planning(optimal.problem, optimal.plan)  # type: ignore[arg-type]
    assert ok, message


def test_unified_planning_problem_solves_with_its_fast_downward_engine(hydra_graph: SceneGraph) -> None:
    from up_fast_downward import FastDownwardPDDLPlanner

    problem = build_problem(
        hydra_graph, "(and (in-room R5) (or (holding O17) (not (visited-room R4))))", start=START
    )
    up_problem = problem.to_unified_planning().problem
    assert FastDownwardPDDLPlanner.supports(up_problem.kind)
    with FastDownwardPDDLPlanner() as planner:
        solved = planner.solve(up_problem, timeout=60)
    assert solved.plan is not None
    steps = [PlanStep(a.action.name, tuple(str(p) for p in a.actual_parameters)) for a in solved.plan.actions]
    assert simulate_plan(problem, steps).valid


def test_avoidance_detours_around_forbidden_room(hydra_graph: SceneGraph, nav: NavigationGraph) -> None:
    r3, r4 = set(nav.room_places("R3")), set(nav.room_places("R4"))
    free = _plan(hydra_graph, "(in-room R5)")
    assert any(s.args[1] in r4 for s in _moves(free))  # the direct route crosses R4
    avoiding = _plan(hydra_graph, "(and (in-room R5) (not (visited-room R4)))")
    assert not any(s.args[1] in r4 for s in _moves(avoiding))
    assert any(s.args[1] in r3 for s in _moves(avoiding))  # the detour through R3
    assert avoiding.plan[-1].args[1] in nav.room_places("R5")
    unreduced = _plan(hydra_graph, "(and (in-room R5) (not (visited-room R4)))", reduce=False)
    assert not any(s.args[1] in r4 for s in _moves(unreduced))


def test_object_moved_to_place(hydra_graph: SceneGraph, nav: NavigationGraph) -> None:
    result = _plan(hydra_graph, "(object-in-place O17 P22378)")
    final = simulate_plan(result.problem, result.plan).final_atoms  # type: ignore[arg-type]
    assert ("object-in-place", ("O17", "P22378")) in final
    assert ("object-in-place", ("O17", nav.objects["O17"].place)) not in final
    assert result.plan[-1] == PlanStep("place-object", ("O17", "P22378"))


def test_goal_already_true_and_contradiction(hydra_graph: SceneGraph) -> None:
    done = plan_for_goal(hydra_graph, "(visited-room R2)", start=START)
    assert done.status == "solved" and done.plan == []
    contradiction = plan_for_goal(hydra_graph, "(and (at-place P3107) (not (at-place P3107)))", start=START)
    assert contradiction.status == "unsolvable" and "contradiction" in contradiction.message


# ---------------------------------------------------------------------------------------------------
# Unsolvable, timeout


def test_disconnected_place_is_unsolvable_with_reason(hydra_graph: SceneGraph) -> None:
    result = plan_for_goal(hydra_graph, "(or (visited-place P61369) (visited-place P58530))", start=START)
    assert result.status == "unsolvable" and result.plan == []
    assert "P61369" in result.message and "P58530" in result.message and "cannot be reached" in result.message


def test_synthetic_island_object_is_unsolvable() -> None:
    graph = SceneGraph()
    graph.add("R1", "Room", "kitchen", (0, 0, 0))
    graph.add("R2", "Room", "shed", (50, 0, 0))
    for i in range(4):
        graph.add(f"P{i}", "Place", "place", (i, 0, 0))
    for i in range(4, 7):
        graph.add(f"P{i}", "Place", "place", (50 + i, 0, 0))
    for a, b in [(0, 1), (1, 2), (2, 3), (4, 5), (5, 6)]:
        graph.add_edge(f"P{a}", f"P{b}", "PLACE_CONNECTED")
    for i in range(7):
        graph.add_edge("R1" if i < 4 else "R2", f"P{i}", "CONTAINS")
    graph.add("O1", "Object", "box", (55, 0, 0))
    graph.add_edge("P5", "O1", "CONTAINS")
    for goal in ("(holding O1)", "(in-room R2)", "(and (visited-room R1) (visited-object O1))"):
        result = plan_for_goal(graph, goal, start="P0", reduce=False)
        assert result.status == "unsolvable", goal
    reachable = plan_for_goal(graph, "(holding O1)", start="P4")
    assert reachable.status == "solved"


def test_impossible_goals_are_unsolvable(hydra_graph: SceneGraph) -> None:
    two_objects = plan_for_goal(hydra_graph, "(and (holding O17) (holding O9))", start=START)
    assert two_objects.status == "unsolvable" and "hold one object" in two_objects.message
    # Reachable symbols and no top-level clash, so only search can tell: one hand, one room at a time.
    one_hand = plan_for_goal(
        hydra_graph, "(and (holding O17) (or (holding O9) (visited-place P61369)))", start=START
    )
    assert one_hand.status == "unsolvable" and "Fast Downward" in one_hand.message
    two_rooms = plan_for_goal(hydra_graph, "(and (in-room R4) (in-room R1))", start=START)
    assert two_rooms.status == "unsolvable" and "Fast Downward" in two_rooms.message


def test_avoiding_the_only_corridor_is_unsolvable(hydra_graph: SceneGraph) -> None:
    result = plan_for_goal(hydra_graph, "(and (visited-room R3) (not (visited-room R2)))", start="P1350")
    assert result.status == "unsolvable" and "forbids" in result.message
    started_inside = plan_for_goal(
        hydra_graph, "(and (visited-room R4) (not (visited-room R2)))", start=START
    )
    assert started_inside.status == "unsolvable" and "holds at the start" in started_inside.message


def test_tiny_time_limit_times_out() -> None:
    graph = generate_outdoor_graph(n_places=2000, n_regions=16, n_objects=40, seed=3)
    problem = build_problem(graph, "(and (visited-place P1999) (holding O5))", start="P0", reduce=False)
    result = solve(problem, time_limit_s=0.3)
    assert result.status == "timeout" and result.plan == [] and "0.3 s" in result.message


# ---------------------------------------------------------------------------------------------------
# Reduction, starts, goal checks


def test_reduced_plan_is_valid_in_the_full_problem() -> None:
    graph = generate_outdoor_graph(n_places=1500, n_regions=12, n_objects=30, seed=4)
    nav = NavigationGraph.from_scene_graph(graph)
    target = "P1400"
    path = nav.shortest_paths("P0", [{target}])[0]
    assert path is not None
    ends = {*nav.place_rooms["P0"], *nav.place_rooms[target], *nav.place_rooms[nav.objects["O3"].place]}
    crossed = [r for p in path for r in nav.place_rooms[p] if r not in ends]
    avoid = next(r for r in crossed if nav.shortest_paths("P0", [{target}], blocked=nav.room_places(r))[0])
    goal = f"(and (holding O3) (visited-place {target}) (not (visited-room {avoid})))"
    reduced = build_problem(graph, goal, start="P0")
    full = build_problem(graph, goal, start="P0", reduce=False)
    assert len(reduced.places) < len(full.places) // 3
    assert reduced.reduction.mode == "corridors" and full.reduction.mode == "none"
    result = solve(reduced)
    assert result.status == "solved", result.message
    assert simulate_plan(full, result.plan).valid
    assert not any(avoid in nav.place_rooms[s.args[1]] for s in _moves(result))


def test_start_from_position_and_agent(hydra_graph: SceneGraph, nav: NavigationGraph) -> None:
    position = nav.positions["P6219"]
    problem = build_problem(
        hydra_graph, "(visited-room R3)", start=(position[0] + 0.05, position[1], position[2])
    )
    assert problem.start == "P6219"
    apartment = read_scene_graph(APARTMENT)
    agent_problem = build_problem(apartment, "(visited-object O0)")
    assert agent_problem.place_label == "Place"
    assert agent_problem.start in {p.symbol for p in apartment.parents("a101")}
    with pytest.raises(PlanningError, match="no Agent node"):
        build_problem(hydra_graph, "(visited-room R3)")


def test_goal_grounding_errors_and_case_fix(hydra_graph: SceneGraph) -> None:
    fixed = build_problem(hydra_graph, "(holding o17)", start=START)
    assert fixed.goal.args == ("O17",)  # type: ignore[union-attr]
    with pytest.raises(GoalGroundingError, match="O99999"):
        build_problem(hydra_graph, "(holding O99999)", start=START)
    with pytest.raises(GoalGroundingError, match="visited-object"):
        build_problem(hydra_graph, "(visited-place O17)", start=START)
    with pytest.raises(PlanningError, match="not a node"):
        build_problem(hydra_graph, "(holding O17)", start="P0000")


def test_simulator_rejects_inapplicable_step(hydra_graph: SceneGraph) -> None:
    problem = build_problem(hydra_graph, "(holding O17)", start=START, reduce=False)
    far = next(p for p in problem.places if p not in problem.neighbors[START] and p != START)
    check = simulate_plan(problem, [PlanStep("move", (START, far))])
    assert not check.valid and check.failed_step == 0 and "connected" in check.reason
    pick = simulate_plan(problem, [PlanStep("pick-up", ("O17", problem.objects["O17"].place))])
    assert not pick.valid and "at-object" in pick.reason


def test_graph_from_store_plans_like_memory(hydra_graph: SceneGraph, tmp_path: Path) -> None:
    from scenerag.store import open_store

    store = open_store(tmp_path / "db")
    try:
        store.load(hydra_graph)
        subgraph = graph_from_store(store, {"o17"})
    finally:
        store.close()
    counts = subgraph.label_counts()
    assert counts["MeshPlace"] == 96 and counts["Room"] == 5 and counts["Object"] == 1
    assert (
        subgraph.edge_type_counts()["MESH_PLACE_CONNECTED"]
        == hydra_graph.edge_type_counts()["MESH_PLACE_CONNECTED"]
    )
    from_store = plan_for_goal(subgraph, "(holding O17)", start=START)
    from_memory = plan_for_goal(hydra_graph, "(holding O17)", start=START)
    assert from_store.status == "solved" and from_store.plan == from_memory.plan
    json.dumps(from_store.to_dict())
