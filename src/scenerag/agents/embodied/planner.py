"""The ReAct planner of EmbodiedRAG (paper §4.4) over an environment's action API, and the paper's agents.

Contract: ``EmbodiedPlanner(model, kind, spec).run(env, task)`` plays one episode in ``env`` (an
:class:`~scenerag.agents.embodied.environment.Environment`) whose actions and object attributes ``spec``
(an :class:`~scenerag.agents.embodied.environment.EnvironmentSpec`) describes: every step it refreshes the
robot's scene graph (``env.observe()`` changes → incremental index update), builds the step's context for
its :class:`AgentKind` (none, the full graph, or the retrieved task subgraph), builds the step's action menu
(:mod:`~scenerag.agents.embodied.menu`: the actions the hand allows, the objects of the context each action
may name by their affordances, and the calls refused as unchanged repeats of a failure), asks the decider
for one thought + action (decoded under the menu's grammar where the model enforces one, validated
otherwise), executes it in the environment and feeds the result (failures with their reason included)
back through a history that only grows. A call that failed, changed nothing, or led back to an earlier
situation is refused (never sent to the environment) whenever the robot is in that same situation again. ``embodiedrag-feedback`` replies also name the objects their
thought is about; those become the next step's self-query (no extra model call). The episode ends when
``task.check(world)`` holds (or the planner says ``done`` and it holds), at ``max_steps``, or on an
unrecoverable model error; token usage is the provider's own count.

Agents: ``react`` (no graph in the prompt; ``getdiscoveredobjects`` returns the full graph), ``full-mem``
(full graph in every prompt), ``embodiedrag`` (task subgraph; may still request the full graph),
``embodiedrag-strict`` (never: the action is withheld) and ``embodiedrag-feedback`` (strict + self-query).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

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
from scenerag.agents.embodied.menu import (
    CLASS_KEY,
    ActionMenu,
    CallKey,
    build_menu,
    call_key,
    normalize_text,
)
from scenerag.agents.embodied.pre_retrieval import PreRetrieval, PreRetriever
from scenerag.agents.embodied.records import EpisodeResult, StepRecord
from scenerag.agents.embodied.self_query import SELF_QUERY_SOURCE, SelfQuerier
from scenerag.agents.embodied.subgraph import (
    ID_ATTRIBUTE,
    SceneIndex,
    TaskRetriever,
    default_subgraph_config,
)
from scenerag.graph import ontology as ont
from scenerag.graph.model import Node, SceneGraph
from scenerag.llm.base import ChatModel, LLMError, Message
from scenerag.retrieval.documents import label_text
from scenerag.retrieval.embeddings import Embedder
from scenerag.retrieval.subgraph import EntityQuery, RetrievedSubgraph, SubgraphConfig

MENTION_SOURCE = "environment"
"""The ``source`` of the queries for the objects an environment's answer named."""


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
    """ReAct settings.

    ``max_steps``: step limit; ``history_steps``: steps the prompt's history keeps; ``observation_chars``:
    characters kept of each step's observation in the history (the latest full-graph result is shown
    whole); ``thought_chars``: the longest thought a reply may hold (grammar bound; longer ones are
    clipped); ``max_reply_tokens``: the reply budget; ``tool_interface``: ``text`` (a plain-text reply under
    the step's action grammar; models without grammars are validated) or ``native`` tool calls;
    ``stop_on_success``: end as soon as the task check passes; ``feedback_window``: steps a self-query
    stays in effect; ``refuse_repeats``: an action that failed, worked but changed nothing, or led back to
    a situation the episode had already been in (going round in a loop), is refused (left out of the
    grammar, and not sent to the environment) whenever the robot is in that same situation again (a
    failure: :func:`state_signature`, same objects and states, same place, same hand; a no-op or a loop:
    :class:`ProgressSignature`, same place, same hand, same changes made to objects, whatever was
    discovered on the way); ``list_calls``: the prompt's
    state block ends with the object calls the step's menu allows (``You can now: pickup(Apple_1), ...``,
    the ``can`` annotations as calls), just before the model chooses (agents shown a task subgraph; for
    Full-Mem, whose prompt already ends with every object's ``can``, it changes nothing); ``walkthrough``: the system prompt
    ends with the environment's example episode of another task (``EnvironmentSpec.walkthrough``), if it
    has one, in place of the single example reply; ``refuse_undo``: a call that would only put back what the robot's last change to an object did
    (an action of ``EnvironmentSpec.reversals`` naming the objects that change touched: ``close`` after
    ``open`` of the same object, ``placeon`` on the receptacle the held object was just taken from) is
    refused until another object changes; ``task_words``: for retrieving agents, a text parameter with a
    vocabulary (household ``search``: the object types) offers only the words of the task: the nearest
    vocabulary word to each pre-retrieved entity (exact match first, else the embedder's nearest) and the
    classes of the objects the environment's last answer named; the other words stay out of the grammar
    (Full-Mem and ReAct keep the whole vocabulary); ``refuse_known_answers``: a call that worked and gave
    the same answer as the same call earlier (the answer's "Newly discovered" tail aside), with nothing
    done to objects or the hand in between, is refused wherever the robot stands until something changes
    (its answer is known: ``search(Plate)`` keeps naming the closed cabinet to open), and a full-graph
    request is refused while no object has been discovered or changed since the last one (its answer is
    known; the model still chooses what to do instead);
    ``hand_in_thought``: the grammar starts every thought with what the robot holds (``I hold Apple_1; ``
    or ``My hand is empty; ``), so the model reasons from it (a local model's grammar only).

    A history line never changes once written (it does not depend on its position), so each step's prompt
    extends the previous one up to the state block at its end, and a local model reuses its cache.
    """

    max_steps: int = 25
    history_steps: int = 16
    observation_chars: int = 200
    thought_chars: int = 160
    max_reply_tokens: int = 120
    tool_interface: ToolInterface = "text"
    stop_on_success: bool = True
    feedback_window: int = 1
    refuse_repeats: bool = True
    list_calls: bool = False
    walkthrough: bool = False
    refuse_undo: bool = True
    task_words: bool = True
    refuse_known_answers: bool = True
    hand_in_thought: bool = False

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise EmbodiedConfigError(f"max_steps must be >= 1, got {self.max_steps}")
        if self.history_steps < 0 or self.observation_chars < 40 or self.thought_chars < 20:
            raise EmbodiedConfigError(
                "history_steps must be >= 0, observation_chars >= 40 and thought_chars >= 20"
            )
        if self.tool_interface not in ("text", "native"):
            raise EmbodiedConfigError(f"tool_interface must be text or native, got {self.tool_interface!r}")


# -- prompts ----------------------------------------------------------------------------------------------
SYSTEM_PROMPT = """{instructions}
{context_rule}
Actions:
{actions}
- done(): the task is complete.
Reply in exactly this form:
{reply_format}
{example}"""

GRAPH_FORMAT = (
    'One line per object: "id (class) where: attributes; can: actions" (in X = in or on X; at P3 = at place '
    "P3; held = in your hand; can: what you can do to it now)."
)
CONTEXT_RULES: dict[AgentKind, str] = {
    AgentKind.REACT: (
        "The scene graph is not shown: getdiscoveredobjects lists everything discovered. " + GRAPH_FORMAT
    ),
    AgentKind.FULL_MEM: (
        "Each turn shows the full scene graph of everything discovered, in two parts. First one line per "
        'object: "id (class) where: attributes" (where: "in X" = in or on X, "at P3" = at place P3, "held" = '
        "in your hand); a changed line moves to the end. Then, after your position, the attributes that "
        'depend on where you stand (named in the header), one line per object: "id: values; can: actions" '
        "(can: what you can do to it now)."
    ),
    AgentKind.EMBODIED_RAG: (
        "Each turn shows the task-relevant scene graph; getdiscoveredobjects lists everything (long). "
        + GRAPH_FORMAT
    ),
    AgentKind.STRICT: "Each turn shows the task-relevant scene graph. " + GRAPH_FORMAT,
    AgentKind.FEEDBACK: (
        "Each turn shows the task-relevant scene graph and the objects your last reply named. " + GRAPH_FORMAT
    ),
}


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
    held = _held_id(graph) or "nothing"
    return f"Robot: at {attributes.get('place', '?')}, holding {held}."


def format_call(action: str, arguments: Mapping[str, str]) -> str:
    """``name(arg, ...)``: an action as the reply format writes it."""
    return f"{action}({', '.join(str(v) for v in arguments.values())})"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 15] + " ...(truncated)"


def object_id(node: Node) -> str:
    """The id a planner acts on: the node's ``objectId`` attribute where it has one, else its symbol."""
    value = node.attributes.get(ID_ATTRIBUTE)
    return value if isinstance(value, str) and value else node.symbol


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.2f}".rstrip("0").rstrip(".")
    if isinstance(value, (list, tuple)):
        return "/".join(_value_text(v) for v in value)
    return str(value)


def _where(graph: SceneGraph, node: Node) -> str:
    """Where the robot believes ``node`` is: ``in X`` (its receptacle), ``at P3`` (a place), ``held``."""
    if any(True for _ in graph.parents(node.symbol, HOLDS)):
        return "held"
    for parent in graph.parents(node.symbol, ont.CONTAINS):
        return f"in {object_id(parent)}" if parent.label == ont.OBJECT else f"at {parent.symbol}"
    return ""


def object_lines(
    shown: SceneGraph,
    graph: SceneGraph,
    *,
    always: Sequence[str] = (),
    all_attributes: bool = False,
    affordances: Mapping[str, Sequence[str]] | None = None,
    exclude: Collection[str] = (),
    capabilities: Mapping[str, str] | None = None,
) -> list[str]:
    """One line per object of ``shown`` (a subgraph of ``graph``, or ``graph`` itself): ``id (class) where:
    attributes; can: actions``. Where comes from ``graph`` (the whole discovered scene); the attributes are
    those ``shown`` keeps (all of them with ``all_attributes``) but ``exclude``, after the ``always`` ones
    read from ``graph``; ``affordances`` maps an object id to the actions the step's menu lets it take;
    ``capabilities`` maps a state attribute to the capability it needs (``isOpen`` -> ``openable``): the
    state is left out of the line of an object whose capability is false (it means nothing there)."""
    lines: list[str] = []
    for node in shown.nodes(ont.OBJECT):
        full = graph.node(node.symbol) if node.symbol in graph else node
        values: dict[str, Any] = {a: full.attributes[a] for a in always if a in full.attributes}
        source = full.attributes if all_attributes else node.attributes
        values.update(
            (k, v) for k, v in source.items() if k != ID_ATTRIBUTE and k not in values and k not in exclude
        )
        for state, capability in (capabilities or {}).items():
            if state in values and full.attributes.get(capability) is False:
                del values[state]
        where = _where(graph, full)
        text = ", ".join(f"{k}={_value_text(v)}" for k, v in values.items())
        head = f"{object_id(node)} ({node.class_name})" + (f" {where}" if where else "")
        can = (affordances or {}).get(object_id(node))
        if can:
            text = f"{text}; can: {', '.join(can)}" if text else f"can: {', '.join(can)}"
        lines.append(f"{head}: {text}" if text else head)
    return lines


def relative_lines(
    graph: SceneGraph,
    attributes: Sequence[str],
    affordances: Mapping[str, Sequence[str]] | None = None,
    order: Sequence[str] | None = None,
) -> list[str]:
    """One line per object of ``graph``, ``id: values; can: actions``: the values of ``attributes`` (the
    agent-relative ones, which change whenever the robot moves; a header names them, in this order) and
    the actions ``affordances`` lists for it; in the order of the object ids ``order`` (default: the
    graph's)."""
    nodes = {object_id(n): n for n in graph.nodes(ont.OBJECT)}
    lines: list[str] = []
    for name in order if order is not None else list(nodes):
        node = nodes.get(name)
        if node is None:
            continue
        text = ", ".join(_value_text(node.attributes.get(k, "?")) for k in attributes)
        can = (affordances or {}).get(name)
        if can:
            text = f"{text}; can: {', '.join(can)}" if text else f"can: {', '.join(can)}"
        lines.append(f"{name}: {text}")
    return lines


class StableOrder:
    """Orders keyed lines so that what has not changed comes first: a line keeps its place while its text
    stays the same, and goes to the end (after the lines that changed earlier) when it first appears or
    changes. Successive orderings of a slowly changing set of lines then share a long common prefix, which
    a local model keeps in its cache. One per episode."""

    def __init__(self) -> None:
        self._since: dict[str, tuple[str, int]] = {}
        self._tick = 0

    def order(self, lines: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
        """``lines`` (key, text) in stable order; keys absent now are forgotten."""
        self._tick += 1
        rank = {key: i for i, (key, _) in enumerate(lines)}
        for key, text in lines:
            known = self._since.get(key)
            if known is None or known[0] != text:
                self._since[key] = (text, self._tick)
        for key in [k for k in self._since if k not in rank]:
            del self._since[key]
        return sorted(lines, key=lambda kv: (self._since[kv[0]][1], rank[kv[0]]))


def hand_words(graph: SceneGraph) -> str:
    """What the robot holds, as the start of a thought: ``I hold Apple_1; `` or ``My hand is empty; ``."""
    held = _held_id(graph)
    return f"I hold {held}; " if held else "My hand is empty; "


def held_attributes(graph: SceneGraph) -> dict[str, Any] | None:
    """The attributes of the object the robot holds, with its class under ``CLASS_KEY``; None when the
    hand is empty or the held object has no node in ``graph``."""
    held = _held_id(graph)
    if held is None:
        return None
    for node in graph.nodes(ont.OBJECT):
        if object_id(node) == held:
            return {**node.attributes, CLASS_KEY: node.class_name}
    return None


def _held_id(graph: SceneGraph) -> str | None:
    for agent in graph.nodes(ont.AGENT):
        for child in graph.children(agent.symbol, HOLDS):
            return object_id(child)
        holding = agent.attributes.get("holding")
        if holding not in (None, "", "none"):
            return str(holding)
    return None


# -- the planner ------------------------------------------------------------------------------------------
@dataclass
class _Failure:
    step: int
    call: str
    reason: str  # the environment's message for a failure; "" for a no-op or a loop
    loop: bool = False  # worked, but led back to a situation the episode had been in
    undoes: str = ""  # would put back what this earlier call (the robot's last change) did
    same_as: int | None = None  # gave the same answer as at this earlier step, nothing changed since
    graph_known: bool = False  # a full-graph request: no object discovered or changed since this step


@dataclass(frozen=True)
class _Change:
    """The robot's latest call that changed objects: its step, call text, action and the object ids it
    touched (its object arguments, the objects whose own state changed, and where those were before)."""

    step: int
    call: str
    action: str
    objects: frozenset[str]


def _own_state(graph: SceneGraph, node: Node, ignore: Collection[str]) -> int:
    """A hash of one object's own state: its attributes but ``ignore``, what contains it, who holds it."""
    return hash(
        (
            tuple(sorted((k, repr(v)) for k, v in node.attributes.items() if k not in ignore)),
            tuple(sorted(p.symbol for p in graph.parents(node.symbol, ont.CONTAINS))),
            tuple(sorted(p.symbol for p in graph.parents(node.symbol, HOLDS))),
        )
    )


def object_states(graph: SceneGraph, ignore: Collection[str] = ()) -> dict[str, tuple[int, tuple[str, ...]]]:
    """Object id -> (hash of its own state as :class:`ProgressSignature` sees it, the ids of the objects it is
    in or on): what :func:`changed_objects` compares across one action."""
    out: dict[str, tuple[int, tuple[str, ...]]] = {}
    for node in graph.nodes(ont.OBJECT):
        containers = tuple(
            object_id(p) for p in graph.parents(node.symbol, ont.CONTAINS) if p.label == ont.OBJECT
        )
        out[object_id(node)] = (_own_state(graph, node, ignore), containers)
    return out


def changed_objects(
    before: Mapping[str, tuple[int, tuple[str, ...]]], after: Mapping[str, tuple[int, tuple[str, ...]]]
) -> tuple[list[str], list[str]]:
    """The objects known before and after an action whose own state changed (newly discovered ones are not
    changes), and the objects those were in or on before it."""
    changed = [i for i, (state, _) in after.items() if i in before and before[i][0] != state]
    where = [c for i in changed for c in before[i][1]]
    return changed, list(dict.fromkeys(where))


def state_signature(graph: SceneGraph, ignore: Iterable[str] = ()) -> int:
    """A hash of what the robot knows that an action could change: every object's class and attributes
    (``ignore``: the agent-relative ones, which change with every move), the edges touching objects or the
    robot (containment, holding), and the robot's place. Two steps with the same signature are the same
    situation, so a call that failed (or changed nothing) in one would do the same in the other."""
    skip = frozenset(ignore)
    objects = sorted(
        (
            n.symbol,
            n.class_name,
            tuple(sorted((k, repr(v)) for k, v in n.attributes.items() if k not in skip)),
        )
        for n in graph.nodes(ont.OBJECT)
    )
    kinds = {n.symbol: n.label for n in graph.nodes()}
    edges = sorted(
        e.key for e in graph.edges() if {kinds.get(e.source), kinds.get(e.target)} & {ont.OBJECT, ont.AGENT}
    )
    agents = sorted((a.symbol, repr(a.attributes.get("place"))) for a in graph.nodes(ont.AGENT))
    return hash((tuple(objects), tuple(edges), tuple(agents)))


class ProgressSignature:
    """What the robot has *done* so far, as a hash: its place, what it holds, and every object whose own
    state (attributes but ``ignore``, the agent-relative ones; its containment) differs from the state it
    had when first seen. Unlike :func:`state_signature`, discovering objects does not change it, so
    navigating in a circle that happens to reveal new objects still comes back to the same situation.
    One per episode (it remembers each object's first-seen state)."""

    def __init__(self, ignore: Iterable[str] = ()) -> None:
        self.ignore = frozenset(ignore)
        self.first: dict[str, int] = {}

    def __call__(self, graph: SceneGraph, *, place: bool = True) -> int:
        """The signature of ``graph``; ``place=False`` leaves the robot's place out (what it has done to
        objects and what it holds, wherever it stands)."""
        changed: list[tuple[str, int]] = []
        for node in graph.nodes(ont.OBJECT):
            own = _own_state(graph, node, self.ignore)
            if self.first.setdefault(node.symbol, own) != own:
                changed.append((node.symbol, own))
        agents = sorted(
            (
                a.symbol,
                repr(a.attributes.get("place")) if place else "",
                tuple(sorted(c.symbol for c in graph.children(a.symbol, HOLDS))),
            )
            for a in graph.nodes(ont.AGENT)
        )
        return hash((tuple(sorted(changed)), tuple(agents)))


class EmbodiedPlanner:
    """One agent of the evaluation (see module contract) for the environment ``spec`` describes (its actions
    and object attributes; the household simulator's is ``scenerag.agents.embodied.household.HOUSEHOLD``).
    ``embedder`` is needed by retrieving agents;
    ``decider`` replaces the model's decisions (token measurements on a replayed plan);
    ``retrieval_model`` runs pre-retrieval (and, with native tool calls, the self-query call; default:
    ``model``; a second instance of the same local model keeps the planner's prompt cache warm)."""

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
        )
        self.attribute_names = spec.attribute_names
        self.pre_retriever = PreRetriever(self.retrieval_model, self.attribute_names)
        self.self_querier = SelfQuerier(
            self.retrieval_model, self.attribute_names, filterable=spec.filterable_attributes
        )
        self.actions = allowed_actions(self.kind, (a.name for a in spec.actions))
        self.vocabulary: tuple[str, ...] = tuple(
            dict.fromkeys(
                w for a in spec.actions for p in a.parameters if p.kind == "text" for w in p.choices
            )
        )
        self._word_vectors: np.ndarray | None = None

    @property
    def name(self) -> str:
        return self.kind.value

    @property
    def native(self) -> bool:
        return isinstance(self.decider, LLMDecider) and self.decider.native

    @property
    def lists_calls(self) -> bool:
        """Whether the state block ends with the calls on offer (``list_calls``): for agents shown a part of
        the graph; Full-Mem's position block, with every object's ``can``, already ends its prompt."""
        return self.config.list_calls and not self.kind.full_graph_in_prompt

    @property
    def objects_line(self) -> bool:
        """Whether replies name the objects their thought is about (self-query feedback in the reply)."""
        return self.kind.self_queries and not self.native

    def system_prompt(self) -> str:
        """The static part of every step's prompt: rules, actions, reply format (kept as the model's cached
        prefix)."""
        specs = {a.name: a for a in self.spec.actions}
        lines = [
            f"- {specs[n].signature()}: {specs[n].description}" for n in self.actions if n != DONE_ACTION
        ]
        rule = CONTEXT_RULES[self.kind]
        if self.native:
            return (
                SYSTEM_PROMPT.split("Reply in exactly")[0].format(
                    instructions=self.spec.instructions, context_rule=rule, actions="\n".join(lines)
                )
                + "- done(): the task is complete.\nCall exactly one action per turn."
            )
        menu = ActionMenu([], objects_line=self.objects_line)
        if self.config.walkthrough and self.spec.walkthrough:  # replies in context: no lone example
            example = [f"Example episode of another task ({self.spec.walkthrough_task}):"]
            for thought, objects, call, _ in self.spec.walkthrough:
                example.append(f"Thought: {thought}")
                if self.objects_line:
                    example.append(f"Objects: {objects}")
                example.append(f"Action: {call}")
        else:
            thought, objects, call = self.spec.reply_example()
            example = ["For example:", f"Thought: {thought}"]
            if self.objects_line:
                example.append(f"Objects: {objects}")
            example.append(f"Action: {call}")
        return SYSTEM_PROMPT.format(
            instructions=self.spec.instructions,
            context_rule=rule,
            actions="\n".join(lines),
            reply_format="\n".join(menu.format_lines()),
            example="\n".join(example),
        )

    def context_text(
        self, graph: SceneGraph, subgraph: RetrievedSubgraph | None, menu: ActionMenu | None = None
    ) -> tuple[str, int]:
        """The scene-graph part of the step prompt and the number of objects it shows; with the step's
        ``menu``, each object line ends with the object-specific actions it allows now."""
        always = self.spec.shown_attributes
        can = menu.affordances() if menu is not None else None
        if self.kind.full_graph_in_prompt:
            head, tail, count = self.full_graph_blocks(graph, menu)
            return f"{head}\n{tail}", count
        if subgraph is not None:
            discovered = sum(1 for _ in graph.nodes(ont.OBJECT))
            lines = object_lines(
                subgraph.graph,
                graph,
                always=always,
                affordances=can,
                capabilities=dict(self.spec.state_capabilities),
                exclude=self.spec.hidden_attributes,
            )
            body = "\n".join(lines) if lines else "(none of the discovered objects is relevant yet)"
            return (
                f"Scene graph ({len(lines)} of {discovered} discovered objects):\n{body}",
                len(lines),
            )
        return "Scene graph: not shown (call getdiscoveredobjects to read it).", 0

    def discovered_text(self, graph: SceneGraph) -> str:
        """The discovered scene as a full-graph request would list it, without the agent-relative attributes
        (they change whenever the robot moves): equal texts mean no object was discovered or changed in
        between, so a repeated request would answer nothing new (it is refused, see ``refuse_known_answers``)."""
        hidden = (*self.spec.agent_relative_attributes, *self.spec.hidden_attributes)
        return "\n".join(sorted(object_lines(graph, graph, all_attributes=True, exclude=hidden)))

    def full_graph_blocks(
        self, graph: SceneGraph, menu: ActionMenu | None = None, order: StableOrder | None = None
    ) -> tuple[str, str, int]:
        """Full-Mem's scene graph in two blocks: every object's line without the agent-relative attributes
        (in ``order``'s stable order: unchanged lines first), and the agent-relative attributes with the
        object's actions on ``menu`` (``id: attributes; can: actions``), which change whenever the robot
        moves; and the number of objects. The first block goes before the history and the second after
        it, so the prompt's prefix stays the same from step to step except for the lines that changed."""
        relative = self.spec.agent_relative_attributes
        nodes = list(graph.nodes(ont.OBJECT))
        ids = [object_id(n) for n in nodes]
        hidden = (*relative, *self.spec.hidden_attributes)
        lines = list(zip(ids, object_lines(graph, graph, all_attributes=True, exclude=hidden), strict=True))
        if order is not None:
            lines = order.order(lines)
        can = menu.affordances() if menu is not None else None
        fields = [k for k in (nodes[0].attributes if nodes else {}) if k in relative]
        tail = relative_lines(graph, fields, can, [key for key, _ in lines])
        head = "Scene graph (everything discovered so far):\n" + "\n".join(text for _, text in lines)
        near = f"Now, from where you stand (id: {', '.join(fields)}; can: actions):\n" + "\n".join(tail)
        return head, near, len(lines)

    def candidates(self, graph: SceneGraph, subgraph: RetrievedSubgraph | None) -> dict[str, dict[str, Any]]:
        """Object id -> attributes (as the robot knows them) of what this step's actions may name: the objects
        of the retrieved subgraph for retrieving agents that cannot read the full graph, else every
        discovered object."""
        if subgraph is not None and not self.kind.may_request_full_graph:
            symbols = [n.symbol for n in subgraph.graph.nodes(ont.OBJECT)]
        else:
            symbols = [n.symbol for n in graph.nodes(ont.OBJECT)]
        nodes = [graph.node(s) for s in symbols if s in graph]
        return {object_id(n): {**n.attributes, CLASS_KEY: n.class_name} for n in nodes}

    def menu(
        self,
        graph: SceneGraph,
        subgraph: RetrievedSubgraph | None,
        refused: Mapping[CallKey, str] | None = None,
        words: Collection[str] | None = None,
    ) -> ActionMenu:
        """The step's actions, the objects each may name, the refused repeats; ``words``: the vocabulary
        words text parameters may take (None: all)."""
        return build_menu(
            self.spec.actions,
            self.actions,
            self.candidates(graph, subgraph),
            holding=_held_id(graph) is not None,
            held=held_attributes(graph),
            refused=refused,
            objects_line=self.objects_line,
            thought_chars=self.config.thought_chars,
            words=words,
            thought_prefix=hand_words(graph) if self.config.hand_in_thought else "",
        )

    def task_words(self, texts: Iterable[str]) -> set[str]:
        """The vocabulary words (of text parameters with ``choices``) nearest ``texts`` (entity names such as
        ``garbage can``): the word equal to a text once normalized (:func:`normalize_text`), else the one
        whose readable label the embedder puts nearest. Empty without a vocabulary or an embedder."""
        if not self.vocabulary or self.embedder is None:
            return set()
        exact = {normalize_text(w): w for w in self.vocabulary}
        out: set[str] = set()
        pending: list[str] = []
        for text in dict.fromkeys(t for t in texts if t and t.strip()):
            word = exact.get(normalize_text(text))
            if word is not None:
                out.add(word)
            else:
                pending.append(text)
        if pending:
            if self._word_vectors is None:
                self._word_vectors = self.embedder.embed([label_text(w) for w in self.vocabulary])
            scores = self.embedder.embed(pending) @ self._word_vectors.T
            out.update(self.vocabulary[int(i)] for i in scores.argmax(axis=1))
        return out

    def undo_refusals(
        self, change: _Change, objects: Mapping[str, Mapping[str, Any]], holding: bool
    ) -> list[tuple[CallKey, _Failure]]:
        """The calls that would put back what ``change`` did (see ``PlannerConfig.refuse_undo``): each action
        reversing its action, with one object parameter, naming an object it touched that ``objects`` (the
        step's candidates, id -> attributes) shows and the parameter's affordances allow, hand permitting."""
        out: list[tuple[CallKey, _Failure]] = []
        for name in self.spec.reversing(change.action):
            spec = self.spec.action(name)
            if name not in self.actions or spec is None or len(spec.parameters) != 1:
                continue
            if (spec.hand == "empty" and holding) or (spec.hand == "holding" and not holding):
                continue
            parameter = spec.parameters[0]
            if parameter.kind != "object":
                continue
            for name_id in sorted(change.objects):
                attributes = objects.get(name_id)
                if attributes is None or not parameter.allows(attributes):
                    continue
                call = format_call(name, {parameter.name: name_id})
                out.append(((name, (name_id,)), _Failure(change.step, call, "", undoes=change.call)))
        return out

    def history_line(self, record: StepRecord, *, full: bool = False) -> str:
        """A step as the history shows it (the same text at every later step; ``full``: the observation is
        not clipped): the call, its status and the environment's answer, whose list of newly discovered
        objects (after ``EnvironmentSpec.discoveries_marker``) is replaced by their number."""
        status = "REFUSED" if record.refused else "OK" if record.ok else "FAILED"
        call = format_call(record.action, record.arguments) if record.action else "(no valid action)"
        limit = 10**9 if full else self.config.observation_chars
        observation = record.observation
        marker = self.spec.discoveries_marker
        if not full and marker and record.discovered and marker in observation:
            # what a step happened to discover is in the scene graph (or retrievable): say how much
            observation = f"{_answer(observation, marker)}{marker} {record.discovered} objects."
        return f"{record.step + 1}. {call} -> {status}: {_clip(observation, limit)}"

    def step_messages(
        self,
        task: EmbodiedTask,
        graph: SceneGraph,
        context: str,
        history: Sequence[StepRecord],
        step: int,
        refused: Iterable[str] = (),
        graph_head: str = "",
        calls: Sequence[str] = (),
    ) -> list[Message]:
        """The prompt of one planning step: system rules, then the task, ``graph_head`` (Full-Mem's slowly
        changing scene-graph block, see :meth:`full_graph_blocks`) and the history (actions and what they
        returned; lines never change once written, so the prompt grows by suffix), and last the current
        state: the robot, the step's scene-graph context, the object calls on offer (``calls``, with
        ``list_calls``), the calls refused in this situation (``refused``) and the step counter."""
        lines = [f"Task: {task.instruction}"]
        if graph_head:
            lines.append(graph_head)
        window = list(history)[-self.config.history_steps :] if self.config.history_steps else []
        if window:
            lines.append("Previous steps:")
            latest_full = max((r.step for r in window if r.full_graph_request and r.ok), default=None)
            lines.extend(self.history_line(r, full=r.step == latest_full) for r in window)
        lines.extend([robot_line(graph), context])
        if calls:
            lines.append("You can now: " + ", ".join(calls) + ".")
        blocked = list(dict.fromkeys(refused))
        if blocked:
            lines.append(
                "Not possible now (failed, changed nothing, a loop, or an undo of your last change): "
                + ", ".join(blocked)
                + "."
            )
        last = history[-1] if history else None
        note = ""
        if last is not None and not last.ok and last.action:
            note = " Your last action did not work (see why above): do not repeat it unchanged."
        lines.append(f"Step {step + 1} of at most {self.config.max_steps}.{note} Choose the next action.")
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
        feedback_attributes: tuple[str, ...] = ()
        mention_attributes: tuple[str, ...] = ()
        required = set(task.required_types)
        retrieved_ever: set[str] = set()
        failures: dict[tuple[CallKey, int], _Failure] = {}  # by (call, state signature)
        progress = ProgressSignature(self.spec.agent_relative_attributes)
        visited = {progress(graph)}
        noops: dict[tuple[CallKey, int], _Failure] = {}  # by (call, progress signature)
        answers: dict[tuple[CallKey, int], tuple[int, str]] = {}  # (call, world) -> first step, answer
        known: dict[tuple[CallKey, int], _Failure] = {}  # by (call, progress signature without place)
        full_known: tuple[CallKey, str, _Failure] | None = None  # last full-graph answer (key, graph text)
        order = StableOrder()  # Full-Mem: unchanged graph lines first, so the prompt keeps its prefix
        ignore = self.spec.agent_relative_attributes
        undo_on = self.config.refuse_undo and bool(self.spec.reversals)
        states = object_states(graph, ignore) if undo_on else {}
        last_change: _Change | None = None
        base_words: set[str] | None = None  # the task's vocabulary words (task_words), None: all
        mention_words: set[str] = set()
        try:
            if self.kind.retrieves:
                assert self.embedder is not None
                index = SceneIndex(self.embedder)
                index.apply(graph, diff)
                if pre_retrieval is None:
                    pre_retrieval = self.pre_retriever.run(task.instruction)
                result.pre_retrieval = pre_retrieval.to_dict()
                result.retrieval_usage = result.retrieval_usage + pre_retrieval.usage
                feedback_attributes = tuple(
                    dict.fromkeys(a for e in pre_retrieval.entities for a in e.attributes)
                )
                # what a named object shows: the task's attributes and those a receptacle shows (isOpen)
                mention_attributes = tuple(
                    dict.fromkeys((*feedback_attributes, *self.subgraph_config.connector_attributes))
                )
                retriever = TaskRetriever(
                    index,
                    pre_retrieval.queries(),
                    self.subgraph_config,
                    feedback_window=self.config.feedback_window,
                )
                if self.config.task_words and self.vocabulary:
                    base_words = self.task_words(e.name for e in pre_retrieval.entities)
                    result.task_words = sorted(base_words)
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
                state = state_signature(graph, ignore)
                done_so_far = progress(graph)
                world = progress(graph, place=False)
                standing = [(k, f) for (k, sig), f in failures.items() if sig == state] + [
                    (k, f) for (k, sig), f in noops.items() if sig == done_so_far
                ]
                if self.config.refuse_known_answers:
                    standing += [(k, f) for (k, sig), f in known.items() if sig == world]
                    if full_known is not None and full_known[1] == self.discovered_text(graph):
                        standing.append((full_known[0], full_known[2]))
                if not self.config.refuse_repeats:
                    standing = []
                if undo_on and last_change is not None:
                    standing += self.undo_refusals(
                        last_change, self.candidates(graph, subgraph), _held_id(graph) is not None
                    )
                refused = {k: _refusal(f) for k, f in standing}
                words = None if base_words is None else base_words | mention_words
                menu = self.menu(graph, subgraph, refused, words)
                head = ""
                if self.kind.full_graph_in_prompt:
                    head, context, context_nodes = self.full_graph_blocks(graph, menu, order)
                else:
                    context, context_nodes = self.context_text(graph, subgraph, menu)
                blocked = [f.call for _, f in standing] if refused else []
                messages = self.step_messages(
                    task,
                    graph,
                    context,
                    result.trajectory,
                    step,
                    blocked,
                    graph_head=head,
                    calls=menu.calls() if self.lists_calls else (),
                )
                try:
                    decision = self.decider.decide(messages, menu)
                except LLMError as exc:
                    if exc.kind == "context_overflow":
                        result.overflow_prompt_tokens = count_prompt_tokens(messages, self.model.count_tokens)
                    raise
                result.planner_usage = result.planner_usage + decision.usage
                timings = decision.timings
                record = StepRecord(
                    step=step,
                    thought=decision.thought,
                    action=decision.action,
                    arguments=dict(decision.arguments),
                    ok=False,
                    observation="",
                    context_nodes=context_nodes,
                    context_chars=len(head) + len(context),
                    input_tokens=decision.usage.input_tokens,
                    output_tokens=decision.usage.output_tokens,
                    planner_s=decision.seconds,
                    retrieval_s=retrieval_s,
                    self_query_s=0.0,
                    step_s=0.0,
                    subgraph_symbols=subgraph.symbols if subgraph is not None else [],
                    prompt_eval_s=None if timings is None else timings.prompt_s,
                    generation_s=None if timings is None else timings.generation_s,
                    evaluated_tokens=None if timings is None else timings.prompt_tokens,
                    generated_tokens=None if timings is None else timings.generated_tokens,
                    objects=list(decision.objects),
                )
                key = call_key(decision.action, decision.arguments, self.spec.action(decision.action))
                record.refused = decision.refused
                result.trajectory.append(record)
                result.steps = step + 1
                finished = self._act(env, task, decision, record, result)
                executed = bool(record.action) and decision.error is None
                if executed and not record.ok and record.action != FULL_GRAPH_ACTION:
                    failures[(key, state)] = _Failure(
                        step, format_call(record.action, record.arguments), record.observation
                    )
                if executed and record.action != DONE_ACTION:
                    graph, diff = env.observe()
                    record.graph_changed = not diff.is_empty
                    if undo_on:
                        now = object_states(graph, ignore)
                        changed, where = changed_objects(states, now)
                        if record.ok and changed and record.action != FULL_GRAPH_ACTION:
                            spec = self.spec.action(record.action)
                            named = [
                                record.arguments[p.name]
                                for p in (spec.parameters if spec is not None else ())
                                if p.kind == "object" and p.name in record.arguments
                            ]
                            last_change = _Change(
                                step,
                                format_call(record.action, record.arguments),
                                record.action,
                                frozenset([*named, *changed, *where]),
                            )
                        states = now
                    if base_words is not None:
                        mention_words = self.task_words(
                            node.class_name
                            for node in graph.nodes(ont.OBJECT)
                            if object_id(node) in set(record.mentions)
                        )
                    if index is not None:
                        record.index_update = index.apply(graph, diff).to_dict()
                    if retriever is not None:
                        retriever.set_mentions(mention_queries(graph, record.mentions, mention_attributes))
                    if record.full_graph_request and record.ok:
                        lines = object_lines(
                            graph, graph, all_attributes=True, exclude=self.spec.hidden_attributes
                        )
                        record.observation = (
                            f"Full scene graph ({len(lines)} discovered objects):\n" + "\n".join(lines)
                        )
                        full_known = (
                            key,
                            self.discovered_text(graph),
                            _Failure(
                                step, format_call(record.action, record.arguments), "", graph_known=True
                            ),
                        )
                    elif record.ok:
                        answer = _answer(record.observation, self.spec.discoveries_marker)
                        first = answers.setdefault((key, world), (step, answer))
                        if first[0] != step and first[1] == answer:
                            known[(key, world)] = _Failure(
                                step, format_call(record.action, record.arguments), "", same_as=first[0]
                            )
                        after = progress(graph)
                        if after == done_so_far or after in visited:  # changed nothing, or a loop
                            noops[(key, done_so_far)] = _Failure(
                                step,
                                format_call(record.action, record.arguments),
                                "",
                                loop=after != done_so_far,
                            )
                        visited.add(after)
                finished = finished or (self.config.stop_on_success and task.check(env.world))
                if self.kind.self_queries and retriever is not None and not finished:
                    started_query = time.perf_counter()
                    if self.objects_line:
                        queries = [
                            EntityQuery(o, feedback_attributes, source=SELF_QUERY_SOURCE)
                            for o in decision.objects
                        ]
                        record.self_queries = [
                            {"entity": q.text, "filter": {}, "attributes": list(q.attributes)}
                            for q in queries
                        ]
                    elif decision.thought:  # native tool calls carry no objects line: ask separately
                        query = self.self_querier.run(decision.thought, task.instruction, graph)
                        queries = query.queries
                        result.retrieval_usage = result.retrieval_usage + query.usage
                        record.self_queries = query.to_dict()["queries"]
                    else:
                        queries = []
                    retriever.add_feedback(queries)
                    record.self_query_s = time.perf_counter() - started_query
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
        action = decision.action
        if action == FULL_GRAPH_ACTION and not self.kind.may_request_full_graph:
            result.refused_full_graph_requests += 1
            record.cause = "full_graph_refused"
            record.observation = (
                "getdiscoveredobjects is not available to you: work from the scene graph shown, "
                "search or randomlyexplore."
            )
            return False
        if decision.error is not None:
            if record.refused:
                result.refused_repeats += 1
                record.cause = "refused_repeat"
                record.observation = decision.error
            else:
                result.invalid_replies += 1
                record.cause = "invalid_reply"
                record.observation = (
                    f"Your reply could not be used ({decision.error}). Reply with one valid action."
                )
            return False
        if action == DONE_ACTION:
            if task.check(env.world):
                result.done_declared = True
                record.ok = True
                record.observation = "The task is complete."
                return True
            record.observation = "The task is not complete yet: check the goal and keep acting."
            record.cause = "not_complete"
            result.failed_actions += 1
            return False
        outcome = env.execute(action, decision.arguments)
        record.ok = outcome.success
        record.observation = outcome.message
        record.mentions = [str(m) for m in getattr(outcome, "mentions", ()) or ()]
        record.discovered = len(getattr(outcome, "discovered", ()) or ())
        if not outcome.success:
            result.failed_actions += 1
            code = getattr(outcome, "error", None)
            record.cause = str(code) if code else "action_failed"
        if action == FULL_GRAPH_ACTION and outcome.success:
            record.full_graph_request = True
            result.full_graph_requests += 1
        return False


def _answer(observation: str, marker: str) -> str:
    """An answer as compared across calls: without its tail from ``marker`` on (the objects a trip happened
    to discover are not part of the answer)."""
    return observation.split(marker, 1)[0].strip() if marker else observation.strip()


def _refusal(failure: _Failure) -> str:
    if failure.graph_known:
        return (
            f"Refused without trying: {failure.call} at step {failure.step + 1} already listed every discovered "
            "object, and none has been discovered or changed since: its answer is known. Choose a different "
            "action."
        )
    if failure.same_as is not None:
        return (
            f"Refused without trying: {failure.call} at step {failure.step + 1} gave the same answer as at step "
            f"{failure.same_as + 1}, and nothing has changed since: its answer is known. Choose a different action."
        )
    if failure.undoes:
        return (
            f"Refused without trying: {failure.call} would only undo {failure.undoes} (step {failure.step + 1}), "
            "your last change, and nothing else has changed since. Choose a different action."
        )
    if failure.loop:
        return (
            f"Refused without trying: {failure.call} at step {failure.step + 1} only led back to a situation you "
            "had already been in, and the situation is the same now. Choose a different action."
        )
    if not failure.reason:
        return (
            f"Refused without trying: {failure.call} at step {failure.step + 1} changed nothing, and the "
            "situation is the same now. Choose a different action."
        )
    return (
        f"Refused without trying: {failure.call} already failed at step {failure.step + 1} "
        f"({_clip(failure.reason, 160)}) in the same situation as now. Choose a different action."
    )


def mention_queries(
    graph: SceneGraph, object_ids: Iterable[str], attributes: Sequence[str]
) -> list[EntityQuery]:
    """One query per discovered object of ``object_ids`` (those the environment's answer named): its class
    label as text, filtered to its id, with the task's ``attributes`` (environment feedback)."""
    by_id = {object_id(n): n for n in graph.nodes(ont.OBJECT)}
    out: list[EntityQuery] = []
    for name in dict.fromkeys(object_ids):
        node = by_id.get(name)
        if node is not None:
            out.append(
                EntityQuery(
                    label_text(node.class_name),
                    tuple(attributes),
                    {ID_ATTRIBUTE: name},
                    source=MENTION_SOURCE,
                )
            )
    return out


def _robot_and_held(graph: SceneGraph) -> list[str]:
    """The robot's node and, when it holds something, the held object's node (always in the subgraph)."""
    out: list[str] = []
    for agent in graph.nodes(ont.AGENT):
        out.append(agent.symbol)
        out.extend(child.symbol for child in graph.children(agent.symbol, HOLDS))
    return out


def _object_classes(graph: SceneGraph) -> set[str]:
    return {n.class_name for n in graph.nodes(ont.OBJECT)}
