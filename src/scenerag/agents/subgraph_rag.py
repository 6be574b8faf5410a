"""EmbodiedRAG-style question answering over a whole scene graph (the ``subgraph-rag`` method of the
cross-method benchmark): LLM entity pre-retrieval, entity search, the induced subgraph as compact JSON, an
answer from it.
"""

from __future__ import annotations

import json
import time

from scenerag.agents.base import RunState, normalize_answer
from scenerag.agents.result import AgentResult, Task, ToolRecord
from scenerag.agents.tool_agent import ANSWER_SCHEMA, ToolAgent, default_answer_problems, loads_object
from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph
from scenerag.llm.base import ChatModel, LLMError, Message
from scenerag.retrieval.documents import DocumentConfig
from scenerag.retrieval.embeddings import Embedder
from scenerag.retrieval.entity_store import EntityStore

SUBGRAPH_PROMPT = (
    "You answer questions about a robot's 3D scene graph from the part of it retrieved for the question "
    '(JSON: nodes with id, class, label, the container they are "in", attributes and pos = x, y, z in metres).'
)
SUBGRAPH_ATTRIBUTES: tuple[str, ...] = ("color", "name", "floor_level", "room", "kind", "level", "area_m2")


class SubgraphRAGAgent:
    """EmbodiedRAG-style question answering: the LLM lists the entities the question needs (pre-retrieval),
    each is searched in an entity index of the graph's objects, rooms and floors, the hits induce a
    subgraph (plus their containing rooms and floors) serialised as compact JSON with positions, and the
    LLM answers from it."""

    def __init__(
        self,
        model: ChatModel,
        graph: SceneGraph,
        embedder: Embedder,
        *,
        k: int = 8,
        min_score: float = 0.35,
        max_entities: int = 4,
        max_reply_tokens: int = 256,
    ) -> None:
        from scenerag.agents.embodied.pre_retrieval import PreRetriever
        from scenerag.retrieval.subgraph import SubgraphConfig

        self.model = model
        self.graph = graph
        labels = (ont.OBJECT, ont.FUNCTIONAL_ELEMENT, ont.ROOM, ont.FLOOR)
        self.entities = EntityStore(embedder, config=DocumentConfig(labels=labels))
        self.entities.sync(graph)
        present = {k for n in graph.nodes() if n.label in labels for k in n.attributes}
        self.attribute_names = [a for a in SUBGRAPH_ATTRIBUTES if a in present] or ["color"]
        self.pre = PreRetriever(model, self.attribute_names, max_entities=max_entities)
        self.subgraph_config = SubgraphConfig(
            k=k,
            min_score=min_score,
            relative_margin=0.25,
            labels=labels,
            connect_containment=True,
            connector_labels=(ont.ROOM, ont.FLOOR, ont.OBJECT),
            connector_attributes=("name",),
            keep_attributes=("color", "name"),
        )
        self.max_reply_tokens = max_reply_tokens
        self.name = "subgraph-rag"

    def run(self, question: str, *, task: Task = "qa", answer_type: str | None = None) -> AgentResult:
        from scenerag.agents import prompts
        from scenerag.retrieval.subgraph import retrieve_subgraph, serialize_graph

        start = time.perf_counter()
        state = RunState(AgentResult(self.name, question, task, None))
        try:
            pre = self.pre.run(question)
            state.add_usage(pre.usage)
            sub = retrieve_subgraph(self.entities, self.graph, pre.queries(), self.subgraph_config)
            for node in sub.graph.nodes():
                node.attributes["pos"] = [round(float(v), 2) for v in self.graph.node(node.symbol).position]
            text = serialize_graph(sub.graph, id_attribute=None, include_label=True)
            state.result.tools.append(
                ToolRecord(
                    "subgraph_retrieval",
                    json.dumps([q.text for q in pre.queries()]),
                    True,
                    rows=sub.graph.num_nodes,
                    elapsed_ms=sub.seconds * 1000.0,
                    result_tokens=self.model.count_tokens(text),
                    symbols=sub.symbols,
                )
            )
            rules = prompts.ANSWER_RULES_QA if task == "qa" else prompts.pddl_rules("")
            state.messages = [
                Message.system(f'{SUBGRAPH_PROMPT}\n\n{rules} Reply with JSON {{"answer": ...}}.'),
                Message.user(
                    f"Retrieved subgraph:\n{text}\n\n{ToolAgent.user_prompt(question, task, answer_type)}"
                ),
            ]
            resp = self.model.chat(
                state.messages, response_schema=ANSWER_SCHEMA, max_tokens=self.max_reply_tokens
            )
            state.add_usage(resp.usage)
            state.messages.append(Message.assistant(resp.message.content))
            raw = str(loads_object(resp.message.content).get("answer", ""))
            state.result.raw_answer = raw
            state.result.answer = normalize_answer(raw, task)
            problems = default_answer_problems(state.result.answer, task, None)
            state.result.error = "; ".join(problems) if problems else None
        except LLMError as exc:
            state.result.error = str(exc)
        state.result.wall_s = time.perf_counter() - start
        return state.finish()


__all__ = ["SUBGRAPH_ATTRIBUTES", "SUBGRAPH_PROMPT", "SubgraphRAGAgent"]
