"""Shrink a planning problem to what a goal needs: the goal's places, rooms and objects plus corridors.

Contract: :func:`corridor_reduction` keeps the start, every place a goal atom names (an object's place,
a goal place), and the fewest-hop paths ("corridors") from the start and from each target to every
other target, found by breadth-first search over the whole place graph. A room target is reached at
its nearest place. When the goal's negation normal form forbids visiting places or rooms
(``(not (visited-room R1))``), the corridors are computed twice, once freely and once around the
forbidden places, so detours survive the reduction. Kept: the places on any corridor (with every place
edge among them), the goal's objects, the goal's rooms and the rooms of kept places.

For a conjunction of visit / reach / hold / move-object atoms with top-level avoidance, the reduced
problem has a plan whenever the full one does (corridors join every pair of targets, around the
avoided places too); goals that need a place lying in several rooms at once, or mix avoidance into
disjunctions, may lose routes. Plans are not guaranteed shortest. ``reduce=False`` in
:func:`scenerag.planning.build_problem` plans over the whole graph instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from scenerag.lang.pddl_goal import And, Atom, Goal, Not, iter_atoms, negation_normal_form
from scenerag.planning.navigation import NavigationGraph

ReductionMode = Literal["corridors", "none"]


@dataclass(frozen=True)
class Reduction:
    """Which places, rooms and objects a problem keeps, and how many the whole graph has."""

    mode: ReductionMode
    places: frozenset[str]
    rooms: frozenset[str]
    objects: frozenset[str]
    total_places: int
    total_rooms: int
    total_objects: int
    targets: tuple[frozenset[str], ...] = field(default=(), repr=False)
    avoided: frozenset[str] = field(default=frozenset(), repr=False)

    def describe(self) -> str:
        """``corridors: 23/15944 places, 3/124 rooms, 1/314 objects (2 targets, 0 avoided places)``."""
        text = (
            f"{self.mode}: {len(self.places)}/{self.total_places} places, "
            f"{len(self.rooms)}/{self.total_rooms} rooms, {len(self.objects)}/{self.total_objects} objects"
        )
        if self.mode == "corridors":
            text += f" ({len(self.targets)} targets, {len(self.avoided)} avoided places)"
        return text


def no_reduction(nav: NavigationGraph) -> Reduction:
    """Keep the whole navigation graph."""
    return Reduction(
        mode="none",
        places=frozenset(nav.positions),
        rooms=frozenset(nav.rooms),
        objects=frozenset(nav.objects),
        total_places=len(nav.positions),
        total_rooms=len(nav.rooms),
        total_objects=len(nav.objects),
    )


def goal_targets(nav: NavigationGraph, goal: Goal) -> list[frozenset[str]]:
    """The place sets the goal's atoms refer to (one per distinct place, object location or room)."""
    targets: dict[frozenset[str], None] = {}
    for atom in iter_atoms(goal):
        for symbol in atom.args:
            places = _places_of_symbol(nav, symbol)
            if places:
                targets.setdefault(places)
    return list(targets)


def avoided_places(nav: NavigationGraph, goal: Goal) -> frozenset[str]:
    """Places a goal may require never to visit: negated ``visited-place`` / ``visited-room`` atoms."""
    avoided: set[str] = set()
    stack: list[Goal] = [negation_normal_form(goal)]
    while stack:
        node = stack.pop()
        if isinstance(node, Not) and isinstance(node.operand, Atom):
            atom = node.operand
            if atom.predicate == "visited-place" and atom.args[0] in nav.positions:
                avoided.add(atom.args[0])
            elif atom.predicate == "visited-room" and atom.args[0] in nav.rooms:
                avoided.update(nav.room_places(atom.args[0]))
        elif not isinstance(node, Atom | Not):
            stack.extend(getattr(node, "operands", ()))
    return frozenset(avoided)


def forbidden_visits(goal: Goal) -> list[Atom]:
    """``visited-place`` / ``visited-room`` atoms that every plan must keep false: the negated ones among
    the top-level conjuncts of the goal's negation normal form. Places they name are never entered."""
    normal = negation_normal_form(goal)
    conjuncts = normal.operands if isinstance(normal, And) else (normal,)
    return [
        c.operand
        for c in conjuncts
        if isinstance(c, Not)
        and isinstance(c.operand, Atom)
        and c.operand.predicate in ("visited-place", "visited-room")
        and len(c.operand.args) == 1
    ]


def corridor_reduction(nav: NavigationGraph, goal: Goal, start: str) -> Reduction:
    """Keep the start, the goal's targets and the shortest corridors joining them (see module doc)."""
    targets = goal_targets(nav, goal)
    avoided = avoided_places(nav, goal)
    kept: set[str] = {start}
    for blocked in [frozenset()] + ([avoided] if avoided else []):
        from_start = nav.shortest_paths(start, targets, blocked=blocked)
        entries = [(i, path[-1]) for i, path in enumerate(from_start) if path is not None]
        for path in from_start:
            if path is not None:
                kept.update(path)
        # Corridors between targets, so the robot need not return to the start between two of them.
        for index, entry in entries:
            others = [t for j, t in enumerate(targets) if j != index]
            for path in nav.shortest_paths(entry, others, blocked=blocked - {entry}):
                if path is not None:
                    kept.update(path)
    goal_rooms = {a for atom in iter_atoms(goal) for a in atom.args if a in nav.rooms}
    rooms = goal_rooms | {r for p in kept for r in nav.place_rooms.get(p, ())}
    goal_objects = {a for atom in iter_atoms(goal) for a in atom.args if a in nav.objects}
    for symbol in goal_objects:
        kept.add(nav.objects[symbol].place)
    for atom in iter_atoms(goal):
        kept.update(a for a in atom.args if a in nav.positions)
    return Reduction(
        mode="corridors",
        places=frozenset(kept),
        rooms=frozenset(rooms),
        objects=frozenset(goal_objects),
        total_places=len(nav.positions),
        total_rooms=len(nav.rooms),
        total_objects=len(nav.objects),
        targets=tuple(targets),
        avoided=avoided,
    )


def _places_of_symbol(nav: NavigationGraph, symbol: str) -> frozenset[str]:
    if symbol in nav.positions:
        return frozenset([symbol])
    if symbol in nav.objects:
        return frozenset([nav.objects[symbol].place])
    if symbol in nav.rooms:
        return frozenset(nav.room_places(symbol))
    return frozenset()
