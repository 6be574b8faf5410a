"""``CypherAgent``: an LLM answers questions about a scene graph, or grounds instructions to PDDL goals, by
writing Cypher against the graph database — never by reading the whole graph.

Four variants, as in the seed papers: ``feedforward`` (one query, then an LLM refinement of the rows into
the answer) or ``agentic`` (up to ``max_tool_calls`` queries; failed queries come back with the database's
error; the model decides when to answer), each ``with_schema`` (the live schema from ``schema_text()`` in
the prompt) or without (the model explores). Models with native tool calling get a ``cypher_query`` tool;
others (the local 1.5B model) act through a grammar-enforced JSON action ``{"thought", "action", "input"}``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Literal

from scenerag.agents import prompts
from scenerag.agents.base import RunState, normalize_answer, sldp_problems
from scenerag.agents.cypher_tool import CYPHER_TOOL, CypherTool
from scenerag.agents.grounding import PddlGrounder
from scenerag.agents.result import AgentResult, Task
from scenerag.eval.pddl_goal import HERACLES_DOMAIN, GoalDomain
from scenerag.llm.base import ChatModel, ChatResponse, LLMError, Message
from scenerag.store.base import GraphStore

Mode = Literal["agentic", "feedforward"]
ToolInterface = Literal["auto", "native", "json"]

ACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "thought": {"type": "string"},
        "action": {"type": "string", "enum": ["cypher", "answer"]},
        "input": {"type": "string"},
    },
    "required": ["thought", "action", "input"],
    "additionalProperties": False,
}
ANSWER_ACTION_SCHEMA: dict[str, Any] = {
    **ACTION_SCHEMA,
    "properties": {**ACTION_SCHEMA["properties"], "action": {"type": "string", "enum": ["answer"]}},
}
QUERY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"thought": {"type": "string"}, "cypher": {"type": "string"}},
    "required": ["thought", "cypher"],
    "additionalProperties": False,
}
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


@dataclass
class CypherAgentConfig:
    """Settings of one ``CypherAgent`` variant."""

    mode: Mode = "agentic"
    with_schema: bool = True
    max_tool_calls: int = 5
    #: answer-format corrections allowed after an invalid final answer (agentic only)
    max_corrections: int = 2
    tool_interface: ToolInterface = "auto"
    #: worked query examples generated from the schema (helps small models with [:CONTAINS*])
    examples: bool = True
    result_budget_tokens: int = 400
    query_timeout_s: float = 10.0
    max_rows: int = 200
    max_reply_tokens: int = 384

    @property
    def name(self) -> str:
        return f"cypher-{self.mode}-{'schema' if self.with_schema else 'noschema'}"


class CypherAgent:
    """Answers over ``store`` with ``model``; ``run()`` returns an :class:`AgentResult`."""

    def __init__(
        self,
        model: ChatModel,
        store: GraphStore,
        config: CypherAgentConfig | None = None,
        *,
        domain: GoalDomain = HERACLES_DOMAIN,
    ) -> None:
        self.model = model
        self.store = store
        self.config = config or CypherAgentConfig()
        self.domain = domain
        self.tool = CypherTool(
            store,
            budget_tokens=self.config.result_budget_tokens,
            timeout_s=self.config.query_timeout_s,
            max_rows=self.config.max_rows,
            count_tokens=model.count_tokens,
        )
        self.grounder = PddlGrounder(store, domain)
        self._schema_text: str | None = None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def native_tools(self) -> bool:
        iface = self.config.tool_interface
        return iface == "native" or (iface == "auto" and self.model.supports_tools)

    # -- prompts --------------------------------------------------------------------------------------
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
        """The system prompt of the agentic variant (also what ``scenerag ask --show-prompt`` prints)."""
        parts = [
            "You answer questions about a robot's 3D scene graph stored in a graph database by writing "
            "Cypher queries. Think step by step, check results, and fix failed queries from the error.",
            prompts.SCENE_GRAPH_PRIMER,
            self._schema_part(),
            prompts.CYPHER_RULES,
            self._task_rules(task),
        ]
        if not self.native_tools:
            parts.append(prompts.json_action_instructions(self.config.max_tool_calls))
        return "\n\n".join(parts)

    @staticmethod
    def _user_prompt(question: str, task: Task, answer_type: str | None) -> str:
        head = "Instruction" if task == "pddl" else "Question"
        hint = prompts.SLDP_TYPE_HINTS.get(answer_type or "", "") if task == "qa" else ""
        return f"{head}: {question}" + (f"\n{hint}" if hint else "")

    # -- entry point ----------------------------------------------------------------------------------
    def run(self, question: str, *, task: Task = "qa", answer_type: str | None = None) -> AgentResult:
        """Answer ``question`` (``task="qa"``) or ground it to a PDDL goal (``task="pddl"``)."""
        start = time.perf_counter()
        state = RunState(AgentResult(self.name, question, task, None))
        try:
            if self.config.mode == "feedforward":
                self._feedforward(state, question, task, answer_type)
            elif self.native_tools:
                self._agentic_native(state, question, task, answer_type)
            else:
                self._agentic_json(state, question, task, answer_type)
        except LLMError as exc:
            state.result.error = str(exc)
        state.result.wall_s = time.perf_counter() - start
        return state.finish()

    def _chat(self, state: RunState, **kwargs: Any) -> ChatResponse:
        kwargs.setdefault("max_tokens", self.config.max_reply_tokens)
        resp = self.model.chat(state.messages, **kwargs)
        state.add_usage(resp.usage)
        return resp

    def _problems(self, answer: str, task: Task) -> list[str]:
        if not answer.strip():
            return ["the answer is empty"]
        return sldp_problems(answer) if task == "qa" else self.grounder.problems(answer)

    def _accept(self, state: RunState, raw: str, task: Task) -> list[str]:
        """Record ``raw`` as the answer; return its problems (empty when valid)."""
        answer = normalize_answer(raw, task)
        state.result.raw_answer = raw
        state.result.answer = answer
        problems = self._problems(answer, task)
        state.result.error = "; ".join(problems) if problems else None
        return problems

    # -- agentic, JSON actions ------------------------------------------------------------------------
    def _agentic_json(self, state: RunState, question: str, task: Task, answer_type: str | None) -> None:
        cfg = self.config
        state.messages = [
            Message.system(self.system_prompt(task)),
            Message.user(self._user_prompt(question, task, answer_type)),
        ]
        corrections = 0
        while True:
            can_query = len(state.result.tools) < cfg.max_tool_calls
            resp = self._chat(state, response_schema=ACTION_SCHEMA if can_query else ANSWER_ACTION_SCHEMA)
            action = _parse_action(resp.message.content)
            state.messages.append(Message.assistant(resp.message.content))
            if action["action"] == "cypher" and can_query:
                text, record = self.tool.run(action["input"])
                state.result.tools.append(record)
                left = cfg.max_tool_calls - len(state.result.tools)
                note = f"\n({left} queries left)" if left else "\n(no queries left: answer now)"
                state.messages.append(Message.user(f"Query result:\n{text}{note}"))
                continue
            problems = self._accept(state, action["input"], task)
            if not problems or corrections >= cfg.max_corrections:
                return
            corrections += 1
            state.messages.append(
                Message.user(
                    "Your answer was rejected: " + "; ".join(problems) + ". Fix it (query again if you must)."
                )
            )

    # -- agentic, native tool calls -------------------------------------------------------------------
    def _agentic_native(self, state: RunState, question: str, task: Task, answer_type: str | None) -> None:
        cfg = self.config
        state.messages = [
            Message.system(self.system_prompt(task)),
            Message.user(self._user_prompt(question, task, answer_type)),
        ]
        corrections = 0
        while True:
            can_query = len(state.result.tools) < cfg.max_tool_calls
            resp = self._chat(state, tools=[CYPHER_TOOL] if can_query else None)
            msg = resp.message
            if msg.tool_calls and can_query:
                state.messages.append(msg)
                for call in msg.tool_calls:
                    if len(state.result.tools) >= cfg.max_tool_calls:
                        state.messages.append(
                            Message.tool(call.id, "Query limit reached: give your final answer now.")
                        )
                        continue
                    query = str(call.arguments.get("query", ""))
                    text, record = self.tool.run(query)
                    state.result.tools.append(record)
                    state.messages.append(Message.tool(call.id, text))
                continue
            state.messages.append(Message.assistant(msg.content))
            problems = self._accept(state, msg.content, task)
            if not problems or corrections >= cfg.max_corrections:
                return
            corrections += 1
            state.messages.append(
                Message.user(
                    "Your answer was rejected: " + "; ".join(problems) + ". Fix it (query again if you must)."
                )
            )

    # -- feedforward: one query, then refinement ------------------------------------------------------
    def _feedforward(self, state: RunState, question: str, task: Task, answer_type: str | None) -> None:
        generate = "\n\n".join(
            [
                "You write ONE Cypher query that retrieves what is needed to answer a question about a robot's "
                '3D scene graph stored in a graph database. Reply with JSON {"thought": ..., "cypher": ...}.',
                prompts.SCENE_GRAPH_PRIMER,
                self._schema_part(),
                prompts.CYPHER_RULES,
            ]
            + ([prompts.pddl_rules(self.domain.describe())] if task == "pddl" else [])
        )
        state.messages = [Message.system(generate), Message.user(self._user_prompt(question, task, None))]
        resp = self._chat(state, response_schema=QUERY_SCHEMA)
        state.messages.append(Message.assistant(resp.message.content))
        query = str(_loads(resp.message.content).get("cypher", ""))
        text, record = self.tool.run(query)
        state.result.tools.append(record)
        refine = "\n\n".join(
            [
                "You answer a question about a robot's 3D scene graph from a Cypher query and its results. "
                'Be concise; return node symbols unless asked otherwise. Reply with JSON {"answer": ...}.',
                self._task_rules(task),
            ]
        )
        refine_user = f"{self._user_prompt(question, task, answer_type)}\n\nCypher query: {record.input}\n\nQuery results:\n{text}"
        refine_messages = [Message.system(refine), Message.user(refine_user)]
        resp = self.model.chat(
            refine_messages, response_schema=ANSWER_SCHEMA, max_tokens=self.config.max_reply_tokens
        )
        state.add_usage(resp.usage)
        state.messages.extend([*refine_messages, Message.assistant(resp.message.content)])
        self._accept(state, str(_loads(resp.message.content).get("answer", "")), task)


def _loads(text: str) -> dict[str, Any]:
    """The JSON object of a schema-constrained reply (backends already checked it parses)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LLMError("bad_response", f"the model's reply is not JSON: {exc}: {text[:200]!r}") from None
    if not isinstance(value, dict):
        raise LLMError("bad_response", f"the model's reply is not a JSON object: {text[:200]!r}")
    return value


def _parse_action(text: str) -> dict[str, str]:
    value = _loads(text)
    action = str(value.get("action", "answer")).lower()
    return {"action": "cypher" if action == "cypher" else "answer", "input": str(value.get("input", ""))}
