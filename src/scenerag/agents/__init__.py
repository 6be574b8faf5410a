"""LLM agents over scene graphs: the Cypher agent (linked entities, retrieved examples, checked and
execution-corrected queries; feedforward / agentic, with or without the schema), the tool-calling variant of
the seed papers, PDDL grounding, and the baselines they are compared with. Each returns an ``AgentResult``.
"""

from scenerag.agents.base import SceneAgent
from scenerag.agents.cypher_agent import CypherAgent, CypherAgentConfig
from scenerag.agents.cypher_tool import CypherTool, summarize_rows
from scenerag.agents.grounding import GroundingError, PddlGrounder
from scenerag.agents.result import AgentResult, ToolRecord
from scenerag.agents.tool_cypher_agent import ToolCallingCypherAgent, ToolCallingCypherConfig

__all__ = [
    "AgentResult",
    "CypherAgent",
    "CypherAgentConfig",
    "CypherTool",
    "GroundingError",
    "PddlGrounder",
    "SceneAgent",
    "ToolCallingCypherAgent",
    "ToolCallingCypherConfig",
    "ToolRecord",
    "summarize_rows",
]
