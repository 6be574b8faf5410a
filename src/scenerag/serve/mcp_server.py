"""The MCP server (official ``mcp`` SDK): the scene-graph tools for any MCP client.

Tools: ``cypher_query`` (read-only, always), ``schema``, ``ask``, ``ground``, ``plan``, ``retrieve_subgraph``. Each
returns structured JSON; refusals and query errors come back as tool errors whose text says how to fix
the call. Served over streamable HTTP at ``/mcp`` inside the HTTP app, or over stdio
(:func:`scenerag.serve.run.serve_mcp_stdio`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server.mcpserver import Context

from scenerag.errors import SceneRagError
from scenerag.serve.api_models import AskResponse
from scenerag.serve.config import package_version
from scenerag.serve.errors import error_body
from scenerag.serve.service import SceneService
from scenerag.store.base import QueryError

T = TypeVar("T")

INSTRUCTIONS = (
    "Tools over a robot's 3D scene graph stored in a graph database (labels such as Building, Floor, Room, "
    "Place/MeshPlace, Object; edges CONTAINS parent->child and *_CONNECTED within a layer). Call `schema` "
    "first, then `cypher_query` with read-only Neo4j-dialect Cypher, or `retrieve_subgraph` to find nodes by "
    "text. `ask` and `ground` run the server's own LLM agent."
)


def _call(fn: Callable[[], T]) -> T:
    """Run a service call; deliberate failures become tool errors the model can read and act on."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        return fn()
    except QueryError as exc:
        raise ToolError(str(exc)) from exc  # already begins with its kind
    except SceneRagError as exc:
        raise ToolError(f"{error_body(exc)['kind']}: {exc}") from exc


def _arrival(ctx: Context | None) -> float | None:
    """When the HTTP request carrying this tool call arrived (None over stdio)."""
    from scenerag.serve.http_api import ARRIVAL_KEY

    try:
        request = ctx.request_context.request if ctx is not None else None
    except ValueError:
        return None
    scope = getattr(request, "scope", None)
    value = scope.get(ARRIVAL_KEY) if isinstance(scope, dict) else None
    return float(value) if value is not None else None


def build_mcp_server(service: SceneService) -> Any:
    """An ``MCPServer`` exposing ``service`` as MCP tools (import of ``mcp`` happens here)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer("scenerag", instructions=INSTRUCTIONS, version=package_version(), log_level="WARNING")
    read_only = ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )

    @server.tool(
        name="cypher_query",
        description="Run one read-only Cypher query (Neo4j dialect) on the scene graph database; returns the "
        "rows, or the database's error to fix. Writes are always refused here. `timeout_s` lowers the "
        "server's time limit; an overloaded server answers 'overloaded: ... retry after N s'.",
        annotations=read_only,
    )
    def cypher_query(
        query: str,
        params: dict[str, Any] | None = None,
        max_rows: int | None = None,
        timeout_s: float | None = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        arrival = _arrival(ctx)
        result = _call(
            lambda: service.cypher(
                query, params or {}, max_rows=max_rows, timeout_s=timeout_s, arrival=arrival
            )
        )
        return result.to_dict()

    @server.tool(
        name="schema",
        description="The graph's schema: labels, relationship types, properties with types and values, "
        "counts and containment chains, as text for writing Cypher.",
        annotations=read_only,
    )
    def schema() -> dict[str, Any]:
        current = _call(service.schema)
        return {"text": current.to_text(), "labels": current.node_counts, "relationships": current.rel_counts}

    @server.tool(
        name="ask",
        description="Answer a question about the scene with the server's LLM agent (it writes read-only "
        "Cypher); returns the answer (SLDP), the queries it ran and the node symbols involved.",
        annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False),
    )
    def ask(question: str, answer_type: str | None = None) -> dict[str, Any]:
        result = _call(lambda: service.ask(question, answer_type=answer_type))
        return AskResponse.from_result(result).model_dump()

    @server.tool(
        name="ground",
        description="Ground a robot instruction to a PDDL goal whose symbols exist in the graph (pass "
        "`instruction`), or check a PDDL goal you wrote (pass `goal`).",
        annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False),
    )
    def ground(instruction: str | None = None, goal: str | None = None) -> dict[str, Any]:
        outcome = _call(lambda: service.ground(instruction=instruction, goal=goal))
        return {
            "goal": outcome.goal,
            "grounded": outcome.grounded,
            "problems": outcome.problems,
            "queries": [t.input for t in outcome.run.tools] if outcome.run else [],
        }

    @server.tool(
        name="plan",
        description="Plan for a PDDL goal (e.g. '(and (visited-room R2) (holding O5))', symbols from the graph) "
        "with Fast Downward; `start` is a node symbol or omitted for the robot's Agent node. Returns the "
        "validated plan steps or why there is none.",
        annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False),
    )
    def plan(goal: str, start: str | None = None) -> dict[str, Any]:
        outcome = _call(lambda: service.plan(goal, start=start))
        out = outcome.to_dict()
        return {key: out[key] for key in ("status", "steps", "cost", "validated", "message", "elapsed_s")}

    @server.tool(
        name="retrieve_subgraph",
        description="Find the nodes a text is about (e.g. 'signs in the lounge') and return them with their "
        "CONTAINS ancestors and the edges between them. `labels` restricts the search, e.g. ['Object'].",
        annotations=read_only,
    )
    def retrieve_subgraph(
        text: str, k: int = 10, labels: list[str] | None = None, ancestors: bool = True
    ) -> dict[str, Any]:
        found = _call(lambda: service.retrieve_subgraph(text, k=k, labels=labels, ancestors=ancestors))
        return found.to_dict()

    return server
