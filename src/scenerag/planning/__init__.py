"""Task planning over scene graphs: Heracles PDDL domain, problems grounded in a graph, Fast Downward.

``plan_for_goal(graph, "(and (visited-room R2) (holding O5))", start="P12")`` builds a problem reduced
to what the goal needs and solves it with Fast Downward (from ``up-fast-downward``), returning a
validated :class:`PlanResult`. ``graph_from_store(store, symbols)`` reads the graph a plan needs from a
database. Problems export as PDDL (``write_pddl``) and as unified-planning ``Problem`` objects.
unified-planning and Fast Downward load only when used.
"""

from scenerag.planning.domain import (
    HERACLES_PLANNING_DOMAIN,
    ActionSchema,
    Condition,
    Effect,
    PlanningDomain,
    PlanningError,
    Predicate,
    heracles_planning_domain,
    unified_planning_domain,
)
from scenerag.planning.goal import GoalGroundingError, ground_goal
from scenerag.planning.navigation import NavigationGraph, ObjectInfo, RoomInfo, resolve_start
from scenerag.planning.plan import (
    PlanResult,
    PlanStatus,
    PlanStep,
    SimulationResult,
    describe_step,
    render_plan,
    simulate_plan,
    validate_with_unified_planning,
)
from scenerag.planning.problem import (
    PlanningProblem,
    UnifiedPlanningProblem,
    build_problem,
    problem_from_navigation,
)
from scenerag.planning.reduction import Reduction, corridor_reduction, no_reduction
from scenerag.planning.solver import (
    DEFAULT_TIME_LIMIT_S,
    SearchMode,
    explain_infeasible,
    plan_for_goal,
    run_fast_downward,
    solve,
)
from scenerag.planning.subgraph import graph_from_store

__all__ = [
    "DEFAULT_TIME_LIMIT_S",
    "HERACLES_PLANNING_DOMAIN",
    "ActionSchema",
    "Condition",
    "Effect",
    "GoalGroundingError",
    "NavigationGraph",
    "ObjectInfo",
    "PlanResult",
    "PlanStatus",
    "PlanStep",
    "PlanningDomain",
    "PlanningError",
    "PlanningProblem",
    "Predicate",
    "Reduction",
    "RoomInfo",
    "SearchMode",
    "SimulationResult",
    "UnifiedPlanningProblem",
    "build_problem",
    "corridor_reduction",
    "describe_step",
    "explain_infeasible",
    "graph_from_store",
    "ground_goal",
    "heracles_planning_domain",
    "no_reduction",
    "plan_for_goal",
    "problem_from_navigation",
    "render_plan",
    "resolve_start",
    "run_fast_downward",
    "simulate_plan",
    "solve",
    "unified_planning_domain",
    "validate_with_unified_planning",
]
