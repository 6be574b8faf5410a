"""The Heracles navigation / inspection / pick-and-place planning domain, declared once as data.

Contract: :data:`HERACLES_PLANNING_DOMAIN` (or :func:`heracles_planning_domain`) is the single source of
the action model; :meth:`PlanningDomain.to_pddl` renders it as PDDL text (``domain.pddl``) and
:func:`unified_planning_domain` as unified-planning fluents and actions; ``scenerag.planning.plan``
interprets the same schemas to simulate plans. The action model follows heracles_agents / omniplanner's
``region-object-rearrangement-domain`` (goto, inspect, pick needs an inspected object and a free hand,
place), with explicit places instead of points of interest and rooms entered and left by moving.

Semantics: the robot is always at one place (``at-place``) and in the rooms containing it (``in-room``);
``goto-object`` brings it next to one object lying at that place (``at-object``) and ``leave-object``
steps back, which it must do before driving on or approaching another object (Heracles' move from an
object's point of interest back to a place). ``visited-*`` and ``safe`` never become false. Moves cost
their length in decimetres, other actions 1 (the ``total-cost`` metric; satisficing search ignores it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from scenerag.errors import SceneRagError

if TYPE_CHECKING:
    from unified_planning.model import Fluent, InstantaneousAction, Type

# PDDL type names. "object" is PDDL's root type, so scene-graph objects are ``dsg_object`` (as in Heracles).
PLACE_TYPE = "place"
OBJECT_TYPE = "dsg_object"
ROOM_TYPE = "room"
TYPES: tuple[str, ...] = (PLACE_TYPE, OBJECT_TYPE, ROOM_TYPE)

TOTAL_COST = "total-cost"
MOVE_COST = "move-cost"
GOAL_REACHED = "goal-reached"  # used by the optimal search's artificial goal action
REACH_GOAL_ACTION = "reach-goal"

EQUALS = "="
CostKind = Literal["move-distance"] | int


class PlanningError(SceneRagError):
    """Planning could not start: bad goal, unknown start, a graph without places, a missing planner."""


Parameter = tuple[str, str]
"""``(variable, type)``, e.g. ``("?from", "place")``."""


@dataclass(frozen=True)
class Predicate:
    """A PDDL predicate; ``static`` ones only appear in the initial state (no action changes them)."""

    name: str
    parameters: tuple[Parameter, ...]
    static: bool = False
    description: str = ""

    def signature(self) -> str:
        return "(" + " ".join([self.name, *(f"{v} - {t}" for v, t in self.parameters)]) + ")"


@dataclass(frozen=True)
class Condition:
    """A literal over action variables: ``(pred ?a ?b)``, ``(not ...)``; predicate ``=`` is equality."""

    predicate: str
    args: tuple[str, ...]
    positive: bool = True

    def to_pddl(self) -> str:
        atom = "(" + " ".join([self.predicate, *self.args]) + ")"
        return atom if self.positive else f"(not {atom})"


@dataclass(frozen=True)
class Effect:
    """Sets ``literal`` (adds it, or deletes it when negative) for every ``forall`` binding where ``when`` holds."""

    literal: Condition
    forall: tuple[Parameter, ...] = ()
    when: tuple[Condition, ...] = ()

    def to_pddl(self) -> str:
        text = self.literal.to_pddl()
        if self.when:
            condition = self.when[0].to_pddl() if len(self.when) == 1 else _pddl_and(self.when)
            text = f"(when {condition} {text})"
        if self.forall:
            text = f"(forall ({_pddl_parameters(self.forall)}) {text})"
        return text


@dataclass(frozen=True)
class ActionSchema:
    """A parameterised action: all ``preconditions`` must hold; ``cost`` is 1, an int, or the move distance."""

    name: str
    parameters: tuple[Parameter, ...]
    preconditions: tuple[Condition, ...]
    effects: tuple[Effect, ...]
    cost: CostKind = 1
    description: str = ""

    def parameter_types(self) -> tuple[str, ...]:
        return tuple(t for _, t in self.parameters)

    def to_pddl(self) -> str:
        if self.cost == "move-distance":
            names = " ".join(v for v, _ in self.parameters[:2])
            cost = f"(increase ({TOTAL_COST}) ({MOVE_COST} {names}))"
        else:
            cost = f"(increase ({TOTAL_COST}) {int(self.cost)})"
        lines = [
            f"  (:action {self.name}",
            f"   :parameters ({_pddl_parameters(self.parameters)})",
            f"   :precondition {_pddl_and(self.preconditions)}",
            "   :effect (and",
            *(f"     {effect.to_pddl()}" for effect in self.effects),
            f"     {cost}))",
        ]
        return "\n".join(lines)


@dataclass(frozen=True)
class PlanningDomain:
    """Types, predicates and action schemas of a classical planning domain with action costs."""

    name: str
    predicates: Mapping[str, Predicate]
    actions: Mapping[str, ActionSchema]
    types: tuple[str, ...] = TYPES
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "predicates", MappingProxyType(dict(self.predicates)))
        object.__setattr__(self, "actions", MappingProxyType(dict(self.actions)))
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))
        for action in self.actions.values():
            self._check_action(action)

    def _check_action(self, action: ActionSchema) -> None:
        variables = dict(action.parameters)
        literals = [*action.preconditions]
        for effect in action.effects:
            scope = {**variables, **dict(effect.forall)}
            for literal in (effect.literal, *effect.when):
                self._check_literal(action.name, literal, scope)
            if self.predicates[effect.literal.predicate].static:
                raise SceneRagError(
                    f"domain {self.name}: action {action.name} changes static "
                    f"predicate {effect.literal.predicate}"
                )
        for literal in literals:
            self._check_literal(action.name, literal, variables)

    def _check_literal(self, action: str, literal: Condition, scope: Mapping[str, str]) -> None:
        unbound = [a for a in literal.args if a not in scope]
        if unbound:
            raise SceneRagError(f"domain {self.name}: action {action} uses unbound variables {unbound}")
        if literal.predicate == EQUALS:
            return
        predicate = self.predicates.get(literal.predicate)
        if predicate is None:
            raise SceneRagError(
                f"domain {self.name}: action {action} uses unknown predicate {literal.predicate}"
            )
        expected = tuple(t for _, t in predicate.parameters)
        found = tuple(scope[a] for a in literal.args)
        if expected != found:
            raise SceneRagError(
                f"domain {self.name}: action {action}: {literal.to_pddl()} has types "
                f"{found}, expected {expected}"
            )

    @property
    def static_predicates(self) -> frozenset[str]:
        return frozenset(name for name, p in self.predicates.items() if p.static)

    def action(self, name: str) -> ActionSchema:
        try:
            return self.actions[name.lower()]
        except KeyError:
            raise PlanningError(
                f"unknown action {name!r}", hint=f"known: {', '.join(self.actions)}"
            ) from None

    def to_pddl(
        self,
        *,
        extra_predicates: tuple[str, ...] = (),
        extra_actions: tuple[str, ...] = (),
        constants: Mapping[str, tuple[str, ...]] | None = None,
    ) -> str:
        """PDDL domain text. ``extra_*``/``constants`` let a solver add a problem-specific goal action."""
        lines = [
            f"(define (domain {self.name})",
            "  (:requirements :typing :negative-preconditions :disjunctive-preconditions :equality",
            "                 :universal-preconditions :conditional-effects :action-costs)",
            f"  (:types {' '.join(self.types)})",
        ]
        if constants:
            listed = " ".join(f"{' '.join(names)} - {kind}" for kind, names in constants.items() if names)
            if listed:
                lines.append(f"  (:constants {listed})")
        lines.append("  (:predicates")
        for predicate in self.predicates.values():
            comment = f"  ; {predicate.description}" if predicate.description else ""
            lines.append(f"    {predicate.signature()}{comment}")
        lines.extend(f"    {extra}" for extra in extra_predicates)
        lines.append("  )")
        lines.append(
            f"  (:functions ({TOTAL_COST}) - number ({MOVE_COST} ?from ?to - {PLACE_TYPE}) - number)"
        )
        for action in self.actions.values():
            if action.description:
                lines.append(f"  ; {action.description}")
            lines.append(action.to_pddl())
        lines.extend(extra_actions)
        lines.append(")")
        return "\n".join(lines) + "\n"


def _pddl_parameters(parameters: tuple[Parameter, ...]) -> str:
    return " ".join(f"{v} - {t}" for v, t in parameters)


def _pddl_and(conditions: tuple[Condition, ...]) -> str:
    return "(and " + " ".join(c.to_pddl() for c in conditions) + ")"


def _pos(predicate: str, *args: str) -> Condition:
    return Condition(predicate, args, True)


def _neg(predicate: str, *args: str) -> Condition:
    return Condition(predicate, args, False)


def heracles_planning_domain(*, inspect_before_pick: bool = True) -> PlanningDomain:
    """The Heracles domain: predicates of ``scenerag.lang.HERACLES_DOMAIN`` plus the facts actions need.

    ``inspect_before_pick`` (default, as in Heracles) makes ``pick-up`` require ``(safe ?o)``.
    """
    place, obj, room = PLACE_TYPE, OBJECT_TYPE, ROOM_TYPE
    predicates = [
        Predicate(
            "connected",
            (("?from", place), ("?to", place)),
            True,
            "the robot can drive from ?from to ?to (both directions are listed)",
        ),
        Predicate("place-in-room", (("?p", place), ("?r", room)), True, "place ?p lies in room ?r"),
        Predicate("at-place", (("?p", place),), description="the robot is at place ?p"),
        Predicate("visited-place", (("?p", place),), description="the robot has been at place ?p"),
        Predicate("at-object", (("?o", obj),), description="the robot stands next to object ?o"),
        Predicate("at-any-object", (), description="the robot stands next to some object"),
        Predicate("visited-object", (("?o", obj),), description="the robot has been next to object ?o"),
        Predicate("safe", (("?o", obj),), description="the robot has inspected object ?o"),
        Predicate("in-room", (("?r", room),), description="the robot is in room ?r"),
        Predicate("visited-room", (("?r", room),), description="the robot has been in room ?r"),
        Predicate("holding", (("?o", obj),), description="the robot holds object ?o"),
        Predicate("hand-full", (), description="the robot holds some object"),
        Predicate("object-in-place", (("?o", obj), ("?p", place)), description="object ?o lies at place ?p"),
    ]
    move = ActionSchema(
        name="move",
        parameters=(("?from", place), ("?to", place)),
        preconditions=(_pos("at-place", "?from"), _pos("connected", "?from", "?to"), _neg("at-any-object")),
        effects=(
            Effect(_neg("at-place", "?from")),
            Effect(_pos("at-place", "?to")),
            Effect(_pos("visited-place", "?to")),
            Effect(_pos("in-room", "?r"), forall=(("?r", room),), when=(_pos("place-in-room", "?to", "?r"),)),
            Effect(
                _pos("visited-room", "?r"), forall=(("?r", room),), when=(_pos("place-in-room", "?to", "?r"),)
            ),
            Effect(
                _neg("in-room", "?r"),
                forall=(("?r", room),),
                when=(_pos("place-in-room", "?from", "?r"), _neg("place-in-room", "?to", "?r")),
            ),
        ),
        cost="move-distance",
        description="drive between connected places (not while next to an object), entering and leaving rooms",
    )
    goto_object = ActionSchema(
        name="goto-object",
        parameters=(("?o", obj), ("?p", place)),
        preconditions=(_pos("at-place", "?p"), _pos("object-in-place", "?o", "?p"), _neg("at-any-object")),
        effects=(
            Effect(_pos("at-object", "?o")),
            Effect(_pos("at-any-object")),
            Effect(_pos("visited-object", "?o")),
        ),
        description="approach an object lying at the robot's place",
    )
    leave_object = ActionSchema(
        name="leave-object",
        parameters=(("?o", obj),),
        preconditions=(_pos("at-object", "?o"),),
        effects=(Effect(_neg("at-object", "?o")), Effect(_neg("at-any-object"))),
        description="step back from the object to the place (before driving on or approaching another)",
    )
    inspect = ActionSchema(
        name="inspect",
        parameters=(("?o", obj),),
        preconditions=(_pos("at-object", "?o"),),
        effects=(Effect(_pos("safe", "?o")),),
        description="inspect the object the robot stands next to",
    )
    pick_preconditions = [
        _pos("at-object", "?o"),
        _pos("object-in-place", "?o", "?p"),
        _neg("hand-full"),
    ]
    if inspect_before_pick:
        pick_preconditions.append(_pos("safe", "?o"))
    pick_up = ActionSchema(
        name="pick-up",
        parameters=(("?o", obj), ("?p", place)),
        preconditions=tuple(pick_preconditions),
        effects=(
            Effect(_pos("holding", "?o")),
            Effect(_pos("hand-full")),
            Effect(_neg("object-in-place", "?o", "?p")),
        ),
        description="pick up the object the robot stands next to (one object at a time"
        + (", inspected first)" if inspect_before_pick else ")"),
    )
    place_object = ActionSchema(
        name="place-object",
        parameters=(("?o", obj), ("?p", place)),
        preconditions=(_pos("holding", "?o"), _pos("at-place", "?p")),
        effects=(
            Effect(_neg("holding", "?o")),
            Effect(_neg("hand-full")),
            Effect(_pos("object-in-place", "?o", "?p")),
        ),
        description="put the held object down at the robot's place",
    )
    return PlanningDomain(
        name="scenerag-heracles",
        predicates={p.name: p for p in predicates},
        actions={a.name: a for a in (move, goto_object, leave_object, inspect, pick_up, place_object)},
        options={"inspect_before_pick": inspect_before_pick},
    )


HERACLES_PLANNING_DOMAIN = heracles_planning_domain()
"""The default domain (pick-up requires an inspected object, as in Heracles)."""


# ---------------------------------------------------------------------------------------------------
# unified-planning


@dataclass
class UnifiedPlanningDomain:
    """A domain's unified-planning counterparts, keyed by PDDL name; ``move_cost`` is a static int fluent."""

    types: dict[str, Type]
    fluents: dict[str, Fluent]
    actions: dict[str, InstantaneousAction]
    move_cost: Fluent
    costs: dict[str, Any]


def unified_planning_domain(domain: PlanningDomain = HERACLES_PLANNING_DOMAIN) -> UnifiedPlanningDomain:
    """Build unified-planning types, fluents and actions for ``domain`` (imports unified_planning lazily)."""
    from unified_planning.model import Fluent, InstantaneousAction, Variable
    from unified_planning.shortcuts import And, BoolType, Equals, IntType, Not, UserType

    types: dict[str, Type] = {name: UserType(name) for name in domain.types}
    fluents: dict[str, Fluent] = {}
    for predicate in domain.predicates.values():
        params = {_up_name(v): types[t] for v, t in predicate.parameters}
        fluents[predicate.name] = Fluent(predicate.name, BoolType(), **params)
    move_cost = Fluent(MOVE_COST, IntType(), **{"from": types[PLACE_TYPE], "to": types[PLACE_TYPE]})

    actions: dict[str, InstantaneousAction] = {}
    costs: dict[str, Any] = {}
    for schema in domain.actions.values():
        action = InstantaneousAction(schema.name, **{_up_name(v): types[t] for v, t in schema.parameters})
        scope: dict[str, Any] = {v: action.parameter(_up_name(v)) for v, _ in schema.parameters}

        def literal(condition: Condition, variables: Mapping[str, Any]) -> Any:
            args = [variables[a] for a in condition.args]
            if condition.predicate == EQUALS:
                expression = Equals(args[0], args[1])
            else:
                expression = fluents[condition.predicate](*args)
            return expression if condition.positive else Not(expression)

        for condition in schema.preconditions:
            action.add_precondition(literal(condition, scope))
        for effect in schema.effects:
            bound = {v: Variable(_up_name(v), types[t]) for v, t in effect.forall}
            variables = {**scope, **bound}
            target = fluents[effect.literal.predicate](*(variables[a] for a in effect.literal.args))
            when = [literal(c, variables) for c in effect.when]
            condition: Any = True if not when else (when[0] if len(when) == 1 else And(*when))
            action.add_effect(
                target, effect.literal.positive, condition=condition, forall=list(bound.values())
            )
        actions[schema.name] = action
        if schema.cost == "move-distance":
            costs[schema.name] = move_cost(*(scope[v] for v, _ in schema.parameters[:2]))
        else:
            costs[schema.name] = int(schema.cost)
    return UnifiedPlanningDomain(types, fluents, actions, move_cost, costs)


def _up_name(variable: str) -> str:
    """``?from`` -> ``from`` (unified-planning parameter names carry no ``?``)."""
    return variable.lstrip("?").replace("-", "_")
