"""Solve planning problems with Fast Downward (the build shipped inside the ``up-fast-downward`` wheel).

Contract: :func:`solve` never hangs: the planner runs in its own process group under a wall-clock limit
and is killed at ``time_limit_s`` (status ``timeout``). Goals that provably cannot hold (a goal place in
another connected component, avoiding a room the robot starts in) return ``unsolvable`` before the
planner starts, with the reason; goals Fast Downward proves impossible return ``unsolvable`` too.
Every plan is replayed by :func:`scenerag.planning.plan.simulate_plan` before it is returned
(``validated``). Satisficing search is LAMA's first iteration; ``search="optimal"`` is A* with LM-cut
over move distances (complex goals are then compiled into a goal action, since LM-cut has no axioms).
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from scenerag.graph.model import SceneGraph
from scenerag.lang.pddl_goal import (
    And,
    Atom,
    Constant,
    Goal,
    Imply,
    Not,
    Or,
    format_goal,
    goal_atoms,
    negation_normal_form,
)
from scenerag.planning.domain import (
    HERACLES_PLANNING_DOMAIN,
    REACH_GOAL_ACTION,
    PlanningDomain,
    PlanningError,
)
from scenerag.planning.navigation import StartSpec
from scenerag.planning.plan import PlanResult, PlanStatus, PlanStep, simulate_plan
from scenerag.planning.problem import PlanningProblem, build_problem
from scenerag.planning.reduction import forbidden_visits

SearchMode = Literal["satisficing", "optimal"]
DEFAULT_TIME_LIMIT_S = 30.0
_OUTPUT_TAIL_CHARS = 4000
_SEARCH_ARGS: dict[str, list[str]] = {
    "satisficing": ["--alias", "lama-first"],
    "optimal": [],
}
_SEARCH_OPTIONS: dict[str, list[str]] = {
    "satisficing": [],
    "optimal": ["--search", "astar(lmcut())"],
}
_UNSOLVABLE_CODES = {
    10: "the translator proved the goal unreachable",
    11: "search proved that no plan exists",
    12: "search exhausted the reachable states without a plan",
    13: "no plan exists within the cost bound",
}
_TIMEOUT_CODES = {21, 23}
_MEMORY_CODES = {20, 22, 24}
_COST_LINE = re.compile(r";\s*cost\s*=\s*(\d+)")


@dataclass(frozen=True)
class FastDownwardRun:
    """One planner process: exit code (None when killed at the time limit), plan file text, output."""

    returncode: int | None
    plan_text: str | None
    output: str
    elapsed_s: float

    @property
    def timed_out(self) -> bool:
        return self.returncode is None or self.returncode in _TIMEOUT_CODES


def fast_downward_driver() -> Path:
    """Path of ``fast-downward.py`` inside the installed ``up_fast_downward`` package."""
    spec = importlib.util.find_spec("up_fast_downward")
    if spec is None or not spec.submodule_search_locations:
        raise PlanningError("Fast Downward is not installed", hint="pip install 'scenerag[planning]'")
    driver = Path(next(iter(spec.submodule_search_locations))) / "downward" / "fast-downward.py"
    if not driver.exists():
        raise PlanningError(
            f"Fast Downward driver missing at {driver}",
            hint="reinstall up-fast-downward: pip install --force-reinstall up-fast-downward",
        )
    return driver


def run_fast_downward(
    domain_pddl: str,
    problem_pddl: str,
    *,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    search: SearchMode = "satisficing",
    workdir: str | Path | None = None,
) -> FastDownwardRun:
    """Run Fast Downward on PDDL text in a scratch folder (kept when ``workdir`` is given)."""
    if search not in _SEARCH_ARGS:
        raise PlanningError(f"unknown search {search!r}", hint="use 'satisficing' or 'optimal'")
    if not time_limit_s > 0:
        raise PlanningError(f"time_limit_s must be positive, got {time_limit_s}")
    driver = fast_downward_driver()
    with tempfile.TemporaryDirectory(prefix="scenerag-fd-") as scratch:
        folder = Path(workdir) if workdir is not None else Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        domain_path, problem_path = folder / "domain.pddl", folder / "problem.pddl"
        plan_path, log_path = folder / "sas_plan", folder / "planner.log"
        domain_path.write_text(domain_pddl, encoding="utf-8")
        problem_path.write_text(problem_pddl, encoding="utf-8")
        plan_path.unlink(missing_ok=True)
        command = [
            sys.executable,
            str(driver),
            "--plan-file",
            str(plan_path),
            *_SEARCH_ARGS[search],
            str(domain_path),
            str(problem_path),
            *_SEARCH_OPTIONS[search],
        ]
        started = time.perf_counter()
        with open(log_path, "w", encoding="utf-8") as log:
            process = subprocess.Popen(
                command,
                cwd=folder,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=os.name == "posix",
            )
            try:
                returncode: int | None = process.wait(timeout=time_limit_s)
            except subprocess.TimeoutExpired:
                _kill_process_group(process)
                returncode = None
        elapsed = time.perf_counter() - started
        output = log_path.read_text(encoding="utf-8", errors="replace")
        plan_text = plan_path.read_text(encoding="utf-8") if plan_path.exists() else None
    return FastDownwardRun(returncode, plan_text, output[-_OUTPUT_TAIL_CHARS:], elapsed)


def _kill_process_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the planner and the translator/search processes it started (its own process group)."""
    try:
        if os.name == "posix":
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
    except ProcessLookupError:
        pass
    process.wait()


def parse_plan(plan_text: str, problem: PlanningProblem) -> tuple[list[PlanStep], int | None]:
    """Steps (scene-graph symbols) and reported cost of a Fast Downward plan file."""
    steps: list[PlanStep] = []
    cost: int | None = None
    symbols = problem.symbols_by_pddl_name
    for raw in plan_text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith(";"):
            match = _COST_LINE.match(line)
            if match:
                cost = int(match.group(1))
            continue
        tokens = line.strip("()").split()
        if not tokens or tokens[0] == REACH_GOAL_ACTION:
            continue
        try:
            args = tuple(symbols[t] for t in tokens[1:])
        except KeyError as exc:
            raise PlanningError(f"planner returned unknown object {exc.args[0]!r} in {line}") from None
        steps.append(PlanStep(tokens[0], args))
    return steps, cost


# ---------------------------------------------------------------------------------------------------
# Feasibility: goals that can never hold, found without search


_MONOTONE = frozenset({"visited-place", "visited-object", "visited-room", "safe"})


def _kleene(goal: Goal, fixed: dict[tuple[str, tuple[str, ...]], bool]) -> bool | None:
    """Three-valued truth of ``goal`` when only the ``fixed`` atoms are known (None: unknown)."""
    if isinstance(goal, Atom):
        return fixed.get((goal.predicate, goal.args))
    if isinstance(goal, Constant):
        return goal.value
    if isinstance(goal, Not):
        value = _kleene(goal.operand, fixed)
        return None if value is None else not value
    if isinstance(goal, Imply):
        return _kleene(Or((Not(goal.antecedent), goal.consequent)), fixed)
    values = [_kleene(g, fixed) for g in goal.operands]
    if isinstance(goal, And):
        return False if False in values else (None if None in values else True)
    return True if True in values else (None if None in values else False)


def reachable_places(problem: PlanningProblem, *, blocked: Collection[str] = ()) -> set[str]:
    """Places of the problem the robot can drive to from its start without entering ``blocked`` ones."""
    seen = {problem.start}
    queue = deque([problem.start])
    neighbors = problem.neighbors
    while queue:
        for nxt in neighbors[queue.popleft()]:
            if nxt not in seen and nxt not in blocked:
                seen.add(nxt)
                queue.append(nxt)
    return seen


def forbidden_places(problem: PlanningProblem, goal: Goal) -> tuple[set[str], list[str]]:
    """Places no plan may enter (see :func:`~scenerag.planning.reduction.forbidden_visits`) and the
    goal conjuncts that forbid them, as text."""
    places: set[str] = set()
    texts: list[str] = []
    for atom in forbidden_visits(goal):
        places.update(problem.places_of(atom.args[0]))
        texts.append(f"(not {format_goal(atom)})")
    return places, texts


_EXCLUSIVE = (
    ("at-place", "be at one place"),
    ("at-object", "stand next to one object"),
    ("holding", "hold one object"),
)


def exclusive_conflicts(goal: Goal) -> list[str]:
    """Top-level conjuncts that cannot hold together: two ``at-place``/``at-object``/``holding`` atoms
    (the robot has one position and one hand), one object at two places, or held and lying at a place."""
    normal = negation_normal_form(goal)
    conjuncts = normal.operands if isinstance(normal, And) else (normal,)
    positives = [c for c in conjuncts if isinstance(c, Atom)]
    conflicts: list[str] = []
    for predicate, what in _EXCLUSIVE:
        found = sorted({format_goal(a) for a in positives if a.predicate == predicate})
        if len(found) > 1:
            conflicts.append(f"the robot can only {what} at a time: {' and '.join(found)}")
    placed: dict[str, set[str]] = {}
    for atom in positives:
        if atom.predicate == "object-in-place":
            placed.setdefault(atom.args[0], set()).add(atom.args[1])
    for obj, places in sorted(placed.items()):
        if len(places) > 1:
            conflicts.append(f"object {obj} can only lie at one place, not at {' and '.join(sorted(places))}")
    held = {a.args[0] for a in positives if a.predicate == "holding"}
    conflicts.extend(
        f"object {o} cannot be held and lie at a place at once" for o in sorted(held & set(placed))
    )
    return conflicts


def explain_infeasible(problem: PlanningProblem) -> str | None:
    """Why the goal can never hold, or None when search is needed to tell.

    Places that top-level ``(not (visited-...))`` conjuncts forbid are never entered. An atom naming a
    place, object or room the robot cannot reach then keeps its initial value, and a ``visited-*`` or
    ``safe`` atom true at the start stays true; if the goal is false under those fixed atoms whatever
    the others do, no plan exists.
    """
    goal = problem.simplified_goal()
    conflicts = exclusive_conflicts(goal)
    if conflicts:
        return f"the goal {format_goal(problem.goal)} can never hold: " + "; ".join(conflicts)
    forbidden, forbidding = forbidden_places(problem, goal)
    reachable = reachable_places(problem, blocked=forbidden)
    reachable_rooms = {r for p in reachable for r in problem.place_rooms.get(p, ())}
    how = (
        (f"from the start {problem.start} without entering places the goal forbids ({', '.join(forbidding)})")
        if forbidden
        else (f"from the start {problem.start} in the {problem.place_label} graph")
    )
    initial = problem.initial_atoms()
    fixed: dict[tuple[str, tuple[str, ...]], bool] = {}
    reasons: dict[tuple[str, tuple[str, ...]], str] = {}
    forbidding_atoms = {(a.predicate, a.args) for a in forbidden_visits(goal)}
    for atom in goal_atoms(goal, case_sensitive_symbols=True):
        key = (atom.predicate, atom.args)
        if atom.predicate in _MONOTONE and key in initial:
            fixed[key] = True
            reasons[key] = (
                f"({atom.predicate} {' '.join(atom.args)}) holds at the start ({problem.start}) "
                "and stays true"
            )
            continue
        if key in forbidding_atoms:
            continue
        blocking = [
            r for r in (_unreachable_reason(problem, s, reachable, reachable_rooms) for s in atom.args) if r
        ]
        if blocking:
            fixed[key] = key in initial
            reasons[key] = f"{blocking[0]} {how}"
    if _kleene(goal, fixed) is not False:
        return None
    listed = list(dict.fromkeys(reasons[k] for k in fixed))
    return f"the goal {format_goal(problem.goal)} can never hold: " + "; ".join(listed)


def _unreachable_reason(
    problem: PlanningProblem, symbol: str, reachable: set[str], reachable_rooms: set[str]
) -> str | None:
    if symbol in problem.places:
        if symbol not in reachable:
            return f"place {symbol} cannot be reached"
    elif symbol in problem.objects:
        place = problem.objects[symbol].place
        if place not in reachable:
            return f"object {symbol} lies at {place}, which cannot be reached"
    elif symbol in problem.rooms and symbol not in reachable_rooms:
        return f"no place of room {symbol} can be reached"
    return None


def _is_literal_conjunction(goal: Goal) -> bool:
    def literal(g: Goal) -> bool:
        return isinstance(g, Atom) or (isinstance(g, Not) and isinstance(g.operand, Atom))

    return literal(goal) or (isinstance(goal, And) and all(literal(g) for g in goal.operands))


# ---------------------------------------------------------------------------------------------------
# Entry points


def solve(
    problem: PlanningProblem,
    *,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    search: SearchMode = "satisficing",
    workdir: str | Path | None = None,
) -> PlanResult:
    """Plan for ``problem`` with Fast Downward within ``time_limit_s`` seconds of wall-clock time.

    ``workdir`` keeps the PDDL files, plan and planner log there. The result's ``elapsed_s`` covers this
    call (add ``problem.build_s`` for the build; :func:`plan_for_goal` reports both).
    """
    started = time.perf_counter()

    def result(
        status: PlanStatus,
        message: str,
        plan: list[PlanStep] | None = None,
        *,
        cost: int | None = None,
        validated: bool = False,
        search_s: float = 0.0,
        output: str = "",
    ) -> PlanResult:
        return PlanResult(
            status,
            plan or [],
            time.perf_counter() - started,
            message,
            cost=cost,
            build_s=problem.build_s,
            search_s=search_s,
            validated=validated,
            problem=problem,
            planner_output=output,
        )

    goal = problem.simplified_goal()
    if isinstance(goal, Constant):
        if goal.value:
            return result("solved", "the goal is always true: nothing to do", cost=0, validated=True)
        return result("unsolvable", f"the goal {format_goal(problem.goal)} is a contradiction")
    reason = explain_infeasible(problem)
    if reason is not None:
        return result("unsolvable", reason)
    goal_action = search == "optimal" and not _is_literal_conjunction(goal)
    run = run_fast_downward(
        problem.domain_pddl(goal_action=goal_action),
        problem.problem_pddl(goal_action=goal_action),
        time_limit_s=time_limit_s,
        search=search,
        workdir=workdir,
    )
    output = run.output
    if run.timed_out:
        return result(
            "timeout",
            f"Fast Downward found no plan within {time_limit_s:g} s ({problem.reduction.describe()})",
            search_s=run.elapsed_s,
            output=output,
        )
    if run.returncode in _UNSOLVABLE_CODES:
        message = (
            f"no plan reaches the goal {format_goal(problem.goal)}: Fast Downward: "
            f"{_UNSOLVABLE_CODES[run.returncode]}"
        )
        if problem.reduction.mode == "corridors":
            message += (
                f" (over the reduced problem, {problem.reduction.describe()}; "
                "plan with reduce=False to search the whole graph)"
            )
        return result("unsolvable", message, search_s=run.elapsed_s, output=output)
    if run.returncode in _MEMORY_CODES:
        return result("error", "Fast Downward ran out of memory", search_s=run.elapsed_s, output=output)
    if run.plan_text is None or run.returncode not in (0, 1, 2, 3):
        tail = output.strip().splitlines()[-5:]
        return result(
            "error",
            f"Fast Downward failed with exit code {run.returncode}: " + " | ".join(tail),
            search_s=run.elapsed_s,
            output=output,
        )
    try:
        steps, _ = parse_plan(run.plan_text, problem)
    except PlanningError as exc:
        return result("error", str(exc), search_s=run.elapsed_s, output=output)
    simulation = simulate_plan(problem, steps)
    if not simulation.valid:
        return result(
            "error",
            f"the planner's plan does not validate: {simulation.reason}",
            steps,
            search_s=run.elapsed_s,
            output=output,
        )
    return result(
        "solved",
        f"{len(steps)} steps, cost {simulation.cost} ({problem.reduction.describe()})",
        steps,
        cost=simulation.cost,
        validated=True,
        search_s=run.elapsed_s,
        output=output,
    )


def plan_for_goal(
    graph: SceneGraph,
    goal: Goal | str,
    *,
    start: StartSpec = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    reduce: bool = True,
    search: SearchMode = "satisficing",
    place_label: str | None = None,
    domain: PlanningDomain = HERACLES_PLANNING_DOMAIN,
    workdir: str | Path | None = None,
) -> PlanResult:
    """Build the problem for ``goal`` in ``graph`` (see :func:`~scenerag.planning.problem.build_problem`)
    and solve it (see :func:`solve`); ``elapsed_s`` covers both. Raises ``PlanningError`` for a goal or
    start that does not fit the graph."""
    started = time.perf_counter()
    problem = build_problem(graph, goal, start=start, reduce=reduce, place_label=place_label, domain=domain)
    outcome = solve(problem, time_limit_s=time_limit_s, search=search, workdir=workdir)
    outcome.elapsed_s = time.perf_counter() - started
    return outcome
