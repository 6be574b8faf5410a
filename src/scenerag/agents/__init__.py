"""LLM agents over scene graphs: the Cypher agent (feedforward / agentic, with or without the schema), PDDL
grounding, and the baselines it is compared with. Each returns an ``AgentResult``.
"""

from scenerag.agents.base import SceneAgent
from scenerag.agents.cypher_agent import CypherAgent, CypherAgentConfig
from scenerag.agents.cypher_tool import CypherTool, summarize_rows
from scenerag.agents.grounding import GroundingError, PddlGrounder
from scenerag.agents.result import AgentResult, ToolRecord

__all__ = [
    "AgentResult",
    "CypherAgent",
    "CypherAgentConfig",
    "CypherTool",
    "GroundingError",
    "PddlGrounder",
    "SceneAgent",
    "ToolRecord",
    "summarize_rows",
]
