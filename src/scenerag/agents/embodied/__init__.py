"""EmbodiedRAG (Booker et al., 2024): task-driven 3D scene subgraph retrieval with environment and
self-query feedback, a ReAct planner over any environment that states its actions as data
(``environment``) and decodes each action under a grammar of what the step allows (``menu``), the
paper's agents (ReAct, Full-Mem, EmbodiedRAG, -strict, -feedback), the symbolic household simulator wired
to them (``household``) and the benchmark that compares them.
"""

from scenerag.agents.embodied.decisions import (
    Decider,
    Decision,
    LLMDecider,
    ReplayDecider,
    count_prompt_tokens,
)
from scenerag.agents.embodied.environment import (
    ActionParameter,
    ActionSpec,
    EmbodiedTask,
    Environment,
    EnvironmentSpec,
)
from scenerag.agents.embodied.errors import EmbodiedConfigError
from scenerag.agents.embodied.household import HOUSEHOLD, HouseholdEpisode
from scenerag.agents.embodied.menu import ActionMenu, ParsedReply, build_menu
from scenerag.agents.embodied.planner import (
    AgentKind,
    EmbodiedPlanner,
    PlannerConfig,
    allowed_actions,
    parse_agent_kind,
)
from scenerag.agents.embodied.pre_retrieval import EntitySpec, PreRetrieval, PreRetriever
from scenerag.agents.embodied.records import EpisodeResult, StepRecord
from scenerag.agents.embodied.runner import (
    AgentSummary,
    BenchmarkConfig,
    BenchmarkReport,
    CountedAlong,
    count_along,
    format_summary,
    measure_replayed_tokens,
    run_benchmark,
    run_episode,
    select_tasks,
    summarize,
)
from scenerag.agents.embodied.self_query import SelfQuerier, SelfQuery
from scenerag.agents.embodied.subgraph import (
    IndexUpdate,
    SceneIndex,
    TaskRetriever,
    default_subgraph_config,
    entity_document_config,
)

__all__ = [
    "HOUSEHOLD",
    "ActionMenu",
    "ActionParameter",
    "ActionSpec",
    "AgentKind",
    "AgentSummary",
    "BenchmarkConfig",
    "BenchmarkReport",
    "CountedAlong",
    "Decider",
    "Decision",
    "EmbodiedConfigError",
    "EmbodiedPlanner",
    "EmbodiedTask",
    "EntitySpec",
    "Environment",
    "EnvironmentSpec",
    "EpisodeResult",
    "HouseholdEpisode",
    "IndexUpdate",
    "LLMDecider",
    "ParsedReply",
    "PlannerConfig",
    "PreRetrieval",
    "PreRetriever",
    "ReplayDecider",
    "SceneIndex",
    "SelfQuerier",
    "SelfQuery",
    "StepRecord",
    "TaskRetriever",
    "allowed_actions",
    "build_menu",
    "count_along",
    "count_prompt_tokens",
    "default_subgraph_config",
    "entity_document_config",
    "format_summary",
    "measure_replayed_tokens",
    "parse_agent_kind",
    "run_benchmark",
    "run_episode",
    "select_tasks",
    "summarize",
]
