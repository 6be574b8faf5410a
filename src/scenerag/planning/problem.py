"""A planning problem grounded in a scene graph, and its PDDL / unified-planning forms.

Contract: :func:`build_problem` turns a ``SceneGraph``, a Heracles goal (text or parsed) and a start
into a :class:`PlanningProblem` over the places, rooms and objects that the goal needs (corridor
reduction, see ``scenerag.planning.reduction``; ``reduce=False`` keeps the whole graph). The problem
renders as PDDL (:meth:`PlanningProblem.problem_pddl`, with the domain from
:meth:`PlanningProblem.domain_pddl`) for any planner, and as a unified-planning ``Problem``
(:meth:`PlanningProblem.to_unified_planning`). PDDL names are the lower-cased symbols (PDDL is
case-insensitive); two kept symbols that differ only by case are an error.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from scenerag.graph.model import SceneGraph, Vec3
from scenerag.lang.pddl_goal import (
    And,
    Atom,
    Constant,
    Goal,
    Imply,
    Not,
    as_goal,
    format_goal,
    goal_symbols,
    iter_atoms,
    simplify_goal,
)
from scenerag.planning.domain import (
    GOAL_REACHED,
    HERACLES_PLANNING_DOMAIN,
    MOVE_COST,
    OBJECT_TYPE,
    PLACE_TYPE,
    REACH_GOAL_ACTION,
    ROOM_TYPE,
    TOTAL_COST,
    PlanningDomain,
    PlanningError,
    unified_planning_domain,
)
from scenerag.planning.goal import ground_goal
from scenerag.planning.navigation import (
    NavigationGraph,
    ObjectInfo,
    StartSpec,
    choose_place_label,
    resolve_start,
)
from scenerag.planning.reduction import Reduction, corridor_reduction, forbidden_visits, no_reduction

GroundAtom = tuple[str, tuple[str, ...]]
"""``("object-in-place", ("O3", "P12"))``: a predicate applied to scene-graph symbols."""

MOVE_COST_UNIT_M = 0.1  # move costs are integer decimetres (at least 1)


@dataclass
class PlanningProblem:
    """Places (positions, undirected connections, rooms), objects with their places, start and goal.

    Treat it as immutable once built: PDDL names and the adjacency are derived from it once and cached.
    """

    name: str
    domain: PlanningDomain
    place_label: str
    places: dict[str, Vec3]
    connections: list[tuple[str, str]]
    rooms: dict[str, str]
    place_rooms: dict[str, tuple[str, ...]]
    objects: dict[str, ObjectInfo]
    start: str
    goal: Goal
    reduction: Reduction
    build_s: float = 0.0

    # -- symbols ----------------------------------------------------------------------------------
    def symbols_of_type(self, kind: str) -> list[str]:
        """Symbols of one PDDL type (``place``, ``dsg_object``, ``room``), in a stable order."""
        if kind == PLACE_TYPE:
            return list(self.places)
        if kind == OBJECT_TYPE:
            return list(self.objects)
        if kind == ROOM_TYPE:
            return list(self.rooms)
        raise PlanningError(
            f"unknown PDDL type {kind!r}", hint=f"known: {PLACE_TYPE}, {OBJECT_TYPE}, {ROOM_TYPE}"
        )

    def type_of(self, symbol: str) -> str:
        if symbol in self.places:
            return PLACE_TYPE
        if symbol in self.objects:
            return OBJECT_TYPE
        if symbol in self.rooms:
            return ROOM_TYPE
        raise PlanningError(f"{symbol!r} is not part of planning problem {self.name}")

    @cached_property
    def pddl_names(self) -> dict[str, str]:
        """``{symbol: pddl name}``; raises when two symbols differ only by case."""
        names: dict[str, str] = {}
        owners: dict[str, str] = {}
        for symbol in (*self.places, *self.objects, *self.rooms):
            name = symbol.lower()
            if name in owners and owners[name] != symbol:
                raise PlanningError(
                    f"symbols {owners[name]!r} and {symbol!r} differ only by case, which PDDL cannot tell apart",
                    hint="plan over one place layer (place_label=...) or rename one of the nodes",
                )
            owners[name] = symbol
            names[symbol] = name
        return names

    @cached_property
    def symbols_by_pddl_name(self) -> dict[str, str]:
        return {name: symbol for symbol, name in self.pddl_names.items()}

    @cached_property
    def neighbors(self) -> dict[str, list[str]]:
        adjacency: dict[str, list[str]] = {p: [] for p in self.places}
        for a, b in self.connections:
            adjacency[a].append(b)
            adjacency[b].append(a)
        return adjacency

    def places_of(self, symbol: str) -> list[str]:
        """The place itself, an object's place, or a room's places (within this problem)."""
        if symbol in self.places:
            return [symbol]
        if symbol in self.objects:
            return [self.objects[symbol].place]
        return [p for p, rooms in self.place_rooms.items() if symbol in rooms]

    def move_cost(self, source: str, target: str) -> int:
        """Integer cost of driving between two places: their distance in decimetres, at least 1."""
        return max(1, round(math.dist(self.places[source], self.places[target]) / MOVE_COST_UNIT_M))

    # -- state ------------------------------------------------------------------------------------
    def static_atoms(self) -> set[GroundAtom]:
        atoms: set[GroundAtom] = set()
        for a, b in self.connections:
            atoms.add(("connected", (a, b)))
            atoms.add(("connected", (b, a)))
        for place, rooms in self.place_rooms.items():
            atoms.update(("place-in-room", (place, room)) for room in rooms)
        return atoms

    def initial_atoms(self) -> set[GroundAtom]:
        """Every atom true in the initial state (static facts included)."""
        atoms = self.static_atoms()
        atoms.add(("at-place", (self.start,)))
        atoms.add(("visited-place", (self.start,)))
        for room in self.place_rooms.get(self.start, ()):
            atoms.add(("in-room", (room,)))
            atoms.add(("visited-room", (room,)))
        atoms.update(("object-in-place", (o, info.place)) for o, info in self.objects.items())
        return atoms

    def simplified_goal(self) -> Goal:
        return simplify_goal(self.goal, case_sensitive_symbols=True)

    # -- PDDL -------------------------------------------------------------------------------------
    def goal_pddl(self, goal: Goal | None = None) -> str:
        """The goal as PDDL with PDDL names; constants become ``(and)`` / ``(or)``."""
        return _goal_to_pddl(self.simplified_goal() if goal is None else goal, self.pddl_names)

    def _goal_constants(self) -> dict[str, tuple[str, ...]]:
        by_type: dict[str, list[str]] = {PLACE_TYPE: [], OBJECT_TYPE: [], ROOM_TYPE: []}
        for symbol in sorted(goal_symbols(self.goal)):
            by_type[self.type_of(symbol)].append(self.pddl_names[symbol])
        return {kind: tuple(names) for kind, names in by_type.items()}

    def domain_pddl(self, *, goal_action: bool = False) -> str:
        """Domain text; with ``goal_action`` it adds ``reach-goal`` (precondition: the goal) for searches
        such as A*/LM-cut that do not support the axioms Fast Downward compiles complex goals into."""
        if not goal_action:
            return self.domain.to_pddl()
        action = "\n".join(
            [
                f"  (:action {REACH_GOAL_ACTION}",
                "   :parameters ()",
                f"   :precondition {self.goal_pddl()}",
                f"   :effect (and ({GOAL_REACHED}) (increase ({TOTAL_COST}) 0)))",
            ]
        )
        return self.domain.to_pddl(
            extra_predicates=(f"({GOAL_REACHED})",), extra_actions=(action,), constants=self._goal_constants()
        )

    def problem_pddl(self, *, goal_action: bool = False) -> str:
        """Problem text (objects, initial state, goal, total-cost metric)."""
        names = self.pddl_names
        constants = {n for group in self._goal_constants().values() for n in group} if goal_action else set()
        lines = [f"(define (problem {self.name})", f"  (:domain {self.domain.name})", "  (:objects"]
        for kind in (PLACE_TYPE, OBJECT_TYPE, ROOM_TYPE):
            listed = [names[s] for s in self.symbols_of_type(kind) if names[s] not in constants]
            for start in range(0, len(listed), 20):
                lines.append("    " + " ".join(listed[start : start + 20]) + f" - {kind}")
        lines.append("  )")
        lines.append("  (:init")
        for predicate, args in sorted(self.initial_atoms()):
            lines.append("    (" + " ".join([predicate, *(names[a] for a in args)]) + ")")
        lines.append(f"    (= ({TOTAL_COST}) 0)")
        for a, b in self.connections:
            cost = self.move_cost(a, b)
            lines.append(f"    (= ({MOVE_COST} {names[a]} {names[b]}) {cost})")
            lines.append(f"    (= ({MOVE_COST} {names[b]} {names[a]}) {cost})")
        lines.append("  )")
        goal = f"({GOAL_REACHED})" if goal_action else self.goal_pddl()
        lines.append(f"  (:goal {goal})")
        lines.append(f"  (:metric minimize ({TOTAL_COST})))")
        return "\n".join(lines) + "\n"

    def write_pddl(self, directory: str | Path, *, goal_action: bool = False) -> tuple[Path, Path]:
        """Write ``domain.pddl`` and ``problem.pddl`` into ``directory`` (created if needed)."""
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        domain_path, problem_path = folder / "domain.pddl", folder / "problem.pddl"
        domain_path.write_text(self.domain_pddl(goal_action=goal_action), encoding="utf-8")
        problem_path.write_text(self.problem_pddl(goal_action=goal_action), encoding="utf-8")
        return domain_path, problem_path

    # -- unified-planning ---------------------------------------------------------------------------
    def to_unified_planning(self) -> UnifiedPlanningProblem:
        """The problem as a unified-planning ``Problem`` (minimising action costs); imports it lazily."""
        from unified_planning.model import Object, Problem
        from unified_planning.model.metrics import MinimizeActionCosts

        up_domain = unified_planning_domain(self.domain)
        problem = Problem(self.name)
        for fluent in up_domain.fluents.values():
            problem.add_fluent(fluent, default_initial_value=False)
        problem.add_fluent(up_domain.move_cost, default_initial_value=0)
        for action in up_domain.actions.values():
            problem.add_action(action)
        objects: dict[str, Any] = {}
        for kind in (PLACE_TYPE, OBJECT_TYPE, ROOM_TYPE):
            for symbol in self.symbols_of_type(kind):
                objects[symbol] = Object(symbol, up_domain.types[kind])
        problem.add_objects(list(objects.values()))
        for predicate, args in self.initial_atoms():
            problem.set_initial_value(up_domain.fluents[predicate](*(objects[a] for a in args)), True)
        for a, b in self.connections:
            cost = self.move_cost(a, b)
            problem.set_initial_value(up_domain.move_cost(objects[a], objects[b]), cost)
            problem.set_initial_value(up_domain.move_cost(objects[b], objects[a]), cost)
        problem.add_goal(
            _goal_to_unified_planning(self.simplified_goal(), up_domain.fluents, objects, problem)
        )
        problem.add_quality_metric(
            MinimizeActionCosts({up_domain.actions[n]: c for n, c in up_domain.costs.items()})
        )
        return UnifiedPlanningProblem(problem, objects, up_domain.actions)

    # -- reporting --------------------------------------------------------------------------------
    def summary(self) -> str:
        return (
            f"{len(self.places)} places, {len(self.connections)} connections, {len(self.rooms)} rooms, "
            f"{len(self.objects)} objects; start {self.start}; goal {format_goal(self.goal)}; "
            f"reduction {self.reduction.describe()}"
        )

    def size(self) -> dict[str, int]:
        return {
            "places": len(self.places),
            "connections": len(self.connections),
            "rooms": len(self.rooms),
            "objects": len(self.objects),
        }


@dataclass
class UnifiedPlanningProblem:
    """A unified-planning ``Problem`` with its objects and actions keyed by scene-graph symbol / name."""

    problem: Any
    objects: dict[str, Any]
    actions: dict[str, Any]


def _goal_to_pddl(goal: Goal, names: Mapping[str, str]) -> str:
    if isinstance(goal, Atom):
        return "(" + " ".join([goal.predicate, *(names[a] for a in goal.args)]) + ")"
    if isinstance(goal, Constant):
        return "(and)" if goal.value else "(or)"
    if isinstance(goal, Not):
        return f"(not {_goal_to_pddl(goal.operand, names)})"
    if isinstance(goal, Imply):
        return f"(imply {_goal_to_pddl(goal.antecedent, names)} {_goal_to_pddl(goal.consequent, names)})"
    connective = "and" if isinstance(goal, And) else "or"
    return "(" + " ".join([connective, *(_goal_to_pddl(g, names) for g in goal.operands)]) + ")"


def _goal_to_unified_planning(
    goal: Goal, fluents: Mapping[str, Any], objects: Mapping[str, Any], problem: Any
) -> Any:
    manager = problem.environment.expression_manager

    def convert(node: Goal) -> Any:
        if isinstance(node, Atom):
            return fluents[node.predicate](*(objects[a] for a in node.args))
        if isinstance(node, Constant):
            return manager.TRUE() if node.value else manager.FALSE()
        if isinstance(node, Not):
            return manager.Not(convert(node.operand))
        if isinstance(node, Imply):
            return manager.Implies(convert(node.antecedent), convert(node.consequent))
        parts = [convert(g) for g in node.operands]
        return manager.And(*parts) if isinstance(node, And) else manager.Or(*parts)

    return convert(goal)


def problem_from_navigation(
    nav: NavigationGraph,
    goal: Goal,
    start: str,
    *,
    reduce: bool = True,
    domain: PlanningDomain = HERACLES_PLANNING_DOMAIN,
    name: str = "scenerag-plan",
) -> PlanningProblem:
    """The problem over ``nav`` for an already grounded ``goal`` and start place.

    Places that top-level ``(not (visited-place P))`` / ``(not (visited-room R))`` conjuncts forbid lose
    their connections (no valid plan enters them), so the planner need not discover those dead ends.
    """
    reduction = corridor_reduction(nav, goal, start) if reduce else no_reduction(nav)
    places = {p: nav.positions[p] for p in nav.positions if p in reduction.places}
    forbidden: set[str] = set()
    for atom in forbidden_visits(simplify_goal(goal, case_sensitive_symbols=True)):
        symbol = atom.args[0]
        if symbol in nav.positions:
            forbidden.add(symbol)
        elif symbol in nav.rooms:
            forbidden.update(nav.room_places(symbol))
    connections = [
        (a, b)
        for a in places
        for b in nav.neighbors[a]
        if a < b and b in places and a not in forbidden and b not in forbidden
    ]
    place_rooms = {p: tuple(r for r in nav.place_rooms.get(p, ()) if r in reduction.rooms) for p in places}
    place_rooms = {p: rs for p, rs in place_rooms.items() if rs}
    return PlanningProblem(
        name=name,
        domain=domain,
        place_label=nav.place_label,
        places=places,
        connections=connections,
        rooms={r: nav.rooms[r].class_name for r in nav.rooms if r in reduction.rooms},
        place_rooms=place_rooms,
        objects={o: nav.objects[o] for o in nav.objects if o in reduction.objects},
        start=start,
        goal=goal,
        reduction=reduction,
    )


def build_problem(
    graph: SceneGraph,
    goal: Goal | str,
    *,
    start: StartSpec = None,
    reduce: bool = True,
    place_label: str | None = None,
    domain: PlanningDomain = HERACLES_PLANNING_DOMAIN,
    name: str = "scenerag-plan",
) -> PlanningProblem:
    """Ground ``goal`` in ``graph`` and build the planning problem from ``start``.

    ``start``: a place symbol, another node's symbol (Agent, Object), an ``(x, y, z)`` position, or None
    for the latest ``Agent`` node's place. ``reduce`` keeps only what the goal needs (default; see
    ``scenerag.planning.reduction``). ``place_label`` picks the layer to navigate (default: the better
    connected of ``MeshPlace`` and ``Place``). Raises ``PlanningError`` (``GoalGroundingError``) with
    the reason when the goal or the start does not fit the graph.
    """
    started = time.perf_counter()
    nav_label = place_label or choose_place_label(graph)
    grounded = ground_goal(as_goal(goal), graph, nav_label)
    wanted_objects: Iterable[str] | None = None
    if reduce:
        wanted_objects = {a for atom in iter_atoms(grounded) for a in atom.args}
        if start is not None and isinstance(start, str):
            wanted_objects.add(start)
    nav = NavigationGraph.from_scene_graph(
        graph, place_label=nav_label, objects=None if wanted_objects is None else set(wanted_objects)
    )
    start_place = resolve_start(graph, nav, start)
    problem = problem_from_navigation(nav, grounded, start_place, reduce=reduce, domain=domain, name=name)
    problem.build_s = time.perf_counter() - started
    return problem
