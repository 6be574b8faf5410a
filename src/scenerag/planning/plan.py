"""Plans: steps, results, a symbolic simulator that validates them, and human-readable rendering.

Contract: :func:`simulate_plan` applies a plan to a :class:`~scenerag.planning.problem.PlanningProblem`'s
initial state with the domain's own action schemas (PDDL semantics: conditions and ``when`` clauses
read the state before the step, deletes apply before adds) and reports the first inapplicable step or
whether the goal holds at the end; :func:`validate_with_unified_planning` asks unified-planning's
``SequentialPlanValidator`` the same question. :func:`render_plan` writes lines such as
``move P1 -> P2 (enter R2)`` and ``pick up O3 (box) at P2``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import TYPE_CHECKING, Any, Literal

from scenerag.lang.pddl_goal import evaluate_goal, format_goal, goal_atoms
from scenerag.planning.domain import EQUALS, Condition, PlanningError

if TYPE_CHECKING:
    from scenerag.planning.problem import GroundAtom, PlanningProblem

PlanStatus = Literal["solved", "unsolvable", "timeout", "error"]


@dataclass(frozen=True)
class PlanStep:
    """One ground action: ``PlanStep("move", ("P1", "P2"))``; arguments are scene-graph symbols."""

    action: str
    args: tuple[str, ...]

    def pddl(self) -> str:
        return "(" + " ".join([self.action, *self.args]) + ")"

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "args": list(self.args)}


@dataclass
class PlanResult:
    """What planning produced: ``status`` (solved / unsolvable / timeout / error), the ``plan`` (empty unless
    solved), wall-clock ``elapsed_s`` (problem build + search), and a ``message`` saying why."""

    status: PlanStatus
    plan: list[PlanStep]
    elapsed_s: float
    message: str = ""
    cost: int | None = None
    build_s: float = 0.0
    search_s: float = 0.0
    validated: bool = False
    problem: PlanningProblem | None = field(default=None, repr=False)
    planner_output: str = field(default="", repr=False)

    @property
    def solved(self) -> bool:
        return self.status == "solved"

    def render(self) -> str:
        """Numbered plan lines, or the status and message when there is no plan."""
        if not self.solved:
            return f"{self.status}: {self.message}"
        if not self.plan:
            return "the goal already holds: nothing to do"
        lines = render_plan(self.plan, self.problem)
        return "\n".join(f"{i:>3}. {line}" for i, line in enumerate(lines, 1))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": self.status,
            "plan": [s.to_dict() for s in self.plan],
            "steps": render_plan(self.plan, self.problem) if self.plan else [],
            "elapsed_s": round(self.elapsed_s, 4),
            "build_s": round(self.build_s, 4),
            "search_s": round(self.search_s, 4),
            "cost": self.cost,
            "validated": self.validated,
            "message": self.message,
        }
        if self.problem is not None:
            out["problem"] = {
                **self.problem.size(),
                "start": self.problem.start,
                "goal": format_goal(self.problem.goal),
                "reduction": self.problem.reduction.describe(),
            }
        return out


# ---------------------------------------------------------------------------------------------------
# Simulation


@dataclass(frozen=True)
class SimulationResult:
    """Outcome of applying a plan: ``valid`` when every step applies and the goal holds at the end."""

    valid: bool
    goal_reached: bool
    final_atoms: frozenset[GroundAtom]
    cost: int
    failed_step: int | None = None  # 0-based index of the first inapplicable step
    reason: str = ""


def _bind(problem: PlanningProblem, step: PlanStep) -> dict[str, str]:
    schema = problem.domain.action(step.action)
    if len(step.args) != len(schema.parameters):
        raise PlanningError(
            f"{step.pddl()}: {schema.name} takes {len(schema.parameters)} arguments, got {len(step.args)}"
        )
    binding: dict[str, str] = {}
    for (variable, kind), symbol in zip(schema.parameters, step.args, strict=True):
        try:
            actual = problem.type_of(symbol)
        except PlanningError:
            actual = None
        if actual != kind:
            raise PlanningError(f"{step.pddl()}: {symbol!r} is not a {kind} of the problem")
        binding[variable] = symbol
    return binding


def _holds(
    condition: Condition, binding: Mapping[str, str], state: frozenset[GroundAtom] | set[GroundAtom]
) -> bool:
    args = tuple(binding[a] for a in condition.args)
    value = args[0] == args[1] if condition.predicate == EQUALS else (condition.predicate, args) in state
    return value == condition.positive


def apply_step(
    problem: PlanningProblem, state: frozenset[GroundAtom], step: PlanStep
) -> tuple[frozenset[GroundAtom] | None, str]:
    """The state after ``step``, or ``(None, reason)`` when its preconditions do not hold."""
    binding = _bind(problem, step)
    schema = problem.domain.action(step.action)
    failed = [c for c in schema.preconditions if not _holds(c, binding, state)]
    if failed:
        shown = ", ".join(_ground_text(c, binding) for c in failed)
        return None, f"{step.pddl()}: precondition {shown} does not hold"
    adds: set[GroundAtom] = set()
    deletes: set[GroundAtom] = set()
    for effect in schema.effects:
        domains = [problem.symbols_of_type(kind) for _, kind in effect.forall]
        for values in product(*domains):
            scope = {**binding, **{v: s for (v, _), s in zip(effect.forall, values, strict=True)}}
            if all(_holds(c, scope, state) for c in effect.when):
                atom = (effect.literal.predicate, tuple(scope[a] for a in effect.literal.args))
                (adds if effect.literal.positive else deletes).add(atom)
    return frozenset((state - deletes) | adds), ""


def step_cost(problem: PlanningProblem, step: PlanStep) -> int:
    schema = problem.domain.action(step.action)
    if schema.cost == "move-distance":
        return problem.move_cost(step.args[0], step.args[1])
    return int(schema.cost)


def goal_holds(problem: PlanningProblem, atoms: Iterable[GroundAtom]) -> bool:
    """Truth of the problem's goal in the state where exactly ``atoms`` hold."""
    state = set(atoms)
    true_atoms = [
        a for a in goal_atoms(problem.goal, case_sensitive_symbols=True) if (a.predicate, a.args) in state
    ]
    return evaluate_goal(problem.goal, true_atoms, case_sensitive_symbols=True)


def simulate_plan(problem: PlanningProblem, plan: Sequence[PlanStep]) -> SimulationResult:
    """Apply ``plan`` from the initial state and check the goal (see module doc)."""
    state = frozenset(problem.initial_atoms())
    cost = 0
    for index, step in enumerate(plan):
        try:
            following, reason = apply_step(problem, state, step)
        except PlanningError as exc:
            following, reason = None, str(exc)
        if following is None:
            return SimulationResult(False, False, state, cost, index, f"step {index + 1}: {reason}")
        state = following
        cost += step_cost(problem, step)
    reached = goal_holds(problem, state)
    reason = "" if reached else f"the goal {format_goal(problem.goal)} does not hold after the plan"
    return SimulationResult(reached, reached, state, cost, None, reason)


def validate_with_unified_planning(problem: PlanningProblem, plan: Sequence[PlanStep]) -> tuple[bool, str]:
    """``(valid, message)`` from unified-planning's ``SequentialPlanValidator`` on the UP form of ``problem``."""
    from unified_planning.engines.plan_validator import SequentialPlanValidator
    from unified_planning.engines.results import ValidationResultStatus
    from unified_planning.plans import ActionInstance, SequentialPlan

    up_problem = problem.to_unified_planning()
    instances = [
        ActionInstance(up_problem.actions[s.action], tuple(up_problem.objects[a] for a in s.args))
        for s in plan
    ]
    validator = SequentialPlanValidator(environment=up_problem.problem.environment)
    result = validator.validate(up_problem.problem, SequentialPlan(instances, up_problem.problem.environment))
    message = "; ".join(m.message for m in result.log_messages or [])
    return result.status == ValidationResultStatus.VALID, message


# ---------------------------------------------------------------------------------------------------
# Rendering


def _ground_text(condition: Condition, binding: Mapping[str, str]) -> str:
    return Condition(
        condition.predicate, tuple(binding[a] for a in condition.args), condition.positive
    ).to_pddl()


def _object_text(problem: PlanningProblem | None, symbol: str) -> str:
    if problem is not None and symbol in problem.objects:
        return f"{symbol} ({problem.objects[symbol].class_name})"
    return symbol


def describe_step(step: PlanStep, problem: PlanningProblem | None = None) -> str:
    """One readable line: ``move P1 -> P2 (leave R1, enter R2)``, ``inspect O3 (box)``..."""
    args = step.args
    if step.action == "move" and len(args) == 2:
        text = f"move {args[0]} -> {args[1]}"
        if problem is not None:
            before = problem.place_rooms.get(args[0], ())
            after = problem.place_rooms.get(args[1], ())
            changes = [f"leave {r}" for r in before if r not in after]
            changes += [f"enter {r} ({problem.rooms[r]})" for r in after if r not in before]
            if changes:
                text += f" ({', '.join(changes)})"
        return text
    if step.action == "goto-object" and len(args) == 2:
        return f"go to {_object_text(problem, args[0])} at {args[1]}"
    if step.action == "leave-object" and len(args) == 1:
        return f"step back from {_object_text(problem, args[0])}"
    if step.action == "inspect" and len(args) == 1:
        return f"inspect {_object_text(problem, args[0])}"
    if step.action == "pick-up" and len(args) == 2:
        return f"pick up {_object_text(problem, args[0])} at {args[1]}"
    if step.action == "place-object" and len(args) == 2:
        return f"place {_object_text(problem, args[0])} at {args[1]}"
    return step.pddl()


def render_plan(plan: Sequence[PlanStep], problem: PlanningProblem | None = None) -> list[str]:
    """One line per step (see :func:`describe_step`)."""
    return [describe_step(step, problem) for step in plan]
