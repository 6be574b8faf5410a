"""``HybridCypherAgent``: the agentic Cypher agent plus a ``vector_search(text, label)`` tool, so the model can
resolve open-vocabulary names (synonyms like "couch" for a ``sofa`` class, descriptions like "the thing to
cook with") to node symbols and stored classes before it writes Cypher.

Contract: agentic mode only (the model chooses which tool to call, up to ``max_tool_calls`` calls in all).
With native tool calling the model gets two tools; otherwise the grammar-enforced JSON action is extended
with a ``tool`` name field and a ``label`` field: ``{"thought", "action": "tool" | "answer", "tool":
"cypher_query" | "vector_search", "input", "label"}`` (``label`` is the node label to search, or ``any``;
Cypher calls ignore it). Vector searches run on an :class:`~scenerag.retrieval.EntityStore` of the same
scene graph and are recorded as ``ToolRecord("vector_search", ...)`` with the symbols they returned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from scenerag.agents.base import RunState
from scenerag.agents.cypher_tool import CYPHER_TOOL
from scenerag.agents.result import ToolRecord
from scenerag.agents.tool_agent import loads_object
from scenerag.agents.tool_cypher_agent import ToolCallingCypherAgent, ToolCallingCypherConfig
from scenerag.errors import SceneRagError
from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph
from scenerag.lang.pddl_goal import HERACLES_DOMAIN, GoalDomain
from scenerag.llm.base import ChatModel, ToolSpec
from scenerag.retrieval.documents import DocumentConfig
from scenerag.retrieval.embeddings import Embedder
from scenerag.retrieval.entity_store import EntityStore
from scenerag.store.base import GraphStore

VECTOR_SEARCH = "vector_search"
ANY_LABEL = "any"
DEFAULT_SEARCH_LABELS: tuple[str, ...] = (ont.OBJECT, ont.FUNCTIONAL_ELEMENT, ont.ROOM, ont.FLOOR)

VECTOR_SEARCH_TOOL = ToolSpec(
    name=VECTOR_SEARCH,
    description=(
        "Semantic search of the scene graph's nodes by meaning: returns the node symbols whose class, name or "
        "description best match an open-vocabulary text (synonyms, descriptions), with their class, room and "
        "floor. Use it to find which stored class or which nodes a word refers to before writing Cypher."
    ),
    parameters={
        "type": "object",
        "properties": {
            "text": {
                "type": "string",
                "description": "What to look for, e.g. 'couch' or 'something to sit on'.",
            },
            "label": {"type": "string", "description": "Node label to search (e.g. Object, Room) or 'any'."},
        },
        "required": ["text", "label"],
    },
)

VECTOR_SEARCH_GUIDE = (
    "Besides cypher_query you have vector_search(text, label): a semantic search that maps words to nodes "
    "(e.g. 'couch' finds sofa objects, 'where food is cooked' finds the kitchen). When the question names "
    "a thing or room that may not be a stored class value, call vector_search first, then use the classes "
    "or symbols it returns in Cypher."
)


class HybridCypherError(SceneRagError):
    """A hybrid Cypher agent that cannot be set up as asked."""


@dataclass
class HybridCypherConfig(ToolCallingCypherConfig):
    """``ToolCallingCypherConfig`` plus the vector search: ``search_k`` hits per search, ``min_score`` threshold,
    ``search_labels`` the node labels the model may search."""

    search_k: int = 6
    min_score: float = 0.2
    search_labels: tuple[str, ...] = DEFAULT_SEARCH_LABELS

    def __post_init__(self) -> None:
        if self.mode != "agentic":
            raise HybridCypherError(
                f"the hybrid Cypher agent runs in agentic mode only, got mode={self.mode!r}",
                hint="use mode='agentic' (the model chooses between the two tools)",
            )
        if self.search_k < 1:
            raise HybridCypherError(f"search_k must be >= 1, got {self.search_k}")

    @property
    def name(self) -> str:
        return f"hybrid-cypher-{'schema' if self.with_schema else 'noschema'}"


def entity_store_for(
    graph: SceneGraph, embedder: Embedder, labels: tuple[str, ...] = DEFAULT_SEARCH_LABELS
) -> EntityStore:
    """An entity store of ``graph``'s nodes with these labels (class/name documents plus description
    sub-documents), synced and ready to search."""
    store = EntityStore(embedder, config=DocumentConfig(labels=labels))
    store.sync(graph)
    return store


class HybridCypherAgent(ToolCallingCypherAgent):
    """Agentic Cypher agent with a second tool, ``vector_search`` (see the module docstring)."""

    def __init__(
        self,
        model: ChatModel,
        store: GraphStore,
        entities: EntityStore,
        config: HybridCypherConfig | None = None,
        *,
        domain: GoalDomain = HERACLES_DOMAIN,
    ) -> None:
        cfg = config or HybridCypherConfig()
        if not isinstance(cfg, HybridCypherConfig):
            raise HybridCypherError(f"HybridCypherAgent needs a HybridCypherConfig, got {type(cfg).__name__}")
        super().__init__(model, store, cfg, domain=domain)
        self.config: HybridCypherConfig = cfg
        self.entities = entities
        self.tools = [CYPHER_TOOL, VECTOR_SEARCH_TOOL]

    @classmethod
    def from_graph(
        cls,
        model: ChatModel,
        store: GraphStore,
        graph: SceneGraph,
        embedder: Embedder,
        config: HybridCypherConfig | None = None,
    ) -> HybridCypherAgent:
        """An agent over ``store`` whose vector search indexes ``graph`` (the graph loaded in the store)."""
        cfg = config or HybridCypherConfig()
        return cls(model, store, entity_store_for(graph, embedder, cfg.search_labels), cfg)

    @property
    def name(self) -> str:
        return self.config.name

    # -- prompts and action format ---------------------------------------------------------------------------
    def search_labels(self) -> list[str]:
        present = set(self.store.schema().node_counts)
        return [label for label in self.config.search_labels if label in present] or list(
            self.config.search_labels
        )

    def action_schema(self, *, can_call: bool) -> dict[str, Any]:
        """The JSON action with the ``tool`` and ``label`` fields (``answer`` only when no calls are left)."""
        return {
            "type": "object",
            "properties": {
                "thought": {"type": "string"},
                "action": {"type": "string", "enum": ["tool", "answer"] if can_call else ["answer"]},
                "tool": {"type": "string", "enum": [CYPHER_TOOL.name, VECTOR_SEARCH]},
                "input": {"type": "string"},
                "label": {"type": "string", "enum": [*self.search_labels(), ANY_LABEL]},
            },
            "required": ["thought", "action", "tool", "input", "label"],
            "additionalProperties": False,
        }

    def json_action_instructions(self) -> str:
        labels = ", ".join([*self.search_labels(), ANY_LABEL])
        return (
            'Reply with one JSON object per turn: {"thought": "...", "action": "tool", "tool": "cypher_query", '
            '"input": "<Cypher query>", "label": "any"} to run a query, {"thought": "...", "action": "tool", '
            '"tool": "vector_search", "input": "<words>", "label": "<one of: '
            + labels
            + '>"} to search nodes '
            'by meaning, or {"thought": "...", "action": "answer", "tool": "cypher_query", "input": "<the final '
            'answer, e.g. <O3, O7> or 12>", "label": "any"} when you know it. You see each tool result. At most '
            f"{self.config.max_tool_calls} tool calls."
        )

    def system_prompt(self, task: Any) -> str:
        return super().system_prompt(task) + "\n\n" + VECTOR_SEARCH_GUIDE

    # -- the vector search tool ---------------------------------------------------------------------------------
    def vector_search(self, text: str, label: str = ANY_LABEL) -> tuple[str, ToolRecord]:
        """Run one semantic search; return what the model sees and the record of the call."""
        started = time.perf_counter()
        text = " ".join((text or "").split())
        label = (label or ANY_LABEL).strip()
        record_input = f"{label}: {text}"
        known = self.search_labels()
        by_lower = {lab.lower(): lab for lab in known}
        if label.lower() not in (ANY_LABEL, "") and label.lower() not in by_lower:
            msg = f"ERROR: unknown label {label!r}; use one of {', '.join(known)} or {ANY_LABEL}"
            return msg, ToolRecord(
                VECTOR_SEARCH, record_input, False, error=msg, result_tokens=self.model.count_tokens(msg)
            )
        if not text:
            msg = "ERROR: vector_search needs the words to look for"
            return msg, ToolRecord(
                VECTOR_SEARCH, record_input, False, error=msg, result_tokens=self.model.count_tokens(msg)
            )
        labels = known if label.lower() in (ANY_LABEL, "") else [by_lower[label.lower()]]
        hits = self.entities.search(
            text, self.config.search_k, labels=labels, min_score=self.config.min_score
        )
        lines = []
        for hit in hits:
            meta = hit.metadata
            where = " ".join(
                f"{key} {meta[key]}"
                for key in ("room", "floor")
                if isinstance(meta.get(key), str) and meta[key]
            )
            head = f"{hit.symbol} {meta.get('label', '')} class={meta.get('class', '')}"
            color = meta.get("color")
            if isinstance(color, str) and color:
                head += f" color={color}"
            if where:
                head += f" ({where})"
            line = f"{head} score={hit.score:.2f}"
            if hit.via_subdocument:
                line += f' matched "{hit.matched_text[:80]}"'
            lines.append(line)
        out = "\n".join(lines) if lines else f"(no node matches {text!r} above score {self.config.min_score})"
        record = ToolRecord(
            VECTOR_SEARCH,
            record_input,
            True,
            rows=len(hits),
            elapsed_ms=(time.perf_counter() - started) * 1000.0,
            result_tokens=self.model.count_tokens(out),
            symbols=[h.symbol for h in hits],
        )
        return out, record

    def _call_tool(self, state: RunState, tool: str, text: str, label: str) -> str:
        if tool == VECTOR_SEARCH:
            out, record = self.vector_search(text, label)
            state.result.tools.append(record)
            return out
        return self._tool(state, text)

    # -- the agentic loop's tool hooks (two tools) ---------------------------------------------------------------
    def _tool_specs(self) -> list[ToolSpec]:
        return self.tools

    def _run_tool_call(self, state: RunState, name: str, arguments: dict[str, Any]) -> str:
        if name == VECTOR_SEARCH:
            text, label = str(arguments.get("text", "")), str(arguments.get("label", ANY_LABEL))
            return self._call_tool(state, VECTOR_SEARCH, text, label)
        query = arguments.get("query")
        if not isinstance(query, str):
            query = next((v for v in arguments.values() if isinstance(v, str)), "")
        return self._call_tool(state, CYPHER_TOOL.name, query, ANY_LABEL)

    def _json_schema(self, *, can_call: bool) -> dict[str, Any]:
        return self.action_schema(can_call=can_call)

    def _json_turn(self, state: RunState, content: str, *, can_call: bool) -> tuple[str | None, str]:
        value = loads_object(content)
        action = str(value.get("action", "answer")).lower()
        tool = str(value.get("tool", CYPHER_TOOL.name))
        text = str(value.get("input", ""))
        if action == "tool" and can_call:
            return (
                f"Result of {tool}:\n{self._call_tool(state, tool, text, str(value.get('label', ANY_LABEL)))}",
                "",
            )
        return None, text


__all__ = [
    "VECTOR_SEARCH_TOOL",
    "HybridCypherAgent",
    "HybridCypherConfig",
    "HybridCypherError",
    "entity_store_for",
]
