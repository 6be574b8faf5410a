"""Serve a scene-graph database to programs and LLM clients: an HTTP API (FastAPI) and an MCP server
(streamable HTTP at ``/mcp``, or stdio) exposing read-only Cypher, the schema, question answering,
PDDL grounding, planning and subgraph retrieval, with auth, rate and size limits, admission control and
deadlines enforced server-side.

``serve(db, host, port, token, llm=...)`` runs it; ``serve_mcp_stdio(db, ...)`` speaks MCP over stdio.
FastAPI, uvicorn and mcp are imported only when a server is built; the names below are imported on first
use, so the CLI's look-up of a server holding a database (:mod:`scenerag.serve.share`) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOME = {
    "ServerConfig": "config",
    "ServerConfigError": "config",
    "check_bind": "config",
    "is_loopback": "config",
    "ServiceError": "errors",
    "BackgroundServer": "run",
    "build_app": "run",
    "free_port": "run",
    "open_entity_index": "run",
    "serve": "run",
    "serve_mcp_stdio": "run",
    "GroundOutcome": "service",
    "SceneService": "service",
    "RetrievedSubgraph": "subgraph",
    "SubgraphHit": "subgraph",
    "SubgraphRetriever": "subgraph",
}

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


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'scenerag.serve' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"scenerag.serve.{module}"), name)
    globals()[name] = value
    return value
