"""Check a Heracles goal against the scene graph a planner will use, fixing only unambiguous spelling.

Contract: :func:`ground_goal` returns the goal with every symbol spelled as in the graph (a symbol that
matches exactly one node of the right kind ignoring case, such as ``o12`` for ``O12``, is respelled) or
raises :class:`GoalGroundingError` listing each problem: syntax, unknown predicate, wrong arity,
unknown symbol, wrong kind, or a place outside the layer the robot navigates.
"""

from __future__ import annotations

from collections.abc import Mapping

from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph
from scenerag.lang.pddl_goal import (
    HERACLES_DOMAIN,
    And,
    Atom,
    Constant,
    Goal,
    Imply,
    Not,
    Or,
    as_goal,
    check_goal,
    format_goal,
    iter_atoms,
)
from scenerag.planning.domain import PlanningError


class GoalGroundingError(PlanningError):
    """A goal the planner cannot use; ``problems`` lists every issue in words an LLM can act on."""

    def __init__(self, goal: str, problems: list[str]) -> None:
        self.goal = goal
        self.problems = problems
        super().__init__(
            f"goal {goal} cannot be planned: " + "; ".join(problems),
            hint="fix the goal's symbols so each names a node of the right kind",
        )


def map_atoms(goal: Goal, rewrite: Mapping[str, str]) -> Goal:
    """``goal`` with atom arguments renamed through ``rewrite`` (others unchanged)."""
    if isinstance(goal, Atom):
        if not any(a in rewrite for a in goal.args):
            return goal
        return Atom(goal.predicate, tuple(rewrite.get(a, a) for a in goal.args), goal.position)
    if isinstance(goal, Not):
        return Not(map_atoms(goal.operand, rewrite), goal.position)
    if isinstance(goal, Imply):
        return Imply(map_atoms(goal.antecedent, rewrite), map_atoms(goal.consequent, rewrite), goal.position)
    if isinstance(goal, And | Or):
        operands = tuple(map_atoms(g, rewrite) for g in goal.operands)
        return And(operands, goal.position) if isinstance(goal, And) else Or(operands, goal.position)
    assert isinstance(goal, Constant)
    return goal


def ground_goal(goal: Goal | str, graph: SceneGraph, place_label: str) -> Goal:
    """``goal`` checked against ``graph`` (places must have ``place_label``), with case-only typos fixed."""
    parsed = as_goal(goal, HERACLES_DOMAIN)
    text = format_goal(parsed)
    expected: dict[str, set[str]] = {}  # symbol -> labels its argument positions accept
    for atom in iter_atoms(parsed):
        for symbol, kind in zip(atom.args, HERACLES_DOMAIN.parameter_kinds(atom.predicate), strict=True):
            expected.setdefault(symbol, set()).update(kind.labels)
    rewrite: dict[str, str] = {}
    missing = [s for s in expected if s not in graph and not s.startswith("?")]
    if missing:
        by_folded: dict[str, list[str]] = {}
        wanted = {s.casefold() for s in missing}
        for node in graph.nodes():
            if node.symbol.casefold() in wanted:
                by_folded.setdefault(node.symbol.casefold(), []).append(node.symbol)
        for symbol in missing:
            fitting = [
                c for c in by_folded.get(symbol.casefold(), []) if graph.node(c).label in expected[symbol]
            ]
            if len(fitting) == 1:
                rewrite[symbol] = fitting[0]
    grounded = map_atoms(parsed, rewrite) if rewrite else parsed
    known = {s: graph.node(s).label for a in iter_atoms(grounded) for s in a.args if s in graph}
    problems = [p.message for p in check_goal(grounded, HERACLES_DOMAIN, known)]
    for atom in iter_atoms(grounded):
        for symbol, kind in zip(atom.args, HERACLES_DOMAIN.parameter_kinds(atom.predicate), strict=True):
            label = known.get(symbol)
            if kind.name == "place" and label in (ont.PLACE, ont.MESH_PLACE) and label != place_label:
                problems.append(
                    f"{symbol} is a {label}, but the planner navigates {place_label} nodes: name a "
                    f"{place_label} (or plan over {label} nodes with place_label={label!r})"
                )
    if problems:
        raise GoalGroundingError(text, list(dict.fromkeys(problems)))
    return grounded
