"""Baselines the Cypher agent is compared with, behind the same ``run()`` interface.

``ContextWindowAgent`` pastes the whole serialised graph into the prompt (its true size is measured and
reported even when it does not fit the model). ``CodeGenAgent`` writes Python against the
``scenerag.graph`` API, run in a child process (feedforward or agentic, like the Cypher agent).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from scenerag.agents import prompts
from scenerag.agents.base import RunState
from scenerag.agents.grounding import PddlGrounder
from scenerag.agents.python_sandbox import run_python
from scenerag.agents.result import AgentResult, Task, ToolRecord
from scenerag.agents.tool_agent import (
    AgentConfig,
    ToolAgent,
    answer_with_corrections,
    default_answer_problems,
)
from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph
from scenerag.lang.pddl_goal import HERACLES_DOMAIN, GoalDomain
from scenerag.llm.base import ChatModel, LLMError, Message, ToolSpec


def _pos(v: tuple[float, float, float]) -> str:
    return f"({v[0]:.2f}, {v[1]:.2f}, {v[2]:.2f})"


def serialize_graph(graph: SceneGraph) -> str:
    """The whole graph as compact text, top layer first: every node with its class and position, its
    CONTAINS parents and its same-layer neighbours (objects: id, class, position, parent places; places:
    siblings and parent rooms; rooms: class and position)."""
    by_label: dict[str, list] = {}
    for node in graph.nodes():
        by_label.setdefault(node.label, []).append(node)
    order = sorted(by_label, key=lambda lab: (-ont.LAYER_RANK.get(lab, 0), lab))
    lines: list[str] = []
    for label in order:
        lines.append(f"{label} nodes (symbol class position [in parents] [next to neighbours]):")
        sibling = ont.sibling_edge_type(label)
        for n in by_label[label]:
            text = f"{n.symbol} {n.class_name} {_pos(n.position)}"
            parents = [p.symbol for p in graph.parents(n.symbol)]
            if parents:
                text += " in " + " ".join(parents)
            neighbours = [m.symbol for m in graph.neighbors(n.symbol, sibling)]
            if neighbours:
                text += " next to " + " ".join(neighbours)
            lines.append(text)
    return "\n".join(lines)


@dataclass
class ContextWindowConfig:
    """``agentic`` lets the model correct an invalid answer; ``feedforward`` is a single call."""

    mode: str = "feedforward"
    max_corrections: int = 2
    max_reply_tokens: int = 384


class ContextWindowAgent:
    """The whole graph in the prompt, no tools."""

    def __init__(
        self,
        model: ChatModel,
        graph: SceneGraph,
        config: ContextWindowConfig | None = None,
        *,
        grounder: PddlGrounder | None = None,
        domain: GoalDomain = HERACLES_DOMAIN,
    ) -> None:
        self.model = model
        self.graph = graph
        self.config = config or ContextWindowConfig()
        self.grounder = grounder
        self.domain = domain
        self._serialized: str | None = None

    @property
    def name(self) -> str:
        return f"context-{self.config.mode}"

    @property
    def serialized(self) -> str:
        if self._serialized is None:
            self._serialized = serialize_graph(self.graph)
        return self._serialized

    def prompt_tokens(self, task: Task = "qa") -> int:
        """Tokens of the system prompt (the graph) in the model's own tokenizer."""
        return self.model.count_tokens(self.system_prompt(task))

    def system_prompt(self, task: Task) -> str:
        rules = prompts.ANSWER_RULES_QA if task == "qa" else prompts.pddl_rules(self.domain.describe())
        return "\n\n".join(
            [
                "You answer questions about a robot's 3D scene graph, given in full below.",
                prompts.SCENE_GRAPH_PRIMER,
                "Scene graph:\n" + self.serialized,
                rules + ' Reply with JSON {"answer": ...}.',
            ]
        )

    def run(self, question: str, *, task: Task = "qa", answer_type: str | None = None) -> AgentResult:
        start = time.perf_counter()
        state = RunState(AgentResult(self.name, question, task, None))
        system = self.system_prompt(task)
        size = self.model.count_tokens(system)
        if size + self.config.max_reply_tokens > self.model.context_window:
            state.result.error = (
                f"context_overflow: the serialised graph prompt is {size} tokens, more than "
                f"{self.model.name}'s {self.model.context_window}-token context window"
            )
            state.result.wall_s = time.perf_counter() - start
            return state.finish()
        state.messages = [
            Message.system(system),
            Message.user(ToolAgent.user_prompt(question, task, answer_type)),
        ]
        limit = self.config.max_corrections if self.config.mode == "agentic" else 0
        try:
            answer_with_corrections(
                self.model,
                state,
                task,
                self.grounder,
                max_reply_tokens=self.config.max_reply_tokens,
                max_corrections=limit,
            )
        except LLMError as exc:
            state.result.error = str(exc)
        state.result.wall_s = time.perf_counter() - start
        return state.finish()


PYTHON_TOOL = ToolSpec(
    name="run_python",
    description=(
        "Run Python code with the scene graph in the variable `graph`; set `result` or print what you need."
    ),
    parameters={
        "type": "object",
        "properties": {"code": {"type": "string", "description": "Python source code."}},
        "required": ["code"],
    },
)

GRAPH_API = """Python API (the graph is in the variable `graph`; `math` is imported):
graph.nodes(label=None) -> iterator of Node; labels: {labels}
node.symbol (e.g. 'O12'), node.label, node.class_name, node.position (x, y, z), node.bbox_center, node.bbox_dim, node.description, node.attributes (dict)
graph.node(symbol) -> Node
graph.children(symbol) -> list[Node] (CONTAINS children; rooms contain places, places contain objects)
graph.parents(symbol) -> list[Node] (an object may have several parent places)
graph.neighbors(symbol, type=None) -> list[Node] (same-layer edges, e.g. type='{sibling}')
graph.edges(type=None) -> iterator of Edge(source, target, type)
math.dist(a.position, b.position) is the distance between two nodes.
Set the variable `result` to what you found (or print it). Allowed imports: math, statistics, collections, itertools, heapq, numpy."""


@dataclass
class CodeGenConfig(AgentConfig):
    """Settings of the code-generation baseline."""

    timeout_s: float = 10.0
    max_output_chars: int = 2000

    @property
    def name(self) -> str:
        return f"codegen-{self.mode}"


class CodeGenAgent(ToolAgent):
    """Answers by writing Python against the in-memory ``SceneGraph``."""

    action_word = "Python code"
    input_field = "code"

    def __init__(
        self,
        model: ChatModel,
        graph: SceneGraph,
        config: CodeGenConfig | None = None,
        *,
        grounder: PddlGrounder | None = None,
        domain: GoalDomain = HERACLES_DOMAIN,
    ) -> None:
        self.config: CodeGenConfig = config or CodeGenConfig()
        super().__init__(model, self.config, PYTHON_TOOL)
        self.graph = graph
        self.grounder = grounder
        self.domain = domain

    @property
    def name(self) -> str:
        return self.config.name

    def _api(self) -> str:
        labels = ", ".join(sorted(self.graph.label_counts()))
        siblings = sorted(t for t in self.graph.edge_type_counts() if t.endswith("_CONNECTED"))
        return GRAPH_API.format(labels=labels, sibling=siblings[0] if siblings else "PLACE_CONNECTED")

    def _rules(self, task: Task) -> str:
        return prompts.ANSWER_RULES_QA if task == "qa" else prompts.pddl_rules(self.domain.describe())

    def system_prompt(self, task: Task) -> str:
        return "\n\n".join(
            [
                "You answer questions about a robot's 3D scene graph by writing Python that inspects it. Fix "
                "failing code from the error.",
                prompts.SCENE_GRAPH_PRIMER,
                self._api(),
                self._rules(task),
            ]
        )

    def generation_prompt(self, task: Task) -> str:
        parts = [
            "You write ONE Python program that computes what is needed to answer a question about a robot's 3D "
            'scene graph. Reply with JSON {"thought": ..., "code": ...}.',
            prompts.SCENE_GRAPH_PRIMER,
            self._api(),
        ]
        if task == "pddl":
            parts.append(prompts.pddl_rules(self.domain.describe()))
        return "\n\n".join(parts)

    def refinement_prompt(self, task: Task) -> str:
        return (
            "You answer a question about a robot's 3D scene graph from a Python program and its output. Be "
            'concise. Reply with JSON {"answer": ...}.\n\n' + self._rules(task)
        )

    def run_tool(self, text: str) -> tuple[str, ToolRecord]:
        code = text.strip()
        if code.startswith("```"):
            code = code.strip("`")
            code = code[6:] if code.startswith("python") else code
        start = time.perf_counter()
        res = run_python(
            code, self.graph, timeout_s=self.config.timeout_s, max_chars=self.config.max_output_chars
        )
        elapsed = (time.perf_counter() - start) * 1000.0
        out = res.output if res.ok else f"ERROR: {res.error}\n{res.output}".strip()
        return out, ToolRecord(
            "run_python",
            code,
            res.ok,
            error=res.error,
            elapsed_ms=elapsed,
            result_tokens=self.model.count_tokens(out),
        )

    def answer_problems(self, answer: str, task: Task) -> list[str]:
        return default_answer_problems(answer, task, self.grounder)
