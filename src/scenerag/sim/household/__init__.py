"""Symbolic AI2Thor-like kitchens for EmbodiedRAG planning experiments (no Unity needed).

``HouseholdEnv(style, seed, n_distractors)`` builds one of five procedurally varied kitchen layouts with the
paper's 28 object attributes, partial observability and the planner actions (``tool_specs()``); ``TASKS``
are 20 easy and 20 hard tasks with automatic checks; ``export_scene_graph`` / ``SceneGraphTracker`` expose
the agent's discovered world as a ``SceneGraph`` with incremental diffs; ``solve`` is a scripted expert.
"""

from scenerag.sim.household.actions import ACTIONS, ActionResult, describe_tools, tool_specs
from scenerag.sim.household.attributes import (
    AGENT_RELATIVE_ATTRIBUTES,
    ATTRIBUTE_NAMES,
    ObjectState,
    Temperature,
)
from scenerag.sim.household.catalog import CATALOG, DISTRACTOR_TYPES, KITCHEN_TYPES, ObjectTypeSpec
from scenerag.sim.household.env import HouseholdEnv
from scenerag.sim.household.errors import HouseholdError, LayoutConfigError, SolverError, UnknownTaskError
from scenerag.sim.household.layouts import DISTRACTOR_SETTINGS, LAYOUT_STYLES, LayoutConfig, build_world
from scenerag.sim.household.scene_graph import (
    SceneGraphDiff,
    SceneGraphTracker,
    diff_scene_graphs,
    export_scene_graph,
)
from scenerag.sim.household.solver import OracleSolver, PlannedAction, replay, solve
from scenerag.sim.household.tasks import TASKS, TASKS_BY_ID, Requirement, Task, get_task
from scenerag.sim.household.world import World

__all__ = [
    "ACTIONS",
    "AGENT_RELATIVE_ATTRIBUTES",
    "ATTRIBUTE_NAMES",
    "CATALOG",
    "DISTRACTOR_SETTINGS",
    "DISTRACTOR_TYPES",
    "KITCHEN_TYPES",
    "LAYOUT_STYLES",
    "TASKS",
    "TASKS_BY_ID",
    "ActionResult",
    "HouseholdEnv",
    "HouseholdError",
    "LayoutConfig",
    "LayoutConfigError",
    "ObjectState",
    "ObjectTypeSpec",
    "OracleSolver",
    "PlannedAction",
    "Requirement",
    "SceneGraphDiff",
    "SceneGraphTracker",
    "SolverError",
    "Task",
    "Temperature",
    "UnknownTaskError",
    "World",
    "build_world",
    "describe_tools",
    "diff_scene_graphs",
    "export_scene_graph",
    "get_task",
    "replay",
    "solve",
    "tool_specs",
]
