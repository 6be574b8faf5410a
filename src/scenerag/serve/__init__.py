"""Serve a scene-graph database to programs and LLM clients: an HTTP API (FastAPI) and an MCP server
(streamable HTTP at ``/mcp``, or stdio) exposing read-only Cypher, the schema, question answering,
PDDL grounding, planning and subgraph retrieval, with auth, rate and size limits enforced server-side.

``serve(db, host, port, token, llm=...)`` runs it; ``serve_mcp_stdio(db, ...)`` speaks MCP over stdio.
FastAPI, uvicorn and mcp are imported only when a server is built.
"""

from scenerag.serve.config import ServerConfig, ServerConfigError, check_bind, is_loopback
from scenerag.serve.errors import ServiceError
from scenerag.serve.run import (
    BackgroundServer,
    build_app,
    free_port,
    open_entity_index,
    serve,
    serve_mcp_stdio,
)
from scenerag.serve.service import GroundOutcome, SceneService
from scenerag.serve.subgraph import RetrievedSubgraph, SubgraphHit, SubgraphRetriever

__all__ = [
    "BackgroundServer",
    "GroundOutcome",
    "RetrievedSubgraph",
    "SceneService",
    "ServerConfig",
    "ServerConfigError",
    "ServiceError",
    "SubgraphHit",
    "SubgraphRetriever",
    "build_app",
    "check_bind",
    "free_port",
    "is_loopback",
    "open_entity_index",
    "serve",
    "serve_mcp_stdio",
]
