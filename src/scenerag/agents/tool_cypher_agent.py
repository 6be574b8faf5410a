"""``ToolCallingCypherAgent``: an LLM answers questions about a scene graph, or grounds instructions to PDDL goals, by
writing Cypher against the graph database — never by reading the whole graph.

Four variants, as in the seed papers: ``feedforward`` (one query, then an LLM refinement of the rows into
the answer) or ``agentic`` (up to ``max_tool_calls`` queries; failed queries come back with the database's
error; the model decides when to answer), each ``with_schema`` (the live schema from ``schema_text()`` in
the prompt) or without (the model explores). Models with native tool calling get a ``cypher_query`` tool;
others (the local 1.5B model) act through a grammar-enforced JSON action ``{"thought", "action", "input"}``.
"""

from __future__ import annotations

from dataclasses import dataclass

from scenerag.agents import prompts
from scenerag.agents.cypher_tool import CYPHER_TOOL, CypherTool
from scenerag.agents.grounding import PddlGrounder
from scenerag.agents.result import Task, ToolRecord
from scenerag.agents.tool_agent import ANSWER_ACTION_SCHEMA, AgentConfig, ToolAgent, default_answer_problems
from scenerag.lang.pddl_goal import HERACLES_DOMAIN, GoalDomain
from scenerag.llm.base import ChatModel
from scenerag.store.base import GraphStore

__all__ = ["ANSWER_ACTION_SCHEMA", "ToolCallingCypherAgent", "ToolCallingCypherConfig"]


@dataclass
class ToolCallingCypherConfig(AgentConfig):
    """Settings of one ``ToolCallingCypherAgent`` variant."""

    with_schema: bool = True
    #: worked query examples generated from the schema (helps small models with [:CONTAINS*])
    examples: bool = True
    result_budget_tokens: int = 400
    query_timeout_s: float = 10.0
    max_rows: int = 200
    #: rewrite classes-used-as-labels and wrong-case values before running (reported to the model)
    auto_repair: bool = True

    @property
    def name(self) -> str:
        return f"cypher-tools-{self.mode}-{'schema' if self.with_schema else 'noschema'}"


class ToolCallingCypherAgent(ToolAgent):
    """Answers over ``store`` with ``model``; ``run()`` returns an :class:`AgentResult`."""

    action_word = "Cypher query"
    input_field = "cypher"

    def __init__(
        self,
        model: ChatModel,
        store: GraphStore,
        config: ToolCallingCypherConfig | None = None,
        *,
        domain: GoalDomain = HERACLES_DOMAIN,
    ) -> None:
        self.config: ToolCallingCypherConfig = config or ToolCallingCypherConfig()
        super().__init__(model, self.config, CYPHER_TOOL)
        self.store = store
        self.domain = domain
        self.tool = CypherTool(
            store,
            budget_tokens=self.config.result_budget_tokens,
            timeout_s=self.config.query_timeout_s,
            max_rows=self.config.max_rows,
            count_tokens=model.count_tokens,
            auto_repair=self.config.auto_repair,
        )
        self.grounder = PddlGrounder(store, domain)

    @property
    def name(self) -> str:
        return self.config.name

    def _schema_part(self) -> str:
        if not self.config.with_schema:
            return prompts.no_schema_block()
        schema = self.store.schema()
        parts = [prompts.schema_block(schema)]
        if self.config.examples:
            parts.append(prompts.cypher_examples(schema))
        return "\n".join(parts)

    def _task_rules(self, task: Task) -> str:
        return prompts.ANSWER_RULES_QA if task == "qa" else prompts.pddl_rules(self.domain.describe())

    def system_prompt(self, task: Task) -> str:
        return "\n\n".join(
            [
                "You answer questions about a robot's 3D scene graph by querying its graph database with "
                "Cypher. Check results; fix failed queries from the error.",
                prompts.SCENE_GRAPH_PRIMER,
                self._schema_part(),
                prompts.CYPHER_RULES,
                self._task_rules(task),
            ]
        )

    def generation_prompt(self, task: Task) -> str:
        parts = [
            "You write ONE Cypher query that retrieves what is needed to answer a question about a robot's 3D "
            'scene graph stored in a graph database. Reply with JSON {"thought": ..., "cypher": ...}.',
            prompts.SCENE_GRAPH_PRIMER,
            self._schema_part(),
            prompts.CYPHER_RULES,
        ]
        if task == "pddl":
            parts.append(prompts.pddl_rules(self.domain.describe()))
        return "\n\n".join(parts)

    def refinement_prompt(self, task: Task) -> str:
        return (
            "You answer a question about a robot's 3D scene graph from a Cypher query and its results. Be "
            'concise; return node symbols unless asked otherwise. Reply with JSON {"answer": ...}.\n\n'
            + self._task_rules(task)
        )

    def run_tool(self, text: str) -> tuple[str, ToolRecord]:
        return self.tool.run(text)

    def is_tool_input(self, text: str) -> bool:
        return text.lstrip("`<[( ").split(" ", 1)[0].upper() in _QUERY_WORDS

    def answer_problems(self, answer: str, task: Task) -> list[str]:
        if self.is_tool_input(answer):
            return [
                "that is a Cypher query, not the answer: run it with the tool, then answer with its result"
            ]
        return default_answer_problems(answer, task, self.grounder)


_QUERY_WORDS = frozenset({"MATCH", "OPTIONAL", "CALL", "WITH", "UNWIND", "RETURN", "CYPHER"})
