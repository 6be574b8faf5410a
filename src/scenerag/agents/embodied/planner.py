"""The ReAct planner of EmbodiedRAG (paper §4.4) over an environment's action API, and the paper's agents.

Contract: ``EmbodiedPlanner(model, kind, spec).run(env, task)`` plays one episode in ``env`` (an
:class:`~scenerag.agents.embodied.environment.Environment`) whose actions and object attributes ``spec``
(an :class:`~scenerag.agents.embodied.environment.EnvironmentSpec`) describes: every step it refreshes the
robot's scene graph (``env.observe()`` changes → incremental index update), builds the step's context for
its :class:`AgentKind` (none, the full graph, or the retrieved task subgraph), asks the decider for one
thought + action, executes it in the environment and feeds the result (failures included) back through a
bounded history. The episode ends when ``task.check(world)`` holds (or the planner says ``done`` and it
holds), at ``max_steps``, or on an unrecoverable model error; token usage is the provider's own count.

Agents: ``react`` (no graph in the prompt; ``getdiscoveredobjects`` returns the full graph), ``full-mem``
(full graph in every prompt), ``embodiedrag`` (task subgraph; may still request the full graph),
``embodiedrag-strict`` (never: the action is withheld) and ``embodiedrag-feedback`` (strict + self-query).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from scenerag.agents.embodied.decisions import (
    FULL_GRAPH_ACTION,
    Decider,
    Decision,
    LLMDecider,
    ToolInterface,
    count_prompt_tokens,
)
from scenerag.agents.embodied.environment import (
    DONE_ACTION,
    HOLDS,
    EmbodiedTask,
    Environment,
    EnvironmentSpec,
)
from scenerag.agents.embodied.errors import EmbodiedConfigError
from scenerag.agents.embodied.pre_retrieval import PreRetrieval, PreRetriever
from scenerag.agents.embodied.records import EpisodeResult, StepRecord
from scenerag.agents.embodied.self_query import SelfQuerier
from scenerag.agents.embodied.subgraph import (
    ID_ATTRIBUTE,
    SceneIndex,
    TaskRetriever,
    default_subgraph_config,
)
from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph
from scenerag.llm.base import ChatModel, LLMError, Message
from scenerag.retrieval.embeddings import Embedder
from scenerag.retrieval.subgraph import RetrievedSubgraph, SubgraphConfig, serialize_graph


class AgentKind(StrEnum):
    """The agents of the EmbodiedRAG evaluation."""

    REACT = "react"
    FULL_MEM = "full-mem"
    EMBODIED_RAG = "embodiedrag"
    STRICT = "embodiedrag-strict"
    FEEDBACK = "embodiedrag-feedback"

    @property
    def retrieves(self) -> bool:
        return self in (AgentKind.EMBODIED_RAG, AgentKind.STRICT, AgentKind.FEEDBACK)

    @property
    def full_graph_in_prompt(self) -> bool:
        return self is AgentKind.FULL_MEM

    @property
    def may_request_full_graph(self) -> bool:
        return self in (AgentKind.REACT, AgentKind.FULL_MEM, AgentKind.EMBODIED_RAG)

    @property
    def self_queries(self) -> bool:
        return self is AgentKind.FEEDBACK


def parse_agent_kind(value: str | AgentKind) -> AgentKind:
    try:
        return AgentKind(str(value).strip().lower())
    except ValueError:
        raise EmbodiedConfigError(
            f"unknown agent {value!r}", hint="agents: " + ", ".join(k.value for k in AgentKind)
        ) from None


@dataclass
class PlannerConfig:
    """ReAct settings: step limit, history window (steps kept, characters kept of each older observation,
    how many of the latest steps show their thought: 0 by default, because a small model copies its stale
    reasoning instead of reading the refreshed scene graph), reply budget, tool interface (``auto``: native
    tool calls where the model has them, else JSON actions), whether to stop as soon as the task check
    passes, and how many steps a self-query stays in effect."""

    max_steps: int = 25
    history_steps: int = 8
    history_thoughts: int = 0
    observation_chars: int = 400
    thought_chars: int = 200
    max_reply_tokens: int = 200
    tool_interface: ToolInterface = "auto"
    stop_on_success: bool = True
    feedback_window: int = 1

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise EmbodiedConfigError(f"max_steps must be >= 1, got {self.max_steps}")
        if self.history_steps < 0 or self.history_thoughts < 0 or self.observation_chars < 40:
            raise EmbodiedConfigError(
                "history_steps and history_thoughts must be >= 0 and observation_chars >= 40"
            )
        if self.tool_interface not in ("auto", "native", "json"):
            raise EmbodiedConfigError(
                f"tool_interface must be auto, native or json, got {self.tool_interface!r}"
            )


# -- prompts ----------------------------------------------------------------------------------------------
SYSTEM_PROMPT = """{instructions}
{context_rule}
Actions:
{actions}
- done(): the task is complete."""

GRAPH_FORMAT = (
    'Scene graph JSON: "nodes" are {"id", "class", "in": the id of what holds it, attributes}; "edges" are '
    'other relations, e.g. ["A0","HOLDS","Mug_1"] (the robot A0 holds Mug_1).'
)
CONTEXT_RULES: dict[AgentKind, str] = {
    AgentKind.REACT: (
        "You are not shown the scene graph: call getdiscoveredobjects to read the full scene graph of "
        "everything discovered so far. " + GRAPH_FORMAT
    ),
    AgentKind.FULL_MEM: "Every turn shows the full scene graph of everything discovered so far. "
    + GRAPH_FORMAT,
    AgentKind.EMBODIED_RAG: (
        "Every turn shows the part of the scene graph relevant to the task, refreshed after every action. "
        "If you need something it does not show, getdiscoveredobjects returns the full scene graph (long). "
        + GRAPH_FORMAT
    ),
    AgentKind.STRICT: (
        "Every turn shows the part of the scene graph relevant to the task, refreshed after every action. "
        + GRAPH_FORMAT
    ),
    AgentKind.FEEDBACK: (
        "Every turn shows the part of the scene graph relevant to the task, refreshed after every action "
        "and extended with the objects your last thought was about. " + GRAPH_FORMAT
    ),
}
JSON_REPLY_RULE = (
    'Reply with one JSON object: {"thought": "<short reasoning>", "action": "<action name>", '
    '"argument": "<the object id, receptacle id or search query; empty if the action takes none>"}, e.g. '
    '{"thought": "Drawer_2 is in the scene graph, closed and within reach, so I open it.", "action": "open", '
    '"argument": "Drawer_2"}.'
)
REPEAT_NOTE = "(You just did exactly this and it changed nothing: do something else.)"


def allowed_actions(kind: AgentKind, actions: Iterable[str]) -> list[str]:
    """The names of ``actions`` offered to ``kind`` (strict agents never get ``getdiscoveredobjects``), then
    ``done``."""
    names = [n for n in actions if n != FULL_GRAPH_ACTION or kind.may_request_full_graph]
    return [*names, DONE_ACTION]


def robot_line(graph: SceneGraph) -> str:
    """Where the robot is and what it holds, from the graph's ``Agent`` node."""
    agents = list(graph.nodes(ont.AGENT))
    if not agents:
        return "Robot: unknown pose."
    attributes = agents[0].attributes
    holding = attributes.get("holding")
    held = "nothing" if holding in (None, "", "none") else str(holding)
    return f"Robot: at {attributes.get('place', '?')}, holding {held}."


def format_call(action: str, arguments: Mapping[str, str]) -> str:
    inner = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    return f"{action}({inner})"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 15] + " ...(truncated)"


# -- the planner ------------------------------------------------------------------------------------------
class EmbodiedPlanner:
    """One agent of the evaluation (see module contract) for the environment ``spec`` describes (its actions
    and object attributes; the household simulator's is ``scenerag.agents.embodied.household.HOUSEHOLD``).
    ``embedder`` is needed by retrieving agents;
    ``decider`` replaces the model's decisions (token measurements on a replayed plan);
    ``retrieval_model`` runs pre-retrieval and self-query (default: ``model``; a second instance of the same
    local model keeps the planner's prompt cache warm)."""

    def __init__(
        self,
        model: ChatModel,
        kind: AgentKind | str,
        spec: EnvironmentSpec,
        *,
        embedder: Embedder | None = None,
        config: PlannerConfig | None = None,
        subgraph_config: SubgraphConfig | None = None,
        decider: Decider | None = None,
        retrieval_model: ChatModel | None = None,
    ) -> None:
        if not isinstance(spec, EnvironmentSpec):
            raise EmbodiedConfigError(
                f"the planner needs an EnvironmentSpec (its actions and attributes), got {type(spec).__name__}",
                hint="for the household simulator: scenerag.agents.embodied.household.HOUSEHOLD",
            )
        self.model = model
        self.spec = spec
        self.retrieval_model = retrieval_model or model
        self.kind = parse_agent_kind(kind)
        self.config = config or PlannerConfig()
        self.subgraph_config = subgraph_config or default_subgraph_config()
        if self.kind.retrieves and embedder is None:
            raise EmbodiedConfigError(
                f"agent {self.kind.value} retrieves subgraphs and needs an embedder",
                hint='pass embedder=make_embedder("minilm", threads=1)',
            )
        self.embedder = embedder
        self.decider: Decider = decider or LLMDecider(
            model,
            spec.actions,
            tool_interface=self.config.tool_interface,
            max_reply_tokens=self.config.max_reply_tokens,
            thought_chars=self.config.thought_chars,
        )
        self.attribute_names = spec.attribute_names
        self.pre_retriever = PreRetriever(self.retrieval_model, self.attribute_names)
        self.self_querier = SelfQuerier(
            self.retrieval_model, self.attribute_names, filterable=spec.filterable_attributes
        )
        self.actions = allowed_actions(self.kind, (a.name for a in spec.actions))

    @property
    def name(self) -> str:
        return self.kind.value

    def system_prompt(self) -> str:
        specs = {a.name: a for a in self.spec.actions}
        lines = [
            f"- {specs[n].signature()}: {specs[n].description}" for n in self.actions if n != DONE_ACTION
        ]
        text = SYSTEM_PROMPT.format(
            instructions=self.spec.instructions,
            context_rule=CONTEXT_RULES[self.kind],
            actions="\n".join(lines),
        )
        native = isinstance(self.decider, LLMDecider) and self.decider.native
        return text if native else f"{text}\n{JSON_REPLY_RULE}"

    def context_text(self, graph: SceneGraph, subgraph: RetrievedSubgraph | None) -> tuple[str, int]:
        """The scene-graph part of the step prompt and the number of nodes it shows."""
        if self.kind.full_graph_in_prompt:
            return f"Scene graph (everything discovered so far):\n{serialize_graph(graph)}", graph.num_nodes
        if subgraph is not None:
            discovered = sum(1 for _ in graph.nodes(ont.OBJECT))
            shown = sum(1 for _ in subgraph.graph.nodes(ont.OBJECT))
            text = serialize_graph(subgraph.graph, id_attribute=ID_ATTRIBUTE)
            return (
                f"Scene graph (task-relevant part: {shown} of {discovered} discovered objects):\n{text}",
                subgraph.graph.num_nodes,
            )
        return "Scene graph: not shown (call getdiscoveredobjects to read it).", 0

    def step_messages(
        self,
        task: EmbodiedTask,
        graph: SceneGraph,
        context: str,
        history: Sequence[StepRecord],
        step: int,
    ) -> list[Message]:
        """The prompt of one planning step: system rules, then the task, the recent history (actions and what
        they returned, with the thoughts of the last ``history_thoughts`` steps), and last the current
        state: the robot and the step's scene-graph context."""
        lines = [f"Task: {task.instruction}"]
        window = list(history)[-self.config.history_steps :] if self.config.history_steps else []
        if window:
            lines.append("Previous steps (oldest first):")
            latest_full = max((r.step for r in window if r.full_graph_request and r.ok), default=None)
            for index, record in enumerate(window):
                last = index == len(window) - 1
                limit = 10**9 if last or record.step == latest_full else self.config.observation_chars
                status = "OK" if record.ok else "FAILED"
                call = format_call(record.action, record.arguments) if record.action else "(no valid action)"
                shows_thought = len(window) - index <= self.config.history_thoughts and record.thought
                thought = (
                    f"thought: {_clip(record.thought, self.config.thought_chars)}; " if shows_thought else ""
                )
                repeat = f" {REPEAT_NOTE}" if last and _repeats(window, index) else ""
                lines.append(
                    f"{record.step + 1}. {thought}{call} -> {status}: {_clip(record.observation, limit)}{repeat}"
                )
        lines.extend([robot_line(graph), context])
        lines.append(f"Step {step + 1} of at most {self.config.max_steps}. Choose the next action.")
        return [Message.system(self.system_prompt()), Message.user("\n".join(lines))]

    def run(
        self,
        env: Environment,
        task: EmbodiedTask,
        *,
        pre_retrieval: PreRetrieval | None = None,
        on_step: Callable[[StepRecord], None] | None = None,
    ) -> EpisodeResult:
        """Play one episode of ``task`` in ``env`` (see module contract). ``pre_retrieval``: reuse an earlier
        pre-retrieval of this task's instruction (its token usage is still charged to this episode);
        ``on_step`` is called with each finished step's record (progress output)."""
        started = time.perf_counter()
        result = EpisodeResult(
            task_id=task.task_id,
            difficulty=task.difficulty,
            instruction=task.instruction,
            agent=self.kind.value,
            model=self.model.name,
            layout=env.layout,
            n_distractors=env.n_distractors,
            required_types=list(task.required_types),
        )
        graph, diff = env.observe()
        index: SceneIndex | None = None
        retriever: TaskRetriever | None = None
        required = set(task.required_types)
        retrieved_ever: set[str] = set()
        try:
            if self.kind.retrieves:
                assert self.embedder is not None
                index = SceneIndex(self.embedder)
                index.apply(graph, diff)
                if pre_retrieval is None:
                    pre_retrieval = self.pre_retriever.run(task.instruction)
                result.pre_retrieval = pre_retrieval.to_dict()
                result.retrieval_usage = result.retrieval_usage + pre_retrieval.usage
                retriever = TaskRetriever(
                    index,
                    pre_retrieval.queries(),
                    self.subgraph_config,
                    feedback_window=self.config.feedback_window,
                )
            for step in range(self.config.max_steps):
                step_started = time.perf_counter()
                subgraph = None
                retrieval_s = 0.0
                if retriever is not None:
                    subgraph = retriever.retrieve(graph, always_include=_robot_and_held(graph))
                    retrieval_s = subgraph.seconds
                    classes = subgraph.classes() & required
                    retrieved_ever |= classes
                    if step == 0:
                        result.required_retrieved_first = sorted(classes)
                        result.required_discovered_first = sorted(_object_classes(graph) & required)
                context, context_nodes = self.context_text(graph, subgraph)
                messages = self.step_messages(task, graph, context, result.trajectory, step)
                try:
                    decision = self.decider.decide(messages, self.actions)
                except LLMError as exc:
                    if exc.kind == "context_overflow":
                        result.overflow_prompt_tokens = count_prompt_tokens(messages, self.model.count_tokens)
                    raise
                result.planner_usage = result.planner_usage + decision.usage
                record = StepRecord(
                    step=step,
                    thought=decision.thought,
                    action=decision.action,
                    arguments=dict(decision.arguments),
                    ok=False,
                    observation="",
                    context_nodes=context_nodes,
                    context_chars=len(context),
                    input_tokens=decision.usage.input_tokens,
                    output_tokens=decision.usage.output_tokens,
                    planner_s=decision.seconds,
                    retrieval_s=retrieval_s,
                    self_query_s=0.0,
                    step_s=0.0,
                    subgraph_symbols=subgraph.symbols if subgraph is not None else [],
                )
                result.trajectory.append(record)
                result.steps = step + 1
                finished = self._act(env, task, decision, record, result)
                if record.action and record.action != DONE_ACTION and decision.error is None:
                    graph, diff = env.observe()
                    record.graph_changed = not diff.is_empty
                    if index is not None:
                        record.index_update = index.apply(graph, diff).to_dict()
                    if record.full_graph_request and record.ok:
                        record.observation = (
                            f"Full scene graph ({sum(1 for _ in graph.nodes(ont.OBJECT))} discovered objects):\n"
                            + serialize_graph(graph)
                        )
                finished = finished or (self.config.stop_on_success and task.check(env.world))
                if self.kind.self_queries and retriever is not None and decision.thought and not finished:
                    query = self.self_querier.run(decision.thought, task.instruction, graph)
                    retriever.add_feedback(query.queries)
                    result.retrieval_usage = result.retrieval_usage + query.usage
                    record.self_query_s = query.seconds
                    record.self_queries = query.to_dict()["queries"]
                record.step_s = time.perf_counter() - step_started
                if on_step is not None:
                    on_step(record)
                if finished:
                    break
        except LLMError as exc:
            result.error = str(exc)
        result.success = task.check(env.world)
        if retriever is not None:
            result.required_retrieved_ever = sorted(retrieved_ever)
            result.required_discovered_end = sorted(_object_classes(graph) & required)
        result.wall_s = time.perf_counter() - started
        return result

    def _act(
        self,
        env: Environment,
        task: EmbodiedTask,
        decision: Decision,
        record: StepRecord,
        result: EpisodeResult,
    ) -> bool:
        """Execute ``decision`` (or explain why not) into ``record``; True when the episode should end."""
        if decision.error is not None:
            result.invalid_replies += 1
            record.observation = (
                f"Your reply could not be used ({decision.error}). Reply with one valid action."
            )
            return False
        action = decision.action
        if action == DONE_ACTION:
            if task.check(env.world):
                result.done_declared = True
                record.ok = True
                record.observation = "The task is complete."
                return True
            record.observation = "The task is not complete yet: check the goal and keep acting."
            result.failed_actions += 1
            return False
        if action == FULL_GRAPH_ACTION and not self.kind.may_request_full_graph:
            result.refused_full_graph_requests += 1
            record.observation = (
                "getdiscoveredobjects is not available to you: work from the scene graph shown, "
                "search or randomlyexplore."
            )
            return False
        outcome = env.execute(action, decision.arguments)
        record.ok = outcome.success
        record.observation = outcome.message
        if not outcome.success:
            result.failed_actions += 1
        if action == FULL_GRAPH_ACTION and outcome.success:
            record.full_graph_request = True
            result.full_graph_requests += 1
        return False


def _repeats(window: Sequence[StepRecord], index: int) -> bool:
    """True when step ``index`` repeated the previous step's action and arguments and learnt nothing new
    (no new discoveries, no state change: the observation is the same or the action failed again)."""
    if index == 0:
        return False
    this, before = window[index], window[index - 1]
    same_call = bool(this.action) and (this.action, this.arguments) == (before.action, before.arguments)
    if not same_call or this.action == FULL_GRAPH_ACTION:
        return False
    return not this.graph_changed


def _robot_and_held(graph: SceneGraph) -> list[str]:
    """The robot's node and, when it holds something, the held object's node (always in the subgraph)."""
    out: list[str] = []
    for agent in graph.nodes(ont.AGENT):
        out.append(agent.symbol)
        out.extend(child.symbol for child in graph.children(agent.symbol, HOLDS))
    return out


def _object_classes(graph: SceneGraph) -> set[str]:
    return {n.class_name for n in graph.nodes(ont.OBJECT)}
